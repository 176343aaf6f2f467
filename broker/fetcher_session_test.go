package broker

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// followerSession is the leader's session of a follower's fetches, if
// any: its id, epoch and partitions.
func followerSession(b *Broker) (id, epoch int32, parts int) {
	for _, sh := range b.fetchSessions.shards {
		sh.mu.Lock()
		for _, s := range sh.sessions {
			if s.privileged {
				s.mu.Lock()
				id, epoch, parts = s.id, s.epoch, len(s.parts)
				s.mu.Unlock()
			}
		}
		sh.mu.Unlock()
	}
	return id, epoch, parts
}

// TestFollowerFetchesInASessionAcrossLeaderRestart checks that a follower
// fetches from its leader in an incremental fetch session (the leader
// holds its privileged session, whose epoch moves on while its id stays),
// and that when the leader restarts on the same address, losing the
// session, the follower opens a new one with a full fetch and replicates
// what is written after.
func TestFollowerFetchesInASessionAcrossLeaderRestart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	leaderAddr := ln.Addr().String()
	ln.Close()
	c := startTestCluster(t, 2, func(cfg *Config) {
		if cfg.NodeID == 1 {
			cfg.Listeners = "PLAINTEXT://" + leaderAddr
		}
	})
	c.createTopic(t, "fs", [][]int32{{1, 2}, {1, 2}})
	produce := func(n int) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for i := range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "fs", Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
	}
	replicated := func(want int64) {
		t.Helper()
		waitUntil(t, 20*time.Second, func() (bool, string) {
			var sum int64
			for p := range int32(2) {
				sum += c.brokers[1].logs.Topic("fs").Partition(p).Log.LogEndOffset()
			}
			return sum == want, fmt.Sprintf("the follower holds %d records, want %d", sum, want)
		})
	}
	inSession := func() int32 {
		t.Helper()
		var id int32
		waitUntil(t, 20*time.Second, func() (bool, string) {
			first, _, _ := followerSession(c.brokers[0])
			time.Sleep(100 * time.Millisecond)
			var epoch int32
			var parts int
			id, epoch, parts = followerSession(c.brokers[0])
			return id != 0 && id == first && epoch > 2 && parts == 2,
				fmt.Sprintf("follower session %d then %d at epoch %d with %d partitions, want one id, epoch past 2 and both partitions", first, id, epoch, parts)
		})
		return id
	}
	produce(10)
	replicated(10)
	before := inSession()

	c.stop(t, 1)
	c.start(t, 1)
	produce(10)
	replicated(20)
	if after := inSession(); after == before {
		t.Fatalf("the restarted leader holds the follower's session %d it cannot know", after)
	}
}

// TestReplicaFetchSessionAfterTheLeaderLostIt drives a follower's session
// against a real broker over the wire: the full fetch opens it, the next
// names no unchanged partition and moves the epoch on, and once the
// session is gone from the leader (closed here by another FINAL_EPOCH
// fetch of its id) the FETCH_SESSION_ID_NOT_FOUND answer makes the next
// fetch a full one, with session id 0, that opens a new session.
func TestReplicaFetchSessionAfterTheLeaderLostIt(t *testing.T) {
	b := startBroker(t, nil)
	produceSync(t, newClient(t, b, kgo.AllowAutoTopicCreation()), &kgo.Record{Topic: "rs", Value: []byte("v")})
	full := sessionFetch{offsets: map[int32]int64{0: 1}, replica: 2}.request("rs", b.logs.Topic("rs").ID)
	var s replicaFetchSession
	send := func(want int16) *kmsg.FetchResponse {
		t.Helper()
		resp := adminRoundTrip[*kmsg.FetchResponse](t, b, s.request(full), 15)
		if resp.ErrorCode != want {
			t.Fatalf("fetch answered %v, want %v", kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(want))
		}
		return resp
	}
	if !s.answered(send(0)) || s.id == 0 || s.epoch != 1 {
		t.Fatalf("after the full fetch: session %d epoch %d", s.id, s.epoch)
	}
	if req := s.request(full); len(req.Topics) != 0 || req.SessionEpoch != 1 {
		t.Fatalf("incremental fetch names %d topics at epoch %d, want none at 1", len(req.Topics), req.SessionEpoch)
	}
	if !s.answered(send(0)) || s.epoch != 2 {
		t.Fatalf("after the incremental fetch: epoch %d, want 2", s.epoch)
	}
	closeIt := sessionFetch{id: s.id, epoch: -1, offsets: map[int32]int64{0: 1}}.request("rs", b.logs.Topic("rs").ID)
	adminRoundTrip[*kmsg.FetchResponse](t, b, closeIt, 15)
	if s.answered(send(kerr.FetchSessionIDNotFound.Code)) {
		t.Fatal("a FETCH_SESSION_ID_NOT_FOUND answer was taken in")
	}
	if req := s.request(full); req.SessionID != 0 || req.SessionEpoch != 0 || len(req.Topics) != 1 {
		t.Fatalf("after the lost session: session %d epoch %d with %d topics, want a full fetch of session 0", req.SessionID, req.SessionEpoch, len(req.Topics))
	}
	if old := s.id; !s.answered(send(0)) || s.id == 0 || s.id == old {
		t.Fatalf("the full fetch after the lost session opened session %d (old %d)", s.id, old)
	}
}
