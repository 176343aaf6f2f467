package chaos

// The group-offsets failover (issue 14, "a group that committed keeps its
// offsets when its coordinator's broker is killed"): a consumer group
// commits offsets on an RF=3 __consumer_offsets, the broker coordinating it
// (FindCoordinator) is SIGKILLed while the member still runs with records
// polled past its commit, and the new coordinator must come to answer
// OffsetFetch with exactly what was committed (answers of an earlier state
// before that are counted, never newer or other offsets); the next member
// resumes there (nothing
// skipped, nothing before the commit read again), and the killed node
// rejoins every ISR.

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"go.uber.org/zap"
)

// GroupOffsetsOptions configure a group-offsets failover run.
type GroupOffsetsOptions struct {
	Cluster    *Cluster
	Topic      string // default "group-offsets"; Partitions partitions, RF=all nodes, min.insync.replicas=2
	Partitions int32  // default 3
	Group      string // default "group-offsets"
	Records    int    // records written before the first round (default 3000)
	Rounds     int    // coordinator kills (default 3)
	Window     int    // records polled after each commit and left uncommitted (default 100)
	Logger     *zap.Logger
}

func (o *GroupOffsetsOptions) defaults() {
	if o.Topic == "" {
		o.Topic = "group-offsets"
	}
	if o.Partitions == 0 {
		o.Partitions = 3
	}
	if o.Group == "" {
		o.Group = "group-offsets"
	}
	if o.Records == 0 {
		o.Records = 3000
	}
	if o.Rounds == 0 {
		o.Rounds = 3
	}
	if o.Window == 0 {
		o.Window = 100
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// GroupRound is one coordinator kill.
type GroupRound struct {
	Victim         int32           // the group's coordinator, killed
	Controller     int32           // the active controller then (-1 if unknown): killing it costs a Raft election first
	NewCoordinator int32           // the coordinator FindCoordinator named afterwards
	Committed      map[int32]int64 // what the member committed before the kill
	Served         map[int32]int64 // what the new coordinator's OffsetFetch answered
	Uncommitted    int             // records the member polled past its commit before the kill
	// Stale counts OffsetFetch answers of the new coordinator older than
	// the commit, before it served the commit: Kafka's coordinator answers
	// from its state as of its partition's high watermark, which on a new
	// leader trails until the followers fetch from it again.
	Stale        int
	FailoverTook time.Duration // from the kill to the new coordinator serving Committed
	ISRFullAfter time.Duration // from the restart to every ISR full
}

func (r GroupRound) String() string {
	return fmt.Sprintf("coordinator %d killed (active controller %d), %d served the commit %v %d ms later (%d older answers before), %d polled past the commit, ISR full %d ms after the restart",
		r.Victim, r.Controller, r.NewCoordinator, r.Served, r.FailoverTook.Milliseconds(), r.Stale, r.Uncommitted, r.ISRFullAfter.Milliseconds())
}

// GroupOffsetsReport is what a group-offsets run showed.
type GroupOffsetsReport struct {
	Records     int
	Rounds      []GroupRound
	Polled      int // records polled over every member session
	Reconsumed  int // records polled again by the member after a kill (all from the uncommitted window)
	Uncommitted int // records polled past a commit over every round: the most that may be re-read
	Anomalies   []string
	Took        time.Duration
}

// OK says no anomaly was found.
func (r GroupOffsetsReport) OK() bool { return len(r.Anomalies) == 0 }

func (r GroupOffsetsReport) String() string {
	return fmt.Sprintf("%d records, %d coordinator kills in %v: polled %d, re-read %d of %d uncommitted, anomalies %d %q",
		r.Records, len(r.Rounds), r.Took.Round(time.Second), r.Polled, r.Reconsumed, r.Uncommitted, len(r.Anomalies), r.Anomalies)
}

// GroupOffsetsFailover writes opts.Records records, then runs opts.Rounds
// rounds; in each a new group member starts (its first record of each
// partition must be at the group's committed offset), polls a share of the
// records, commits, polls opts.Window more without committing, and then
// the group's coordinator is killed; the new coordinator's OffsetFetch must
// equal the commit, the member is closed, the victim restarted and every
// ISR (__consumer_offsets too) must be full again. A last member reads the
// rest. Every record must have been polled, and only the uncommitted
// windows polled twice. Every node must be serving when it is called.
func GroupOffsetsFailover(ctx context.Context, opts GroupOffsetsOptions) (GroupOffsetsReport, error) {
	opts.defaults()
	c, log := opts.Cluster, opts.Logger
	start := time.Now()
	rep := GroupOffsetsReport{Records: opts.Records}
	if err := createReplicatedTopic(ctx, c, opts.Topic, opts.Partitions); err != nil {
		return rep, err
	}
	if _, err := c.ISRFull(ctx, time.Minute, opts.Topic); err != nil {
		return rep, err
	}
	if err := fillTopic(ctx, c, opts.Topic, opts.Partitions, opts.Records); err != nil {
		return rep, err
	}
	log.Info("filled", zap.String("topic", opts.Topic), zap.Int("records", opts.Records))

	chunk := opts.Records / (opts.Rounds + 1)
	committed := map[int32]int64{} // the group's commit; a partition absent starts at 0
	seen := map[Pos]int{}          // how often each record was polled
	var prevSession map[Pos]bool   // the records the previous member polled
	for round := 1; round <= opts.Rounds+1; round++ {
		last := round > opts.Rounds
		m, err := newGroupMember(c, opts)
		if err != nil {
			return rep, err
		}
		want := chunk
		if last {
			want = opts.Records
			for _, o := range committed {
				want -= int(o)
			}
		}
		polled := map[Pos]bool{}
		firsts := map[int32]int64{}
		record := func(recs []*kgo.Record) {
			for _, r := range recs {
				p := Pos{r.Partition, r.Offset}
				if _, ok := firsts[r.Partition]; !ok {
					firsts[r.Partition] = r.Offset
				}
				if !polled[p] {
					if prevSession[p] {
						rep.Reconsumed++
					}
					polled[p] = true
				}
				seen[p]++
				rep.Polled++
			}
		}
		if err := m.pollN(ctx, want, record); err != nil {
			m.cl.Close()
			return rep, fmt.Errorf("round %d, before the commit: %w", round, err)
		}
		for part, first := range firsts {
			if first != committed[part] {
				rep.Anomalies = append(rep.Anomalies, fmt.Sprintf("round %d: the member began partition %d at %d, the group had committed %d", round, part, first, committed[part]))
			}
		}
		if last {
			m.cl.Close()
			break
		}
		if err := m.cl.CommitUncommittedOffsets(ctx); err != nil {
			m.cl.Close()
			return rep, fmt.Errorf("round %d: commit: %w", round, err)
		}
		for part, eo := range m.cl.CommittedOffsets()[opts.Topic] {
			committed[part] = eo.Offset
		}
		gr := GroupRound{Committed: maps.Clone(committed)}
		before := len(polled)
		if err := m.pollN(ctx, opts.Window, record); err != nil {
			m.cl.Close()
			return rep, fmt.Errorf("round %d, after the commit: %w", round, err)
		}
		gr.Uncommitted = len(polled) - before
		rep.Uncommitted += gr.Uncommitted

		if gr.Victim, err = c.coordinatorOf(ctx, 0, opts.Group); err != nil {
			m.cl.Close()
			return rep, fmt.Errorf("round %d: %w", round, err)
		}
		gr.Controller = c.QuorumLeader(ctx)
		killAt := time.Now()
		if err := c.Kill(gr.Victim); err != nil {
			m.cl.Close()
			return rep, err
		}
		log.Info("killed the group coordinator", zap.Int("round", round), zap.Int32("node", gr.Victim))
		var wrong []string
		err = waitFor(ctx, time.Minute, "the new coordinator serving the commit", func(ctx context.Context) (bool, string) {
			id, err := c.coordinatorOf(ctx, 0, opts.Group)
			if err != nil {
				return false, err.Error()
			}
			if id == gr.Victim {
				return false, fmt.Sprintf("coordinator still %d", id)
			}
			served, err := c.offsetFetch(ctx, id, opts.Group, opts.Topic)
			if err != nil {
				return false, fmt.Sprintf("OffsetFetch from %d: %v", id, err)
			}
			gr.NewCoordinator, gr.Served = id, served
			if maps.Equal(served, committed) {
				return true, ""
			}
			if olderThan(served, committed) {
				gr.Stale++
			} else {
				wrong = append(wrong, fmt.Sprintf("node %d served %v", id, served))
			}
			return false, fmt.Sprintf("node %d served %v, committed %v", id, served, committed)
		})
		if err != nil {
			m.cl.Close()
			return rep, fmt.Errorf("round %d: coordinator %d killed, the group committed %v; node %d last served %v, %d older answers: %w",
				round, gr.Victim, committed, gr.NewCoordinator, gr.Served, gr.Stale, err)
		}
		gr.FailoverTook = time.Since(killAt)
		if len(wrong) > 0 {
			rep.Anomalies = append(rep.Anomalies, fmt.Sprintf("round %d: OffsetFetch answered offsets the group never committed (committed %v): %q", round, committed, wrong))
		}
		m.cl.Close()
		prevSession = polled

		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err = c.Start(sctx, gr.Victim)
		cancel()
		if err != nil {
			return rep, fmt.Errorf("round %d: restart node %d: %w", round, gr.Victim, err)
		}
		restartAt := time.Now()
		if _, err := c.ISRFull(ctx, 2*time.Minute); err != nil {
			return rep, fmt.Errorf("round %d: %w", round, err)
		}
		gr.ISRFullAfter = time.Since(restartAt)
		rep.Rounds = append(rep.Rounds, gr)
		log.Info("round done", zap.Int("round", round), zap.Stringer("round", gr))
	}

	final, err := readAll(ctx, c.Bootstrap(), opts.Topic, opts.Partitions)
	if err != nil {
		return rep, fmt.Errorf("final read: %w", err)
	}
	if len(final) != opts.Records {
		rep.Anomalies = append(rep.Anomalies, fmt.Sprintf("the topic holds %d records, %d were written", len(final), opts.Records))
	}
	var never []string
	for _, r := range final {
		if seen[r.Pos] == 0 && len(never) < 5 {
			never = append(never, r.Pos.String())
		}
	}
	if len(never) > 0 {
		rep.Anomalies = append(rep.Anomalies, fmt.Sprintf("records never polled, first %v", never))
	}
	if rep.Reconsumed > rep.Uncommitted {
		rep.Anomalies = append(rep.Anomalies, fmt.Sprintf("%d records re-read, more than the %d left uncommitted", rep.Reconsumed, rep.Uncommitted))
	}
	rep.Took = time.Since(start)
	return rep, nil
}

// olderThan says every offset of served is at most committed's (a
// partition absent from served is at its start), so served is an earlier
// state of the group's commits.
func olderThan(served, committed map[int32]int64) bool {
	for p, o := range served {
		if c, ok := committed[p]; !ok || o > c {
			return false
		}
	}
	return true
}

// fillTopic writes records numbered 0 to n-1, record i to partition
// i%partitions, with an idempotent acks=all producer.
func fillTopic(ctx context.Context, c *Cluster, topic string, partitions int32, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return err
	}
	defer cl.Close()
	fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	const batch = 500
	for i := 0; i < n; i += batch {
		var rs []*kgo.Record
		for j := i; j < min(i+batch, n); j++ {
			rs = append(rs, &kgo.Record{Value: []byte(strconv.Itoa(j)), Partition: int32(j) % partitions})
		}
		if err := cl.ProduceSync(fctx, rs...).FirstErr(); err != nil {
			return fmt.Errorf("fill %s: %w", topic, err)
		}
	}
	return nil
}

// groupMember is one consumer of the group, committing only when told.
type groupMember struct{ cl *kgo.Client }

func newGroupMember(c *Cluster, opts GroupOffsetsOptions) (*groupMember, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.Bootstrap()...),
		kgo.ConsumerGroup(opts.Group),
		kgo.ConsumeTopics(opts.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(6*time.Second),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.RequestTimeoutOverhead(2*time.Second),
	)
	if err != nil {
		return nil, err
	}
	return &groupMember{cl: cl}, nil
}

