package coordinator

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// streamsLog is a shard's __consumer_offsets partition for the tests: the
// batches appended, or an error for each append while fail is set.
type streamsLog struct {
	batches [][]byte
	fail    bool
	now     time.Time
}

func (l *streamsLog) append(b recordBatch) error {
	if l.fail {
		return errors.New("disk full")
	}
	l.batches = append(l.batches, buildBatch(b.recs, l.now))
	return nil
}

// reload is a new shard replaying the log, as a restart or a coordinator
// move does.
func (l *streamsLog) reload(t *testing.T, topics *scriptTopics) *groupShard {
	t.Helper()
	s := newGroupShard(0, DefaultGroupConfig(), topics, zap.NewNop())
	s.begin(l.now)
	for _, b := range l.batches {
		if err := s.replayBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	s.activate()
	s.end()
	return s
}

func streamsHB(member string, epoch int32, active []kmsg.TaskIDs) *kmsg.StreamsGroupHeartbeatRequest {
	r := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	r.Group, r.MemberID, r.MemberEpoch = "sg", member, epoch
	if epoch == 0 {
		r.RebalanceTimeoutMillis, r.ProcessID = 30000, kmsg.StringPtr("process-"+member)
		r.InstanceID, r.RackID = kmsg.StringPtr("inst-"+member), kmsg.StringPtr("r1")
		r.UserEndpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: "h-" + member, Port: 8080}
		r.ClientTags = []kmsg.StreamsGroupHeartbeatRequestClientTag{{Key: "zone", Value: "z1"}}
		r.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
			{SubtopologyID: "0", SourceTopics: []string{"src"}}}}
		active = []kmsg.TaskIDs{}
	}
	r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = active, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	return r
}

