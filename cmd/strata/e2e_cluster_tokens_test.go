package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestClusterDelegationTokens: in a three-node cluster with the
// StandardAuthorizer, bob creates a delegation token through a node that
// is not the active controller (forwarded, decided there), logs in with
// it on every node as bob (his ACL lets the token produce), and has
// DESCRIBE of it; expired through another node, it logs in nowhere.
func TestClusterDelegationTokens(t *testing.T) {
	e2e(t)
	lines := authorizerClusterLines("User:admin;User:ANONYMOUS")
	for i, l := range lines {
		if l == "sasl.enabled.mechanisms=PLAIN" {
			lines[i] = "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512"
		}
	}
	lines = append(lines, "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config="+scramLoginModule, tokenSecretLine)
	nodes := startCluster(t, lines...)
	waitFormed(t, nodes, 20*time.Second)
	ctrl := activeController(t, nodes)
	var others []*clusterNode
	for _, n := range nodes {
		if n != ctrl {
			others = append(others, n)
		}
	}
	ctx := timeoutCtx(t, time.Minute)
	admin := kadm.NewClient(newClient(t, others[0].addr2, user("admin")...))
	if _, err := admin.CreateTopics(ctx, 1, 3, nil, "t"); err != nil {
		t.Fatal(err)
	}
	if res, err := admin.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bob-secret"}}); err != nil || res.Error() != nil {
		t.Fatalf("AlterUserScramCredentials: %v %v", err, res.Error())
	}
	acl := kadm.NewACLs().Allow("User:bob").AllowHosts("*").Topics("t").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral)
	if created, err := admin.CreateACLs(ctx, acl); err != nil || created[0].Err != nil {
		t.Fatalf("CreateAcls: %v %+v", err, created)
	}
	bob := newClient(t, others[0].addr2, kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism()))
	created := createToken(t, bob)
	if created.ErrorCode != 0 || created.PrincipalName != "bob" {
		t.Fatalf("create through node %d: %+v", others[0].id, created)
	}
	produce := func(n *clusterNode) string {
		cl := newClient(t, n.addr2, tokenLogin(created.TokenID, created.HMAC), kgo.RequestRetries(2), kgo.RecordRetries(2), kgo.RecordDeliveryTimeout(10*time.Second))
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		return outcome(cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("by token")}).FirstErr())
	}
	for _, n := range nodes {
		waitFor(t, fmt.Sprintf("the token to produce through node %d", n.id), 10*time.Second, func() bool { return produce(n) == "ok" })
	}
	if d := describeTokens(t, newClient(t, ctrl.addr2, kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism()))); len(d.TokenDetails) != 1 {
		t.Fatalf("bob describes %d tokens on the controller, want his one", len(d.TokenDetails))
	}
	expire := kmsg.NewPtrExpireDelegationTokenRequest()
	expire.HMAC, expire.ExpiryPeriodMillis = created.HMAC, -1
	if er, err := expire.RequestWith(ctx, newClient(t, others[1].addr2, kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism()))); err != nil || er.ErrorCode != 0 {
		t.Fatalf("expire through node %d: %+v %v (%v)", others[1].id, er, err, kerr.ErrorForCode(er.ErrorCode))
	}
	for _, n := range nodes {
		waitFor(t, fmt.Sprintf("the expired token to stop logging in on node %d", n.id), 10*time.Second, func() bool {
			return scramLogin(t, n.addr2, scram.Auth{User: created.TokenID, Pass: base64.StdEncoding.EncodeToString(created.HMAC), IsToken: true}.AsSha512Mechanism()) != "ok"
		})
	}
}
