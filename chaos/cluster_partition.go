package chaos

// The network partition (issue 14): on a cluster whose nodes run in their
// own network namespaces (netns.go), the leader of a 1-partition RF=3 topic
// (min.insync.replicas=2) is cut off from the other two nodes, broker and
// controller ports alike, while the producer in the root namespace still
// reaches it. The isolated leader goes on appending what it is sent but must
// acknowledge none of it (no follower fetches it, so its high watermark
// cannot pass it); the majority fences it and elects a new leader; when the
// cut heals the old leader must truncate the records it appended alone (its
// divergent tail), fetch the majority's records in their place and rejoin
// the ISR, so that every replica's log ends byte for byte the same.
//
// The replicas' logs are compared on disk: both brokers write Kafka's log
// format, and a follower appends the leader's batches as they are, so the
// batch headers (base offset, last offset delta, partition leader epoch,
// CRC) of every replica's segments must agree. Which broker acknowledged
// what comes from the producer's OnProduceBatchWritten hook.

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// PartitionOptions configure one network partition run.
type PartitionOptions struct {
	Cluster *Cluster // its nodes run in Net's namespaces
	Net     *Netns
	Topic   string // default "partition"
	Rate    int    // records per second (default 200)
	Before  int    // acknowledgements before the cut (default 2 s worth)
	After   int    // acknowledgements after the new leader is seen, and after the heal (default 2 s worth)
	// LagTime is the replica.lag.time.max.ms the cluster runs with: the
	// isolated leader's last acknowledgement must come within it.
	LagTime time.Duration
	// Isolation is how long the cut lasts (default LagTime + 5 s).
	Isolation time.Duration
	Tuning    ProducerTuning
	Logger    *zap.Logger
}

