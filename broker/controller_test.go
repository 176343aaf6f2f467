package broker

import (
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/metadata/quorum"
)

// electionImage has brokers 1 to 3, 3 fenced, and topic t whose
// partitions are in the cases fencing broker 1 meets.
func electionImage(t *testing.T) *metadata.Image {
	t.Helper()
	id := [16]byte{7}
	records := []metadata.Record{
		metadata.RegisterBrokerRecord{BrokerID: 1, BrokerEpoch: 10},
		metadata.RegisterBrokerRecord{BrokerID: 2, BrokerEpoch: 11},
		metadata.RegisterBrokerRecord{BrokerID: 3, BrokerEpoch: 12, Fenced: true},
		metadata.TopicRecord{Name: "t", TopicID: id},
	}
	for p, pr := range []struct{ replicas, isr []int32 }{
		{[]int32{1, 3, 2}, []int32{1, 3, 2}}, // 0: 3 is fenced, 2 is next in the ISR
		{[]int32{1}, []int32{1}},             // 1: the last ISR member
		{[]int32{1, 2}, []int32{1}},          // 2: 2 is a replica out of the ISR
		{[]int32{2, 1}, []int32{2, 1}},       // 3: led by 2
		{[]int32{1, 3}, []int32{1, 3}},       // 4: the only other ISR member is fenced
	} {
		records = append(records, metadata.PartitionRecord{PartitionID: int32(p), TopicID: id, Replicas: pr.replicas, ISR: pr.isr, Leader: pr.replicas[0]})
	}
	d := metadata.NewDelta(metadata.Empty)
	for _, r := range records {
		if err := d.Replay(r); err != nil {
			t.Fatal(err)
		}
	}
	return d.Apply()
}

func applyRecords(t *testing.T, img *metadata.Image, records []metadata.Record) *metadata.Image {
	t.Helper()
	d := metadata.NewDelta(img)
	for _, r := range records {
		if err := d.Replay(r); err != nil {
			t.Fatal(err)
		}
	}
	return d.Apply()
}

// TestFencingElectsTheFirstUnfencedISRMember checks fenceRecords and
// unfenceRecords on an image: the fenced broker's partitions elect the
// first unfenced ISR member in replica order with a new leader epoch, or
// no leader; it leaves every ISR but as its last member; with unclean
// election any unfenced replica leads; and unfencing it gives it back the
// leaderless partitions whose ISR holds it.
func TestFencingElectsTheFirstUnfencedISRMember(t *testing.T) {
	img := electionImage(t)
	fenced := applyRecords(t, img, fenceRecords(img, 1, 10, false))
	if b, _ := fenced.Cluster.Broker(1); !b.Fenced {
		t.Fatal("broker 1 is not fenced")
	}
	want := []struct {
		leader, epoch int32
		isr           []int32
	}{
		{2, 1, []int32{3, 2}},
		{metadata.NoLeader, 1, []int32{1}},
		{metadata.NoLeader, 1, []int32{1}},
		{2, 0, []int32{2}},
		{metadata.NoLeader, 1, []int32{3}},
	}
	for p, w := range want {
		got := fenced.Topics.ByName("t").Partitions[p]
		if got.Leader != w.leader || got.LeaderEpoch != w.epoch || !slices.Equal(got.ISR, w.isr) {
			t.Errorf("partition %d: %+v, want leader %d at epoch %d, ISR %v", p, got, w.leader, w.epoch, w.isr)
		}
	}

	unclean := applyRecords(t, img, fenceRecords(img, 1, 10, true))
	if p := unclean.Topics.ByName("t").Partitions[2]; p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) {
		t.Errorf("unclean election, partition 2: %+v, want replica 2 the leader and ISR", p)
	}
	if p := unclean.Topics.ByName("t").Partitions[1]; p.Leader != metadata.NoLeader {
		t.Errorf("unclean election, partition 1, no other replica: %+v", p)
	}

	back := applyRecords(t, fenced, unfenceRecords(fenced, 1, 10))
	for p, leader := range []int32{2, 1, 1, 2, metadata.NoLeader} {
		if got := back.Topics.ByName("t").Partitions[p]; got.Leader != leader {
			t.Errorf("unfenced, partition %d: %+v, want leader %d", p, got, leader)
		}
	}
}

