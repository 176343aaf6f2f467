package main

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/strata-io/strata/broker"
)

// TestAuthorizerSettings: authorizer.class.name's StandardAuthorizer turns
// the authorizer on with super.users (split at ';', trimmed, empty ones
// skipped) and allow.everyone.if.no.acl.found; both are ignored without
// it; another class, or a super user not Type:name, stops start-up with
// one error naming the key.
func TestAuthorizerSettings(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		want  *broker.StandardAuthorizerConfig
	}{
		{nil, nil},
		{map[string]string{"authorizer.class.name": " ", "super.users": "User:admin"}, nil},
		{map[string]string{"authorizer.class.name": standardAuthorizerClass}, &broker.StandardAuthorizerConfig{}},
		{map[string]string{"authorizer.class.name": standardAuthorizerClass, "super.users": " User:admin ;; User:ANONYMOUS;",
			"allow.everyone.if.no.acl.found": "true"},
			&broker.StandardAuthorizerConfig{SuperUsers: []string{"User:admin", "User:ANONYMOUS"}, AllowEveryoneIfNoACL: true}},
	} {
		s, err := loadSettings(tc.props, zap.NewNop())
		if err != nil {
			t.Errorf("%v: %v", tc.props, err)
			continue
		}
		if !reflect.DeepEqual(s.Authorizer, tc.want) {
			t.Errorf("%v: authorizer %+v, want %+v", tc.props, s.Authorizer, tc.want)
		}
		if cfg := brokerConfig(s, false, buildInfo{}); !reflect.DeepEqual(cfg.StandardAuthorizer, tc.want) {
			t.Errorf("%v: the broker's authorizer %+v, want %+v", tc.props, cfg.StandardAuthorizer, tc.want)
		}
	}
	for _, tc := range []struct {
		props      map[string]string
		key, inMsg string
	}{
		{map[string]string{"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}, "authorizer.class.name", "strata serves only " + standardAuthorizerClass},
		{map[string]string{"authorizer.class.name": standardAuthorizerClass, "super.users": "User:admin;alice"}, "super.users", "principalType:principalName but got alice"},
		{map[string]string{"authorizer.class.name": standardAuthorizerClass, "allow.everyone.if.no.acl.found": "yes"}, "allow.everyone.if.no.acl.found", "true or false"},
	} {
		_, err := loadSettings(tc.props, zap.NewNop())
		var ce *configError
		if !errors.As(err, &ce) || ce.Key != tc.key || !strings.Contains(err.Error(), tc.inMsg) {
			t.Errorf("%v: %v, want an error of %s saying %q", tc.props, err, tc.key, tc.inMsg)
		}
	}
}
