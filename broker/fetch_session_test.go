package broker

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessionFetch is a raw Fetch of topic (by id from v13) in session
// id/epoch: the partitions named with their fetch offsets, those
// forgotten.
type sessionFetch struct {
	id, epoch int32
	offsets   map[int32]int64
	forget    []int32
	replica   int32
}

func (f sessionFetch) request(topic string, topicID [16]byte) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 50, 1, 1<<20
	req.SessionID, req.SessionEpoch = f.id, f.epoch
	req.ReplicaID, req.ReplicaState.ID = -1, -1
	if f.replica > 0 {
		req.ReplicaID, req.ReplicaState.ID = f.replica, f.replica
	}
	if len(f.offsets) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, topicID
		for _, p := range slices.Sorted(mapKeys(f.offsets)) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, f.offsets[p], 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(f.forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.TopicID, ft.Partitions = topic, topicID, f.forget
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return req
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// answered is what a fetch response carries: partition -> high
// watermark, record bytes and error.
type answeredPartition struct {
	hwm, logStart int64
	records       int
	err           int16
}

func answered(resp *kmsg.FetchResponse) map[int32]answeredPartition {
	got := map[int32]answeredPartition{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			got[p.Partition] = answeredPartition{p.HighWatermark, p.LogStartOffset, len(p.RecordBatches), p.ErrorCode}
		}
	}
	return got
}

func partitionsOf(got map[int32]answeredPartition) []int32 {
	return slices.Sorted(mapKeys(got))
}

// TestFetchSessionEpochDecides checks Kafka's FetchManager.newContext rule
// over the wire: the session epoch, not the session id, decides whether a
// fetch is full (served; INITIAL_EPOCH opens a session, FINAL_EPOCH none)
// or names a session (FETCH_SESSION_ID_NOT_FOUND for one that does not
// exist, no data).
func TestFetchSessionEpochDecides(t *testing.T) {
	b := startBroker(t, nil)
	produceSync(t, newClient(t, b, kgo.AllowAutoTopicCreation()), &kgo.Record{Topic: "sessions", Value: []byte("v")})
	for _, tc := range []struct {
		name      string
		id, epoch int32
		served    bool
		session   bool
	}{
		{"no session", 0, -1, true, false},
		{"close a session (FINAL_EPOCH)", 12345, -1, true, false},
		{"new session (INITIAL_EPOCH)", 0, 0, true, true},
		{"replace a session (INITIAL_EPOCH)", 12345, 0, true, true},
		{"incremental without a session id", 0, 1, false, false},
		{"incremental in an unknown session", 12345, 5, false, false},
		{"incremental with a negative session id", -7, 5, false, false},
		{"incremental with a session id past the shards", 2147483647, 5, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := sessionFetch{id: tc.id, epoch: tc.epoch, offsets: map[int32]int64{0: 0}}.request("sessions", [16]byte{})
			resp := adminRoundTrip[*kmsg.FetchResponse](t, b, req, 12)
			if !tc.served {
				if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code || len(resp.Topics) != 0 || resp.SessionID != 0 {
					t.Fatalf("error %v, session %d, %d topics: want FETCH_SESSION_ID_NOT_FOUND, 0 and none", kerr.ErrorForCode(resp.ErrorCode), resp.SessionID, len(resp.Topics))
				}
				return
			}
			if resp.ErrorCode != 0 || (resp.SessionID != 0) != tc.session {
				t.Fatalf("error %v, session id %d: want a session %v", kerr.ErrorForCode(resp.ErrorCode), resp.SessionID, tc.session)
			}
			if got := answered(resp); len(got) != 1 || got[0].err != 0 || got[0].records == 0 {
				t.Fatalf("answer %+v: want partition 0's record", got)
			}
		})
	}
}

