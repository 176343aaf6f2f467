package broker

// Fetch.
//
// Fetch sessions (KIP-227) are Kafka's: a full fetch opens one, an
// incremental fetch names only what changed and is answered only what
// changed (fetch_context.go, fetch_session.go). Topics are named by id
// from v13; v18 adds the follower's high watermark (KIP-1166), which
// Kafka's broker reads only in its KRaft replication and ignores here.
// Records go from the segment file to the socket with sendfile(2), never
// through a user-space buffer. The long poll waits on
// MaxWaitMillis/MinBytes and wakes as soon as any requested partition's
// high watermark moves. The first batch of the first non-empty partition is
// sent even when it exceeds max_bytes or partition_max_bytes (the progress
// guarantee). Follower fetches (replica id >= 0, v15+ in the replica
// state) need CLUSTER_ACTION, as in Kafka. On a single node they are served
// as consumer fetches (it has no followers); in a cluster a consumer's
// fetch is served by the partition's leader, and from v11 by its
// followers, else NOT_LEADER_OR_FOLLOWER (servesConsumer), and a
// follower's as Kafka's
// ReplicaManager.readFromLog for a follower (fetch_replica.go): from the
// partition's leader only, up to its log end offset, recording the
// follower's fetch offset, which moves the high watermark. With
// replica.selector.class set, a leader sends a consumer to an in-sync
// follower in its rack: a preferred read replica and no records, answered
// at once (KIP-392, readreplica.go).
// From v16 a partition answered NOT_LEADER_OR_FOLLOWER or
// FENCED_LEADER_EPOCH names its current leader and leader epoch, and the
// response those leaders' endpoints (KIP-951, leaderhints.go), as Kafka's
// handleFetchRequest, so a client moves without a metadata refresh.
// Every partition reports its last stable offset (min of the open
// transactions' first offsets and the high watermark); isolation level
// read_committed (1) reads only below it and lists the aborted
// transactions with records in the returned range, as Kafka does, so
// clients drop their records (and the markers).
// A consumer's fetch asks for at most what its consumer_byte_rate allows
// in the quota windows, and one over its quota is answered without
// records, carrying the throttle time (conn_quota.go).

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/protocol"
	"github.com/strata-io/strata/storage"
)

// registerFetch serves Fetch; its versions are here and nowhere else.
func registerFetch(r *registry) { r.add(kmsg.Fetch, 4, 18, handleFetch) }

// The session epochs of a full fetch (KIP-227). Before v7 requests carry
// no session fields and decode with epoch -1.
const (
	finalFetchEpoch   = -1
	initialFetchEpoch = 0
)

// handleFetch writes the response itself, through rc.fetch, so it returns
// none.
func handleFetch(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.FetchRequest)
	replicaID := r.ReplicaID
	if rc.req.Version >= 15 {
		replicaID = r.ReplicaState.ID
	}
	access := fetchAccess{rc: rc, follower: replicaID >= 0, replicaID: replicaID}
	access.clusterAction = access.follower && rc.authorizeCluster(OpClusterAction)
	access.replica = access.follower && rc.svc.cfg.Metadata != nil
	if !access.follower {
		rc.capFetchToQuota(r)
	}
	return nil, rc.svc.serveFetch(rc.fetch, rc.req, access)
}

// fetchAccess is which topics a fetch may read, as Kafka's
// handleFetchRequest decides: a follower (replica id >= 0, v15+ in the
// replica state) with CLUSTER_ACTION reads every topic and without it
// none; a consumer needs READ on each topic.
type fetchAccess struct {
	rc                      *reqCtx
	follower, clusterAction bool
	replica                 bool  // a follower's fetch in a cluster: served as a replica's
	replicaID               int32 // the follower's id
}

// refused reports whether a requested topic (t, nil when unknown) may not
// be read: TOPIC_AUTHORIZATION_FAILED. An unknown topic id is answered
// UNKNOWN_TOPIC_ID before authorization, an unknown name after it.
func (a fetchAccess) refused(t *storage.Topic, rt *kmsg.FetchRequestTopic, version int16) bool {
	switch {
	case a.follower:
		return !a.clusterAction
	case version >= 13 && t == nil:
		return false
	case version >= 13:
		return !a.rc.authorize(OpRead, ResourceTopic, t.Name)
	default:
		return !a.rc.authorize(OpRead, ResourceTopic, rt.Topic)
	}
}

func (b *services) serveFetch(c fetchWriter, req *protocol.Request, access fetchAccess) error {
	fc := b.fetchSessions.newContext(req.Version, req.Body.(*kmsg.FetchRequest), access.follower, b.clock.Now())
	if fc.kind == fetchSessionError {
		return c.writeFetch(req, fc, nil, nil)
	}
	r := fc.read
	deadline := b.clock.Now().Add(time.Duration(r.MaxWaitMillis) * time.Millisecond)
	for {
		waits := b.fetchWaits(r, req.Version, access.replica)
		read := b.readFetch(r, req.Version, access)
		if read.total >= int(r.MinBytes) || read.answerNow || !b.clock.Now().Before(deadline) {
			return c.writeFetch(req, fc, read.topics, read.nodes)
		}
		releaseFetch(read.topics)
		waitStart := time.Now()
		woken := b.waitAny(waits, b.clock.Until(deadline))
		access.rc.waited += time.Since(waitStart)
		if !woken {
			read = b.readFetch(r, req.Version, access)
			return c.writeFetch(req, fc, read.topics, read.nodes)
		}
	}
}

