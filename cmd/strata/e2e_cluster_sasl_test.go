package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// saslBetweenNodesLines are a three-node cluster whose inter-broker
// (SASL_PLAINTEXT, {addr2}) and controller listeners have SASL, with the
// StandardAuthorizer and only User:admin a super user: the nodes' own
// connections (raft, registrations and heartbeats, forwarded requests,
// follower fetches) must log in as admin, for User:ANONYMOUS may do
// nothing. Clients keep a PLAINTEXT listener ({addr}).
func saslBetweenNodesLines(interBrokerMechanism string) []string {
	return []string{
		"listeners=PLAINTEXT://{addr},CONTROLLER://{controller},SASL_PLAINTEXT://{addr2}",
		"advertised.listeners=PLAINTEXT://{addr},CONTROLLER://{controller},SASL_PLAINTEXT://{addr2}",
		"listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
		"inter.broker.listener.name=SASL_PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
		"sasl.mechanism.inter.broker.protocol=" + interBrokerMechanism,
		"sasl.mechanism.controller.protocol=PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=" + saslJAAS,
		`listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";`,
		"listener.name.controller.sasl.enabled.mechanisms=PLAIN",
		"listener.name.controller.plain.sasl.jaas.config=" + saslJAAS,
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:admin",
	}
}

// notYetServed is a produce outcome of a topic its leader does not serve
// yet.
func notYetServed(outcome string) bool {
	return outcome == "UNKNOWN_TOPIC_OR_PARTITION" || outcome == "NOT_LEADER_FOR_PARTITION" || outcome == "LEADER_NOT_AVAILABLE"
}

// TestClusterSASLBetweenNodes: with SASL/PLAIN on the controller listener
// and on the inter-broker listener, the nodes form the quorum, register,
// forward admin's CreateTopics to the active controller and replicate: a
// topic with min.insync.replicas=3 takes acks=all writes only while both
// followers fetch, as admin, over SASL. Over SCRAM-SHA-512 between
// brokers the followers cannot log in until admin's credential exists, as
// in Kafka (which adds it at format time): acks=all writes to such a topic
// fail until it is added, and succeed after.
func TestClusterSASLBetweenNodes(t *testing.T) {
	e2e(t)
	for _, mechanism := range []string{"PLAIN", "SCRAM-SHA-512"} {
		t.Run(mechanism, func(t *testing.T) {
			nodes := startCluster(t, saslBetweenNodesLines(mechanism)...)
			waitFormed(t, nodes, 30*time.Second)
			ctrl := activeController(t, nodes)
			via := nodes[0]
			if via == ctrl {
				via = nodes[1]
			}
			ctx := timeoutCtx(t, 2*time.Minute)
			admin := kadm.NewClient(newClient(t, via.addr2, user("admin")...))
			minISR := "3"
			if _, err := admin.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &minISR}, "t"); err != nil {
				t.Fatalf("CreateTopics through node %d (forwarded to the active controller %d): %v", via.id, ctrl.id, err)
			}
			produce := func() string {
				cl := newClient(t, via.addr2, append(user("admin"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(0), kgo.RequestRetries(0),
					kgo.ProduceRequestTimeout(3*time.Second), kgo.DisableIdempotentWrite())...)
				defer cl.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				return outcome(cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr())
			}
			if mechanism != "PLAIN" {
				got := produce()
				for deadline := time.Now().Add(20 * time.Second); notYetServed(got) && time.Now().Before(deadline); got = produce() {
					time.Sleep(200 * time.Millisecond)
				}
				if got == "ok" || notYetServed(got) {
					t.Fatalf("acks=all produce before admin has a %s credential: %s, want it refused (the followers cannot log in)", mechanism, got)
				}
				t.Logf("acks=all produce before admin has a %s credential: %s", mechanism, got)
				if !slices.ContainsFunc(nodes, func(n *clusterNode) bool { return strings.Contains(n.p.out.String(), "failed authentication") }) {
					t.Errorf("no node logged the followers' failed authentication")
				}
				res, err := admin.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "admin", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "admin-secret"}})
				if err != nil || res.Error() != nil {
					t.Fatalf("AlterUserScramCredentials: %v %v", err, res.Error())
				}
			}
			if got := eventually("ok", produce); got != "ok" {
				t.Fatalf("acks=all produce to a topic with min.insync.replicas=3: %s, want ok (both followers fetching over SASL/%s)", got, mechanism)
			}
			waitUntil(t, 20*time.Second, "t's ISR is its three replicas", func() (bool, string) {
				m, err := admin.Metadata(ctx, "t")
				if err != nil {
					return false, err.Error()
				}
				p, ok := m.Topics["t"].Partitions[0]
				if !ok {
					return false, fmt.Sprintf("%+v", m.Topics["t"])
				}
				isr := slices.Clone(p.ISR)
				slices.Sort(isr)
				return slices.Equal(isr, []int32{1, 2, 3}), fmt.Sprint(isr)
			})
			for _, n := range nodes {
				if out := n.p.out.String(); strings.Contains(out, "CLUSTER_AUTHORIZATION_FAILED") {
					t.Errorf("node %d logged a CLUSTER_AUTHORIZATION_FAILED: a node connection was not authenticated as admin", n.id)
				}
			}
		})
	}
}

