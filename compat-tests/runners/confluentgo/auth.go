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

// authRefused starts a producer and waits for librdkafka's first error
// event (it retries the connection by itself, reporting each failure).
func (e env) authRefused() rt.Result {
	p, err := kafka.NewProducer(e.conf(nil))
	if err != nil {
		return rt.Failf("NewProducer: %v", err)
	}
	defer p.Close()
	deadline := time.After(rt.RefusalBound)
	for {
		select {
		case ev := <-p.Events():
			if kerr, ok := ev.(kafka.Error); ok {
				return rt.RefusedResult(e.a.Scenario, errors.New(kerr.Error()), false)
			}
		case <-deadline:
			return rt.RefusedResult(e.a.Scenario, nil, true)
		}
	}
}