// fetchRead is one read of a fetch's partitions: total record bytes, and
// the endpoints of the leaders its partitions name (v16+).
type fetchRead struct {
	topics []fetchTopic
	nodes  []fetchNode
	total  int
	// answerNow: a partition failed or names a preferred read replica,
	// which Kafka's fetchMessages answers without waiting.
	answerNow bool
}

// resolveFetchTopic finds a requested topic by name, or by id from v13.
func (b *services) resolveFetchTopic(rt *kmsg.FetchRequestTopic, version int16) *storage.Topic {
	if version >= 13 {
		return b.logs.TopicByID(rt.TopicID)
	}
	return b.logs.Topic(rt.Topic)
}

// fetchWaits collects, before reading, the channels that close when a
// requested partition's high watermark next moves, and for a replica's
// fetch when its leader's log end offset does, so an append between the
// read and the wait is not missed.
func (b *services) fetchWaits(r *kmsg.FetchRequest, version int16, replica bool) []<-chan struct{} {
	var waits []<-chan struct{}
	for i := range r.Topics {
		t := b.resolveFetchTopic(&r.Topics[i], version)
		for _, rp := range r.Topics[i].Partitions {
			p := lookupPartition(t, rp.Partition)
			if p == nil {
				continue
			}
			waits = append(waits, p.Log.Wait())
			if replica {
				if lp, ok := b.replicas.Leader(p); ok {
					waits = append(waits, lp.AppendWait())
				}
			}
		}
	}
	return waits
}

// waitAny blocks until one of waits closes (true), or d passes or the broker
// shuts down (false).
func (b *services) waitAny(waits []<-chan struct{}, d time.Duration) bool {
	timer := b.clock.NewTimer(d)
	defer timer.Stop()
	cases := make([]reflect.SelectCase, 0, len(waits)+2)
	cases = append(cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer.Chan())},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(b.shutdown)})
	for _, w := range waits {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w)})
	}
	chosen, _, _ := reflect.Select(cases)
	return chosen >= 2
}

// readFetch reads every requested partition once, applying max_bytes across
// the response and partition_max_bytes per partition. From v16 a partition
// answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH names its current
// leader, and the response that leader's endpoint (KIP-951), as Kafka's
// handleFetchRequest.
func (b *services) readFetch(r *kmsg.FetchRequest, version int16, access fetchAccess) fetchRead {
	var read fetchRead
	hints := leaderHints{b: b}
	remaining := int(r.MaxBytes)
	minOne := true
	for i := range r.Topics {
		rt := &r.Topics[i]
		t := b.resolveFetchTopic(rt, version)
		ft := fetchTopic{name: rt.Topic, id: rt.TopicID}
		if t != nil {
			ft.stats = b.metrics.Topic(t.Name)
		}
		refused := access.refused(t, rt, version)
		for _, rp := range rt.Partitions {
			fp := fetchPartition{partition: rp.Partition, highWatermark: -1, lastStableOffset: -1, logStartOffset: -1,
				readCommitted: r.IsolationLevel == 1, preferredReadReplica: -1, leaderID: -1, leaderEpoch: -1}
			var err error = kerr.TopicAuthorizationFailed
			limit := min(int(rp.PartitionMaxBytes), max(remaining, 0))
			switch {
			case refused:
			case access.replica:
				err = b.readReplicaPartition(t, version, &rp, access.replicaID, limit, minOne, &fp)
			default:
				err = b.readPartition(t, version, r.Rack, &rp, limit, minOne, &fp)
			}
			if err != nil {
				fp.errorCode = b.errorCode(kmsg.Fetch, err)
				read.answerNow = true
			}
			if version >= 16 && t != nil && b.cfg.Metadata != nil &&
				(fp.errorCode == kerr.NotLeaderForPartition.Code || fp.errorCode == kerr.FencedLeaderEpoch.Code) {
				hints.add(&fp.leaderID, &fp.leaderEpoch, t.Name, rp.Partition)
			}
			if fp.preferredReadReplica >= 0 {
				read.answerNow = true
			}
			if n := fp.chunk.Len(); n > 0 {
				minOne = false
				remaining -= n
				read.total += n
			}
			ft.partitions = append(ft.partitions, fp)
		}
		read.topics = append(read.topics, ft)
	}
	for _, reg := range hints.brokers() {
		host, port, _ := b.endpoint(reg)
		read.nodes = append(read.nodes, fetchNode{id: reg.ID, host: host, port: port, rack: reg.Rack})
	}
	return read
}