// TestStreamsGroupSurvivesReload: a streams group's members keep their
// epochs, tasks, revocations, static identity and endpoint when the shard
// is rebuilt from its records, their sessions restart, their next
// heartbeats write nothing; a failed write answers its error and puts the
// group back as stored; deleting the group tombstones its records.
func TestStreamsGroupSurvivesReload(t *testing.T) {
	topics := &scriptTopics{byName: map[string]topicMeta{"src": {name: "src", id: [16]byte{1}, partitions: 2}}}
	log := &streamsLog{now: scriptStart}
	s := newGroupShard(0, DefaultGroupConfig(), topics, zap.NewNop())
	hb := func(s *groupShard, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, int) {
		t.Helper()
		before := len(log.batches)
		s.begin(log.now)
		reply := s.streamsHeartbeat(req, Client{ID: "c", Host: "/127.0.0.1"})
		s.settle(log.append)
		return reply.resp, len(log.batches) - before
	}
	r, _ := hb(s, streamsHB("A", 0, nil))
	if r.ErrorCode != 0 || r.MemberEpoch != 2 || countTasksOf(r.ActiveTasks) != 2 {
		t.Fatalf("A joins: %+v", r)
	}
	hb(s, streamsHB("A", 2, r.ActiveTasks))
	r, _ = hb(s, streamsHB("B", 0, nil))
	if r.ErrorCode != 0 || r.MemberEpoch != 3 {
		t.Fatalf("B joins: %+v", r)
	}
	r, _ = hb(s, streamsHB("A", 2, taskSetFromIDs("0", 0, 1)))
	if r.ErrorCode != 0 || r.MemberEpoch != 2 || countTasksOf(r.ActiveTasks) != 1 {
		t.Fatalf("A told to revoke: %+v", r)
	}
	wantA := s.groups["sg"].streams.members["A"]
	revoking := wantA.revoking.clone()
	if revoking.count() != 1 {
		t.Fatalf("A revoking %v, want one task", revoking)
	}

	s2 := log.reload(t, topics)
	g := s2.groups["sg"]
	if g == nil || g.streams == nil {
		t.Fatalf("sg after reload: %+v", g)
	}
	sg := g.streams
	a, b := sg.members["A"], sg.members["B"]
	if sg.epoch != 3 || sg.assignmentEpoch != 3 || a == nil || b == nil || sg.topology == nil || !sg.configured.ready {
		t.Fatalf("sg after reload: epoch %d assignment epoch %d members %v", sg.epoch, sg.assignmentEpoch, sg.members)
	}
	if a.epoch != 2 || a.state != smemberUnrevoked || !a.revoking.equal(revoking) || !a.assigned.active.equal(wantA.assigned.active) ||
		a.instanceID != "inst-A" || sg.static["inst-A"] != "A" || a.rackID != "r1" || a.endpoint == nil || a.endpoint.Host != "h-A" ||
		a.clientTags["zone"] != "z1" || a.processID != "process-A" || a.rebalanceTimeout != 30*time.Second || !sg.target["A"].active.equal(a.assigned.active) {
		t.Fatalf("A after reload: %+v", a)
	}
	if b.epoch != 3 || b.state != smemberUnreleased || b.assigned.active.count() != 0 || sg.target["B"].active.count() != 1 {
		t.Fatalf("B after reload: %+v target %v", b, sg.target["B"])
	}
	keys := s2.timers.keys()
	for _, k := range []timerKey{{kind: timerStreamsSession, group: "sg", member: "A"}, {kind: timerStreamsSession, group: "sg", member: "B"},
		{kind: timerStreamsRevoke, group: "sg", member: "A"}} {
		if !slices.Contains(keys, k) {
			t.Errorf("timer %v not armed after reload (%v)", k, keys)
		}
	}

	// A heartbeat that changes nothing writes nothing; A revokes and B
	// gets the task, at the epochs they had.
	if r, n := hb(s2, streamsHB("B", 3, []kmsg.TaskIDs{})); r.ErrorCode != 0 || r.MemberEpoch != 3 || n != 0 {
		t.Fatalf("B after reload: %+v, %d writes", r, n)
	}
	if r, _ := hb(s2, streamsHB("A", 2, r.ActiveTasks)); r.ErrorCode != 0 || r.MemberEpoch != 3 {
		t.Fatalf("A revokes after reload: %+v", r)
	}
	if r, _ := hb(s2, streamsHB("B", 3, []kmsg.TaskIDs{})); r.ErrorCode != 0 || countTasksOf(r.ActiveTasks) != 1 {
		t.Fatalf("B gets its task after reload: %+v", r)
	}

	// A failed write: B's leave is answered with the error and B is back.
	log.fail = true
	leave := streamsHB("B", -1, nil)
	leave.ActiveTasks, leave.StandbyTasks, leave.WarmupTasks = nil, nil, nil
	if r, _ := hb(s2, leave); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("leave with a failed write: %+v", r)
	}
	if m := s2.groups["sg"].streams.members["B"]; m == nil || m.epoch != 3 || m.assigned.active.count() != 1 {
		t.Fatalf("B after the failed write: %+v", m)
	}
	log.fail = false
	s3 := log.reload(t, topics)
	if got := s3.groups["sg"].streams; got.members["B"] == nil || got.members["B"].assigned.active.count() != 1 || got.members["A"].epoch != 3 {
		t.Fatalf("after the second reload: %+v", got.members)
	}

	// Both leave, the group is deleted: nothing of it is loaded again.
	for _, id := range []string{"A", "B"} {
		leave := streamsHB(id, -1, nil)
		leave.ActiveTasks, leave.StandbyTasks, leave.WarmupTasks = nil, nil, nil
		if r, _ := hb(s3, leave); r.ErrorCode != 0 {
			t.Fatalf("%s leaves: %+v", id, r)
		}
	}
	if got := s3.groups["sg"].streams; got.assignmentEpoch != got.epoch {
		t.Errorf("emptied group: assignment epoch %d, group epoch %d, want equal as Kafka", got.assignmentEpoch, got.epoch)
	}
	s3.begin(log.now)
	if r := s3.deleteGroupRequest("sg"); r.err != nil {
		t.Fatalf("delete: %v", r.err)
	}
	s3.settle(log.append)
	if g := log.reload(t, topics).groups["sg"]; g != nil {
		t.Fatalf("deleted group loaded again: %+v", g.streams)
	}
}

func taskSetFromIDs(sub string, ps ...int32) []kmsg.TaskIDs {
	return []kmsg.TaskIDs{{SubtopologyID: sub, Partitions: ps}}
}

func countTasksOf(ts []kmsg.TaskIDs) int {
	n := 0
	for _, t := range ts {
		n += len(t.Partitions)
	}
	return n
}

