package broker

// Followers' fetchers, as Kafka's ReplicaFetcherManager and
// ReplicaFetcherThread with num.replica.fetchers=1: one fetcher per
// leader broker fetches every partition this node follows from it, over
// Kafka's Fetch (v15: the replica state names this node) in a KIP-227
// fetch session (fetcher_session.go), on the leader's endpoint of inter.broker.listener.name
// in the image. Each round asks for
// every partition from its log end offset, with the epoch of its last
// batch (LastFetchedEpoch) and the leader epoch the image gave it; the
// answer's batches are appended as they are (offsets and epochs are the
// leader's) and its high watermark and log start offset become this
// replica's as far as its log holds them. A diverging epoch truncates the log to where it agrees
// with the leader, as Kafka's AbstractFetcherThread.truncateOnFetchResponse;
// a log that ends below the leader's log start offset (OFFSET_OUT_OF_RANGE)
// is emptied and started again there, as Kafka's truncateFullyAndStartAt;
// an epoch or leadership error sets the partition aside for
// replica.fetch.backoff.ms until the next image, any other error too,
// except that a leader not yet at this follower's leader epoch
// (UNKNOWN_LEADER_EPOCH, or NOT_LEADER_OR_FOLLOWER from the node the image
// names leader) is asked again after leaderCatchUpBackoff: it is applying
// the image that makes it leader, and a follower that waited a whole
// backoff would hold acks=all produces back that long after a failover
// (Kafka waits replica.fetch.backoff.ms). The
// publisher tells the fetchers of each image (follow), before the replicas
// change, so that no fetch answer is applied to a partition this node
// stopped following, and after, so that the new followers fetch.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/protocol"
	"github.com/strata-io/strata/replica"
	"github.com/strata-io/strata/storage"
)

// leaderCatchUpBackoff is how soon a follower asks again a leader that
// has not yet applied the image making it leader.
const leaderCatchUpBackoff = 20 * time.Millisecond

// replicaFetchVersion is the Fetch version followers send: topic ids,
// LastFetchedEpoch and DivergingEpoch, and the replica state.
const replicaFetchVersion = 15

// replicaFetchFrameLimit bounds a fetch answer's frame beyond
// replica.fetch.response.max.bytes: the leader sends a first batch bigger
// than the limits whole.
const replicaFetchFrameLimit = 128 << 20

// replicaFetchers are this node's fetchers, one per leader.
type replicaFetchers struct {
	node     int32
	cfg      ReplicaFetchConfig
	listener string
	sec      peerSecurity // the inter-broker listener's client side
	logs     *storage.Manager
	replicas *replica.Manager
	logger   *zap.Logger

	mu      sync.Mutex
	threads map[fetcherKey]*fetcherThread
	closed  bool
	wg      sync.WaitGroup
}

// fetcherKey is a leader and the address it is dialled at: a leader that
// registers again elsewhere gets a new fetcher.
type fetcherKey struct {
	leader int32
	addr   string
}

// fetchTarget is one followed partition.
type fetchTarget struct {
	sp          *storage.Partition
	rp          *replica.Partition
	topicID     [16]byte
	leaderEpoch int32
	delayUntil  time.Time // set aside after an error until then
}