// startQuorumNode starts a broker that is the only voter of a metadata
// quorum served on its own controller listener, and waits until it has
// registered and been unfenced. It returns the controller listener's
// address.
func startQuorumNode(t *testing.T, cluster ClusterConfig) (*Broker, string) {
	t.Helper()
	logger := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	cl, err := quorum.NewControllerListener(ln, addr, quorum.Security{}, logger)
	if err != nil {
		t.Fatal(err)
	}
	store, err := quorum.Open(quorum.Config{NodeID: testNodeID, Dir: filepath.Join(t.TempDir(), quorum.DirName),
		Voters: []quorum.Voter{{ID: testNodeID, Addr: addr}}, Transport: cl.Transport(10*time.Second, logger), Logger: logger,
		HeartbeatTimeout: 100 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		store.Close()
		cl.Close()
	})
	b := startBroker(t, func(cfg *Config) {
		cfg.Metadata, cfg.Quorum, cfg.ControllerListener, cfg.Cluster = store, store, cl.Kafka(), cluster
	})
	if !waitForImage(store, 10*time.Second, func(img *metadata.Image) bool {
		reg, ok := img.Cluster.Broker(testNodeID)
		return ok && !reg.Fenced
	}) {
		t.Fatal("the node did not register and unfence itself")
	}
	return b, addr
}

