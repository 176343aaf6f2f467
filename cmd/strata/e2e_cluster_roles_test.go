package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startSplitCluster writes Kafka's properties of three controller-only
// nodes (ids 1-3, process.roles=controller, only a CONTROLLER listener)
// and three broker-only nodes (ids 4-6, process.roles=broker, only a
// PLAINTEXT listener), as Kafka's docs lay out a production cluster, and
// starts them all, controllers first. A controller's addr is its
// controller listener. With bootstrapOnly the files name the quorum by
// controller.quorum.bootstrap.servers alone, as Kafka 4's do, else by
// controller.quorum.voters.
func startSplitCluster(t *testing.T, bootstrapOnly bool, extra ...string) (controllers, brokers []*clusterNode) {
	t.Helper()
	base := t.TempDir()
	var voters, bootstrap []string
	for id := int32(1); id <= 6; id++ {
		n := &clusterNode{id: id, addr: "127.0.0.1:" + strconv.Itoa(freePort(t)), dir: filepath.Join(base, fmt.Sprint("data", id)),
			props: filepath.Join(base, fmt.Sprintf("server%d.properties", id))}
		if id <= 3 {
			voters = append(voters, fmt.Sprintf("%d@%s", id, n.addr))
			bootstrap = append(bootstrap, n.addr)
			controllers = append(controllers, n)
		} else {
			brokers = append(brokers, n)
		}
	}
	quorumLine := "controller.quorum.voters=" + strings.Join(voters, ",")
	if bootstrapOnly {
		quorumLine = "controller.quorum.bootstrap.servers=" + strings.Join(bootstrap, ",")
	}
	for _, n := range append(slices.Clone(controllers), brokers...) {
		lines := []string{
			"node.id=" + strconv.Itoa(int(n.id)),
			quorumLine,
			"controller.listener.names=CONTROLLER",
			"log.dirs=" + n.dir,
			"broker.session.timeout.ms=2000",
			"broker.heartbeat.interval.ms=500",
		}
		if n.id <= 3 {
			lines = append(lines, "process.roles=controller", "listeners=CONTROLLER://"+n.addr)
		} else {
			lines = append(lines, "process.roles=broker", "listeners=PLAINTEXT://"+n.addr,
				"default.replication.factor=3", "min.insync.replicas=2", "offsets.topic.replication.factor=3")
		}
		for _, l := range extra {
			lines = append(lines, strings.ReplaceAll(l, "{id}", strconv.Itoa(int(n.id))))
		}
		if err := os.WriteFile(n.props, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		n.start(t)
	}
	return controllers, brokers
}

// waitBrokersListed waits until every broker's Metadata lists brokers
// 4-6, the controllers not among them, and returns their addresses.
func waitBrokersListed(t *testing.T, brokers []*clusterNode) []string {
	t.Helper()
	var seeds []string
	for _, b := range brokers {
		seeds = append(seeds, b.addr)
		waitUntil(t, 20*time.Second, fmt.Sprintf("broker %d lists brokers 4-6", b.id), func() (bool, string) {
			m, err := metadataOf(b.addr)
			if err != nil {
				return false, err.Error()
			}
			return slices.Equal(brokerIDs(m), []int32{4, 5, 6}), fmt.Sprint(brokerIDs(m))
		})
	}
	return seeds
}

// quorumLeader is the metadata quorum's leader as DescribeQuorum through
// addr reports it, -1 while there is none.
func quorumLeader(addr string) (int32, error) {
	_, part, err := describeQuorum(addr, 1)
	if err != nil {
		return -1, err
	}
	if part.ErrorCode != 0 {
		return -1, kerr.ErrorForCode(part.ErrorCode)
	}
	return part.LeaderID, nil
}

// fullISRs reports whether every partition of topic has every replica in
// its ISR in node addr's Metadata.
func fullISRs(addr, topic string, partitions int) (bool, string) {
	m, err := metadataOf(addr, topic)
	if err != nil {
		return false, err.Error()
	}
	if len(m.Topics) != 1 || len(m.Topics[0].Partitions) != partitions {
		return false, fmt.Sprintf("%+v", m.Topics)
	}
	for _, p := range m.Topics[0].Partitions {
		if len(p.ISR) != len(p.Replicas) || p.Leader < 0 {
			return false, fmt.Sprintf("partition %d: leader %d replicas %v isr %v", p.Partition, p.Leader, p.Replicas, p.ISR)
		}
	}
	return true, ""
}

// TestClusterOfControllersAndBrokers starts three controller-only and
// three broker-only nodes from Kafka's properties and checks that: only
// the brokers are listed in Metadata, on every broker; the brokers see the
// controllers' quorum through DescribeQuorum with a controller as leader;
// a topic created through a broker (forwarded) is placed on the brokers
// alone and takes acks=all records that read back whole; a kill -9 of the
// active controller together with a partition's leader broker elects
// another controller, which moves that leadership within 1.5 s, less than
// the broker's session, while the other brokers go on taking writes and
// creating topics; and once both are restarted every ISR is full again
// and nothing acknowledged is lost.
func TestClusterOfControllersAndBrokers(t *testing.T) {
	e2e(t)
	controllers, brokers := startSplitCluster(t, false)
	seeds := waitBrokersListed(t, brokers)
	var leader int32
	waitUntil(t, 10*time.Second, "a controller leads the quorum", func() (bool, string) {
		id, err := quorumLeader(brokers[0].addr)
		leader = id
		return err == nil && id >= 1 && id <= 3, fmt.Sprint(id, err)
	})

	cl := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()))
	createReplicated := func(via *clusterNode, topic string) {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		req.TimeoutMillis = 10000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 3, 3
		req.Topics = append(req.Topics, rt)
		var code int16
		waitUntil(t, 20*time.Second, "CreateTopics "+topic+" through broker "+strconv.Itoa(int(via.id)), func() (bool, string) {
			resp, err := request(via.addr, req)
			if err != nil {
				return false, err.Error()
			}
			code = resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
			return code == 0 || code == kerr.TopicAlreadyExists.Code, fmt.Sprint(kerr.ErrorForCode(code))
		})
		m, err := metadataOf(via.addr, topic)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m.Topics[0].Partitions {
			if slices.ContainsFunc(p.Replicas, func(r int32) bool { return r <= 3 }) {
				t.Fatalf("%s[%d] has replicas %v: a controller-only node holds a replica", topic, p.Partition, p.Replicas)
			}
		}
	}
	createReplicated(brokers[1], "split-a")
	acked := produceAll(t, cl, "split-a", 0, 300)

	var ctrl *clusterNode
	for _, c := range controllers {
		if c.id == leader {
			ctrl = c
		}
	}
	m, err := metadataOf(brokers[0].addr, "split-a")
	if err != nil {
		t.Fatal(err)
	}
	victimID := m.Topics[0].Partitions[0].Leader
	victim := brokers[slices.IndexFunc(brokers, func(b *clusterNode) bool { return b.id == victimID })]
	var survivor *clusterNode
	for _, b := range brokers {
		if b != victim {
			survivor = b
		}
	}
	// The active controller and a leader broker die together, as when a
	// rack is lost: no heartbeat of the broker ever reaches the next
	// controller, so no connection of its closes to say it died.
	ctrl.p.kill()
	victim.p.kill()
	waitUntil(t, 10*time.Second, "another controller leads the quorum", func() (bool, string) {
		id, err := quorumLeader(survivor.addr)
		return err == nil && id >= 1 && id <= 3 && id != leader, fmt.Sprint(id, err)
	})
	took := waitUntil(t, 10*time.Second, "split-a[0] gets a new leader", func() (bool, string) {
		m, err := metadataOf(survivor.addr, "split-a")
		if err != nil {
			return false, err.Error()
		}
		p := m.Topics[0].Partitions[0]
		return p.Leader >= 4 && p.Leader != victimID, fmt.Sprintf("leader %d isr %v", p.Leader, p.ISR)
	})
	t.Logf("split-a[0]: a new leader %v after the new controller was known, broker %d killed with the old one", took, victimID)
	// The new controller found the broker's listener refusing connections;
	// its session (2 s) would have fenced it only later.
	if took > 1500*time.Millisecond {
		t.Fatalf("split-a[0] got a new leader %v after the new controller: the session ran out, nothing saw the broker die", took)
	}
	createReplicated(survivor, "split-b")
	acked = append(acked, produceAll(t, cl, "split-a", 300, 600)...)

	ctrl.start(t)
	victim.start(t)
	for _, topic := range []string{"split-a", "split-b"} {
		waitUntil(t, 30*time.Second, topic+"'s ISRs full again", func() (bool, string) { return fullISRs(survivor.addr, topic, 3) })
	}
	got := consumeAll(t, survivor.addr, "split-a", len(acked))
	seen := map[string]bool{}
	for _, r := range got {
		seen[string(r.Value)] = true
	}
	for _, r := range acked {
		if !seen[string(r.Value)] {
			t.Fatalf("acknowledged record %s at %s[%d]@%d was not read back", r.Value, r.Topic, r.Partition, r.Offset)
		}
	}
	for _, c := range controllers {
		if _, err := metadataOf(c.addr); err == nil {
			t.Fatalf("controller %d answered Metadata on its controller listener", c.id)
		}
	}
}