// follow sets the fetchers to the partitions img has this node follow;
// it waits for a fetch answer being applied to a partition it removes.
func (f *replicaFetchers) follow(img *metadata.Image) {
	want := map[fetcherKey]map[*storage.Partition]*fetchTarget{}
	for _, t := range img.Topics.All() {
		st := f.logs.TopicByID(t.ID)
		if st == nil {
			continue
		}
		for i, p := range t.Partitions {
			sp := st.Partition(int32(i))
			if p.Leader < 0 || p.Leader == f.node || !slices.Contains(p.Replicas, f.node) || sp == nil {
				continue
			}
			rp, ok := f.replicas.Follower(sp)
			if !ok {
				continue
			}
			b, ok := img.Cluster.Broker(p.Leader)
			ep, hasEP := b.Endpoint(f.listener)
			if !ok || !hasEP {
				f.logger.Warn("the leader of a followed partition has no endpoint on the inter-broker listener",
					zap.String("topic", t.Name), zap.Int("partition", i), zap.Int32("leader", p.Leader), zap.String("listener", f.listener))
				continue
			}
			key := fetcherKey{leader: p.Leader, addr: net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))}
			if want[key] == nil {
				want[key] = map[*storage.Partition]*fetchTarget{}
			}
			want[key][sp] = &fetchTarget{sp: sp, rp: rp, topicID: t.ID, leaderEpoch: p.LeaderEpoch}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	for key, th := range f.threads {
		if want[key] == nil {
			th.stop()
			delete(f.threads, key)
		}
	}
	for key, targets := range want {
		th := f.threads[key]
		if th == nil {
			th = &fetcherThread{f: f, key: key, done: make(chan struct{}), wake: make(chan struct{}, 1)}
			f.threads[key] = th
			f.wg.Add(1)
			go th.run()
		}
		th.set(targets)
	}
}

