package broker

// Coalescing, as PersisterStateManager's nodeRPCMap and in-flight set:
// the requests of one RPC and one group to one other node go one at a
// time; those made while one is in flight wait and go together in the
// next, one request for all their share-partitions (a share-partition
// asked twice waits for the request after). Calls to this node's own
// share coordinator are not coalesced: they are not sent anywhere.

import (
	"sync"
)

// stateQueueKey is what requests coalesce by.
type stateQueueKey struct {
	rpc, addr, group string
}

// stateQueue is the calls waiting for one stateQueueKey.
type stateQueue[Q, P any] struct {
	mu       sync.Mutex
	inFlight bool // a drain runs
	waiting  []*queuedState[Q, P]
}

// queuedState is one call's share-partitions and, once answered, the
// request's answers or its failure.
type queuedState[Q, P any] struct {
	parts   []statePart[Q]
	answers map[shareTopicPartition]P
	err     error
	done    chan struct{}
}

// sendState sends rpc for group's parts to addr, coalesced with the
// concurrent calls of the same rpc and group to addr, and gives the
// answers by share-partition (parts' among them).
func sendState[Q, P any](c *shareStateClient, rpc stateRPC[Q, P], addr, group string, parts []statePart[Q]) (map[shareTopicPartition]P, error) {
	if addr == "" {
		resp, err := c.send(addr, rpc.build(group, parts))
		if err != nil {
			return nil, err
		}
		return rpc.split(resp), nil
	}
	key := stateQueueKey{rpc: rpc.name, addr: addr, group: group}
	v, _ := c.queues.LoadOrStore(key, &stateQueue[Q, P]{})
	q := v.(*stateQueue[Q, P])
	call := &queuedState[Q, P]{parts: parts, done: make(chan struct{})}
	q.mu.Lock()
	q.waiting = append(q.waiting, call)
	if !q.inFlight {
		q.inFlight = true
		go drainState(c, rpc, key, q)
	}
	q.mu.Unlock()
	<-call.done
	return call.answers, call.err
}

// drainState sends q's waiting calls, as many together as ask no
// share-partition twice, until none waits; then q leaves the client's
// queues.
func drainState[Q, P any](c *shareStateClient, rpc stateRPC[Q, P], key stateQueueKey, q *stateQueue[Q, P]) {
	for {
		q.mu.Lock()
		var batch, rest []*queuedState[Q, P]
		asked := map[shareTopicPartition]bool{}
		for _, call := range q.waiting {
			clash := false
			for _, p := range call.parts {
				clash = clash || asked[p.tp]
			}
			if clash {
				rest = append(rest, call)
				continue
			}
			for _, p := range call.parts {
				asked[p.tp] = true
			}
			batch = append(batch, call)
		}
		q.waiting = rest
		if len(batch) == 0 {
			q.inFlight = false
			c.queues.CompareAndDelete(key, q)
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		var parts []statePart[Q]
		for _, call := range batch {
			parts = append(parts, call.parts...)
		}
		resp, err := c.send(key.addr, rpc.build(key.group, parts))
		var answers map[shareTopicPartition]P
		if err == nil {
			answers = rpc.split(resp)
		}
		for _, call := range batch {
			call.answers, call.err = answers, err
			close(call.done)
		}
	}
}