// TestClusterLearnsItsVotersFromBootstrapServers starts nodes whose files
// name the quorum only by controller.quorum.bootstrap.servers, as Kafka 4's
// do (Kafka's format step then names the initial controllers): three
// combined nodes, started at once, and three controllers with three
// brokers. It checks that each cluster forms with one cluster id, takes
// acks=all writes on an RF=3 topic, and that a controller killed and
// restarted comes back with the voters it kept and no one to ask: the
// others are stopped first.
func TestClusterLearnsItsVotersFromBootstrapServers(t *testing.T) {
	e2e(t)
	base := t.TempDir()
	var nodes []*clusterNode
	var bootstrap []string
	ctrl := map[int32]string{}
	for id := int32(1); id <= 3; id++ {
		n := &clusterNode{id: id, addr: "127.0.0.1:" + strconv.Itoa(freePort(t)), dir: filepath.Join(base, fmt.Sprint("data", id)),
			props: filepath.Join(base, fmt.Sprintf("server%d.properties", id))}
		ctrl[id] = "127.0.0.1:" + strconv.Itoa(freePort(t))
		bootstrap = append(bootstrap, ctrl[id])
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		lines := []string{"process.roles=broker,controller", "node.id=" + strconv.Itoa(int(n.id)),
			"controller.quorum.bootstrap.servers=" + strings.Join(bootstrap, ","),
			"listeners=PLAINTEXT://" + n.addr + ",CONTROLLER://" + ctrl[n.id], "controller.listener.names=CONTROLLER",
			"log.dirs=" + n.dir, "default.replication.factor=3", "min.insync.replicas=2"}
		if err := os.WriteFile(n.props, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// Started together: each waits for the others to learn the voters
		// before it serves clients.
		n.p = launchArgs(t, n.dir, n.addr, n.props)
	}
	for _, n := range nodes {
		n.p.waitReady(30 * time.Second)
	}
	waitFormed(t, nodes, 20*time.Second)
	ids := map[string]bool{}
	for _, n := range nodes {
		m, err := metadataOf(n.addr)
		if err != nil {
			t.Fatal(err)
		}
		ids[*m.ClusterID] = true
	}
	if len(ids) != 1 {
		t.Fatalf("cluster ids %v: the nodes learned different voters", ids)
	}
	cl := newClient(t, nodes[0].addr, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.AllowAutoTopicCreation())
	produceAll(t, cl, "learned", 0, 100)

	controllers, brokers := startSplitCluster(t, true)
	seeds := waitBrokersListed(t, brokers)
	split := newClient(t, seeds[0], kgo.SeedBrokers(seeds...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.AllowAutoTopicCreation())
	produceAll(t, split, "learned", 0, 100)

	// Controller 3 comes back alone: the voters it kept are enough to
	// start; it rejoins once the others are back.
	for _, c := range controllers {
		c.p.kill()
	}
	controllers[2].start(t)
	controllers[2].p.waitLog(regexp.MustCompile(`"voters": "1@`), 5*time.Second)
	controllers[0].start(t)
	controllers[1].start(t)
	waitUntil(t, 20*time.Second, "a controller leads the quorum again", func() (bool, string) {
		id, err := quorumLeader(brokers[0].addr)
		return err == nil && id >= 1 && id <= 3, fmt.Sprint(id, err)
	})
	produceAll(t, split, "learned", 100, 200)
}