func ctrlRequest[R kmsg.Response](t *testing.T, c *ctrlClient, req kmsg.Request) R {
	t.Helper()
	resp, err := c.request(req, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(R)
}

func heartbeatReq(id int32, epoch, offset int64, shutdown bool) *kmsg.BrokerHeartbeatRequest {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.SetVersion(1)
	req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset, req.WantShutdown = id, epoch, offset, shutdown
	return req
}

func registrationReq(id int32, clusterID string, incarnation byte) *kmsg.BrokerRegistrationRequest {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.SetVersion(3)
	req.BrokerID, req.ClusterID, req.IncarnationID = id, clusterID, [16]byte{incarnation}
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "127.0.0.1", 1
	req.Listeners = append(req.Listeners, l)
	return req
}

// TestControllerRegistersFencesAndUnfencesBrokers drives the controller
// listener of a one-voter quorum as another broker would: it answers
// Kafka's errors (BROKER_ID_NOT_REGISTERED, STALE_BROKER_EPOCH,
// INCONSISTENT_CLUSTER_ID, DUPLICATE_BROKER_REGISTRATION), registers a
// broker fenced at a broker epoch, unfences it once its metadata offset
// reached that epoch, fences it at once when its heartbeat connection
// closes (its partition electing the next ISR member), and on
// WantShutDown fences it and answers ShouldShutDown.
func TestControllerRegistersFencesAndUnfencesBrokers(t *testing.T) {
	cluster := DefaultClusterConfig()
	cluster.ClusterID, cluster.HeartbeatInterval = "test-cluster", 50*time.Millisecond
	b, addr := startQuorumNode(t, cluster)
	store := b.cfg.Quorum
	c, err := dialController(addr, 9, time.Second, peerSecurity{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	versions := ctrlRequest[*kmsg.ApiVersionsResponse](t, c, kmsg.NewPtrApiVersionsRequest())
	var keys []int16
	for _, k := range versions.ApiKeys {
		keys = append(keys, k.ApiKey)
	}
	for _, k := range []kmsg.Key{kmsg.BrokerRegistration, kmsg.BrokerHeartbeat, kmsg.AllocateProducerIDs, kmsg.CreateTopics} {
		if !slices.Contains(keys, int16(k)) {
			t.Errorf("the controller listener does not serve %s: %v", k.Name(), keys)
		}
	}
	if slices.Contains(keys, int16(kmsg.Produce)) {
		t.Errorf("the controller listener serves Produce: %v", keys)
	}

	if hb := ctrlRequest[*kmsg.BrokerHeartbeatResponse](t, c, heartbeatReq(9, 1, 0, false)); hb.ErrorCode != kerr.BrokerIDNotRegistered.Code {
		t.Errorf("heartbeat of an unknown broker: %v", kerr.ErrorForCode(hb.ErrorCode))
	}
	own, _ := store.Image().Cluster.Broker(testNodeID)
	if hb := ctrlRequest[*kmsg.BrokerHeartbeatResponse](t, c, heartbeatReq(testNodeID, own.Epoch-1, 0, false)); hb.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Errorf("heartbeat at an old epoch: %v", kerr.ErrorForCode(hb.ErrorCode))
	}
	if r := ctrlRequest[*kmsg.BrokerRegistrationResponse](t, c, registrationReq(9, "another", 1)); r.ErrorCode != kerr.InconsistentClusterID.Code {
		t.Errorf("registration in another cluster: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := ctrlRequest[*kmsg.BrokerRegistrationResponse](t, c, registrationReq(testNodeID, "test-cluster", 1)); r.ErrorCode != kerr.DuplicateBrokerRegistration.Code {
		t.Errorf("a second incarnation of a live broker: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	reg := ctrlRequest[*kmsg.BrokerRegistrationResponse](t, c, registrationReq(9, "test-cluster", 1))
	if reg.ErrorCode != 0 || reg.BrokerEpoch <= own.Epoch {
		t.Fatalf("registration: %v, epoch %d (the node's own is %d)", kerr.ErrorForCode(reg.ErrorCode), reg.BrokerEpoch, own.Epoch)
	}
	if r, _ := store.Image().Cluster.Broker(9); !r.Fenced || r.Epoch != reg.BrokerEpoch {
		t.Fatalf("registered %+v, want fenced at epoch %d", r, reg.BrokerEpoch)
	}
	behind := ctrlRequest[*kmsg.BrokerHeartbeatResponse](t, c, heartbeatReq(9, reg.BrokerEpoch, reg.BrokerEpoch-1, false))
	if behind.ErrorCode != 0 || behind.IsCaughtUp || !behind.IsFenced {
		t.Fatalf("heartbeat behind the registration: %+v", behind)
	}
	caughtUp := ctrlRequest[*kmsg.BrokerHeartbeatResponse](t, c, heartbeatReq(9, reg.BrokerEpoch, reg.BrokerEpoch, false))
	if caughtUp.ErrorCode != 0 || !caughtUp.IsCaughtUp || caughtUp.IsFenced {
		t.Fatalf("heartbeat caught up: %+v", caughtUp)
	}
	if r, _ := store.Image().Cluster.Broker(9); r.Fenced {
		t.Fatal("the caught-up broker is still fenced")
	}

	id := [16]byte{3}
	if _, err := store.Propose(metadata.TopicRecord{Name: "led", TopicID: id},
		metadata.PartitionRecord{TopicID: id, Replicas: []int32{9, testNodeID}, ISR: []int32{9, testNodeID}, Leader: 9}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	closed := time.Now()
	if !waitForImage(store, time.Second, func(img *metadata.Image) bool {
		r, _ := img.Cluster.Broker(9)
		p := img.Topics.ByID(id).Partitions[0]
		return r.Fenced && p.Leader == testNodeID && p.LeaderEpoch == 1 && slices.Equal(p.ISR, []int32{testNodeID})
	}) {
		t.Fatalf("broker 9 not fenced within 1s of its connection closing: %+v", store.Image().Topics.ByID(id).Partitions[0])
	}
	t.Logf("fenced %v after its heartbeat connection closed", time.Since(closed))

	c2, err := dialController(addr, 9, time.Second, peerSecurity{})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	hb := ctrlRequest[*kmsg.BrokerHeartbeatResponse](t, c2, heartbeatReq(9, reg.BrokerEpoch, store.AppliedIndex(), false))
	if hb.ErrorCode != 0 || hb.IsFenced {
		t.Fatalf("heartbeat after the fencing: %+v", hb)
	}
	// A judgement made before that heartbeat (a probe of the session that
	// had no connection, its timeout) that commits only now must not fence
	// the broker its heartbeat just unfenced.
	b.controller.fence(9, reg.BrokerEpoch, "a judgement made before the heartbeat")
	if r, _ := store.Image().Cluster.Broker(9); r.Fenced {
		t.Fatal("a stale judgement fenced the broker whose heartbeats come on a live connection")
	}
	if _, err := store.Propose(metadata.PartitionChangeRecord{TopicID: id, Leader: 9, ISR: []int32{9, testNodeID}}); err != nil {
		t.Fatal(err)
	}
	bye := ctrlRequest[*kmsg.BrokerHeartbeatResponse](t, c2, heartbeatReq(9, reg.BrokerEpoch, store.AppliedIndex(), true))
	if bye.ErrorCode != 0 || !bye.ShouldShutdown || !bye.IsFenced {
		t.Fatalf("controlled shutdown: %+v", bye)
	}
	if p := store.Image().Topics.ByID(id).Partitions[0]; p.Leader != testNodeID {
		t.Fatalf("after the controlled shutdown, partition %+v", p)
	}
}
