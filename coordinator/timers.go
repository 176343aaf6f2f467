package coordinator

import (
	"container/heap"
	"sort"
	"time"
)

// timerKind names what a timer does when it fires.
type timerKind int8

const (
	timerJoin            timerKind = iota // a classic group's join phase ends
	timerSync                             // members that did not SyncGroup are dropped
	timerHeartbeat                        // a classic member's session expires
	timerPendingMember                    // a KIP-394 member id handed out is forgotten
	timerConsumerSession                  // a consumer group member's session expires
	timerConsumerRevoke                   // a consumer group member did not revoke in time
	timerOffsetExpiry                     // offsets.retention.check.interval.ms
	timerConsumerJoin                     // a classic member of a consumer group did not rejoin in time
	timerConsumerSync                     // a classic member of a consumer group did not sync in time
	timerConsumerRegex                    // a consumer group's regexes are resolved (Kafka's executor task)
	timerStreamsSession                   // a streams group member's session expires
	timerStreamsRevoke                    // a streams group member did not revoke in time
	timerShareSession                     // a share group member's session expires
)

func (k timerKind) String() string {
	return [...]string{"join", "sync", "heartbeat", "pending-member", "consumer-session", "consumer-revoke", "offset-expiry", "consumer-join", "consumer-sync", "consumer-regex", "streams-session", "streams-revoke", "share-session"}[k]
}

// timerKey identifies a timer: arming a key again replaces its deadline.
type timerKey struct {
	kind   timerKind
	group  string
	member string
}

func timerKeyLess(a, b timerKey) bool {
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	if a.group != b.group {
		return a.group < b.group
	}
	return a.member < b.member
}

// timerQueue is a shard's armed timers: the deadline of each key, and a
// heap by deadline (ties in key order) to find the next one without a
// walk. Re-arming or cancelling a key leaves its old heap entry behind,
// stale: it is dropped when it comes to the top.
type timerQueue struct {
	deadlines map[timerKey]time.Time
	heap      timerHeap
}

type timerEntry struct {
	key timerKey
	at  time.Time
}

func newTimerQueue() timerQueue {
	return timerQueue{deadlines: make(map[timerKey]time.Time)}
}

func (q *timerQueue) set(k timerKey, at time.Time) {
	q.deadlines[k] = at
	heap.Push(&q.heap, timerEntry{key: k, at: at})
}

// armed reports whether k is armed.
func (q *timerQueue) armed(k timerKey) bool {
	_, ok := q.deadlines[k]
	return ok
}

// remove disarms k, reporting whether it was armed.
func (q *timerQueue) remove(k timerKey) bool {
	_, ok := q.deadlines[k]
	delete(q.deadlines, k)
	return ok
}

// next is the earliest deadline; ok false when no timer is armed.
func (q *timerQueue) next() (time.Time, bool) {
	e, ok := q.top()
	return e.at, ok
}

// popDue disarms and returns the earliest timer due at now.
func (q *timerQueue) popDue(now time.Time) (timerKey, bool) {
	e, ok := q.top()
	if !ok || e.at.After(now) {
		return timerKey{}, false
	}
	heap.Pop(&q.heap)
	delete(q.deadlines, e.key)
	return e.key, true
}

// top is the earliest live entry, dropping stale ones above it.
func (q *timerQueue) top() (timerEntry, bool) {
	for len(q.heap) > 0 {
		e := q.heap[0]
		if at, ok := q.deadlines[e.key]; ok && at.Equal(e.at) {
			return e, true
		}
		heap.Pop(&q.heap)
	}
	return timerEntry{}, false
}

// keys is the armed timers in key order.
func (q *timerQueue) keys() []timerKey {
	keys := make([]timerKey, 0, len(q.deadlines))
	for k := range q.deadlines {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return timerKeyLess(keys[i], keys[j]) })
	return keys
}

// timerHeap is a container/heap of entries by deadline, then key.
type timerHeap []timerEntry

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return timerKeyLess(h[i].key, h[j].key)
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(timerEntry)) }
func (h *timerHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