// pollN polls until n records have come, at most 100 a poll, handing each
// batch to record.
func (m *groupMember) pollN(ctx context.Context, n int, record func([]*kgo.Record)) error {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for got := 0; got < n; {
		fs := m.cl.PollRecords(pctx, min(100, n-got))
		if err := pctx.Err(); err != nil {
			return fmt.Errorf("polled %d of %d records: %w", got, n, err)
		}
		recs := fs.Records()
		record(recs)
		got += len(recs)
	}
	return nil
}

// coordinatorOf is the coordinator of key (keyType 0 a group, 1 a
// transactional id) as the first running node that answers
// FindCoordinator names it.
func (c *Cluster) coordinatorOf(ctx context.Context, keyType int8, key string) (int32, error) {
	var last error
	for _, id := range c.upBrokers() {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = keyType
		req.CoordinatorKeys = []string{key}
		req.CoordinatorKey = key
		resp, err := c.requestNode(ctx, id, req)
		if err != nil {
			last = err
			continue
		}
		fc := resp.(*kmsg.FindCoordinatorResponse)
		code, node := fc.ErrorCode, fc.NodeID
		if len(fc.Coordinators) == 1 {
			code, node = fc.Coordinators[0].ErrorCode, fc.Coordinators[0].NodeID
		}
		if err := kerr.ErrorForCode(code); err != nil {
			last = fmt.Errorf("node %d: FindCoordinator %q: %w", id, key, err)
			continue
		}
		return node, nil
	}
	return -1, fmt.Errorf("no running node named the coordinator of %q: %w", key, last)
}