func (o *PartitionOptions) defaults() {
	if o.Topic == "" {
		o.Topic = "partition"
	}
	steadyDefaults(&o.Rate, &o.Before, &o.After)
	if o.Isolation == 0 {
		o.Isolation = o.LagTime + 5*time.Second
	}
	o.Tuning = o.Tuning.orDefault()
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// PartitionReport is what one partition run showed. Durations are from the
// cut.
type PartitionReport struct {
	Victim       int32 // the partition's leader, cut off
	QuorumLeader int32 // the active controller at the cut (-1 if unknown)
	NewLeader    int32 // the leader the majority elected
	LeaderSeen   time.Duration
	// VictimLastAck is the victim's last acknowledgement (negative: it
	// acknowledged nothing after the cut); VictimAcksAfter counts its
	// acknowledged batches after the cut.
	VictimLastAck   time.Duration
	VictimAcksAfter int
	// NewLeaderFirstAck is the first acknowledgement by another node.
	NewLeaderFirstAck time.Duration
	LongestPause      time.Duration
	// VictimView is the partition as the victim itself answered Metadata
	// just before the heal; VictimLogEnd its log end offset as its own
	// ListOffsets (debug replica id -2) said then.
	VictimView   PartitionState
	VictimLogEnd int64
	// Tail is the victim's divergent tail just before the heal: the batches
	// of its log from DivergedAt (where it departs from the new leader's
	// log) to its end, none of them on the majority. MajorityEpochEnd is
	// where the new leader says the tail's leader epoch ends
	// (OffsetForLeaderEpoch): DivergedAt, when the two views agree.
	DivergedAt       int64
	Tail             []BatchHeader
	TailRecords      int64
	MajorityEpochEnd int64
	HealedAfter      time.Duration // from the heal to every ISR full
	// LogEnd is the end offset of the three replicas' logs once they are
	// the same; TailLeft counts Tail's batches still in them.
	LogEnd   int64
	TailLeft int
	ISR      []PartitionState
	Check    Report
}

func (r PartitionReport) String() string {
	return fmt.Sprintf("leader %d (active controller %d) cut off: its last ack %d ms after the cut (%d batches acked after it); new leader %d seen after %d ms, its first ack at %d ms; longest pause %d ms; "+
		"victim while cut off: %v, log end %d, divergent tail from offset %d (the new leader ends that epoch at %d): %d records in %d batches; healed: ISR full %d ms after the heal, logs identical to offset %d, %d tail batches left; acked %d, lost %d, duplicates %d, indeterminate %d",
		r.Victim, r.QuorumLeader, r.VictimLastAck.Milliseconds(), r.VictimAcksAfter, r.NewLeader, r.LeaderSeen.Milliseconds(), r.NewLeaderFirstAck.Milliseconds(), r.LongestPause.Milliseconds(),
		r.VictimView, r.VictimLogEnd, r.DivergedAt, r.MajorityEpochEnd, r.TailRecords, len(r.Tail), r.HealedAfter.Milliseconds(), r.LogEnd, r.TailLeft,
		r.Check.Acked, len(r.Check.Lost), len(r.Check.Duplicates), r.Check.Indeterminate)
}

// brokerAcks records which broker acknowledged each batch, and when.
type brokerAcks struct {
	mu   sync.Mutex
	acks []brokerAck
}

type brokerAck struct {
	node int32
	at   time.Time
}

func (b *brokerAcks) OnProduceBatchWritten(meta kgo.BrokerMetadata, _ string, _ int32, _ kgo.ProduceBatchMetrics) {
	b.mu.Lock()
	b.acks = append(b.acks, brokerAck{node: meta.NodeID, at: time.Now()})
	b.mu.Unlock()
}

// since are the victim's last and count of acknowledgements after t and
// the first by any other node.
func (b *brokerAcks) since(t time.Time, victim int32) (victimLast time.Time, victimCount int, otherFirst time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, a := range b.acks {
		switch {
		case a.node == victim:
			if a.at.After(victimLast) {
				victimLast = a.at
			}
			if a.at.After(t) {
				victimCount++
			}
		case a.at.After(t) && (otherFirst.IsZero() || a.at.Before(otherFirst)):
			otherFirst = a.at
		}
	}
	return victimLast, victimCount, otherFirst
}

// NetworkPartition runs one partition: it creates the topic, waits for its
// ISR to be full and opts.Before acknowledgements, cuts the leader off from
// the other nodes, waits for them to elect another leader and for
// opts.After acknowledgements, keeps the cut for opts.Isolation in all,
// notes the victim's divergent tail, heals the cut, waits for every ISR to
// be full and opts.After more acknowledgements, stops the writer, waits for
// the replicas' logs to be the same, then reads the partition back and
// checks the history. Every node must be serving when it is called.
func NetworkPartition(ctx context.Context, opts PartitionOptions) (PartitionReport, error) {
	opts.defaults()
	c, log := opts.Cluster, opts.Logger
	rep := PartitionReport{DivergedAt: -1, MajorityEpochEnd: -1}
	if err := createReplicatedTopic(ctx, c, opts.Topic, 1); err != nil {
		return rep, err
	}
	if _, err := c.ISRFull(ctx, time.Minute, opts.Topic); err != nil {
		return rep, err
	}
	acks := &brokerAcks{}
	w, err := startWriter(c, opts.Topic, 1, opts.Rate, kgo.AllISRAcks(), opts.Tuning, kgo.WithHooks(acks))
	if err != nil {
		return rep, err
	}
	defer w.close()
	if err := w.waitAcked(ctx, opts.Before, time.Minute); err != nil {
		return rep, fmt.Errorf("before the cut: %w", err)
	}
	if rep.Victim, err = c.LeaderOf(ctx, opts.Topic, 0); err != nil {
		return rep, err
	}
	if rep.Victim < 1 {
		return rep, fmt.Errorf("%s[0] has no leader before the cut", opts.Topic)
	}
	majority := slices.DeleteFunc(c.IDs(), func(id int32) bool { return id == rep.Victim })
	rep.QuorumLeader = c.QuorumLeader(ctx)
	cutAt := time.Now()
	if err := opts.Net.Isolate(rep.Victim, majority); err != nil {
		return rep, err
	}
	defer func() { _ = opts.Net.Heal(rep.Victim) }()
	log.Info("cut off", zap.Int32("node", rep.Victim), zap.Int32s("from", majority), zap.Int32("controller", rep.QuorumLeader))

	err = waitFor(ctx, time.Minute, "a new leader on the majority", func(ctx context.Context) (bool, string) {
		var seen []string
		leader := int32(0)
		for _, id := range majority {
			l, err := partitionLeader(ctx, c, id, opts.Topic)
			if err != nil {
				return false, err.Error()
			}
			seen = append(seen, fmt.Sprintf("node %d says %d", id, l))
			if l < 1 || l == rep.Victim || (leader != 0 && l != leader) {
				return false, strings.Join(seen, ", ")
			}
			leader = l
		}
		rep.NewLeader = leader
		return true, ""
	})
	if err != nil {
		return rep, err
	}
	rep.LeaderSeen = time.Since(cutAt)
	if err := w.waitAcked(ctx, w.acked()+opts.After, time.Minute); err != nil {
		return rep, fmt.Errorf("after the new leader %d: %w", rep.NewLeader, err)
	}
	select {
	case <-ctx.Done():
		return rep, ctx.Err()
	case <-time.After(time.Until(cutAt.Add(opts.Isolation))):
	}

	if ps, err := c.Describe(ctx, rep.Victim, opts.Topic); err == nil && len(ps) == 1 {
		rep.VictimView = ps[0]
	} else {
		rep.VictimView = PartitionState{Topic: opts.Topic, Leader: -1, Err: fmt.Errorf("victim's metadata: %v (%d partitions)", err, len(ps))}
	}
	if rep.VictimLogEnd, err = logEndOf(ctx, c.Addr(rep.Victim), opts.Topic); err != nil {
		return rep, fmt.Errorf("victim's log end: %w", err)
	}
	victimLog, err := c.replicaLog(rep.Victim, opts.Topic)
	if err != nil {
		return rep, err
	}
	leaderLog, err := c.replicaLog(rep.NewLeader, opts.Topic)
	if err != nil {
		return rep, err
	}
	i := commonPrefix(victimLog, leaderLog)
	rep.Tail = victimLog[i:]
	if len(rep.Tail) > 0 {
		rep.DivergedAt = rep.Tail[0].BaseOffset
		rep.TailRecords = rep.Tail[len(rep.Tail)-1].NextOffset() - rep.DivergedAt
		if rep.MajorityEpochEnd, err = epochEndOf(ctx, c.Addr(rep.NewLeader), opts.Topic, rep.Tail[0].LeaderEpoch); err != nil {
			return rep, fmt.Errorf("new leader's end of epoch %d: %w", rep.Tail[0].LeaderEpoch, err)
		}
	}

	healAt := time.Now()
	if err := opts.Net.Heal(rep.Victim); err != nil {
		return rep, err
	}
	log.Info("healed", zap.Int32("node", rep.Victim))
	if rep.ISR, err = c.ISRFull(ctx, 2*time.Minute, opts.Topic); err != nil {
		return rep, fmt.Errorf("after the heal: %w", err)
	}
	rep.HealedAfter = time.Since(healAt)
	if err := w.waitAcked(ctx, w.acked()+opts.After, time.Minute); err != nil {
		return rep, fmt.Errorf("after the heal: %w", err)
	}
	if err := w.finish(ctx); err != nil {
		return rep, err
	}
	victimLast, victimCount, otherFirst := acks.since(cutAt, rep.Victim)
	rep.VictimLastAck, rep.VictimAcksAfter = victimLast.Sub(cutAt), victimCount
	if !otherFirst.IsZero() {
		rep.NewLeaderFirstAck = otherFirst.Sub(cutAt)
	}
	rep.LongestPause, _ = w.longestPause()

	var logs [][]BatchHeader
	err = waitFor(ctx, 2*time.Minute, "the same log on every replica", func(context.Context) (bool, string) {
		logs = logs[:0]
		for _, id := range c.IDs() {
			l, err := c.replicaLog(id, opts.Topic)
			if err != nil {
				return false, err.Error()
			}
			logs = append(logs, l)
		}
		for k, l := range logs[1:] {
			if !slices.Equal(logs[0], l) {
				return false, fmt.Sprintf("node 1 has %d batches to offset %d, node %d has %d to %d (same to batch %d)",
					len(logs[0]), logEnd(logs[0]), k+2, len(l), logEnd(l), commonPrefix(logs[0], l))
			}
		}
		return true, ""
	})
	if err != nil {
		return rep, err
	}
	rep.LogEnd = logEnd(logs[0])
	for _, b := range rep.Tail {
		if slices.Contains(logs[0], b) {
			rep.TailLeft++
		}
	}

	check, err := w.check(ctx, c, opts.Topic, nil)
	rep.Check = check
	return rep, err
}

// partitionLeader is the leader of topic's partition 0 as node id says.
func partitionLeader(ctx context.Context, c *Cluster, id int32, topic string) (int32, error) {
	ps, err := c.Describe(ctx, id, topic)
	if err != nil {
		return -1, err
	}
	if len(ps) != 1 || ps[0].Err != nil {
		return -1, fmt.Errorf("node %d: %s has partitions %v", id, topic, ps)
	}
	return ps[0].Leader, nil
}

// logEndOf is topic's partition 0 log end offset on the broker at addr, as
// it answers ListOffsets for the latest offset from the debug replica id
// (-2): that id is answered by any replica, leader or not, with its log end
// rather than its high watermark (Kafka's KafkaApis.handleListOffsetRequest).
func logEndOf(ctx context.Context, addr, topic string) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestTimeoutOverhead(2*time.Second), kgo.RequestRetries(0))
	if err != nil {
		return -1, err
	}
	defer cl.Close()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -2
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := req.RequestWith(lctx, cl.SeedBrokers()[0])
	if err != nil {
		return -1, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("ListOffsets answered %d topics", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return -1, fmt.Errorf("ListOffsets: %w", err)
	}
	return p.Offset, nil
}

