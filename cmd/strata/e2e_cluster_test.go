package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/protocol"
)

// clusterNode is one strata process of a three-node cluster, started from
// a Kafka-style combined-mode server.properties.
type clusterNode struct {
	id    int32
	addr  string // the client listener
	addr2 string // a free address for a second client listener: {addr2} in startCluster's extra lines
	props string // the server.properties file
	dir   string
	p     *proc
}

// startCluster writes three Kafka-style server.properties (the voters,
// listeners with a CONTROLLER listener, no format step) and starts a
// strata process on each; extra lines go in every file, {id} in them
// replaced by the node's id, {addr}, {addr2} and {controller} by its
// client address, addr2 and controller listener's address.
func startCluster(t *testing.T, extra ...string) []*clusterNode {
	t.Helper()
	base := t.TempDir()
	var nodes []*clusterNode
	var voters []string
	ctrl := map[int32]string{}
	for i := int32(1); i <= 3; i++ {
		n := &clusterNode{id: i, addr: "127.0.0.1:" + strconv.Itoa(freePort(t)), addr2: "127.0.0.1:" + strconv.Itoa(freePort(t)), dir: filepath.Join(base, fmt.Sprint("data", i)),
			props: filepath.Join(base, fmt.Sprintf("server%d.properties", i))}
		ctrl[i] = "127.0.0.1:" + strconv.Itoa(freePort(t))
		voters = append(voters, fmt.Sprintf("%d@%s", i, ctrl[i]))
		nodes = append(nodes, n)
	}
	for _, n := range nodes {
		var bootstrap []string
		for _, v := range voters {
			_, a, _ := strings.Cut(v, "@")
			bootstrap = append(bootstrap, a)
		}
		lines := []string{
			"process.roles=broker,controller",
			"node.id=" + strconv.Itoa(int(n.id)),
			"controller.quorum.voters=" + strings.Join(voters, ","),
			"controller.quorum.bootstrap.servers=" + strings.Join(bootstrap, ","),
			"listeners=PLAINTEXT://" + n.addr + ",CONTROLLER://" + ctrl[n.id],
			"advertised.listeners=PLAINTEXT://" + n.addr + ",CONTROLLER://" + ctrl[n.id],
			"controller.listener.names=CONTROLLER",
			"inter.broker.listener.name=PLAINTEXT",
			"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
			"log.dirs=" + n.dir,
		}
		for _, l := range extra {
			lines = append(lines, strings.NewReplacer("{id}", strconv.Itoa(int(n.id)), "{addr}", n.addr, "{addr2}", n.addr2, "{controller}", ctrl[n.id]).Replace(l))
		}
		if err := os.WriteFile(n.props, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		n.start(t)
	}
	return nodes
}

func (n *clusterNode) start(t *testing.T) {
	n.p = launchArgs(t, n.dir, n.addr, n.props)
	n.p.waitReady(30 * time.Second)
}

// request sends req to addr on a connection of its own.
func request(addr string, req kmsg.Request) (kmsg.Response, error) {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	return roundTrip(nc, req)
}

// roundTrip sends req on nc, framed with opts (a client id), and reads
// its response.
func roundTrip(nc net.Conn, req kmsg.Request, opts ...kmsg.RequestFormatterOpt) (kmsg.Response, error) {
	nc.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := nc.Write(kmsg.NewRequestFormatter(opts...).AppendRequest(nil, req, 1)); err != nil {
		return nil, err
	}
	frame, err := protocol.ReadFrame(bufio.NewReader(nc), 64<<20, nil)
	if err != nil {
		return nil, err
	}
	if len(frame) < 4 || binary.BigEndian.Uint32(frame) != 1 {
		return nil, fmt.Errorf("bad response header")
	}
	body := frame[4:]
	if protocol.FlexibleResponseHeader(req.Key(), req.GetVersion()) {
		body = body[1:] // no tagged fields
	}
	resp := req.ResponseKind()
	return resp, resp.ReadFrom(body)
}

// metadataOf is node addr's Metadata for topics (nil: none), v12.
func metadataOf(addr string, topics ...string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := request(addr, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

func brokerIDs(m *kmsg.MetadataResponse) []int32 {
	var ids []int32
	for _, b := range m.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids
}

// waitUntil polls cond every 5 ms until it holds, failing after timeout;
// it returns how long it took.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	for {
		ok, state := cond()
		if ok {
			return time.Since(start)
		}
		last = state
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %v; last: %s", what, timeout, last)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var activeControllerLine = regexp.MustCompile(`this node is the active controller`)

// activeController is the node that last logged becoming the active
// controller and is still running.
// waitFormed waits until every node's Metadata lists the three brokers.
func waitFormed(t *testing.T, nodes []*clusterNode, timeout time.Duration) {
	t.Helper()
	for _, n := range nodes {
		waitUntil(t, timeout, fmt.Sprintf("node %d lists 3 brokers", n.id), func() (bool, string) {
			m, err := metadataOf(n.addr)
			if err != nil {
				return false, err.Error()
			}
			return slices.Equal(brokerIDs(m), []int32{1, 2, 3}), fmt.Sprint(brokerIDs(m))
		})
	}
}

func activeController(t *testing.T, nodes []*clusterNode) *clusterNode {
	t.Helper()
	var found *clusterNode
	waitUntil(t, 10*time.Second, "an active controller", func() (bool, string) {
		for _, n := range nodes {
			select {
			case <-n.p.done:
				continue
			default:
			}
			if activeControllerLine.MatchString(n.p.out.String()) && strings.LastIndex(n.p.out.String(), "no longer the active controller") <
				strings.LastIndex(n.p.out.String(), "this node is the active controller") {
				found = n
				return true, ""
			}
		}
		return false, "none logged"
	})
	return found
}

// createAssigned sends CreateTopics for topic with the replica assignment
// given (partition p on replicas[p]) to addr.
func createAssigned(addr, topic string, replicas [][]int32) (*kmsg.CreateTopicsResponse, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, r := range replicas {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), r
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := request(addr, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.CreateTopicsResponse), nil
}

// TestClusterFormsAndFencesAKilledBroker starts three nodes from Kafka's
// combined-mode properties and checks that every node lists the three
// brokers under one cluster id (in Metadata and DescribeCluster); that
// each node hands out producer ids of its own block; that a
// CreateTopics sent to a node that is not the active controller is
// forwarded and its partitions appear on every node, with a replica
// assignment or a replication factor of 1, and so do an
// IncrementalAlterConfigs and a topic auto-created by Metadata; that kill -9 of a
// broker takes it out of Metadata within a second (its heartbeat
// connection closed), its partitions electing the next ISR member with a
// new leader epoch, or no leader when it was the last; and that once
// restarted it registers again, is listed, and leads its leaderless
// partition again.
func TestClusterFormsAndFencesAKilledBroker(t *testing.T) {
	e2e(t)
	nodes := startCluster(t)
	var clusterID string
	for _, n := range nodes {
		waitUntil(t, 15*time.Second, fmt.Sprintf("node %d lists 3 brokers", n.id), func() (bool, string) {
			m, err := metadataOf(n.addr)
			if err != nil {
				return false, err.Error()
			}
			return slices.Equal(brokerIDs(m), []int32{1, 2, 3}) && m.ClusterID != nil, fmt.Sprint(brokerIDs(m))
		})
		m, _ := metadataOf(n.addr)
		if clusterID == "" {
			clusterID = *m.ClusterID
		}
		if *m.ClusterID != clusterID {
			t.Fatalf("node %d: cluster id %s, node 1's is %s", n.id, *m.ClusterID, clusterID)
		}
		resp, err := request(n.addr, kmsg.NewPtrDescribeClusterRequest())
		if err != nil {
			t.Fatal(err)
		}
		if dc := resp.(*kmsg.DescribeClusterResponse); dc.ClusterID != clusterID || len(dc.Brokers) != 3 {
			t.Fatalf("node %d: DescribeCluster %s with %d brokers, want %s with 3", n.id, dc.ClusterID, len(dc.Brokers), clusterID)
		}
	}

	// Each node hands out producer ids from its own block, allocated by the
	// controller.
	blocks := map[int64]int32{}
	for _, n := range nodes {
		var id int64
		waitUntil(t, 10*time.Second, fmt.Sprintf("node %d hands out a producer id", n.id), func() (bool, string) {
			resp, err := request(n.addr, kmsg.NewPtrInitProducerIDRequest())
			if err != nil {
				return false, err.Error()
			}
			r := resp.(*kmsg.InitProducerIDResponse)
			id = r.ProducerID
			return r.ErrorCode == 0, fmt.Sprint(kerr.ErrorForCode(r.ErrorCode))
		})
		if other, dup := blocks[id/1000]; dup {
			t.Fatalf("nodes %d and %d hand out producer ids of one block: %d", other, n.id, id)
		}
		blocks[id/1000] = n.id
	}

	ctrl := activeController(t, nodes)
	var others []*clusterNode
	for _, n := range nodes {
		if n != ctrl {
			others = append(others, n)
		}
	}
	victim, survivor := others[0], others[1]
	// p0 (spread-0): victim leads, survivor in its ISR; p1 (solo-0):
	// victim alone; p2 (spread-1): survivor leads, victim in its ISR.
	for topic, assignment := range map[string][][]int32{
		"spread": {{victim.id, survivor.id}, {survivor.id, victim.id}},
		"solo":   {{victim.id}},
	} {
		resp, err := createAssigned(survivor.addr, topic, assignment)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("CreateTopics on node %d, not the controller: %+v", survivor.id, resp.Topics)
		}
	}
	var before map[int32]kmsg.MetadataResponseTopicPartition
	for _, n := range nodes {
		waitUntil(t, 10*time.Second, fmt.Sprintf("node %d has the topics", n.id), func() (bool, string) {
			m, err := metadataOf(n.addr, "spread", "solo")
			if err != nil {
				return false, err.Error()
			}
			var ok bool
			before, ok = threePartitions(m)
			return ok, fmt.Sprintf("%+v", m.Topics)
		})
	}
	if before[0].Leader != victim.id || before[1].Leader != victim.id || before[2].Leader != survivor.id {
		t.Fatalf("leaders before the kill: %+v", before)
	}

	// A CreateTopics with a replication factor and no assignment, a config
	// change and a topic auto-created by Metadata, on a node that is not
	// the controller, go through the controller too.
	plain := kmsg.NewPtrCreateTopicsRequest()
	plain.SetVersion(7)
	plain.TimeoutMillis = 10000
	pt := kmsg.NewCreateTopicsRequestTopic()
	pt.Topic, pt.NumPartitions, pt.ReplicationFactor = "plain", 3, 1
	plain.Topics = append(plain.Topics, pt)
	if resp, err := request(survivor.addr, plain); err != nil || resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics with replication factor 1 on node %d: %v %+v", survivor.id, err, resp)
	}
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "spread"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "retention.ms", kmsg.StringPtr("1234")
	res.Configs = append(res.Configs, c)
	alter.Resources = append(alter.Resources, res)
	if resp, err := request(survivor.addr, alter); err != nil || resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode != 0 {
		t.Fatalf("IncrementalAlterConfigs on node %d: %v %+v", survivor.id, err, resp)
	}
	auto := kmsg.NewPtrMetadataRequest()
	auto.SetVersion(12)
	auto.AllowAutoTopicCreation = true
	at := kmsg.NewMetadataRequestTopic()
	at.Topic = kmsg.StringPtr("auto")
	auto.Topics = append(auto.Topics, at)
	if _, err := request(survivor.addr, auto); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		waitUntil(t, 10*time.Second, fmt.Sprintf("node %d has the config and the two topics", n.id), func() (bool, string) {
			describe := kmsg.NewPtrDescribeConfigsRequest()
			dr := kmsg.NewDescribeConfigsRequestResource()
			dr.ResourceType, dr.ResourceName, dr.ConfigNames = kmsg.ConfigResourceTypeTopic, "spread", []string{"retention.ms"}
			describe.Resources = append(describe.Resources, dr)
			resp, err := request(n.addr, describe)
			if err != nil {
				return false, err.Error()
			}
			d := resp.(*kmsg.DescribeConfigsResponse)
			if len(d.Resources) != 1 || len(d.Resources[0].Configs) != 1 || d.Resources[0].Configs[0].Value == nil || *d.Resources[0].Configs[0].Value != "1234" {
				return false, fmt.Sprintf("configs %+v", d.Resources)
			}
			m, err := metadataOf(n.addr, "auto", "plain")
			if err != nil {
				return false, err.Error()
			}
			return m.Topics[0].ErrorCode == 0 && len(m.Topics[0].Partitions) == 1 && m.Topics[1].ErrorCode == 0 && len(m.Topics[1].Partitions) == 3,
				fmt.Sprintf("%+v", m.Topics)
		})
	}

	victim.p.kill()
	killed := time.Now()
	var after map[int32]kmsg.MetadataResponseTopicPartition
	for _, n := range []*clusterNode{ctrl, survivor} {
		waitUntil(t, 5*time.Second, fmt.Sprintf("node %d sees node %d fenced", n.id, victim.id), func() (bool, string) {
			m, err := metadataOf(n.addr, "spread", "solo")
			var ok bool
			if after, ok = threePartitions(m); err != nil || !ok {
				return false, fmt.Sprint(err)
			}
			return !slices.Contains(brokerIDs(m), victim.id) && after[0].Leader == survivor.id && after[1].Leader == -1,
				fmt.Sprintf("brokers %v, partitions %+v", brokerIDs(m), after)
		})
	}
	fenced := time.Since(killed)
	t.Logf("kill -9 of node %d: every other node's Metadata left it out, its partitions re-elected, %v after the kill", victim.id, fenced)
	if fenced > time.Second {
		t.Errorf("fencing took %v after kill -9, want under 1s", fenced)
	}
	if after[0].LeaderEpoch != before[0].LeaderEpoch+1 || !slices.Equal(after[0].ISR, []int32{survivor.id}) {
		t.Errorf("partition 0 after the kill: %+v, want leader epoch %d and ISR [%d]", after[0], before[0].LeaderEpoch+1, survivor.id)
	}
	if after[1].LeaderEpoch != before[1].LeaderEpoch+1 || !slices.Equal(after[1].ISR, []int32{victim.id}) {
		t.Errorf("partition 1 after the kill: %+v, want no leader at epoch %d, its ISR kept [%d]", after[1], before[1].LeaderEpoch+1, victim.id)
	}
	if after[2].Leader != survivor.id || after[2].LeaderEpoch != before[2].LeaderEpoch || !slices.Equal(after[2].ISR, []int32{survivor.id}) {
		t.Errorf("partition 2 after the kill: %+v, want its leader kept at epoch %d, ISR [%d]", after[2], before[2].LeaderEpoch, survivor.id)
	}

	victim.start(t)
	for _, n := range nodes {
		waitUntil(t, 15*time.Second, fmt.Sprintf("node %d lists the restarted node %d", n.id, victim.id), func() (bool, string) {
			m, err := metadataOf(n.addr, "spread", "solo")
			parts, ok := threePartitions(m)
			if err != nil || !ok {
				return false, fmt.Sprint(err)
			}
			p1 := parts[1]
			return slices.Equal(brokerIDs(m), []int32{1, 2, 3}) && p1.Leader == victim.id && p1.LeaderEpoch == after[1].LeaderEpoch+1,
				fmt.Sprintf("brokers %v, partition 1 %+v", brokerIDs(m), p1)
		})
	}
}

