package broker

// SASL between nodes, the listener's side of raft's and AskIdentity's
// connections (metadata/quorum/sasl.go): after their magic they send the
// frames a Kafka client authenticates with, SaslHandshake v1 and then
// SaslAuthenticate v2, read here with the listener's mechanisms as
// authenticateSASL reads a client's. The node authenticated must then be
// allowed CLUSTER_ACTION on the cluster, as Kafka's ControllerApis holds
// raft's requests (Vote, BeginQuorumEpoch, Fetch) to it; without an
// authorizer any authenticated node is. A failure is answered with
// Kafka's error, as a client's would be, and ends the connection.

import (
	"errors"
	"fmt"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/internal/kafkaerr"
	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/protocol"
)

// NodeAuthenticator authenticates the raft and identity connections of
// listener ls: SCRAM credentials and ACLs are looked up in image (nil
// before the metadata store is open: no SCRAM credential and no ACL yet),
// the principal decided by authz (nil: no authorizer).
func NodeAuthenticator(ls *ListenerSASL, authz *StandardAuthorizerConfig, image func() *metadata.Image) func(net.Conn) error {
	var rules *metadata.StandardAuthorizer
	if authz != nil {
		rules = &metadata.StandardAuthorizer{SuperUsers: map[string]bool{}, AllowEveryoneIfNoACL: authz.AllowEveryoneIfNoACL}
		for _, p := range authz.SuperUsers {
			rules.SuperUsers[p] = true
		}
	}
	return func(nc net.Conn) error {
		a := nodeAuthentication{ls: ls, nc: nc, image: image}
		user, err := a.run()
		if err != nil {
			return err
		}
		if rules == nil {
			return nil
		}
		var acls metadata.ACLsImage
		if img := image(); img != nil {
			acls = img.Access.ACLs
		}
		principal, host := "User:"+user, hostAddress(nc.RemoteAddr())
		if !rules.Authorize(&acls, principal, host, metadata.ACLOpClusterAction, metadata.ACLResourceCluster, clusterName) {
			return fmt.Errorf("principal %s from %s is not authorized for CLUSTER_ACTION on the cluster", principal, host)
		}
		return nil
	}
}

// nodeAuthentication is one node connection's SASL exchange.
type nodeAuthentication struct {
	ls    *ListenerSASL
	nc    net.Conn
	image func() *metadata.Image
	out   []byte
}

// nodeSASLRequests are the requests of the exchange, at the versions a
// node sends.
func nodeSASLRequests(key, version int16) bool {
	return key == int16(kmsg.SASLHandshake) && version == 1 || key == int16(kmsg.SASLAuthenticate) && version <= 2
}

// run reads the exchange and returns the authenticated user's name.
func (a *nodeAuthentication) run() (string, error) {
	req, err := a.read(kmsg.SASLHandshake)
	if err != nil {
		return "", err
	}
	mechanism := req.Body.(*kmsg.SASLHandshakeRequest).Mechanism
	server := a.ls.newServer(mechanism, func(u metadata.ScramUser) (metadata.ScramCredential, bool) {
		if img := a.image(); img != nil {
			return img.Access.Scram.Credential(u)
		}
		return metadata.ScramCredential{}, false
	}, nil)
	hs := kmsg.NewPtrSASLHandshakeResponse()
	hs.SupportedMechanisms = a.ls.Mechanisms
	if server == nil {
		hs.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		_ = a.reply(req, hs)
		return "", fmt.Errorf("Unsupported SASL mechanism %s", mechanism)
	}
	if err := a.reply(req, hs); err != nil {
		return "", err
	}
	for {
		req, err := a.read(kmsg.SASLAuthenticate)
		if err != nil {
			return "", err
		}
		challenge, done, err := server.step(req.Body.(*kmsg.SASLAuthenticateRequest).SASLAuthBytes)
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		if err != nil {
			msg := kafkaerr.Message(err)
			if errors.Is(err, errSASLInvalidCredentials) {
				msg = "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mechanism
			}
			resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, kmsg.StringPtr(msg)
			_ = a.reply(req, resp)
			return "", fmt.Errorf("SASL %s: %w", mechanism, err)
		}
		resp.SASLAuthBytes, resp.ErrorMessage = append([]byte{}, challenge...), kmsg.StringPtr("")
		if err := a.reply(req, resp); err != nil {
			return "", err
		}
		if done {
			return server.principal(), nil
		}
	}
}

// read reads the next frame, bounded by sasl.server.max.receive.size, as
// a request of key. The connection is read unbuffered: raft's stream
// follows the last frame.
func (a *nodeAuthentication) read(key kmsg.Key) (*protocol.Request, error) {
	frame, err := protocol.ReadFrame(a.nc, a.ls.MaxReceiveSize, nil)
	if err != nil {
		return nil, fmt.Errorf("SASL %s: %w", key.Name(), err)
	}
	req, err := protocol.ParseRequest(frame, nodeSASLRequests)
	if err != nil {
		return nil, fmt.Errorf("SASL %s: %w", key.Name(), err)
	}
	if kmsg.Key(req.Key) != key {
		return nil, fmt.Errorf("Unexpected Kafka request of type %s during SASL authentication of a node, want %s", kmsg.Key(req.Key).Name(), key.Name())
	}
	return req, nil
}

func (a *nodeAuthentication) reply(req *protocol.Request, resp kmsg.Response) error {
	a.out = protocol.AppendResponse(a.out[:0], req, resp)
	_, err := a.nc.Write(a.out)
	return err
}
