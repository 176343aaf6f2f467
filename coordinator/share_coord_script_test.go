package coordinator

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/strata-io/strata/coordinator/share"
)

// TestShareCoordinatorScripts runs the scripts in testdata/share against
// the share coordinator's state machine: initialize, write, read, summary
// and delete of share-partitions, each printing the record it appended to
// __share_group_state (decoded) and its answer; `redundant` prints the
// offset record pruning would delete below, `cold interval=D` appends the
// cold-partition snapshots; `restart` builds the machine again from the
// records (at offsets 0, 1, ...), as a load does. Rewrite the expected
// outputs with -rewrite and read the diff.
func TestShareCoordinatorScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/share", func(t *testing.T, path string) {
		h := &shareHarness{topics: map[string]int32{}, ids: map[[16]byte]string{}, now: scriptStart, perSnapshot: defaultSnapshotUpdateRecords}
		h.shard = h.newShard()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.step(t, d)
		})
	})
}

type shareHarness struct {
	topics      map[string]int32
	ids         map[[16]byte]string
	now         time.Time
	perSnapshot int
	shard       *shareStateShard
	log         []kv
	out         *strings.Builder
}

func shareTestTopicID(name string) [16]byte {
	sum := sha256.Sum256([]byte(name))
	var id [16]byte
	copy(id[:], sum[:])
	return id
}

func (h *shareHarness) newShard() *shareStateShard {
	return newShareStateShard(h.perSnapshot, func(id [16]byte) int32 { return h.topics[h.ids[id]] })
}

// apply appends the records and replays them, as the driver does once
// they are durable.
func (h *shareHarness) apply(t *testing.T, recs []kv) {
	for _, r := range recs {
		h.log = append(h.log, r)
		if err := h.shard.replay(int64(len(h.log)-1), r.key, r.value); err != nil {
			t.Fatalf("replay: %v", err)
		}
		fmt.Fprintf(h.out, "append: %s\n", formatShareRecord(r))
	}
}

func formatShareRecord(r kv) string {
	k, err := decodeShareKey(r.key)
	if err != nil {
		return err.Error()
	}
	id := fmt.Sprintf("%s/%x-%d", k.group, k.topicID[:2], k.partition)
	if r.value == nil {
		return "tombstone " + id
	}
	if k.typ == shareSnapshotType {
		v, err := decodeShareSnapshot(r.value)
		if err != nil {
			return err.Error()
		}
		return fmt.Sprintf("snapshot %s epoch=%d state-epoch=%d leader-epoch=%d start=%d complete=%d batches=%s",
			id, v.snapshotEpoch, v.stateEpoch, v.leaderEpoch, v.startOffset, v.deliveryCompleteCount, formatBatches(stateBatches(v.batches)))
	}
	v, err := decodeShareUpdate(r.value)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("update %s epoch=%d leader-epoch=%d start=%d complete=%d batches=%s",
		id, v.snapshotEpoch, v.leaderEpoch, v.startOffset, v.deliveryCompleteCount, formatBatches(stateBatches(v.batches)))
}

func formatBatches(bs []share.StateBatch) string {
	var parts []string
	for _, b := range bs {
		parts = append(parts, fmt.Sprintf("%d-%d:%d:%d", b.First, b.Last, b.State, b.DeliveryCount))
	}
	return "(" + strings.Join(parts, " ") + ")"
}

// parseBatches parses first-last:state:count,...
func parseBatches(t *testing.T, s string) []share.StateBatch {
	var out []share.StateBatch
	for _, b := range strings.Split(s, ",") {
		if b == "" {
			continue
		}
		parts := strings.Split(b, ":")
		rng := strings.SplitN(parts[0], "-", 2)
		if len(parts) != 3 || len(rng) != 2 {
			t.Fatalf("batch %q", b)
		}
		f, _ := strconv.ParseInt(rng[0], 10, 64)
		l, _ := strconv.ParseInt(rng[1], 10, 64)
		st, _ := strconv.Atoi(parts[1])
		c, _ := strconv.Atoi(parts[2])
		out = append(out, share.StateBatch{First: f, Last: l, State: share.RecordState(st), DeliveryCount: int16(c)})
	}
	return out
}

