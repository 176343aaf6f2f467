package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchSessionEpochDecides checks Kafka's FetchManager.newContext rule
// over the wire: the session epoch, not the session id, decides whether a
// fetch is full (served, sessionless) or names a session (which this
// broker never has: FETCH_SESSION_ID_NOT_FOUND, no data).
func TestFetchSessionEpochDecides(t *testing.T) {
	b := startBroker(t, nil)
	produceSync(t, newClient(t, b, kgo.AllowAutoTopicCreation()), &kgo.Record{Topic: "sessions", Value: []byte("v")})
	for _, tc := range []struct {
		name      string
		id, epoch int32
		served    bool
	}{
		{"no session", 0, -1, true},
		{"close a session (FINAL_EPOCH)", 12345, -1, true},
		{"new session (INITIAL_EPOCH)", 0, 0, true},
		{"replace a session (INITIAL_EPOCH)", 12345, 0, true},
		{"incremental without a session id", 0, 1, false},
		{"incremental in an unknown session", 12345, 5, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrFetchRequest()
			req.MaxWaitMillis, req.MinBytes = 100, 1
			req.SessionID, req.SessionEpoch = tc.id, tc.epoch
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "sessions"
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp := adminRoundTrip[*kmsg.FetchResponse](t, b, req, 12)
			if !tc.served {
				if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code || len(resp.Topics) != 0 {
					t.Fatalf("error %v with %d topics, want FETCH_SESSION_ID_NOT_FOUND and none", kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics))
				}
				return
			}
			if resp.ErrorCode != 0 || resp.SessionID != 0 {
				t.Fatalf("error %v, session id %d: want a sessionless answer", kerr.ErrorForCode(resp.ErrorCode), resp.SessionID)
			}
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("topics %+v", resp.Topics)
			}
			if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
				t.Fatalf("partition error %v, %d bytes of records: want the record", kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches))
			}
		})
	}
}