// TestFetchSessionIncremental runs one consumer session through Kafka's
// rules over the wire: the full fetch answers every partition and opens
// the session; each incremental fetch answers only the partitions with
// records or a moved high watermark or log start offset, and advances the
// epoch; a repeated epoch is INVALID_FETCH_SESSION_EPOCH, a version
// without topic ids in a session with them FETCH_SESSION_TOPIC_ID_ERROR;
// a forgotten partition is no longer answered; FINAL_EPOCH closes the
// session.
func TestFetchSessionIncremental(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	id := createTopic(t, adm, "inc", 3).ID
	prod := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(p int32) {
		produceSync(t, prod, &kgo.Record{Topic: "inc", Partition: p, Value: []byte("v")})
	}
	fetch := func(f sessionFetch, version int16) *kmsg.FetchResponse {
		t.Helper()
		return adminRoundTrip[*kmsg.FetchResponse](t, b, f.request("inc", id), version)
	}
	want := func(resp *kmsg.FetchResponse, code int16, parts ...int32) map[int32]answeredPartition {
		t.Helper()
		got := answered(resp)
		if resp.ErrorCode != code || fmt.Sprint(partitionsOf(got)) != fmt.Sprint(parts) {
			t.Fatalf("error %v, partitions %v (%+v): want %v and %v", kerr.ErrorForCode(resp.ErrorCode), partitionsOf(got), got, kerr.ErrorForCode(code), parts)
		}
		return got
	}
	produce(0)

	full := fetch(sessionFetch{epoch: 0, offsets: map[int32]int64{0: 0, 1: 0, 2: 0}}, 18)
	if got := want(full, 0, 0, 1, 2); got[0].records == 0 || got[0].hwm != 1 || full.SessionID == 0 {
		t.Fatalf("full fetch: %+v, session %d", got, full.SessionID)
	}
	sid := full.SessionID
	// Partition 0 moves past its record: nothing changed, nothing answered.
	if resp := fetch(sessionFetch{id: sid, epoch: 1, offsets: map[int32]int64{0: 1}}, 18); resp.SessionID != sid {
		t.Fatalf("session id %d, want %d", resp.SessionID, sid)
	} else {
		want(resp, 0)
	}
	produce(1)
	if got := want(fetch(sessionFetch{id: sid, epoch: 2}, 18), 0, 1); got[1].records == 0 || got[1].hwm != 1 {
		t.Fatalf("partition 1 after a produce: %+v", got[1])
	}
	want(fetch(sessionFetch{id: sid, epoch: 3, offsets: map[int32]int64{1: 1}}, 18), 0)
	want(fetch(sessionFetch{id: sid, epoch: 3}, 18), kerr.InvalidFetchSessionEpoch.Code)
	want(fetch(sessionFetch{id: sid, epoch: 4}, 12), kerr.FetchSessionTopicIDError.Code)
	// The errors above changed nothing: epoch 4 is still the next.
	want(fetch(sessionFetch{id: sid, epoch: 4, forget: []int32{2}}, 18), 0)
	var below kadm.Offsets
	below.Add(kadm.Offset{Topic: "inc", Partition: 0, At: 1})
	if _, err := adm.DeleteRecords(testCtx(t), below); err != nil {
		t.Fatal(err)
	}
	produce(2)
	if got := want(fetch(sessionFetch{id: sid, epoch: 5}, 18), 0, 0); got[0].logStart != 1 || got[0].records != 0 {
		t.Fatalf("partition 0 after DeleteRecords: %+v, want log start 1 and no records", got[0])
	}
	// Partition 2 is forgotten; named again it is back in the session.
	want(fetch(sessionFetch{id: sid, epoch: 6}, 18), 0)
	if got := want(fetch(sessionFetch{id: sid, epoch: 7, offsets: map[int32]int64{2: 0}}, 18), 0, 2); got[2].records == 0 {
		t.Fatalf("partition 2: %+v", got[2])
	}
	closed := fetch(sessionFetch{id: sid, epoch: -1, offsets: map[int32]int64{0: 1}}, 18)
	want(closed, 0, 0)
	if closed.SessionID != 0 {
		t.Fatalf("FINAL_EPOCH answered session %d, want 0", closed.SessionID)
	}
	want(fetch(sessionFetch{id: sid, epoch: 8}, 18), kerr.FetchSessionIDNotFound.Code)
}

// TestFranzGoConsumesInAFetchSession consumes with franz-go, which fetches
// in a session by default: every record arrives, in order per partition,
// including those produced while it polls (carried by incremental
// fetches), and the broker holds its one session with the topic's
// partitions. A consumer with kgo.DisableFetchSessions reads the same and
// opens none.
func TestFranzGoConsumesInAFetchSession(t *testing.T) {
	b := startMeteredBroker(t)
	createTopic(t, newAdmin(t, b), "kgo", 20)
	prod := newClient(t, b, kgo.DefaultProduceTopic("kgo"))
	batch := func(from int) []*kgo.Record {
		var recs []*kgo.Record
		for i := from; i < from+1000; i++ {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(i % 37)), Value: []byte(fmt.Sprint(i))})
		}
		return recs
	}
	produceSync(t, prod, batch(0)...)
	consume := func(cl *kgo.Client, want int, during func()) {
		t.Helper()
		last := map[int32]int64{}
		got := 0
		for got < want {
			fs := cl.PollFetches(testCtx(t))
			if err := fs.Err0(); err != nil {
				t.Fatalf("after %d records: %v", got, err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if o, ok := last[r.Partition]; ok && r.Offset != o+1 {
					t.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, o)
				}
				last[r.Partition] = r.Offset
				got++
			})
			if during != nil && got >= want/2 {
				during()
				during = nil
			}
		}
		if got != want {
			t.Fatalf("consumed %d records, want %d", got, want)
		}
	}
	sessions := newClient(t, b, kgo.ConsumeTopics("kgo"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	consume(sessions, 2000, func() { produceSync(t, prod, batch(1000)...) })
	wantSessionMetrics(t, b, 1, 20, 0)
	sessionless := newClient(t, b, kgo.ConsumeTopics("kgo"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableFetchSessions())
	consume(sessionless, 2000, nil)
	wantSessionMetrics(t, b, 1, 20, 0)
}
