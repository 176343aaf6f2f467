package coordinator

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// TestGroupScripts runs the scripts in testdata/groups against the group
// state machine: one input per step (a request, `tick 10s`, `elect 3`...),
// each printing what the machine answered and asked for (records appended,
// answers to waiting requests, timers), with a scripted clock and an
// in-memory log, so a transition that breaks changes the output. Rewrite
// the expected outputs with `go test ./coordinator -run TestGroupScripts
// -rewrite` and read the diff.
func TestGroupScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/groups", func(t *testing.T, path string) {
		h := newScriptHarness(DefaultGroupConfig())
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.step(t, d)
		})
	})
}

var scriptStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// scriptHarness is a driver for scripts: it does what Groups does with the
// machine's effects (append, then answer), into an in-memory log.
type scriptHarness struct {
	cfg         GroupConfig
	now         time.Time
	topics      *scriptTopics
	slots       map[int32]*groupSlot
	log         map[int32][][]byte // encoded batches per partition
	failAppends bool
	ids         map[string]int // member ids handed out per client id
	nextWaiter  uint64
	out         *strings.Builder
}

func newScriptHarness(cfg GroupConfig) *scriptHarness {
	cfg.OffsetsTopicPartitions = 1
	h := &scriptHarness{cfg: cfg, now: scriptStart, topics: &scriptTopics{byName: map[string]topicMeta{}}, out: &strings.Builder{}}
	h.reset()
	return h
}

// reset elects every partition, with an empty log.
func (h *scriptHarness) reset() {
	h.slots, h.log, h.ids = map[int32]*groupSlot{}, map[int32][][]byte{}, map[string]int{}
	for p := int32(0); p < h.cfg.OffsetsTopicPartitions; p++ {
		h.elect(p, false)
	}
}

func (h *scriptHarness) newShard(p int32) *groupShard {
	s := newGroupShard(p, h.cfg, h.topics, zap.NewNop())
	s.newMemberID = func(clientID string) string {
		h.ids[clientID]++
		return clientID + "-" + strconv.Itoa(h.ids[clientID])
	}
	return s
}

// elect loads the partition from its log; hold leaves it loading.
func (h *scriptHarness) elect(p int32, hold bool) {
	h.slots[p] = &groupSlot{partition: p, loading: true, shard: h.newShard(p)}
	if !hold {
		h.finishLoad(p)
	}
}

func (h *scriptHarness) finishLoad(p int32) {
	sl := h.slots[p]
	sl.shard.begin(h.now)
	for _, raw := range h.log[p] {
		if err := sl.shard.replayBatch(raw); err != nil {
			fmt.Fprintf(h.out, "load p%d: %v\n", p, err)
			return
		}
	}
	sl.shard.activate()
	sl.loading = false
	h.execute(sl)
}

// run is Groups.run: the partition's answer when it cannot serve, else fn
// on its shard and the effects carried out.
func (h *scriptHarness) run(group string, fn func(s *groupShard)) *kerr.Error {
	sl := h.slots[partitionFor(group, h.cfg.OffsetsTopicPartitions)]
	if sl == nil {
		return kerr.NotCoordinator
	}
	if err := sl.unavailable(); err != nil {
		return err
	}
	sl.shard.begin(h.now)
	fn(sl.shard)
	h.execute(sl)
	return nil
}

func (h *scriptHarness) execute(sl *groupSlot) {
	e := sl.shard.settle(func(b recordBatch) error { return h.append(sl.partition, b) })
	for _, a := range e.joins {
		fmt.Fprintf(h.out, "w%d join: %s\n", a.waiter, formatJoin(a.r))
	}
	for _, a := range e.syncs {
		fmt.Fprintf(h.out, "w%d sync: %s\n", a.waiter, formatSync(a.r))
	}
	h.printTimers(e.timers)
}

func (h *scriptHarness) append(p int32, b recordBatch) error {
	if len(b.recs) == 0 {
		return nil
	}
	if h.failAppends {
		fmt.Fprintf(h.out, "append p%d failed: %d records\n", p, len(b.recs))
		return errors.New("injected append failure")
	}
	raw := buildBatch(b.recs, h.now)
	prefix := ""
	if b.transactional {
		raw = buildTxnBatch(b.recs, b.producerID, b.producerEpoch, h.now)
		prefix = fmt.Sprintf("txn pid=%d ", b.producerID)
	}
	h.log[p] = append(h.log[p], raw)
	for _, r := range b.recs {
		fmt.Fprintf(h.out, "append p%d: %s%s\n", p, prefix, formatRecord(r, h.topics.name))
	}
	return nil
}

