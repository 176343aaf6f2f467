package broker

// shareStateClient is Kafka 4.4's DefaultStatePersister and its
// PersisterStateManager: how the share-partition manager
// (sharepartitions.go) and the group coordinator reach the share
// coordinators with Initialize, Read, Write, Delete and
// ReadSummaryShareGroupState. Each share-partition's part of a request
// goes to the leader of the __share_group_state partition its key
// (group:topicId:partition, FindCoordinator key type 2) hashes to, found
// in this node's metadata image as Kafka's persister finds it in its
// metadata cache: this node's share coordinator is called in process,
// another node's over its endpoint on the inter-broker listener, one
// request per coordinator node (the share-partitions of one call
// together, and with the concurrent calls of the same RPC and group to
// the same node, sharepersister_batch.go). A share-partition whose
// coordinator cannot be found (no __share_group_state yet, no leader,
// no endpoint) or whose request
// failed with a retriable error (COORDINATOR_NOT_AVAILABLE,
// COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR,
// UNKNOWN_TOPIC_OR_PARTITION, a broken connection or a timeout) is looked
// up again and sent again after Kafka's backoff: REQUEST_BACKOFF_MS (1 s)
// times 2 to the attempts made, at most REQUEST_BACKOFF_MAX_MS (30 s),
// with 20% jitter, for 5 attempts of each (MAX_FIND_COORD_ATTEMPTS); then
// it is answered the last error with Kafka's message ("Error in find
// coordinator. Exhausted max retries ..." or "Error in <rpc> state RPC.
// Exhausted max retries ..."). Any other error is answered at once, its
// message behind Kafka's "Error in <rpc> state RPC. ". Strata differs:
// Kafka's persister sends every request from one thread, one in flight
// per node and RPC; Strata's go one in flight per node, RPC and group,
// over the pooled inter-broker connections (clusterMarkers.roundTrip).

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/metadata"
)

// Kafka 4.4's PersisterStateManager constants.
const (
	shareStateBackoff    = time.Second      // REQUEST_BACKOFF_MS
	shareStateBackoffMax = 30 * time.Second // REQUEST_BACKOFF_MAX_MS
	shareStateAttempts   = 5                // MAX_FIND_COORD_ATTEMPTS
	shareStateJitter     = 0.2              // CommonClientConfigs.RETRY_BACKOFF_JITTER
	shareStateTimeout    = 30 * time.Second // one request to another node
)

// errShareStateStopped ends the retries of a node shutting down.
var errShareStateStopped = errors.New("shutting down")

type shareStateClient struct {
	node     int32
	listener string
	meta     metadata.Store
	shares   *coordinator.ShareCoordinator
	peers    *clusterMarkers // nil on a single node
	logger   *zap.Logger
	clock    clockwork.Clock
	stop     <-chan struct{} // closed at shutdown: retries end
	jitter   func() float64  // in [0, 1)

	// coordinatorOf is the address of a share-partition's coordinator,
	// "" for this node; send sends a request there (route and transport,
	// replaced in tests).
	coordinatorOf func(group string, tp shareTopicPartition) (string, error)
	send          func(addr string, req kmsg.Request) (kmsg.Response, error)

	queues sync.Map // stateQueueKey → *stateQueue: the requests in flight to other nodes (sharepersister_batch.go)
}

// shareTopicPartition is one share-partition of a request.
type shareTopicPartition struct {
	topic     [16]byte
	partition int32
}

// String is the share-partition as Kafka prints it: topic id (a Uuid)
// and partition.
func (tp shareTopicPartition) String() string {
	return base64.RawURLEncoding.EncodeToString(tp.topic[:]) + ":" + strconv.Itoa(int(tp.partition))
}

func newShareStateClient(node int32, listener string, meta metadata.Store, clock clockwork.Clock, logger *zap.Logger) *shareStateClient {
	c := &shareStateClient{node: node, listener: listener, meta: meta, clock: clock, logger: logger, jitter: rand.Float64}
	c.coordinatorOf, c.send = c.route, c.transport
	return c
}