func (h *shareHarness) step(t *testing.T, d *datadriven.TestData) string {
	var out strings.Builder
	h.out = &out
	a := parseScriptArgs(d)
	k := sharePartKey{group: a.str("group", "g"), topicID: shareTestTopicID(a.str("topic", "t")), partition: int32(a.int("partition", 0))}
	fail := func(err *shareError) bool {
		if err != nil {
			fmt.Fprintf(&out, "error: %s: %s\n", err.err.Message, err.msg)
		}
		return err != nil
	}
	switch d.Cmd {
	case "config":
		h.perSnapshot = a.int("per-snapshot", h.perSnapshot)
		h.shard = h.newShard()
		h.log = nil
	case "topic":
		name := a.str("name", "t")
		h.topics[name] = int32(a.int("partitions", 1))
		h.ids[shareTestTopicID(name)] = name
	case "tick":
		h.now = h.now.Add(a.dur("", 0))
	case "init":
		recs, err := h.shard.initializeState(k, int32(a.int("state-epoch", 0)), int64(a.int("start", -1)), h.now)
		if !fail(err) {
			h.apply(t, recs)
		}
	case "write":
		w := shareWrite{stateEpoch: int32(a.int("state-epoch", 0)), leaderEpoch: int32(a.int("leader-epoch", 0)),
			startOffset: int64(a.int("start", -1)), deliveryCompleteCount: int32(a.int("complete", -1)),
			batches: parseBatches(t, a.str("batches", ""))}
		recs, err := h.shard.writeState(k, w, h.now)
		if !fail(err) {
			h.apply(t, recs)
		}
	case "read":
		recs, st, err := h.shard.readState(k, int32(a.int("leader-epoch", 0)), h.now)
		if !fail(err) {
			h.apply(t, recs)
			fmt.Fprintf(&out, "read: state-epoch=%d start=%d batches=%s\n", st.StateEpoch, st.StartOffset, formatBatches(st.Batches))
		}
	case "summary":
		sum, err := h.shard.readStateSummary(k)
		if !fail(err) {
			fmt.Fprintf(&out, "summary: state-epoch=%d leader-epoch=%d start=%d complete=%d\n", sum.stateEpoch, sum.leaderEpoch, sum.startOffset, sum.deliveryCompleteCount)
		}
	case "delete":
		recs, err := h.shard.deleteState(k)
		if !fail(err) {
			h.apply(t, recs)
			fmt.Fprintln(&out, "deleted")
		}
	case "redundant":
		if o, ok := h.shard.redundantOffset(); ok {
			fmt.Fprintf(&out, "redundant below offset %d\n", o)
		} else {
			fmt.Fprintln(&out, "none redundant")
		}
	case "cold":
		h.apply(t, h.shard.coldSnapshots(h.now, a.dur("interval", 5*time.Minute)))
	case "restart":
		h.shard = h.newShard()
		for i, r := range h.log {
			if err := h.shard.replay(int64(i), r.key, r.value); err != nil {
				t.Fatalf("replay: %v", err)
			}
		}
		h.dump()
	case "state":
		h.dump()
	default:
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
	return out.String()
}

func (h *shareHarness) dump() {
	var keys []sharePartKey
	for k := range h.shard.states {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.group != b.group {
			return a.group < b.group
		}
		if c := bytes.Compare(a.topicID[:], b.topicID[:]); c != 0 {
			return c < 0
		}
		return a.partition < b.partition
	})
	for _, k := range keys {
		v := h.shard.states[k]
		fmt.Fprintf(h.out, "%s/%s-%d: epoch=%d state-epoch=%d leader-epoch=%d start=%d complete=%d updates=%d batches=%s\n",
			k.group, h.ids[k.topicID], k.partition, v.snapshotEpoch, v.stateEpoch, v.leaderEpoch, v.startOffset,
			v.deliveryCompleteCount, h.shard.updates[k], formatBatches(v.batches))
	}
}

// TestShareCoordinatorMatchesKafka replays what Kafka 4.4.0 wrote to
// __share_group_state and, at the two records whose request is known,
// makes the same request: initializing a share-partition gives Kafka's
// ShareSnapshot byte for byte, and the fourth write after it (three
// ShareUpdates per snapshot) the ShareSnapshot Kafka wrote, the state
// batches it combined included. At the end every share-partition's state
// is gone, as the group was deleted.
func TestShareCoordinatorMatchesKafka(t *testing.T) {
	data, err := os.ReadFile(kafkaShareGroupStateLog)
	if err != nil {
		t.Fatal(err)
	}
	var recs []kv
	if _, err := forEachRecord(data, func(b *batchInfo, key, value []byte) error {
		recs = append(recs, kv{key: key, value: value})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s := newShareStateShard(3, func([16]byte) int32 { return 2 })
	checked := 0
	for i, r := range recs {
		sk, err := decodeShareKey(r.key)
		if err != nil {
			t.Fatal(err)
		}
		k := sharePartKey{group: sk.group, topicID: sk.topicID, partition: sk.partition}
		if sk.typ == shareSnapshotType && r.value != nil {
			v, _ := decodeShareSnapshot(r.value)
			now := time.UnixMilli(v.createTimestamp)
			var got []kv
			var serr *shareError
			switch v.snapshotEpoch {
			case 0:
				got, serr = s.initializeState(k, v.stateEpoch, -1, now)
			case 1:
				got, serr = s.writeState(k, shareWrite{stateEpoch: 2, startOffset: 16, deliveryCompleteCount: 4,
					batches: []share.StateBatch{{First: 16, Last: 16, State: share.Acknowledged, DeliveryCount: 2}}}, now)
			}
			if serr != nil {
				t.Fatalf("record %d: %s: %s", i, serr.err.Message, serr.msg)
			}
			if len(got) != 1 || !bytes.Equal(got[0].key, r.key) || !bytes.Equal(got[0].value, r.value) {
				t.Fatalf("record %d: Kafka wrote\n%s\nStrata would write\n%v", i, formatShareRecord(r), formatRecords(got))
			}
			checked++
		}
		if err := s.replay(int64(i), r.key, r.value); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if checked != 4 || len(s.states) != 0 {
		t.Fatalf("%d snapshots checked, %d share-partitions left", checked, len(s.states))
	}
}

func formatRecords(recs []kv) string {
	var parts []string
	for _, r := range recs {
		parts = append(parts, formatShareRecord(r))
	}
	return strings.Join(parts, "\n")
}
