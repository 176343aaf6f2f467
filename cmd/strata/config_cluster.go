package main

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/strata-io/strata/broker"
	"github.com/strata-io/strata/metadata/quorum"
)

// clusterKeys are the keys of a node of a cluster (broker.ClusterConfig),
// read with Kafka's types, defaults and ranges when controller.quorum.voters
// lists more than one voter. A single node ignores them (a debug line): it
// is the only replica of every partition and has no controller to
// heartbeat.
var clusterKeys = []string{
	"broker.rack", "replica.selector.class", "broker.heartbeat.interval.ms", "broker.session.timeout.ms",
	"default.replication.factor", "offsets.topic.replication.factor",
	"transaction.state.log.replication.factor", "transaction.state.log.min.isr",
	"share.coordinator.state.topic.replication.factor",
	"replica.lag.time.max.ms", "unclean.leader.election.enable",
	"replica.fetch.max.bytes", "replica.fetch.response.max.bytes", "replica.fetch.min.bytes",
	"replica.fetch.wait.max.ms", "replica.fetch.backoff.ms",
	"auto.leader.rebalance.enable", "leader.imbalance.check.interval.seconds",
	"controller.quorum.fetch.timeout.ms", "controller.quorum.election.timeout.ms", "controller.quorum.request.timeout.ms",
}

// quorumTimeouts are raft's timing on a cluster node, with Kafka's names:
// a voter that hears nothing from the leader for Fetch becomes a candidate
// (raft's heartbeat timeout), and a candidate that is not elected within
// Election tries again (raft's election timeout, which raft wants no
// shorter than the heartbeat timeout: the longer of the two is used).
// Election has Kafka's default; Fetch defaults to hashicorp/raft's 1 s,
// half of Kafka's 2 s, as a paused leader is replaced after it. A killed
// leader is replaced sooner (metadata/quorum/election.go). A request to
// another voter is given up after Request, with Kafka's default.
type quorumTimeouts struct {
	Fetch    time.Duration // controller.quorum.fetch.timeout.ms
	Election time.Duration // controller.quorum.election.timeout.ms
	Request  time.Duration // controller.quorum.request.timeout.ms
}

func defaultQuorumTimeouts() quorumTimeouts {
	return quorumTimeouts{Fetch: time.Second, Election: time.Second, Request: 2 * time.Second}
}