// backoff is Kafka's ExponentialBackoff.backoff after attempts attempts.
func (c *shareStateClient) backoff(attempts int) time.Duration {
	expMax := math.Log(float64(shareStateBackoffMax/shareStateBackoff)) / math.Log(2)
	term := float64(shareStateBackoff) * math.Pow(2, min(float64(attempts), expMax))
	d := time.Duration(term * (1 - shareStateJitter + 2*shareStateJitter*c.jitter()))
	return min(d, shareStateBackoffMax)
}

// route is the address of the coordinator of tp's share state, "" for
// this node's.
func (c *shareStateClient) route(group string, tp shareTopicPartition) (string, error) {
	if err := c.shares.Ensure(); err != nil {
		return "", fmt.Errorf("%s: %w", coordinator.ShareStateTopic, err)
	}
	if c.peers == nil {
		return "", nil
	}
	return c.leaderAddr(coordinator.ShareStateTopic, c.shares.PartitionFor(coordinator.ShareKey(group, tp.topic, tp.partition)))
}

// leaderAddr is the inter-broker address of the leader of topic's
// partition, "" when it is this node or there is no cluster.
func (c *shareStateClient) leaderAddr(topic string, partition int32) (string, error) {
	if c.peers == nil {
		return "", nil
	}
	img := c.meta.Image()
	ti := img.Topics.ByName(topic)
	if ti == nil {
		return "", fmt.Errorf("%s is not in the metadata yet", topic)
	}
	reg, ok := ti.Partition(partition)
	if !ok || reg.Leader < 0 {
		return "", fmt.Errorf("%s-%d has no leader", topic, partition)
	}
	if reg.LeaderIs(c.node) {
		return "", nil
	}
	br, ok := img.Cluster.Broker(reg.Leader)
	ep, hasEP := br.Endpoint(c.listener)
	if !ok || !hasEP {
		return "", fmt.Errorf("the leader of %s-%d, node %d, has no endpoint on listener %s", topic, partition, reg.Leader, c.listener)
	}
	return net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), nil
}

// transport sends req to this node's share coordinator ("") or to the
// node at addr.
func (c *shareStateClient) transport(addr string, req kmsg.Request) (kmsg.Response, error) {
	if addr != "" {
		if c.peers == nil {
			return nil, fmt.Errorf("no peers to reach %s", addr)
		}
		return c.peers.roundTrip(addr, req, shareStateTimeout)
	}
	switch r := req.(type) {
	case *kmsg.InitializeShareGroupStateRequest:
		return c.shares.InitializeState(r), nil
	case *kmsg.ReadShareGroupStateRequest:
		return c.shares.ReadState(r), nil
	case *kmsg.WriteShareGroupStateRequest:
		return c.shares.WriteState(r), nil
	case *kmsg.DeleteShareGroupStateRequest:
		return c.shares.DeleteState(r), nil
	case *kmsg.ReadShareGroupStateSummaryRequest:
		return c.shares.ReadStateSummary(r), nil
	}
	return nil, fmt.Errorf("not a share-state request: %T", req)
}

// retriableShareState is whether a share-state error is retried, as the
// persister's handlers retry them.
func retriableShareState(code int16) bool {
	switch kerrOf(code) {
	case kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress, kerr.NotCoordinator, kerr.UnknownTopicOrPartition:
		return true
	}
	return false
}

// statePart is one share-partition's part of a request.
type statePart[Q any] struct {
	tp shareTopicPartition
	q  Q
}

// stateRPC is one of the five share-state requests: how a request of
// some share-partitions is built, and its answer split by share-partition.
type stateRPC[Q, P any] struct {
	name  string // "write state", as Kafka's messages name it
	build func(group string, parts []statePart[Q]) kmsg.Request
	split func(resp kmsg.Response) map[shareTopicPartition]P
	code  func(P) (int16, *string)
	fail  func(tp shareTopicPartition, code int16, msg string) P
}

// stateCall is one share-partition's progress through its retries.
type stateCall[Q any] struct {
	part                statePart[Q]
	lookups, sends      int
	due                 time.Time
	lastCode            int16
	lastMsg, lastPrefix string
}