// offsetFetch is group's committed offsets of topic as node id answers
// OffsetFetch.
func (c *Cluster) offsetFetch(ctx context.Context, id int32, group, topic string) (map[int32]int64, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
	resp, err := c.requestNode(ctx, id, req)
	if err != nil {
		return nil, err
	}
	of := resp.(*kmsg.OffsetFetchResponse)
	code, topics := of.ErrorCode, of.Topics
	if len(of.Groups) == 1 {
		code = of.Groups[0].ErrorCode
		topics = nil
		for _, t := range of.Groups[0].Topics {
			ft := kmsg.NewOffsetFetchResponseTopic()
			ft.Topic = t.Topic
			for _, p := range t.Partitions {
				fp := kmsg.NewOffsetFetchResponseTopicPartition()
				fp.Partition, fp.Offset, fp.ErrorCode = p.Partition, p.Offset, p.ErrorCode
				ft.Partitions = append(ft.Partitions, fp)
			}
			topics = append(topics, ft)
		}
	}
	if err := kerr.ErrorForCode(code); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for _, t := range topics {
		if t.Topic != topic {
			continue
		}
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("partition %d: %w", p.Partition, err)
			}
			if p.Offset >= 0 {
				out[p.Partition] = p.Offset
			}
		}
	}
	return out, nil
}

// requestNode sends req to node id itself, not to a broker it leads the
// client to, at most at Kafka 3.9's versions (OffsetFetch v9 names topics;
// v10 gives their ids).
func (c *Cluster) requestNode(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.node(id).addr), kgo.RequestTimeoutOverhead(2*time.Second),
		kgo.DialTimeout(time.Second), kgo.RequestRetries(0), kgo.MaxVersions(kversion.V3_9_0()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(rctx, req)
	if err != nil {
		return nil, fmt.Errorf("node %d: %w", id, err)
	}
	return resp, nil
}