// TestSplitClusterSASLBetweenNodes: three controllers and three
// broker-only nodes whose only listeners (CONTROLLER and PLAINTEXT) are
// SASL_PLAINTEXT with PLAIN, the StandardAuthorizer on and only
// User:admin a super user. The brokers learn the voters from
// controller.quorum.bootstrap.servers over SASL, register, and take the
// metadata log from the active controller, which logs in to their
// inter-broker listener as it logs in to controllers; a replicated topic
// then takes acks=all writes that read back whole. A fourth broker whose
// controller login has the wrong password is refused and never listed.
func TestSplitClusterSASLBetweenNodes(t *testing.T) {
	e2e(t)
	lines := []string{
		"listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT,PLAINTEXT:SASL_PLAINTEXT",
		"inter.broker.listener.name=PLAINTEXT",
		"sasl.enabled.mechanisms=PLAIN",
		"sasl.mechanism.inter.broker.protocol=PLAIN",
		"sasl.mechanism.controller.protocol=PLAIN",
		"listener.name.plaintext.plain.sasl.jaas.config=" + saslJAAS,
		"listener.name.controller.plain.sasl.jaas.config=" + saslJAAS,
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:admin",
	}
	controllers, brokers := startSplitCluster(t, true, lines...)
	var seeds []string
	for _, b := range brokers {
		seeds = append(seeds, b.addr)
	}
	admin := kadm.NewClient(newClient(t, seeds[0], append(user("admin"), kgo.SeedBrokers(seeds...))...))
	ctx := timeoutCtx(t, 2*time.Minute)
	// Each look is a new client's: a client's own metadata is cached.
	listed := func() (bool, string) {
		cl, err := kgo.NewClient(append(user("admin"), kgo.SeedBrokers(seeds...))...)
		if err != nil {
			return false, err.Error()
		}
		defer cl.Close()
		m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
		if err != nil {
			return false, err.Error()
		}
		ids := m.Brokers.NodeIDs()
		slices.Sort(ids)
		return slices.Equal(ids, []int32{4, 5, 6}), fmt.Sprint(ids)
	}
	waitUntil(t, 30*time.Second, "brokers 4-6 listed", listed)
	if _, err := admin.CreateTopic(ctx, 3, 3, nil, "split-sasl"); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, seeds[0], append(user("admin"), kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()))...)
	acked := produceAll(t, cl, "split-sasl", 0, 300)
	recs := consumeAll(t, brokers[2].addr, "split-sasl", 300, user("admin")...)
	checkLog(t, recs)
	checkAcked(t, acked, recs)

	var bootstrap []string
	for _, c := range controllers {
		bootstrap = append(bootstrap, c.addr)
	}
	base := t.TempDir()
	intruder := &clusterNode{id: 7, addr: "127.0.0.1:" + strconv.Itoa(freePort(t)), dir: filepath.Join(base, "data7"), props: filepath.Join(base, "server7.properties")}
	wrong := strings.Replace(saslJAAS, `password="admin-secret"`, `password="wrong"`, 1)
	props := append([]string{"node.id=7", "process.roles=broker", "controller.quorum.bootstrap.servers=" + strings.Join(bootstrap, ","),
		"controller.listener.names=CONTROLLER", "listeners=PLAINTEXT://" + intruder.addr, "log.dirs=" + intruder.dir}, lines...)
	props = append(props, "listener.name.controller.plain.sasl.jaas.config="+wrong)
	if err := os.WriteFile(intruder.props, []byte(strings.Join(props, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	intruder.start(t)
	waitUntil(t, 20*time.Second, "a controller logs the intruder's failed authentication", func() (bool, string) {
		for _, c := range controllers {
			if strings.Contains(c.p.out.String(), "failed authentication") {
				return true, ""
			}
		}
		return false, "none did"
	})
	if ok, ids := listed(); !ok {
		t.Fatalf("brokers listed: %s, want 4-6 only", ids)
	}
	for _, n := range append(append(slices.Clone(controllers), brokers...), intruder) {
		if strings.Contains(n.p.out.String(), "panic") {
			t.Fatalf("node %d panicked:\n%s", n.id, tail(n.p.out.String(), 4<<10))
		}
	}
}