// loadClusterSettings fills s.Cluster on a node of a cluster: the
// controller and inter-broker listeners, the voters, the cluster id and
// clusterKeys. Kafka defines most of them without a range; Strata refuses
// a non-positive heartbeat interval or session timeout, which would fence
// every broker at once, a heartbeat interval not below the session
// timeout, which would fence a live one, and a replica.selector.class
// other than Kafka's RackAwareReplicaSelector, as it cannot load a Java
// class (empty, like absent, is Kafka's default: none).
func loadClusterSettings(p *propReader, s *settings, log *zap.Logger) {
	if p.err != nil {
		return
	}
	if !s.clustered() {
		for _, k := range clusterKeys {
			if _, ok := p.props[k]; ok {
				log.Debug("configuration key of a cluster node, ignored by a single node", zap.String("key", k))
			}
		}
		return
	}
	s.Cluster = broker.DefaultClusterConfig()
	c := &s.Cluster
	c.InterBrokerTLS, c.ControllerTLS = s.InterBrokerTLS, s.ControllerTLS
	c.InterBrokerSASL, c.ControllerSASL = s.InterBrokerSASL, s.ControllerSASL
	c.ControllerListener = s.ControllerListener
	var voters []string
	for _, v := range s.Voters {
		voters = append(voters, fmt.Sprintf("%d@%s", v.ID, v.Addr))
	}
	c.Voters = strings.Join(voters, ",")
	c.ClusterID = clusterID(s.Voters)
	s.Quorum = defaultQuorumTimeouts()
	// Raft refuses timeouts under 5 ms.
	p.millis(&s.Quorum.Fetch, "controller.quorum.fetch.timeout.ms", 5, math.MaxInt32)
	p.millis(&s.Quorum.Election, "controller.quorum.election.timeout.ms", 5, math.MaxInt32)
	p.millis(&s.Quorum.Request, "controller.quorum.request.timeout.ms", 1, math.MaxInt32)
	if name, ok := p.get("inter.broker.listener.name"); ok {
		c.InterBrokerListener = strings.ToUpper(name)
	}
	if v, ok := p.get("broker.rack"); ok {
		c.Rack = v
	}
	switch v, _ := p.get("replica.selector.class"); v {
	case "", broker.RackAwareReplicaSelector:
		c.ReplicaSelector = v
	default:
		p.fail("replica.selector.class", p.props["replica.selector.class"],
			"strata has only "+broker.RackAwareReplicaSelector+", and no Java classes to load")
	}
	p.millis(&c.HeartbeatInterval, "broker.heartbeat.interval.ms", 1, math.MaxInt32)
	p.millis(&c.SessionTimeout, "broker.session.timeout.ms", 1, math.MaxInt32)
	if p.err == nil && c.HeartbeatInterval >= c.SessionTimeout {
		p.fail("broker.heartbeat.interval.ms", p.props["broker.heartbeat.interval.ms"],
			fmt.Sprintf("must be less than broker.session.timeout.ms (%d)", c.SessionTimeout.Milliseconds()))
	}
	if n, ok := p.bounded("default.replication.factor", 1, math.MaxInt16); ok {
		c.DefaultReplicationFactor = int16(n)
	}
	if n, ok := p.bounded("offsets.topic.replication.factor", 1, math.MaxInt16); ok {
		c.OffsetsTopicReplicationFactor = int16(n)
	}
	if n, ok := p.bounded("transaction.state.log.replication.factor", 1, math.MaxInt16); ok {
		c.TxnStateReplicationFactor = int16(n)
	}
	if n, ok := p.bounded("transaction.state.log.min.isr", 1, math.MaxInt32); ok {
		c.TxnStateMinISR = int(n)
	}
	if n, ok := p.bounded("share.coordinator.state.topic.replication.factor", 1, math.MaxInt16); ok {
		c.ShareStateReplicationFactor = int16(n)
	}
	p.millis(&c.ReplicaLagTimeMax, "replica.lag.time.max.ms", 0, math.MaxInt64/int64(time.Millisecond))
	p.boolean(&c.UncleanLeaderElection, "unclean.leader.election.enable")
	p.boolean(&c.AutoLeaderRebalance, "auto.leader.rebalance.enable")
	if n, ok := p.bounded("leader.imbalance.check.interval.seconds", 1, math.MaxInt32); ok {
		c.LeaderImbalanceCheckInterval = time.Duration(n) * time.Second
	}
	f := &c.ReplicaFetch
	if n, ok := p.bounded("replica.fetch.max.bytes", 0, math.MaxInt32); ok {
		f.MaxBytes = int32(n)
	}
	if n, ok := p.bounded("replica.fetch.response.max.bytes", 0, math.MaxInt32); ok {
		f.ResponseMaxBytes = int32(n)
	}
	if n, ok := p.bounded("replica.fetch.min.bytes", math.MinInt32, math.MaxInt32); ok {
		f.MinBytes = int32(n)
	}
	p.millis(&f.MaxWait, "replica.fetch.wait.max.ms", math.MinInt32, math.MaxInt32)
	p.millis(&f.Backoff, "replica.fetch.backoff.ms", 0, math.MaxInt32)
	if p.err == nil && f.MaxWait > c.ReplicaLagTimeMax {
		// KafkaConfig.validateValues.
		p.fail("replica.fetch.wait.max.ms", p.props["replica.fetch.wait.max.ms"],
			"should always be less than or equal to replica.lag.time.max.ms to prevent frequent changes in ISR")
	}
}

// clusterID is the cluster's id, derived from the voters (their ids and
// addresses, in id order) as a Kafka Uuid in its base64 form: every node
// of a cluster starts from the same server.properties voters, so all
// derive the same id with no format step and before any quorum exists,
// and a cluster of other voters gets another.
func clusterID(voters []quorum.Voter) string {
	sorted := slices.Clone(voters)
	slices.SortFunc(sorted, func(a, b quorum.Voter) int { return int(a.ID) - int(b.ID) })
	h := sha256.New()
	h.Write([]byte("strata cluster"))
	for _, v := range sorted {
		h.Write([]byte("\x00" + strconv.Itoa(int(v.ID)) + "@" + v.Addr))
	}
	var id [16]byte
	copy(id[:], h.Sum(nil))
	if id[0]>>2 == 62 {
		id[0] ^= 0x80 // as Kafka's Uuid.randomUuid, no id starts with '-'
	}
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// millis reads key as milliseconds in lo..hi.
func (p *propReader) millis(dst *time.Duration, key string, lo, hi int64) {
	if n, ok := p.bounded(key, lo, hi); ok {
		*dst = time.Duration(n) * time.Millisecond
	}
}

// bounded parses key as a whole number in lo..hi; ok is false when it is
// absent or invalid.
func (p *propReader) bounded(key string, lo, hi int64) (int64, bool) {
	v, ok := p.get(key)
	if !ok || p.err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil:
		p.fail(key, p.props[key], "not a whole number")
	case n < lo:
		p.fail(key, p.props[key], fmt.Sprintf("must be at least %d", lo))
	case n > hi:
		p.fail(key, p.props[key], fmt.Sprintf("must be at most %d", hi))
	default:
		return n, true
	}
	return 0, false
}