// close stops every fetcher and waits for them.
func (f *replicaFetchers) close() {
	f.mu.Lock()
	f.closed = true
	for key, th := range f.threads {
		th.stop()
		delete(f.threads, key)
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// withReplicationDefaults is c with Kafka's defaults for the replication
// settings left zero (a Config built without them), so a follower never
// fetches in a busy loop and a leader never drops its ISR at once.
func withReplicationDefaults(c ClusterConfig) ClusterConfig {
	d := DefaultClusterConfig()
	if c.InterBrokerListener == "" {
		c.InterBrokerListener = d.InterBrokerListener
	}
	if c.ReplicaLagTimeMax <= 0 {
		c.ReplicaLagTimeMax = d.ReplicaLagTimeMax
	}
	f := &c.ReplicaFetch
	if f.MaxBytes <= 0 {
		f.MaxBytes = d.ReplicaFetch.MaxBytes
	}
	if f.ResponseMaxBytes <= 0 {
		f.ResponseMaxBytes = d.ReplicaFetch.ResponseMaxBytes
	}
	if f.MinBytes <= 0 {
		f.MinBytes = d.ReplicaFetch.MinBytes
	}
	if f.MaxWait <= 0 {
		f.MaxWait = d.ReplicaFetch.MaxWait
	}
	if f.Backoff <= 0 {
		f.Backoff = d.ReplicaFetch.Backoff
	}
	return c
}

// fetcherThread fetches from one leader.
type fetcherThread struct {
	f    *replicaFetchers
	key  fetcherKey
	done chan struct{} // closed by stop
	wake chan struct{} // a new set of partitions

	// mu guards targets and conn; it is held while an answer is applied,
	// so set and stop wait for it.
	mu      sync.Mutex
	targets map[*storage.Partition]*fetchTarget
	conn    net.Conn
	stopped bool

	session replicaFetchSession // used by run alone (fetcher_session.go)
}

// set replaces the partitions fetched, keeping a partition's backoff
// while its leader epoch is the same.
func (t *fetcherThread) set(targets map[*storage.Partition]*fetchTarget) {
	t.mu.Lock()
	for sp, tg := range targets {
		if old := t.targets[sp]; old != nil && old.leaderEpoch == tg.leaderEpoch {
			tg.delayUntil = old.delayUntil
		}
	}
	t.targets = targets
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// stop ends the fetcher; an answer being applied is finished first.
func (t *fetcherThread) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.stopped = true
	close(t.done)
	if t.conn != nil {
		t.conn.Close()
	}
}

func (t *fetcherThread) run() {
	defer t.f.wg.Done()
	log := t.f.logger.With(zap.Int32("leader", t.key.leader), zap.String("addr", t.key.addr))
	var (
		corr int32
		buf  []byte
	)
	defer t.closeConn()
	for {
		req, next := t.request()
		if req == nil {
			if !t.sleep(next) {
				return
			}
			continue
		}
		conn, err := t.dial()
		if errors.Is(err, kerr.SaslAuthenticationFailed) {
			// A wrong or missing credential between nodes stops
			// replication until an operator acts, so it is told, as
			// Kafka's replica fetcher logs it at ERROR.
			log.Error("connection to the leader failed authentication", zap.Error(err))
		} else if err != nil {
			log.Debug("cannot reach the leader to fetch from it", zap.Error(err))
		}
		if err != nil {
			if !t.sleep(t.f.cfg.Backoff) {
				return
			}
			continue
		}
		corr++
		var resp *kmsg.FetchResponse
		resp, buf, err = fetchRoundTrip(conn, t.session.request(req), corr, buf, t.f.cfg.MaxWait)
		if err != nil {
			t.session.lost()
			t.closeConn()
			select {
			case <-t.done:
				return
			default:
			}
			log.Info("fetch from the leader failed", zap.Error(err))
			if !t.sleep(t.f.cfg.Backoff) {
				return
			}
			continue
		}
		if !t.session.answered(resp) && sessionError(resp.ErrorCode) {
			log.Info("the leader ended the fetch session; fetching in full", zap.Error(kerr.ErrorForCode(resp.ErrorCode)))
			continue
		}
		if resp.ErrorCode != 0 {
			log.Info("the leader refused the fetch", zap.Error(kerr.ErrorForCode(resp.ErrorCode)))
			if !t.sleep(t.f.cfg.Backoff) {
				return
			}
			continue
		}
		t.apply(req, resp, log)
	}
}

// request builds the next fetch of the partitions not set aside; nil when
// there is none, with how long until one is due.
func (t *fetcherThread) request() (*kmsg.FetchRequest, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	next := time.Duration(-1)
	req := kmsg.NewPtrFetchRequest()
	req.Version = replicaFetchVersion
	req.ReplicaID = t.f.node
	req.ReplicaState.ID, req.ReplicaState.Epoch = t.f.node, -1
	req.MaxWaitMillis = int32(t.f.cfg.MaxWait.Milliseconds())
	req.MinBytes, req.MaxBytes = t.f.cfg.MinBytes, t.f.cfg.ResponseMaxBytes
	req.SessionEpoch = finalFetchEpoch
	byTopic := map[[16]byte]int{}
	for sp, tg := range t.targets {
		if d := tg.delayUntil.Sub(now); d > 0 {
			if next < 0 || d < next {
				next = d
			}
			continue
		}
		i, ok := byTopic[tg.topicID]
		if !ok {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = sp.Topic, tg.topicID
			req.Topics = append(req.Topics, rt)
			i = len(req.Topics) - 1
			byTopic[tg.topicID] = i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = sp.Index
		rp.CurrentLeaderEpoch = tg.leaderEpoch
		rp.FetchOffset = sp.Log.LogEndOffset()
		rp.LastFetchedEpoch = sp.Log.LatestEpoch()
		rp.LogStartOffset = sp.Log.LogStartOffset()
		rp.PartitionMaxBytes = t.f.cfg.MaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	if len(req.Topics) == 0 {
		return nil, next
	}
	return req, 0
}

// sleep waits d (d < 0: until woken), or until new partitions come;
// false once stopped.
func (t *fetcherThread) sleep(d time.Duration) bool {
	var timer <-chan time.Time
	if d >= 0 {
		tm := time.NewTimer(d)
		defer tm.Stop()
		timer = tm.C
	}
	select {
	case <-t.done:
		return false
	case <-t.wake:
	case <-timer:
	}
	return true
}

func (t *fetcherThread) dial() (net.Conn, error) {
	t.mu.Lock()
	c := t.conn
	t.mu.Unlock()
	if c != nil {
		return c, nil
	}
	c, err := dialPeer(t.key.addr, t.f.node, t.f.sec)
	if err != nil {
		return nil, fmt.Errorf("dial leader %d at %s: %w", t.key.leader, t.key.addr, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		c.Close()
		return nil, errors.New("fetcher stopped")
	}
	t.conn = c
	return c, nil
}

func (t *fetcherThread) closeConn() {
	t.mu.Lock()
	if t.conn != nil {
		t.conn.Close()
		t.conn = nil
	}
	t.mu.Unlock()
}

// fetchRoundTrip sends req and reads its answer on conn.
func fetchRoundTrip(conn net.Conn, req *kmsg.FetchRequest, corr int32, buf []byte, maxWait time.Duration) (*kmsg.FetchResponse, []byte, error) {
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("strata-replica-fetcher")).AppendRequest(buf[:0], req, corr)
	if err := conn.SetDeadline(time.Now().Add(maxWait + 30*time.Second)); err != nil {
		return nil, buf, err
	}
	if _, err := conn.Write(frame); err != nil {
		return nil, frame, fmt.Errorf("send fetch: %w", err)
	}
	body, err := protocol.ReadFrame(conn, replicaFetchFrameLimit, frame)
	if err != nil {
		return nil, frame, fmt.Errorf("read fetch answer: %w", err)
	}
	if len(body) < 4 || int32(binary.BigEndian.Uint32(body)) != corr {
		return nil, body, fmt.Errorf("fetch answer for another request: %w", kerr.CorruptMessage)
	}
	rest, err := skipHeaderTags(body[4:])
	if err != nil {
		return nil, body, err
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if err := resp.ReadFrom(rest); err != nil {
		return nil, body, fmt.Errorf("decode fetch answer: %w", err)
	}
	// The records alias body, which the next round reuses: copy them.
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			p := &resp.Topics[i].Partitions[j]
			p.RecordBatches = append([]byte(nil), p.RecordBatches...)
		}
	}
	return resp, body, nil
}

// skipHeaderTags skips a flexible response header's tagged fields.
func skipHeaderTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, fmt.Errorf("response header: %w", kerr.CorruptMessage)
	}
	b = b[k:]
	for ; n > 0; n-- {
		_, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, fmt.Errorf("response header tag: %w", kerr.CorruptMessage)
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < size {
			return nil, fmt.Errorf("response header tag: %w", kerr.CorruptMessage)
		}
		b = b[k+int(size):]
	}
	return b, nil
}

// apply takes a fetch answer into the partitions still fetched from this
// leader at the epoch they were asked at.
func (t *fetcherThread) apply(req *kmsg.FetchRequest, resp *kmsg.FetchResponse, log *zap.Logger) {
	asked := map[[16]byte]map[int32]*kmsg.FetchRequestTopicPartition{}
	for i := range req.Topics {
		m := map[int32]*kmsg.FetchRequestTopicPartition{}
		for j := range req.Topics[i].Partitions {
			m[req.Topics[i].Partitions[j].Partition] = &req.Topics[i].Partitions[j]
		}
		asked[req.Topics[i].TopicID] = m
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	byID := map[[16]byte]map[int32]*fetchTarget{}
	for sp, tg := range t.targets {
		if byID[tg.topicID] == nil {
			byID[tg.topicID] = map[int32]*fetchTarget{}
		}
		byID[tg.topicID][sp.Index] = tg
	}
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			tg, a := byID[rt.TopicID][rp.Partition], asked[rt.TopicID][rp.Partition]
			if tg == nil || a == nil || a.CurrentLeaderEpoch != tg.leaderEpoch || a.FetchOffset != tg.sp.Log.LogEndOffset() {
				continue // no longer followed here, or changed since it was asked
			}
			if err := t.applyPartition(tg, rp); err != nil {
				delay := t.f.cfg.Backoff
				if errors.Is(err, kerr.UnknownLeaderEpoch) || errors.Is(err, kerr.NotLeaderForPartition) {
					delay = min(delay, leaderCatchUpBackoff)
				}
				tg.delayUntil = time.Now().Add(delay)
				log.Info("partition fetch failed; backing off", zap.String("topic", tg.sp.Topic),
					zap.Int32("partition", tg.sp.Index), zap.Int32("leader_epoch", tg.leaderEpoch), zap.Error(err))
			}
		}
	}
}

