package main

import (
	"fmt"
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
)

// regexp7Observer is node 7's line saying it waits to be added.
var regexp7Observer = regexp.MustCompile(`not one of the voters: an observer`)

// quorumVoters are the voter ids DescribeQuorum through addr reports,
// sorted.
func quorumVoters(addr string) ([]int32, error) {
	_, part, err := describeQuorum(addr, 1)
	if err != nil {
		return nil, err
	}
	if part.ErrorCode != 0 {
		return nil, kerr.ErrorForCode(part.ErrorCode)
	}
	var ids []int32
	for _, v := range part.CurrentVoters {
		ids = append(ids, v.ReplicaID)
	}
	slices.Sort(ids)
	return ids, nil
}

// TestClusterChangesItsVoters adds a fourth controller to a running
// quorum of three with Kafka's own kafka-metadata-quorum add-controller,
// through a broker, then, asking a controller directly
// (--bootstrap-controller), describes the quorum (the brokers its
// observers) and removes controller 1 with remove-controller. The
// new controller, started with only controller.quorum.bootstrap.servers,
// is an observer until added; once it is a voter and 1 is gone, killing
// controllers 1 and 2 leaves the quorum {3, 7} its majority: a topic is
// still created, which only a quorum that counts 7 and not 1 can commit.
func TestClusterChangesItsVoters(t *testing.T) {
	e2e(t)
	controllers, brokers := startSplitCluster(t, false)
	via := brokers[0].addr
	waitUntil(t, 20*time.Second, "a controller leads the quorum", func() (bool, string) {
		id, err := quorumLeader(via)
		return err == nil && id >= 1 && id <= 3, fmt.Sprint(id, err)
	})

	var bootstrap []string
	for _, c := range controllers {
		bootstrap = append(bootstrap, c.addr)
	}
	dir := t.TempDir()
	n7 := &clusterNode{id: 7, addr: "127.0.0.1:" + strconv.Itoa(freePort(t)), dir: filepath.Join(dir, "data7"),
		props: filepath.Join(dir, "server7.properties")}
	lines := []string{"process.roles=controller", "node.id=7", "controller.quorum.bootstrap.servers=" + strings.Join(bootstrap, ","),
		"listeners=CONTROLLER://" + n7.addr, "controller.listener.names=CONTROLLER", "log.dirs=" + n7.dir}
	if err := os.WriteFile(n7.props, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n7.start(t)
	n7.p.waitLog(regexp7Observer, 10*time.Second)
	if ids, err := quorumVoters(via); err != nil || !slices.Equal(ids, []int32{1, 2, 3}) {
		t.Fatalf("voters before add-controller: %v, %v", ids, err)
	}

	out := kafkaTool(t, "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-server", via, "--command-config", n7.props, "add-controller")
	if !strings.Contains(out, "Added controller 7") {
		t.Fatalf("add-controller: %s", out)
	}
	if ids, err := quorumVoters(via); err != nil || !slices.Equal(ids, []int32{1, 2, 3, 7}) {
		t.Fatalf("voters after add-controller: %v, %v", ids, err)
	}
	// Straight to the controllers (KIP-919): DescribeCluster on a
	// controller listener names the active controller.
	status := kafkaTool(t, "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-controller", controllers[2].addr, "describe", "--status")
	if want := `{"id": 7, "endpoints": ["CONTROLLER://` + n7.addr + `"]}`; !strings.Contains(status, want) {
		t.Fatalf("describe --status through a controller lacks voter %s:\n%s", want, status)
	}
	observers := regexp.MustCompile(`CurrentObservers: +\[.*\]`).FindString(status)
	for _, id := range []string{"4", "5", "6"} {
		if !strings.Contains(observers, `{"id": `+id+`}`) {
			t.Fatalf("describe --status through a controller: observers %q lack broker %s:\n%s", observers, id, status)
		}
	}
	out = kafkaTool(t, "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-controller", controllers[2].addr, "remove-controller",
		"--controller-id", "1", "--controller-directory-id", "AAAAAAAAAAAAAAAAAAAAAA")
	if !strings.Contains(out, "KRaft controller 1 with directory id") {
		t.Fatalf("remove-controller: %s", out)
	}
	waitUntil(t, 10*time.Second, "voters 2, 3, 7", func() (bool, string) {
		ids, err := quorumVoters(via)
		return err == nil && slices.Equal(ids, []int32{2, 3, 7}), fmt.Sprint(ids, err)
	})

	controllers[0].p.kill()
	controllers[1].p.kill()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "after-the-change", 1, 3
	req.Topics = append(req.Topics, rt)
	waitUntil(t, 20*time.Second, "a topic created with controllers 3 and 7 alone", func() (bool, string) {
		resp, err := request(via, req)
		if err != nil {
			return false, err.Error()
		}
		code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
		return code == 0 || code == kerr.TopicAlreadyExists.Code, fmt.Sprint(kerr.ErrorForCode(code))
	})
	if id, err := quorumLeader(via); err != nil || (id != 3 && id != 7) {
		t.Fatalf("quorum leader %d, %v; want 3 or 7", id, err)
	}
}

// quorumObservers are the observer ids DescribeQuorum through addr
// reports, sorted.
func quorumObservers(addr string) ([]int32, error) {
	_, part, err := describeQuorum(addr, 1)
	if err != nil {
		return nil, err
	}
	var ids []int32
	for _, o := range part.Observers {
		ids = append(ids, o.ReplicaID)
	}
	slices.Sort(ids)
	return ids, nil
}

// TestClusterUnregistersABroker stops broker-only node 6 and unregisters
// it with Kafka's kafka-cluster unregister through broker 4: Metadata
// lists 4 and 5, the quorum no longer has 6 as an observer, a second
// unregister is BROKER_ID_NOT_REGISTERED, and 6 started again registers
// and is both back.
func TestClusterUnregistersABroker(t *testing.T) {
	e2e(t)
	_, brokers := startSplitCluster(t, false)
	waitBrokersListed(t, brokers)
	via := brokers[0].addr
	waitUntil(t, 10*time.Second, "observers 4, 5, 6", func() (bool, string) {
		ids, err := quorumObservers(via)
		return err == nil && slices.Equal(ids, []int32{4, 5, 6}), fmt.Sprint(ids, err)
	})
	if code := brokers[2].p.signal(syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("broker 6 exited %d", code)
	}
	kafkaTool(t, "org.apache.kafka.tools.ClusterTool", "unregister", "--bootstrap-server", via, "--id", "6")
	m, err := metadataOf(via)
	if err != nil || !slices.Equal(brokerIDs(m), []int32{4, 5}) {
		t.Fatalf("brokers after unregister: %v, %v", brokerIDs(m), err)
	}
	if ids, err := quorumObservers(via); err != nil || !slices.Equal(ids, []int32{4, 5}) {
		t.Fatalf("observers after unregister: %v, %v", ids, err)
	}
	again := kmsg.NewPtrUnregisterBrokerRequest()
	again.BrokerID = 6
	resp, err := request(via, again)
	if err != nil || resp.(*kmsg.UnregisterBrokerResponse).ErrorCode != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("a second unregister: %+v, %v; want BROKER_ID_NOT_REGISTERED", resp, err)
	}
	brokers[2].start(t)
	waitBrokersListed(t, brokers)
	waitUntil(t, 10*time.Second, "observers 4, 5, 6 again", func() (bool, string) {
		ids, err := quorumObservers(via)
		return err == nil && slices.Equal(ids, []int32{4, 5, 6}), fmt.Sprint(ids, err)
	})
}
