package broker

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/metrics"
)

// cacheFetch sends a fetch of topic "cache" that never waits (the broker's
// clock may be fake) and returns its answer.
func cacheFetch(t *testing.T, b *Broker, f sessionFetch) *kmsg.FetchResponse {
	t.Helper()
	req := f.request("cache", [16]byte{})
	req.MaxWaitMillis = 0
	return adminRoundTrip[*kmsg.FetchResponse](t, b, req, 12)
}

func wantSessionMetrics(t *testing.T, b *Broker, sessions, partitions, evictions float64) {
	t.Helper()
	s := scrapeMetrics(t, b)
	got := [3]float64{s.get(metrics.IncrementalFetchSessions), s.get(metrics.IncrementalFetchPartitionsCached), s.get(metrics.IncrementalFetchSessionEvictions)}
	if got != [3]float64{sessions, partitions, evictions} {
		t.Fatalf("sessions, partitions cached, evictions = %v, want %v", got, [3]float64{sessions, partitions, evictions})
	}
}

// TestFetchSessionCacheSlotsAndFollowers fills a cache of 8 slots (one
// per shard, as Kafka splits max.incremental.fetch.session.cache.slots)
// with consumers' sessions: a ninth consumer gets session id 0 (none is
// stale or old enough to evict), a follower's full fetch evicts the
// consumer session of its shard, whose next incremental fetch is
// FETCH_SESSION_ID_NOT_FOUND; the metrics count it all.
func TestFetchSessionCacheSlotsAndFollowers(t *testing.T) {
	b := startMeteredBrokerWith(t, func(c *Config) { c.FetchSessionCacheSlots = 8 })
	produceSync(t, newClient(t, b, kgo.AllowAutoTopicCreation()), &kgo.Record{Topic: "cache", Value: []byte("v")})
	consumers := map[int32]int32{} // shard -> session id
	for range 8 {
		id := cacheFetch(t, b, sessionFetch{epoch: 0, offsets: map[int32]int64{0: 0}}).SessionID
		if id == 0 {
			t.Fatal("a consumer got no session with slots free")
		}
		consumers[id/fetchSessionIDRange] = id
	}
	if len(consumers) != 8 {
		t.Fatalf("sessions in %d shards, want one in each of 8", len(consumers))
	}
	wantSessionMetrics(t, b, 8, 8, 0)
	if id := cacheFetch(t, b, sessionFetch{epoch: 0, offsets: map[int32]int64{0: 0}}).SessionID; id != 0 {
		t.Fatalf("a ninth consumer got session %d in a full cache", id)
	}
	follower := cacheFetch(t, b, sessionFetch{epoch: 0, offsets: map[int32]int64{0: 0}, replica: 2}).SessionID
	if follower == 0 {
		t.Fatal("a follower got no session: it may evict a consumer's")
	}
	wantSessionMetrics(t, b, 8, 8, 1)
	evicted := consumers[follower/fetchSessionIDRange]
	if resp := cacheFetch(t, b, sessionFetch{id: evicted, epoch: 1}); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("the evicted session's fetch: %v, want FETCH_SESSION_ID_NOT_FOUND", kerr.ErrorForCode(resp.ErrorCode))
	}
	for _, id := range consumers {
		if id == evicted {
			continue
		}
		if resp := cacheFetch(t, b, sessionFetch{id: id, epoch: 1}); resp.ErrorCode != 0 || resp.SessionID != id {
			t.Fatalf("session %d: %v, session %d", id, kerr.ErrorForCode(resp.ErrorCode), resp.SessionID)
		}
	}
}

// TestFetchSessionEvictionByAgeAndSize runs Kafka's eviction order on the
// broker's clock: sessions older than 2 minutes that were used since are
// evicted only by a bigger session (one of the same size gets none), and
// a session unused for over 2 minutes by any.
func TestFetchSessionEvictionByAgeAndSize(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Now())
	b := startMeteredBrokerWith(t, func(c *Config) { c.FetchSessionCacheSlots, c.Clock = 8, clock })
	adm := newAdmin(t, b)
	createTopic(t, adm, "cache", 2)
	one := map[int32]int64{0: 0}
	var ids []int32
	for range 8 {
		ids = append(ids, cacheFetch(t, b, sessionFetch{epoch: 0, offsets: one}).SessionID)
	}
	clock.Advance(minFetchSessionEviction + time.Second)
	for _, id := range ids {
		if resp := cacheFetch(t, b, sessionFetch{id: id, epoch: 1}); resp.ErrorCode != 0 {
			t.Fatalf("session %d: %v", id, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	if id := cacheFetch(t, b, sessionFetch{epoch: 0, offsets: one}).SessionID; id != 0 {
		t.Fatalf("a session of one partition evicted another of one: got %d", id)
	}
	if id := cacheFetch(t, b, sessionFetch{epoch: 0, offsets: map[int32]int64{0: 0, 1: 0}}).SessionID; id == 0 {
		t.Fatal("a session of two partitions could not evict an old one of one")
	}
	wantSessionMetrics(t, b, 8, 9, 1)
	clock.Advance(minFetchSessionEviction + time.Second)
	if id := cacheFetch(t, b, sessionFetch{epoch: 0, offsets: one}).SessionID; id == 0 {
		t.Fatal("a new session could not evict a stale one")
	}
	wantSessionMetrics(t, b, 8, 9, 2)
}
