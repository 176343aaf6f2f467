package main

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestClusterSecuritySurvivesNodeLoss: in a three-node cluster with the
// StandardAuthorizer, a SCRAM credential and an ACL added through one
// node are the cluster's, not that node's: with the active controller
// (which wrote them) killed, bob still authenticates and may produce
// through both other nodes, and still may not read; the killed node,
// started again, enforces them too.
func TestClusterSecuritySurvivesNodeLoss(t *testing.T) {
	e2e(t)
	lines := authorizerClusterLines("User:admin;User:ANONYMOUS")
	for i, l := range lines {
		if l == "sasl.enabled.mechanisms=PLAIN" {
			lines[i] = "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512"
		}
	}
	lines = append(lines, "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config="+scramLoginModule)
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
	res, err := admin.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bob-secret"}})
	if err != nil || res.Error() != nil {
		t.Fatalf("AlterUserScramCredentials through node %d: %v %v", others[0].id, err, res.Error())
	}
	acl := kadm.NewACLs().Allow("User:bob").AllowHosts("*").Topics("t").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral)
	if created, err := admin.CreateACLs(ctx, acl); err != nil || created[0].Err != nil {
		t.Fatalf("CreateAcls through node %d: %v %+v", others[0].id, err, created)
	}
	bob := kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism())
	produce := func(n *clusterNode) string {
		cl := newClient(t, n.addr2, bob, kgo.RequestRetries(2), kgo.RecordRetries(2), kgo.RecordDeliveryTimeout(10*time.Second))
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		return outcome(cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr())
	}
	read := func(n *clusterNode) string {
		cl := newClient(t, n.addr2, bob, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": {0: kgo.NewOffset().AtStart()}}))
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return "nothing read"
			}
			if err := fs.Err0(); err != nil {
				return outcome(err)
			}
			if fs.NumRecords() > 0 {
				return "read"
			}
		}
	}
	for _, n := range others {
		if got := eventually("ok", func() string { return produce(n) }); got != "ok" {
			t.Fatalf("bob's produce through node %d before the loss: %s", n.id, got)
		}
	}

	ctrl.p.kill()
	t.Logf("killed node %d, the active controller", ctrl.id)
	for _, n := range others {
		if got := eventually("ok", func() string { return produce(n) }); got != "ok" {
			t.Errorf("bob's produce through node %d after node %d was lost: %s", n.id, ctrl.id, got)
		}
		if got := read(n); got != "TOPIC_AUTHORIZATION_FAILED" {
			t.Errorf("bob's read through node %d after the loss: %s, want TOPIC_AUTHORIZATION_FAILED (he has WRITE only)", n.id, got)
		}
	}
	ctrl.start(t)
	if got := eventually("ok", func() string { return produce(ctrl) }); got != "ok" {
		t.Errorf("bob's produce through node %d, started again: %s", ctrl.id, got)
	}
	if got := read(ctrl); got != "TOPIC_AUTHORIZATION_FAILED" {
		t.Errorf("bob's read through node %d, started again: %s", ctrl.id, got)
	}
}
