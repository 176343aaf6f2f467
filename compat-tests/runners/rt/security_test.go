package rt

import (
	"errors"
	"strings"
	"testing"
)

func TestSecurityArgs(t *testing.T) {
	a := Args{Extra: map[string]string{"security.protocol": "sasl_ssl", "sasl.mechanism": "scram-sha-512",
		"sasl.username": "alice", "sasl.password": "pw", "ssl.ca.location": "/ca.pem"}}
	s := a.Security()
	if !s.TLS() || !s.SASL() || s.Mechanism != "SCRAM-SHA-512" {
		t.Fatalf("%+v: want SASL_SSL with SCRAM-SHA-512", s)
	}
	want := map[string]string{"security.protocol": "sasl_ssl", "sasl.mechanisms": "SCRAM-SHA-512",
		"sasl.username": "alice", "sasl.password": "pw", "ssl.ca.location": "/ca.pem"}
	got := s.Librdkafka()
	if len(got) != len(want) {
		t.Fatalf("librdkafka %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("librdkafka %s=%q, want %q", k, got[k], v)
		}
	}
	p, err := s.JavaProperties()
	if err != nil {
		t.Fatal(err)
	}
	if p["sasl.jaas.config"] != `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="pw";` ||
		p["ssl.truststore.type"] != "PEM" || p["ssl.truststore.location"] != "/ca.pem" {
		t.Fatalf("Java properties %v", p)
	}
	if plain := (Args{}).Security(); plain.TLS() || plain.SASL() || len(plain.Librdkafka()) != 0 {
		t.Fatalf("no arguments: %+v %v, want PLAINTEXT and no librdkafka keys", plain, plain.Librdkafka())
	}
}

func TestAuthResult(t *testing.T) {
	s := Security{Protocol: "SSL"}
	if r := AuthResult(s, nil, AuthRecords()); r.Result != "pass" {
		t.Fatalf("all records: %+v", r)
	}
	short := AuthRecords()[:len(AuthRecords())-1]
	if r := AuthResult(s, nil, short); r.Result != "fail" {
		t.Fatalf("one record short: %+v", r)
	}
	swapped := AuthRecords()
	swapped[0], swapped[1] = swapped[1], swapped[0]
	if r := AuthResult(s, nil, swapped); r.Result != "fail" {
		t.Fatalf("out of order: %+v", r)
	}
}

func TestRefusedResult(t *testing.T) {
	authErr := errors.New("SASL_AUTHENTICATION_FAILED: Authentication failed: Invalid username or password")
	for _, tc := range []struct {
		scenario string
		err      error
		hung     bool
		want     string
	}{
		{"auth_bad_password", authErr, false, "pass"},
		{"auth_bad_password", errors.New("EOF"), false, "fail"},
		{"auth_bad_password", nil, false, "fail"},
		{"auth_no_tls", errors.New("EOF"), false, "pass"},
		{"auth_no_tls", nil, true, "fail"},
		{"auth_no_tls", nil, false, "fail"},
		{"acl_deny_wins", errors.New("TOPIC_AUTHORIZATION_FAILED: Topic authorization failed."), false, "pass"},
		{"acl_deny_wins", errors.New("UNKNOWN_TOPIC_OR_PARTITION"), false, "fail"},
	} {
		r := RefusedResult(tc.scenario, tc.err, tc.hung)
		if r.Result != tc.want {
			t.Errorf("%s err=%v hung=%v: %+v, want %s", tc.scenario, tc.err, tc.hung, r, tc.want)
		}
		if tc.err != nil && (r.Data == nil || !strings.Contains(r.Data["error"].(string), tc.err.Error())) {
			t.Errorf("%s err=%v: data %v, want the error", tc.scenario, tc.err, r.Data)
		}
	}
}

func TestGroupRefusedResult(t *testing.T) {
	const topic = "c1-franz-acl-group-denied-ss"
	for _, tc := range []struct {
		err  error
		hung bool
		want string
	}{
		{errors.New("unable to join group session: GROUP_AUTHORIZATION_FAILED: Group authorization failed."), false, "pass"},
		{errors.New("Not authorized to access group: " + topic + "-g"), false, "pass"},
		{errors.New("Not authorized to access topics: [" + topic + "]"), false, "fail"},
		{nil, true, "fail"},
		{nil, false, "fail"},
	} {
		if r := GroupRefusedResult(topic, tc.err, tc.hung); r.Result != tc.want {
			t.Errorf("err=%v hung=%v: %+v, want %s", tc.err, tc.hung, r, tc.want)
		}
	}
}