// printTimers prints each timer's last change of the step.
func (h *scriptHarness) printTimers(changes []timerChange) {
	last := map[timerKey]time.Time{}
	var order []timerKey
	for _, c := range changes {
		if c.fired {
			fmt.Fprintf(h.out, "timer %s: fired\n", timerName(c.key))
			continue
		}
		if _, ok := last[c.key]; !ok {
			order = append(order, c.key)
		}
		last[c.key] = c.deadline
	}
	for _, k := range order {
		name := timerName(k)
		if at := last[k]; at.IsZero() {
			fmt.Fprintf(h.out, "timer %s: cancelled\n", name)
		} else {
			fmt.Fprintf(h.out, "timer %s: at %s\n", name, at.Sub(scriptStart))
		}
	}
}

func timerName(k timerKey) string {
	name := k.kind.String()
	if k.group != "" {
		name += " " + k.group
	}
	if k.member != "" {
		name += "/" + k.member
	}
	return name
}

func (h *scriptHarness) waiter() uint64 {
	h.nextWaiter++
	return h.nextWaiter
}

func (h *scriptHarness) step(t *testing.T, d *datadriven.TestData) string {
	var out strings.Builder
	h.out = &out
	a := parseScriptArgs(d)
	group := a.str("group", "g")
	// failed prints the partition's answer when the request could not run.
	failed := func(err *kerr.Error) bool {
		if err != nil {
			fmt.Fprintf(&out, "error: %s\n", err.Message)
		}
		return err != nil
	}
	switch d.Cmd {
	case "config":
		h.cfg.OffsetsTopicPartitions = int32(a.int("partitions", int(h.cfg.OffsetsTopicPartitions)))
		h.cfg.InitialRebalanceDelay = a.dur("initial-delay", h.cfg.InitialRebalanceDelay)
		h.cfg.MaxSize = a.int("max-size", h.cfg.MaxSize)
		h.cfg.ConsumerSessionTimeout = a.dur("consumer-session", h.cfg.ConsumerSessionTimeout)
		h.cfg.OffsetsRetention = a.dur("retention", h.cfg.OffsetsRetention)
		h.cfg.RetentionCheckInterval = a.dur("retention-check", h.cfg.RetentionCheckInterval)
		h.reset()
	case "topic":
		name := a.str("name", "t")
		id := sha256.Sum256([]byte(name))
		var tid [16]byte
		copy(tid[:], id[:])
		h.topics.byName[name] = topicMeta{name: name, id: tid, partitions: int32(a.int("partitions", 1))}
		if d.HasArg("delete") {
			delete(h.topics.byName, name)
		}
	case "partition":
		fmt.Fprintf(&out, "p%d\n", partitionFor(group, h.cfg.OffsetsTopicPartitions))
	case "join":
		jr := &joinRequest{
			memberID: a.str("member", ""), instanceID: a.str("instance", ""),
			client:  Client{ID: a.str("client", "c"), Host: "/127.0.0.1"},
			session: a.dur("session", 10*time.Second), rebalance: a.dur("rebalance", 30*time.Second),
			protocolType: a.str("type", "consumer"), version: int16(a.int("version", 9)),
		}
		jr.requireKnownID = jr.version >= 4 && jr.instanceID == ""
		for _, p := range a.list("proto", "range") {
			name, meta, _ := strings.Cut(p, ":")
			jr.protocols = append(jr.protocols, protocolMeta{name: name, metadata: []byte(meta)})
		}
		jr.waiter = h.waiter()
		fmt.Fprintf(&out, "w%d: JoinGroup\n", jr.waiter)
		_ = failed(h.run(group, func(s *groupShard) { s.joinGroup(group, jr) }))
	case "sync":
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.MemberID, req.Generation = group, a.str("member", ""), int32(a.int("gen", 0))
		if i := a.str("instance", ""); i != "" {
			req.InstanceID = &i
		}
		for _, as := range a.list("assign", "") {
			m, data, _ := strings.Cut(as, ":")
			ga := kmsg.NewSyncGroupRequestGroupAssignment()
			ga.MemberID, ga.MemberAssignment = m, []byte(data)
			req.GroupAssignment = append(req.GroupAssignment, ga)
		}
		w := h.waiter()
		fmt.Fprintf(&out, "w%d: SyncGroup\n", w)
		_ = failed(h.run(group, func(s *groupShard) { s.syncGroup(req, w) }))
	case "heartbeat":
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation = group, a.str("member", ""), int32(a.int("gen", 0))
		if i := a.str("instance", ""); i != "" {
			req.InstanceID = &i
		}
		var res *kerr.Error
		if failed(h.run(group, func(s *groupShard) { res = s.heartbeat(req) })) {
			break
		}
		fmt.Fprintf(&out, "heartbeat: %s\n", errName(res))
	case "leave":
		members := a.list("member", "")
		if len(members) == 0 {
			members = []string{""} // by instance id
		}
		var leaving []LeaveMember
		for _, m := range members {
			leaving = append(leaving, LeaveMember{MemberID: m, InstanceID: a.str("instance", "")})
		}
		var errs []*kerr.Error
		if failed(h.run(group, func(s *groupShard) { errs = s.leaveGroup(group, leaving) })) {
			break
		}
		fmt.Fprintf(&out, "leave: %s\n", errNames(errs))
	case "commit":
		req := CommitRequest{Group: group, Generation: int32(a.int("gen", -1)), MemberID: a.str("member", ""),
			InstanceID: a.str("instance", ""), Commits: a.commits(), Version: int16(a.int("version", 9))}
		var errs []*kerr.Error
		if failed(h.run(group, func(s *groupShard) { errs = s.commitOffsets(req) })) {
			break
		}
		fmt.Fprintf(&out, "commit: %s\n", errNames(errs))
	case "txn-commit":
		req := TxnCommitRequest{Group: group, ProducerID: int64(a.int("pid", 1)), Generation: int32(a.int("gen", -1)),
			MemberID: a.str("member", ""), Commits: a.commits()}
		var errs []*kerr.Error
		if failed(h.run(group, func(s *groupShard) { errs = s.txnCommitOffsets(req) })) {
			break
		}
		fmt.Fprintf(&out, "txn-commit: %s\n", errNames(errs))
	case "txn-end":
		pid, commit := int64(a.int("pid", 1)), a.str("result", "commit") == "commit"
		for _, p := range h.sortedPartitions() {
			if sl := h.slots[p]; sl.unavailable() == nil {
				sl.shard.begin(h.now)
				sl.shard.completeTxnOffsets(pid, commit)
				h.execute(sl)
			}
		}
	case "fetch":
		var offs []FetchedOffset
		var ferr *kerr.Error
		if failed(h.run(group, func(s *groupShard) { offs, ferr = s.fetchOffsets(group, nil, -1, nil) })) {
			break
		}
		_ = failed(ferr)
		for _, o := range offs {
			fmt.Fprintf(&out, "%s-%d=%d\n", o.Topic, o.Partition, o.Offset)
		}
	case "delete-group":
		var r *groupDeleteReply
		if failed(h.run(group, func(s *groupShard) { r = s.deleteGroupRequest(group) })) {
			break
		}
		fmt.Fprintf(&out, "delete-group: %s\n", errName(r.err))
	case "cg-heartbeat":
		h.consumerHeartbeat(t, a, group)
	case "st-heartbeat":
		h.streamsHeartbeat(t, a, group)
	case "tick":
		h.now = h.now.Add(a.dur("", 0))
		fmt.Fprintf(&out, "now %s\n", h.now.Sub(scriptStart))
		for _, p := range h.sortedPartitions() {
			if sl := h.slots[p]; sl.unavailable() == nil {
				sl.shard.begin(h.now)
				sl.shard.tick()
				h.execute(sl)
			}
		}
	case "fail-appends":
		h.failAppends = a.str("", "on") == "on"
	case "elect":
		h.elect(int32(a.int("", 0)), d.HasArg("hold"))
	case "load":
		h.finishLoad(int32(a.int("", 0)))
	case "resign":
		p := int32(a.int("", 0))
		if sl := h.slots[p]; sl != nil {
			delete(h.slots, p)
			sl.resigned = true
			if !sl.loading {
				sl.shard.begin(h.now)
				sl.shard.resign()
				h.execute(sl)
			}
		}
	case "state":
		_ = failed(h.run(group, func(s *groupShard) { dumpGroup(&out, s, group) }))
	case "list":
		for _, p := range h.sortedPartitions() {
			if sl := h.slots[p]; sl.unavailable() == nil {
				for _, g := range sl.shard.listGroups(nil, nil) {
					fmt.Fprintf(&out, "%s %s %s\n", g.Group, g.GroupType, g.GroupState)
				}
			}
		}
	default:
		if !h.migrateStep(t, d.Cmd, a, group) && !h.shareStep(t, d.Cmd, a, group) {
			t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
		}
	}
	return out.String()
}

func (h *scriptHarness) sortedPartitions() []int32 {
	var ps []int32
	for p := range h.slots {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}
