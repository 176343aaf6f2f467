package main

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/strata-io/strata/compat-tests/runners/rt"
)

// produceRound writes rt.FetchRecords records valued rt.FetchValue(round,
// p, i) to each of the first n partitions.
func (e env) produceRound(round, n int) error {
	p, err := kafka.NewProducer(e.conf(kafka.ConfigMap{"acks": "all", "linger.ms": 20, "message.timeout.ms": 60000}))
	if err != nil {
		return err
	}
	defer p.Close()
	dr := make(chan kafka.Event, n*rt.FetchRecords)
	for part := range n {
		for i := range rt.FetchRecords {
			m := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &e.a.Topic, Partition: int32(part)}, Value: []byte(rt.FetchValue(round, part, i))}
			if err := p.Produce(m, dr); err != nil {
				return fmt.Errorf("Produce: %w", err)
			}
		}
	}
	for range n * rt.FetchRecords {
		select {
		case ev := <-dr:
			if m, ok := ev.(*kafka.Message); ok && m.TopicPartition.Error != nil {
				return m.TopicPartition.Error
			}
		case <-time.After(65 * time.Second):
			return errors.New("no delivery report within 65s")
		}
	}
	return nil
}

// fetchSessions: rt.FetchRecords records on each partition of a
// rt.Partitions-partition topic, then as many again on its first
// rt.FetchSecondRound partitions while one consumer of every partition
// polls; it must see every record once, in offset order. librdkafka fetches
// every partition in each request (it implements no KIP-227 session), so
// this is the many-partition fetch without a session.
func (e env) fetchSessions() rt.Result {
	parts := int(rt.Partitions(e.a.Scenario))
	if err := e.ensureTopic(parts); err != nil {
		return rt.Failf("%v", err)
	}
	if err := e.produceRound(0, parts); err != nil {
		return rt.Failf("produce round 0: %v", err)
	}
	c, err := kafka.NewConsumer(e.conf(kafka.ConfigMap{"group.id": "unused-" + e.a.Topic, "enable.auto.commit": false, "fetch.wait.max.ms": 2000}))
	if err != nil {
		return rt.Failf("%v", err)
	}
	defer c.Close()
	var tps []kafka.TopicPartition
	for p := range parts {
		tps = append(tps, kafka.TopicPartition{Topic: &e.a.Topic, Partition: int32(p), Offset: kafka.OffsetBeginning})
	}
	if err := c.Assign(tps); err != nil {
		return rt.Failf("Assign: %v", err)
	}
	got := map[int32][]string{}
	offsets := map[int32][]int64{}
	n, total := 0, (parts+rt.FetchSecondRound)*rt.FetchRecords
	second := false
	var lastErr error
	deadline, _ := e.ctx.Deadline()
	extra := time.Time{}
	for time.Now().Before(deadline) && (n < total || time.Now().Before(extra)) {
		switch m := c.Poll(200).(type) {
		case *kafka.Message:
			if m.TopicPartition.Error != nil {
				lastErr = m.TopicPartition.Error
				continue
			}
			p := m.TopicPartition.Partition
			got[p] = append(got[p], string(m.Value))
			offsets[p] = append(offsets[p], int64(m.TopicPartition.Offset))
			n++
		case kafka.Error:
			lastErr = m
		}
		if !second && n >= parts*rt.FetchRecords {
			second = true
			if err := e.produceRound(1, rt.FetchSecondRound); err != nil {
				return rt.Failf("produce round 1: %v", err)
			}
		}
		if n >= total && extra.IsZero() {
			extra = time.Now().Add(time.Second) // a surplus record would arrive within the next fetch
		}
	}
	if n < total {
		return rt.Failf("consumed %d of %d records before the deadline (last error: %v)", n, total, lastErr)
	}
	for p := range int32(parts) {
		var want []string
		var wantOff []int64
		for r := range 2 {
			if r == 1 && int(p) >= rt.FetchSecondRound {
				break
			}
			for i := range rt.FetchRecords {
				want = append(want, rt.FetchValue(r, int(p), i))
				wantOff = append(wantOff, int64(len(wantOff)))
			}
		}
		if !slices.Equal(got[p], want) || !slices.Equal(offsets[p], wantOff) {
			return rt.Failf("partition %d: consumed %v at offsets %v, want %v at %v", p, got[p], offsets[p], want, wantOff)
		}
	}
	return rt.Pass(fmt.Sprintf("%d records from %d partitions, each once in offset order (librdkafka: sessionless full fetches)", n, parts), nil)
}
