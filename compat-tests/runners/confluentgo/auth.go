package main

import (
	"errors"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/strata-io/strata/compat-tests/runners/rt"
)

func (e env) auth() rt.Result {
	s := e.a.Security()
	if err := e.produce(nil, rt.AuthRecords()); err != nil {
		return rt.Failf("%s: produce: %v", s, err)
	}
	got, err := e.consume(1, len(rt.AuthRecords()), 0, nil)
	return rt.AuthResult(s, err, got)
}

// aclAllowed produces the auth records and consumes them back in the
// scenario's group.
func (e env) aclAllowed() rt.Result {
	s := e.a.Security()
	if err := e.produce(nil, rt.AuthRecords()); err != nil {
		return rt.Failf("%s: produce: %v", s, err)
	}
	c, err := e.groupConsumer()
	if err != nil {
		return rt.Failf("consumer: %v", err)
	}
	defer c.Close()
	got, err := poll(c, len(rt.AuthRecords()), 0)
	return rt.AuthResult(s, err, got)
}

// authRefused starts a producer and waits for librdkafka's first error
// event that names the failure (it retries the connection by itself,
// reporting each failure); ALL_BROKERS_DOWN only if no other comes
// within 3 s of it.
func (e env) authRefused() rt.Result {
	p, err := kafka.NewProducer(e.conf(nil))
	if err != nil {
		return rt.Failf("NewProducer: %v", err)
	}
	defer p.Close()
	deadline := time.After(rt.RefusalBound)
	var down error
	for {
		select {
		case ev := <-p.Events():
			kerr, ok := ev.(kafka.Error)
			switch {
			case !ok:
			case kerr.Code() != kafka.ErrAllBrokersDown:
				return rt.RefusedResult(e.a.Scenario, errors.New(kerr.Error()), false)
			case down == nil:
				down = errors.New(kerr.Error())
				deadline = time.After(3 * time.Second)
			}
		case <-deadline:
			return rt.RefusedResult(e.a.Scenario, down, down == nil)
		}
	}
}

// aclDenied produces the auth records once, within rt.RefusalBound.
func (e env) aclDenied() rt.Result {
	err, hung := rt.Bounded(func() error { return e.produce(nil, rt.AuthRecords()) })
	return rt.RefusedResult(e.a.Scenario, err, hung)
}

// aclGroupDenied subscribes a consumer in the scenario's group and polls
// until librdkafka's first error (an error event or a message's), within
// rt.RefusalBound.
func (e env) aclGroupDenied() rt.Result {
	c, err := e.groupConsumer()
	if err != nil {
		return rt.Failf("consumer: %v", err)
	}
	defer c.Close()
	for deadline := time.Now().Add(rt.RefusalBound); time.Now().Before(deadline); {
		switch ev := c.Poll(200).(type) {
		case kafka.Error:
			return rt.GroupRefusedResult(e.a.Topic, errors.New(ev.Error()), false)
		case *kafka.Message:
			return rt.GroupRefusedResult(e.a.Topic, ev.TopicPartition.Error, false)
		}
	}
	return rt.GroupRefusedResult(e.a.Topic, nil, true)
}