// threePartitions are spread-0, solo-0 and spread-1 as partitions 0, 1
// and 2, ok false until m has them all.
func threePartitions(m *kmsg.MetadataResponse) (map[int32]kmsg.MetadataResponseTopicPartition, bool) {
	out := map[int32]kmsg.MetadataResponseTopicPartition{}
	if m == nil {
		return out, false
	}
	for _, t := range m.Topics {
		for _, p := range t.Partitions {
			switch {
			case t.Topic == nil:
			case *t.Topic == "spread" && p.Partition == 0:
				out[0] = p
			case *t.Topic == "solo" && p.Partition == 0:
				out[1] = p
			case *t.Topic == "spread" && p.Partition == 1:
				out[2] = p
			}
		}
	}
	return out, len(out) == 3
}

// TestClusterReplacesAKilledController kills -9 the active controller and
// checks that another node becomes the active controller and a
// CreateTopics sent to a surviving node succeeds again, and that the
// killed node, and only it, leaves Metadata well before
// broker.session.timeout.ms: its heartbeats went to itself, so no
// connection of the new controller's closed, but the new controller finds
// its predecessor's controller listener refusing connections.
func TestClusterReplacesAKilledController(t *testing.T) {
	e2e(t)
	// A follower that noticed the kill (metadata/quorum/election.go)
	// elects after half of raft's heartbeat timeout, and the new controller
	// fences the killed one at once: both before the heartbeat timeout,
	// when a follower that waited it out would only start an election,
	// and long before the session timeout.
	const sessionTimeout, fetchTimeout = 10 * time.Second, 4 * time.Second
	nodes := startCluster(t, "broker.heartbeat.interval.ms=200", fmt.Sprintf("broker.session.timeout.ms=%d", sessionTimeout.Milliseconds()),
		fmt.Sprintf("controller.quorum.fetch.timeout.ms=%d", fetchTimeout.Milliseconds()))
	waitFormed(t, nodes, 4*fetchTimeout)
	ctrl := activeController(t, nodes)
	var others []*clusterNode
	for _, n := range nodes {
		if n != ctrl {
			others = append(others, n)
		}
	}
	// others[0] forwards to the controller before its kill, and to the new
	// one after.
	if resp, err := createAssigned(others[0].addr, "before", [][]int32{{others[0].id}}); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics before the kill: %v %+v", err, resp)
	}
	ctrl.p.kill()
	killed := time.Now()
	took := waitUntil(t, 10*time.Second, "CreateTopics after the controller's kill", func() (bool, string) {
		resp, err := createAssigned(others[0].addr, "after", [][]int32{{others[0].id}, {others[1].id}})
		if err != nil {
			return false, err.Error()
		}
		if code := resp.Topics[0].ErrorCode; code != 0 {
			return false, kerr.ErrorForCode(code).Error()
		}
		return true, ""
	})
	t.Logf("kill -9 of the active controller, node %d: a CreateTopics succeeded %v after", ctrl.id, took)
	next := activeController(t, others)
	t.Logf("node %d is the new active controller", next.id)
	waitUntil(t, 5*time.Second, "the killed controller leaves Metadata", func() (bool, string) {
		m, err := metadataOf(others[1].addr, "after")
		if err != nil {
			return false, err.Error()
		}
		survivors := []int32{others[0].id, others[1].id}
		slices.Sort(survivors)
		return slices.Equal(brokerIDs(m), survivors) && len(m.Topics) == 1 && m.Topics[0].ErrorCode == 0, fmt.Sprint(brokerIDs(m))
	})
	fenced := time.Since(killed)
	t.Logf("the killed controller, node %d, was fenced %v after its kill", ctrl.id, fenced)
	if fenced > fetchTimeout {
		t.Errorf("the killed controller was fenced %v after its kill, want before controller.quorum.fetch.timeout.ms (%v)", fenced, fetchTimeout)
	}
}