// applyPartition takes one partition's answer: an error, a diverging
// epoch (truncate), or batches and the leader's high watermark.
func (t *fetcherThread) applyPartition(tg *fetchTarget, rp *kmsg.FetchResponseTopicPartition) error {
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		if leo := tg.sp.Log.LogEndOffset(); errors.Is(err, kerr.OffsetOutOfRange) && rp.LogStartOffset > leo {
			// The leader's retention removed what this log lacks: start
			// again at its log start, as Kafka's fetchOffsetAndTruncate.
			if err := tg.rp.TruncateFullyAndStartAt(rp.LogStartOffset); err != nil {
				return fmt.Errorf("start again at the leader's log start offset %d: %w", rp.LogStartOffset, err)
			}
			t.f.logger.Info("follower's log ended below the leader's log start offset; emptied and started again there",
				zap.String("topic", tg.sp.Topic), zap.Int32("partition", tg.sp.Index), zap.Int64("log_end", leo), zap.Int64("start", rp.LogStartOffset))
			return nil
		}
		return err
	}
	if rp.DivergingEpoch.EndOffset >= 0 {
		return t.truncate(tg, rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset)
	}
	records := wholeBatches(rp.RecordBatches)
	if _, err := tg.rp.AppendAsFollower(records, rp.HighWatermark); err != nil {
		return fmt.Errorf("append as follower: %w", err)
	}
	// The leader's log start offset (its retention, DeleteRecords) becomes
	// this log's as far as its high watermark, as Kafka's follower
	// maybeIncrementLogStartOffset.
	if start := min(rp.LogStartOffset, tg.sp.Log.HighWatermark()); start > tg.sp.Log.LogStartOffset() {
		if _, err := t.f.logs.DeleteRecords(tg.sp.Topic, tg.sp.Index, start); err != nil && !errors.Is(err, kerr.PolicyViolation) {
			return fmt.Errorf("move the log start offset to the leader's %d: %w", start, err)
		}
	}
	return nil
}