// runState sends rpc for group's parts, each to its coordinator, retrying
// as the persister does, and gives each share-partition's answer.
func runState[Q, P any](c *shareStateClient, rpc stateRPC[Q, P], group string, parts []statePart[Q]) map[shareTopicPartition]P {
	out := make(map[shareTopicPartition]P, len(parts))
	now := c.clock.Now()
	pending := make([]*stateCall[Q], 0, len(parts))
	for _, p := range parts {
		pending = append(pending, &stateCall[Q]{part: p, due: now})
	}
	rpcPrefix := "Error in " + rpc.name + " RPC. "
	exhausted := func(call *stateCall[Q]) {
		msg := call.lastPrefix + "Exhausted max retries to complete " + rpc.name + " RPC without success."
		switch {
		case call.lastMsg == errShareStateStopped.Error():
			msg = call.lastPrefix + "The broker is shutting down."
		case call.lastPrefix != rpcPrefix:
			msg = call.lastPrefix + "Exhausted max retries to find coordinator without success."
		}
		c.logger.Warn("share state "+rpc.name+" failed", zap.String("group", group), zap.Stringer("share_partition", call.part.tp),
			zap.String("cause", call.lastMsg))
		out[call.part.tp] = rpc.fail(call.part.tp, call.lastCode, msg)
	}
	for len(pending) > 0 {
		next := pending[0].due
		for _, call := range pending[1:] {
			if call.due.Before(next) {
				next = call.due
			}
		}
		if wait := c.clock.Until(next); wait > 0 {
			select {
			case <-c.clock.After(wait):
			case <-c.stop:
				for _, call := range pending {
					if call.lastPrefix == "" {
						call.lastCode, call.lastPrefix = kerr.CoordinatorNotAvailable.Code, rpcPrefix
					}
					call.lastMsg = errShareStateStopped.Error()
					exhausted(call)
				}
				return out
			}
		}
		now = c.clock.Now()
		var later []*stateCall[Q]
		byAddr := map[string][]*stateCall[Q]{}
		var addrs []string
		for _, call := range pending {
			if call.due.After(now) {
				later = append(later, call)
				continue
			}
			addr, err := c.coordinatorOf(group, call.part.tp)
			if err != nil {
				call.lookups++
				call.lastCode, call.lastMsg, call.lastPrefix = kerr.CoordinatorNotAvailable.Code, err.Error(), "Error in find coordinator. "
				if call.lookups >= shareStateAttempts {
					exhausted(call)
					continue
				}
				call.due = now.Add(c.backoff(call.lookups))
				later = append(later, call)
				continue
			}
			call.lookups = 0
			if _, ok := byAddr[addr]; !ok {
				addrs = append(addrs, addr)
			}
			byAddr[addr] = append(byAddr[addr], call)
		}
		for _, addr := range addrs {
			calls := byAddr[addr]
			req := make([]statePart[Q], len(calls))
			for i, call := range calls {
				req[i] = call.part
			}
			answers, err := sendState(c, rpc, addr, group, req)
			for _, call := range calls {
				retry := false
				if err != nil {
					retry = true
					call.lastCode, call.lastMsg = kerr.NetworkException.Code, err.Error()
				} else if a, ok := answers[call.part.tp]; !ok {
					out[call.part.tp] = rpc.fail(call.part.tp, kerr.UnknownServerError.Code,
						rpcPrefix+"Failed to "+rpc.name+" for share partition: "+group+":"+call.part.tp.String())
				} else if code, msg := rpc.code(a); code == 0 {
					out[call.part.tp] = a
				} else if retriableShareState(code) {
					retry = true
					call.lastCode, call.lastMsg = code, messageOr(msg, code)
				} else {
					out[call.part.tp] = rpc.fail(call.part.tp, code, rpcPrefix+messageOr(msg, code))
				}
				if !retry {
					continue
				}
				call.sends++
				call.lastPrefix = rpcPrefix
				if call.sends >= shareStateAttempts {
					exhausted(call)
					continue
				}
				call.due = c.clock.Now().Add(c.backoff(call.sends))
				later = append(later, call)
			}
		}
		pending = later
	}
	return out
}

// messageOr is an answer's error message, or its code's when it has none
// (null or empty), as the persister's handlers take it.
func messageOr(msg *string, code int16) string {
	if msg == nil || *msg == "" {
		return kerrOf(code).Description
	}
	return *msg
}