// readPartition reads a consumer's fetch of one partition; a leader with a
// replica selector may send the consumer in rack (v11+; before, none) to
// a follower instead (readreplica.go).
func (b *services) readPartition(t *storage.Topic, version int16, rack string, rp *kmsg.FetchRequestTopicPartition, limit int, minOne bool, fp *fetchPartition) error {
	if t == nil && version >= 13 {
		return kerr.UnknownTopicID
	}
	p := lookupPartition(t, rp.Partition)
	if p == nil {
		return missingPartition(t, rp.Partition)
	}
	if b.cfg.Metadata != nil {
		if err := b.servesConsumer(p, version); err != nil {
			return err
		}
	}
	if err := checkLeaderEpoch(p, rp.CurrentLeaderEpoch); err != nil {
		return err
	}
	if leader, ok := b.replicas.Leader(p); ok && b.cfg.Cluster.ReplicaSelector != "" {
		if id, ok := b.preferredReadReplica(p, leader, rp.FetchOffset, rack); ok {
			fp.preferredReadReplica = id
			fp.highWatermark, fp.lastStableOffset, fp.logStartOffset = p.Log.HighWatermark(), p.Log.LastStableOffset(), p.Log.LogStartOffset()
			return nil
		}
	}
	res, err := p.Log.ReadIsolated(rp.FetchOffset, limit, minOne, fp.readCommitted)
	fp.highWatermark, fp.lastStableOffset, fp.logStartOffset = res.HighWatermark, res.LastStable, res.LogStartOffset
	if err != nil {
		if fp.highWatermark < 0 {
			fp.highWatermark, fp.lastStableOffset, fp.logStartOffset = p.Log.HighWatermark(), p.Log.LastStableOffset(), p.Log.LogStartOffset()
		}
		return err
	}
	fp.chunk = res.Chunk
	if fp.readCommitted && res.Chunk.Len() > 0 {
		fp.aborted = p.Log.AbortedTransactions(rp.FetchOffset, res.NextOffset)
	}
	return nil
}

// servesConsumer reports whether a cluster node serves a consumer's fetch
// of p, as Kafka's FetchParams.fetchOnlyLeader: its leader does, a
// follower from v11 (KIP-392: the request carries the client's rack, and
// a follower reads up to its high watermark), and else
// NOT_LEADER_OR_FOLLOWER.
func (b *services) servesConsumer(p *storage.Partition, version int16) error {
	if _, ok := b.replicas.Leader(p); ok {
		return nil
	}
	if _, ok := b.replicas.Follower(p); ok && version >= 11 {
		return nil
	}
	return kerr.NotLeaderForPartition
}

func releaseFetch(topics []fetchTopic) {
	for _, t := range topics {
		for _, p := range t.partitions {
			p.chunk.Release()
		}
	}
}

// writeFetch sends the response: encoded fields from memory, records from
// the segment files in place. The fetch's context decides which
// partitions go (fetch_context.go) and, once the answer is not throttled,
// takes it in: the session id is known only then, and written into the
// encoded header.
func (c *conn) writeFetch(req *protocol.Request, fc *fetchContext, topics []fetchTopic, nodes []fetchNode) error {
	topics = fc.prepare(topics)
	defer func() { releaseFetch(topics) }()
	out := protocol.AppendResponseHeader(c.out[:0], req.Key, req.Version, req.CorrelationID)
	errorCode := fc.errCode()
	e := encodeFetch(out, req.Version, 0, 0, errorCode, topics, nodes)
	if throttle := c.fetchThrottle(req, len(e.body)-len(out)+e.extra); throttle > 0 {
		// Kafka answers a throttled fetch without its records.
		releaseFetch(topics)
		topics, nodes = nil, nil
		var sessionID int32
		sessionID, errorCode = fc.throttled()
		e = encodeFetch(e.body[:len(out)], req.Version, int32(throttle), sessionID, errorCode, nil, nil)
	} else {
		sessionID, code, ok := fc.generate(topics)
		if !ok {
			releaseFetch(topics)
			topics, nodes = nil, nil
			e = encodeFetch(e.body[:len(out)], req.Version, 0, sessionID, code, nil, nil)
		} else if req.Version >= 7 {
			binary.BigEndian.PutUint32(e.body[len(out)+6:], uint32(sessionID))
		}
		errorCode = code
	}
	c.observeFetch(req.Key, errorCode, topics)
	if c.b.cfg.LogRequests {
		c.log.Info("response", zap.String("api", "Fetch"), zap.Int16("version", req.Version),
			zap.Int32("correlation_id", req.CorrelationID), zap.Int16("error_code", errorCode), zap.Any("topics", topics))
	}
	protocol.FinishFrame(e.body, 0, e.extra)
	c.out = e.body[:0]
	from := 0
	for i, hole := range e.holes {
		if err := c.write(e.body[from:hole]); err != nil {
			return err
		}
		if _, err := e.chunks[i].WriteTo(c.nc); err != nil {
			return fmt.Errorf("send records: %w", err)
		}
		from = hole
	}
	return c.write(e.body[from:])
}