// epochEndOf is where the leader at addr says leader epoch epoch of
// topic's partition 0 ends, as it answers a consumer's
// OffsetForLeaderEpoch.
func epochEndOf(ctx context.Context, addr, topic string, epoch int32) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestTimeoutOverhead(2*time.Second), kgo.RequestRetries(0))
	if err != nil {
		return -1, err
	}
	defer cl.Close()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.CurrentLeaderEpoch = -1
	rp.LeaderEpoch = epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	octx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := req.RequestWith(octx, cl.SeedBrokers()[0])
	if err != nil {
		return -1, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("OffsetForLeaderEpoch answered %d topics", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return -1, fmt.Errorf("OffsetForLeaderEpoch: %w", err)
	}
	return p.EndOffset, nil
}

// BatchHeader is what identifies a record batch in a log: where it is,
// which leader epoch wrote it, and the CRC of everything after the CRC
// field (attributes, timestamps, producer, records).
type BatchHeader struct {
	BaseOffset      int64
	LastOffsetDelta int32
	LeaderEpoch     int32
	CRC             uint32
}

// NextOffset is the offset after the batch's last record.
func (b BatchHeader) NextOffset() int64 { return b.BaseOffset + int64(b.LastOffsetDelta) + 1 }

func (b BatchHeader) String() string {
	return fmt.Sprintf("[%d,%d] epoch %d crc %08x", b.BaseOffset, b.NextOffset()-1, b.LeaderEpoch, b.CRC)
}