// truncate cuts the log to where it agrees with the leader, whose epoch
// leaderEpoch ends at leaderEnd, as Kafka's getOffsetTruncationState: to
// the smaller of the leader's end and this log's end of that epoch; when
// this log has no such epoch, to the end of its largest epoch below it
// (the next fetch asks again from there), or, with no epoch below it
// either, to the leader's end.
func (t *fetcherThread) truncate(tg *fetchTarget, leaderEpoch int32, leaderEnd int64) error {
	leo := tg.sp.Log.LogEndOffset()
	to := leaderEnd
	if ourEpoch, ourEnd := tg.sp.Log.EndOffsetForEpoch(leaderEpoch); ourEnd >= 0 {
		to = ourEnd
		if ourEpoch == leaderEpoch {
			to = min(leaderEnd, ourEnd)
		}
	}
	to = min(to, leo)
	if err := tg.rp.TruncateTo(to); err != nil {
		return fmt.Errorf("truncate to %d for the leader's epoch %d ending at %d: %w", to, leaderEpoch, leaderEnd, err)
	}
	t.f.logger.Info("follower truncated its log where it diverged from the leader's", zap.String("topic", tg.sp.Topic),
		zap.Int32("partition", tg.sp.Index), zap.Int64("from", leo), zap.Int64("to", to), zap.Int32("leader_epoch", leaderEpoch))
	return nil
}

// wholeBatches drops a partial batch at the end of fetched records.
func wholeBatches(records []byte) []byte {
	n := 0
	for rest := records; len(rest) > 0; {
		b, r, ok := batch.Next(rest)
		if !ok {
			break
		}
		n += len(b)
		rest = r
	}
	return records[:n]
}
