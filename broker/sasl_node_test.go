package broker

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-io/strata/metadata"
)

// TestNodeSASL runs a node's login (PeerLogin.Login) against a listener's
// NodeAuthenticator over TCP, as raft's connections do on a SASL
// controller listener: the right password of a super user is let in; a
// wrong one, a mechanism the listener does not enable and a user the
// authorizer does not allow CLUSTER_ACTION are refused on both sides.
func TestNodeSASL(t *testing.T) {
	ls := &ListenerSASL{Mechanisms: []string{MechanismPlain}, PlainUsers: map[string]string{"admin": "admin-secret", "bob": "bob-secret"},
		MaxReceiveSize: DefaultSASLMaxReceiveSize}
	authz := &StandardAuthorizerConfig{SuperUsers: []string{"User:admin"}}
	for _, tc := range []struct {
		name      string
		login     PeerLogin
		clientErr *kerr.Error // nil: logged in
		serverErr string      // "": let in
	}{
		{"super user", PeerLogin{Mechanism: MechanismPlain, Username: "admin", Password: "admin-secret"}, nil, ""},
		{"wrong password", PeerLogin{Mechanism: MechanismPlain, Username: "admin", Password: "wrong"}, kerr.SaslAuthenticationFailed, "Invalid username or password"},
		{"mechanism not enabled", PeerLogin{Mechanism: MechanismScramSHA512, Username: "admin", Password: "admin-secret"}, kerr.UnsupportedSaslMechanism, "Unsupported SASL mechanism SCRAM-SHA-512"},
		{"no CLUSTER_ACTION", PeerLogin{Mechanism: MechanismPlain, Username: "bob", Password: "bob-secret"}, nil, "not authorized for CLUSTER_ACTION"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			served := make(chan error, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					served <- err
					return
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				served <- NodeAuthenticator(ls, authz, func() *metadata.Image { return metadata.Empty })(c)
			}()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			clientErr := tc.login.Login(7)(c, ln.Addr().String())
			switch {
			case tc.clientErr == nil && clientErr != nil:
				t.Errorf("login: %v, want none", clientErr)
			case tc.clientErr != nil && !errors.Is(clientErr, tc.clientErr):
				t.Errorf("login: %v, want %s", clientErr, tc.clientErr.Message)
			}
			serverErr := <-served
			switch {
			case tc.serverErr == "" && serverErr != nil:
				t.Errorf("authenticator: %v, want the node let in", serverErr)
			case tc.serverErr != "" && (serverErr == nil || !strings.Contains(serverErr.Error(), tc.serverErr)):
				t.Errorf("authenticator: %v, want %q", serverErr, tc.serverErr)
			}
		})
	}
}