// TestReplayKafkaStreamsGroups loads what Kafka 4.4.0 wrote up to the
// static member's temporary leave: the word count's group keeps its epoch,
// its member's epochs and tasks; sg-raw keeps its static member at epoch
// -2 with its previous epoch, instance, rack, tags, endpoint and task.
func TestReplayKafkaStreamsGroups(t *testing.T) {
	data, err := os.ReadFile(kafkaStreamsGroupsLog)
	if err != nil {
		t.Fatal(err)
	}
	topics := &scriptTopics{byName: map[string]topicMeta{
		"wc-in":                     {name: "wc-in", id: [16]byte{1}, partitions: 3},
		"wc-cap-counts-repartition": {name: "wc-cap-counts-repartition", id: [16]byte{2}, partitions: 3},
		"wc-cap-counts-changelog":   {name: "wc-cap-counts-changelog", id: [16]byte{3}, partitions: 3},
		"raw-src":                   {name: "raw-src", id: [16]byte{4}, partitions: 2},
	}}
	s := newGroupShard(0, DefaultGroupConfig(), topics, zap.NewNop())
	s.begin(time.UnixMilli(1796236490000))
	for len(data) > 0 {
		raw, rest, ok := batch.Next(data)
		if !ok {
			t.Fatalf("torn segment: %d bytes left", len(data))
		}
		if batch.DecodeHeader(raw).BaseOffset > 61 { // m1's tombstones follow
			break
		}
		if err := s.replayBatch(raw); err != nil {
			t.Fatal(err)
		}
		data = rest
	}
	s.activate()
	wc := s.groups["wc-cap"]
	if wc == nil || wc.streams == nil || wc.protocolType != "streams" {
		t.Fatalf("wc-cap = %+v, want a streams group", wc)
	}
	sg := wc.streams
	m := sg.members["Hp4AFlxLT1yArFymgwbzoQ"]
	if sg.epoch != 5 || sg.assignmentEpoch != 5 || len(sg.members) != 1 || m == nil || sg.lastConfigs != "num.standby.replicas=1" {
		t.Fatalf("wc-cap epoch %d assignment epoch %d members %v configs %q", sg.epoch, sg.assignmentEpoch, sg.members, sg.lastConfigs)
	}
	all := taskSet{"0": {0, 1, 2}, "1": {0, 1, 2}}
	if m.epoch != 5 || m.prevEpoch != 4 || m.state != smemberStable || !m.assigned.active.equal(all) || !sg.target[m.id].active.equal(all) ||
		m.rebalanceTimeout != 5*time.Minute || sg.owners[taskID{"1", 2}] != m.id || !sg.configured.ready {
		t.Fatalf("wc-cap member %+v", m)
	}
	raw := s.groups["sg-raw"].streams
	m1 := raw.members["m1"]
	if m1 == nil || len(raw.members) != 1 || m1.epoch != staticLeaveEpoch || m1.prevEpoch != 2 || m1.instanceID != "inst-a" ||
		raw.static["inst-a"] != "m1" || m1.rackID != "r1" || m1.endpoint == nil || m1.endpoint.Port != 8080 || m1.clientTags["zone"] != "z1" ||
		!m1.assigned.active.equal(taskSet{"0": {0}}) {
		t.Fatalf("sg-raw member %+v", m1)
	}
	// The tasks' assignment epochs come back as Kafka wrote them (tasks
	// 0-2 and 1-1 were given at epoch 5, the others at 3; the static
	// member's were reset to 0), and the current assignments Strata would
	// write for both groups are Kafka's bytes.
	if m.epochs[taskID{"0", 2}] != 5 || m.epochs[taskID{"1", 1}] != 5 || m.epochs[taskID{"0", 0}] != 3 || m.epochs[taskID{"1", 0}] != 3 ||
		m1.epochs[taskID{"0", 0}] != 0 || len(m1.epochs) != 1 {
		t.Fatalf("replayed task epochs %v and %v", m.epochs, m1.epochs)
	}
	for _, g := range []*group{wc, s.groups["sg-raw"]} {
		for _, r := range streamsRecords(g) {
			if typ, _ := keyVersion(r.key); typ != stCurrentType {
				continue
			}
			if want := g.streams.stored[string(r.key)]; !bytes.Equal(r.value, want) {
				t.Errorf("group %s: current assignment\n%x\nwritten again as\n%x", g.id, want, r.value)
			}
		}
	}
	if !slices.Contains(s.timers.keys(), timerKey{kind: timerStreamsSession, group: "wc-cap", member: m.id}) {
		t.Error("wc-cap member has no session timer after load")
	}
}
