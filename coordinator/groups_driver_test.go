package coordinator

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/replica"
	"github.com/strata-io/strata/storage"
	"github.com/strata-io/strata/storage/vfs"
)

// openTestGroups is a group coordinator over real partition logs in a
// temporary log dir, on a fake clock.
func openTestGroups(t *testing.T) (*Groups, *storage.Manager, *clockwork.FakeClock) {
	t.Helper()
	logs, err := storage.OpenManager(vfs.Default, t.TempDir(), storage.DefaultConfig(), storage.ManagerOptions{Logger: zap.NewNop(), NodeID: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logs.Close() })
	if _, err := logs.CreateTopic("t", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	clock := clockwork.NewFakeClockAt(scriptStart)
	cfg := DefaultGroupConfig()
	cfg.OffsetsTopicPartitions, cfg.InitialRebalanceDelay, cfg.Clock = 4, 0, clock
	var e testElection
	c, err := OpenGroups(logs, replicasOf(t, logs), e.create(logs), cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	e.groups = c
	t.Cleanup(c.Close)
	return c, logs, clock
}

func joinV3(c *Groups, group, memberID string, done <-chan struct{}) *kmsg.JoinGroupResponse {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = group, memberID, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 30000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	req.Protocols = append(req.Protocols, p)
	return c.JoinGroup(req, 3, Client{ID: "c", Host: "/127.0.0.1"}, done)
}

func syncAs(c *Groups, group, memberID string, gen int32) *kmsg.SyncGroupResponse {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = group, memberID, gen
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = memberID, []byte("A")
	req.GroupAssignment = append(req.GroupAssignment, a)
	return c.SyncGroup(req, 3, nil)
}

// waitFor polls cond until it holds or 10s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGroupsSessionExpiresOnTheClock checks the driver arms the shard's
// timers on GroupConfig.Clock: a member's session expires when the clock
// passes it, not before, and the Empty group is stored.
func TestGroupsSessionExpiresOnTheClock(t *testing.T) {
	c, _, clock := openTestGroups(t)
	j := joinV3(c, "g", "", nil)
	if j.ErrorCode != 0 || j.Generation != 1 {
		t.Fatalf("join: error %d generation %d", j.ErrorCode, j.Generation)
	}
	if s := syncAs(c, "g", j.MemberID, 1); s.ErrorCode != 0 || string(s.MemberAssignment) != "A" {
		t.Fatalf("sync: error %d assignment %q", s.ErrorCode, s.MemberAssignment)
	}
	clock.Advance(9 * time.Second)
	if d := c.DescribeGroup("g"); d.State != "Stable" {
		t.Fatalf("before the session timeout: %s", d.State)
	}
	clock.Advance(2 * time.Second)
	waitFor(t, "the session to expire", func() bool { return c.DescribeGroup("g").State == "Empty" })
}

// TestGroupsNewPartitionsServeAtOnce checks that the partitions of a
// __consumer_offsets created on first need are loaded when Ensure returns
// (an empty partition is loaded before it is published), so the request
// after FindCoordinator's creation is served, not answered
// COORDINATOR_LOAD_IN_PROGRESS.
func TestGroupsNewPartitionsServeAtOnce(t *testing.T) {
	c, _, _ := openTestGroups(t)
	if err := c.Ensure(); err != nil {
		t.Fatal(err)
	}
	if !c.Loaded() {
		t.Fatal("a partition of the new " + OffsetsTopic + " was still loading when Ensure returned")
	}
	if _, err := c.FetchOffsets("a", nil); err != nil {
		t.Fatalf("fetch right after the creation: %v", err)
	}
}

// TestGroupsResignAndElect checks OnResigned and OnElected on the real
// log: a resigned partition answers NOT_COORDINATOR (a waiting JoinGroup
// too) while the others serve, and electing it again replays its offsets.
func TestGroupsResignAndElect(t *testing.T) {
	c, _, _ := openTestGroups(t)
	// a is in partition 1, b in 2 (of 4).
	if errs := c.CommitOffsets(CommitRequest{Group: "a", Generation: -1, Commits: []Commit{{Topic: "t", Offset: 42, LeaderEpoch: -1, ExpireTime: -1}}}); errs[0] != nil {
		t.Fatalf("commit: %v", errs[0])
	}
	first := joinV3(c, "a", "", nil)
	syncAs(c, "a", first.MemberID, 1)
	waiting := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { waiting <- joinV3(c, "a", "", nil) }()
	waitFor(t, "the second join to wait", func() bool { return c.DescribeGroup("a").State == "PreparingRebalance" })

	c.OnResigned(c.PartitionFor("a"))
	select {
	case r := <-waiting:
		if r.ErrorCode != kerr.NotCoordinator.Code {
			t.Fatalf("waiting join after resign: error %d", r.ErrorCode)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting join was not answered when its partition resigned")
	}
	if _, err := c.FetchOffsets("a", nil); err != kerr.NotCoordinator {
		t.Fatalf("fetch after resign: %v", err)
	}
	if _, err := c.FetchOffsets("b", nil); err != nil {
		t.Fatalf("another partition: %v", err)
	}

	c.OnElected(c.PartitionFor("a"), 1)
	waitFor(t, "the partition to load", c.Loaded)
	offs, err := c.FetchOffsets("a", []TopicPartitions{{Topic: "t", Partitions: []int32{0}}})
	if err != nil || offs[0].Offset != 42 {
		t.Fatalf("fetch after elect: %v %+v", err, offs)
	}
}

// replicasOf is the replica manager of a coordinator under test: this
// node leads every partition of logs.
func replicasOf(t *testing.T, logs *storage.Manager) *replica.Manager {
	t.Helper()
	r, err := replica.NewManager(logs, 1)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// testElection elects this node for every partition of an internal topic
// once it is created, at the partition's leader epoch, as the broker's
// publisher does from the metadata image.
type testElection struct {
	groups *Groups
	txns   *Txns
}

// create is the CreateTopic of a coordinator under test: storage creates
// the topic itself, with no metadata image in between, and its partitions
// are elected.
func (e *testElection) create(logs *storage.Manager) CreateTopic {
	return func(name string, partitions int32, configs map[string]string) (*storage.Topic, error) {
		t, err := logs.CreateTopic(name, partitions, configs, false)
		if err != nil {
			return nil, err
		}
		return t, e.elect(t)
	}
}

// elect elects this node for every partition of t.
func (e *testElection) elect(t *storage.Topic) error {
	for _, p := range t.Partitions() {
		switch {
		case t.Name == OffsetsTopic && e.groups != nil:
			e.groups.OnElected(p.Index, p.LeaderEpoch())
		case t.Name == TxnStateTopic && e.txns != nil:
			if err := e.txns.OnElected(p.Index, p.LeaderEpoch()); err != nil {
				return err
			}
		}
	}
	return nil
}
