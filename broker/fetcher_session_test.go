package broker

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
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