// TestClusterStopsAControllerCleanly sends SIGTERM to the active
// controller and checks that it exits cleanly after a controlled
// shutdown (it logs it; the others' Metadata leave it out and its
// partition has the next ISR member as leader), and a CreateTopics on another node
// succeeds within 400ms, its leadership having been handed on rather than
// won in an election.
func TestClusterStopsAControllerCleanly(t *testing.T) {
	e2e(t)
	nodes := startCluster(t)
	waitFormed(t, nodes, 15*time.Second)
	ctrl := activeController(t, nodes)
	var others []*clusterNode
	for _, n := range nodes {
		if n != ctrl {
			others = append(others, n)
		}
	}
	if resp, err := createAssigned(others[0].addr, "moved", [][]int32{{ctrl.id, others[1].id}}); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics: %v %+v", err, resp)
	}
	waitUntil(t, 10*time.Second, "the topic on every surviving node", func() (bool, string) {
		for _, n := range others {
			if m, err := metadataOf(n.addr, "moved"); err != nil || m.Topics[0].ErrorCode != 0 {
				return false, fmt.Sprint(err)
			}
		}
		return true, ""
	})
	stopped := time.Now()
	if code := ctrl.p.signal(syscall.SIGTERM, 20*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
	t.Logf("the active controller, node %d, exited %v after SIGTERM", ctrl.id, time.Since(stopped))
	// The fencing was committed before the exit; a follower learns of the
	// commit with the next leader's first entry.
	waitUntil(t, 2*time.Second, "the stopped controller left out, its partition moved", func() (bool, string) {
		m, err := metadataOf(others[1].addr, "moved")
		if err != nil {
			return false, err.Error()
		}
		return !slices.Contains(brokerIDs(m), ctrl.id) && m.Topics[0].Partitions[0].Leader == others[1].id,
			fmt.Sprintf("brokers %v, partition %+v", brokerIDs(m), m.Topics[0].Partitions[0])
	})
	if !strings.Contains(ctrl.p.out.String(), "controlled shutdown: the controller moved this broker's leadership") {
		t.Error("the stopped controller logged no controlled shutdown")
	}
	took := waitUntil(t, 10*time.Second, "CreateTopics after the controller stopped", func() (bool, string) {
		resp, err := createAssigned(others[0].addr, "after", [][]int32{{others[0].id}})
		if err != nil {
			return false, err.Error()
		}
		return resp.Topics[0].ErrorCode == 0, fmt.Sprint(kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	})
	t.Logf("a CreateTopics succeeded %v after the old controller exited", took)
	if took > 400*time.Millisecond {
		t.Errorf("the leadership took %v to move; an election timeout is 500ms, a hand-over milliseconds", took)
	}
}

// TestClusterForwardsAfterAnIdlePause checks that a node forwards a
// CreateTopics after its connection to the controller has been unused for
// longer than connections.max.idle.ms, when the controller has closed it:
// the forwarder redials instead of answering NOT_CONTROLLER.
func TestClusterForwardsAfterAnIdlePause(t *testing.T) {
	e2e(t)
	nodes := startCluster(t, "connections.max.idle.ms=600", "broker.heartbeat.interval.ms=100")
	waitFormed(t, nodes, 15*time.Second)
	ctrl := activeController(t, nodes)
	var other *clusterNode
	for _, n := range nodes {
		if n != ctrl {
			other = n
		}
	}
	for i, topic := range []string{"first", "second"} {
		if i > 0 {
			time.Sleep(time.Second) // the pause itself: the controller closes the idle connection
		}
		resp, err := createAssigned(other.addr, topic, [][]int32{{other.id}})
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.Topics[0].ErrorCode; code != 0 {
			t.Fatalf("CreateTopics %s on node %d: %v", topic, other.id, kerr.ErrorForCode(code))
		}
	}
}

// TestClusterCreateTopicsAnswersOnceTheNodeKnowsTheTopic checks that a
// CreateTopics sent to a node that is not the active controller is
// answered only once that node has the topic: the client's next Metadata
// to the same node lists it, with no retry.
func TestClusterCreateTopicsAnswersOnceTheNodeKnowsTheTopic(t *testing.T) {
	e2e(t)
	nodes := startCluster(t)
	waitFormed(t, nodes, 15*time.Second)
	ctrl := activeController(t, nodes)
	for _, other := range nodes {
		if other == ctrl {
			continue
		}
		for i := range 5 {
			topic := fmt.Sprintf("known-%d-%d", other.id, i)
			resp, err := createAssigned(other.addr, topic, [][]int32{{1, 2, 3}})
			if err != nil {
				t.Fatal(err)
			}
			if code := resp.Topics[0].ErrorCode; code != 0 {
				t.Fatalf("CreateTopics %s on node %d: %v", topic, other.id, kerr.ErrorForCode(code))
			}
			m, err := metadataOf(other.addr, topic)
			if err != nil {
				t.Fatal(err)
			}
			if code := m.Topics[0].ErrorCode; code != 0 || len(m.Topics[0].Partitions) != 1 {
				t.Fatalf("node %d, right after answering CreateTopics %s: Metadata says %v with %d partitions", other.id, topic, kerr.ErrorForCode(code), len(m.Topics[0].Partitions))
			}
		}
	}
}
