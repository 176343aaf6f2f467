package rt

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestWaitReadyWaitsForEveryLeader(t *testing.T) {
	answers := []TopicMeta{
		{},                           // topic not there yet
		{Leaders: []int32{1, -1, 1}}, // one partition without a leader (brokers not listed)
		{Brokers: []int32{1}, Leaders: []int32{1, 2, 1}}, // a leader the answer does not list
		{Brokers: []int32{1, 2}, Leaders: []int32{1, 2, 1}},
	}
	calls, probes := 0, 0
	err := WaitReady(context.Background(), "t", 3, func(context.Context) (TopicMeta, error) {
		m := answers[min(calls, len(answers)-1)]
		calls++
		return m, nil
	}, func(context.Context) error {
		if probes++; probes == 1 {
			return errors.New("NOT_LEADER_OR_FOLLOWER") // the leader has not created the partition yet
		}
		return nil
	})
	if err != nil || calls != len(answers)+1 || probes != 2 {
		t.Fatalf("WaitReady = %v after %d metadata calls and %d probes, want nil after %d and 2", err, calls, probes, len(answers)+1)
	}
}

func TestWaitReadyGivesUpWithTheLastState(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := WaitReady(ctx, "t", 1, func(context.Context) (TopicMeta, error) {
		if calls++; calls == 3 {
			cancel()
		}
		return TopicMeta{}, errors.New("UNKNOWN_TOPIC_OR_PARTITION")
	}, nil)
	if err == nil || !strings.Contains(err.Error(), "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Fatalf("WaitReady = %v, want the last error", err)
	}
}

func TestCheckReplicas(t *testing.T) {
	for _, c := range []struct {
		leader        int32
		replicas, isr []int32
		rf            int
		ok            bool
	}{
		{1, []int32{1}, []int32{1}, 1, true},
		{2, []int32{1, 2, 3}, []int32{3, 1, 2}, 3, true},
		{-1, []int32{1}, []int32{1}, 1, false},
		{1, []int32{1}, []int32{1}, 3, false},
		{4, []int32{1, 2, 3}, []int32{1, 2, 3}, 3, false},
		{1, []int32{1, 2, 3}, []int32{1, 2}, 3, false},
		{1, []int32{1, 1, 2}, []int32{1, 1, 2}, 3, false},
		{1, []int32{1, 2, 3}, []int32{1, 2, 4}, 3, false},
	} {
		if err := CheckReplicas(c.leader, c.replicas, c.isr, c.rf); (err == nil) != c.ok {
			t.Errorf("CheckReplicas(%d, %v, %v, %d) = %v, want ok=%v", c.leader, c.replicas, c.isr, c.rf, err, c.ok)
		}
	}
}