// replicaLog is the batch headers of node id's replica of topic's
// partition 0, read from its segment files (log.dirs/<topic>-0/*.log), in
// offset order. A batch still being written at a segment's end is left out.
func (c *Cluster) replicaLog(id int32, topic string) ([]BatchHeader, error) {
	dir := filepath.Join(c.node(id).dir, "data", topic+"-0")
	segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("node %d: no segment in %s", id, dir)
	}
	sort.Strings(segs) // 20-digit base offsets
	var out []BatchHeader
	for _, s := range segs {
		data, err := os.ReadFile(s)
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", id, err)
		}
		for len(data) >= 61 {
			size := int64(binary.BigEndian.Uint32(data[8:12]))
			if size < 49 || int64(len(data)) < 12+size {
				break
			}
			out = append(out, BatchHeader{
				BaseOffset:      int64(binary.BigEndian.Uint64(data[0:8])),
				LeaderEpoch:     int32(binary.BigEndian.Uint32(data[12:16])),
				CRC:             binary.BigEndian.Uint32(data[17:21]),
				LastOffsetDelta: int32(binary.BigEndian.Uint32(data[23:27])),
			})
			data = data[12+size:]
		}
	}
	return out, nil
}

// commonPrefix is how many batches a and b share from the start.
func commonPrefix(a, b []BatchHeader) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

func logEnd(l []BatchHeader) int64 {
	if len(l) == 0 {
		return 0
	}
	return l[len(l)-1].NextOffset()
}
