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
	calls := 0
	err := WaitReady(context.Background(), "t", 3, func(context.Context) (TopicMeta, error) {
		m := answers[min(calls, len(answers)-1)]
		calls++
		return m, nil
	})
	if err != nil || calls != len(answers) {
		t.Fatalf("WaitReady = %v after %d calls, want nil after %d", err, calls, len(answers))
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
	})
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
