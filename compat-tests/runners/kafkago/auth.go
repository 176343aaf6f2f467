package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
	"github.com/strata-io/strata/compat-tests/runners/rt"
)

// security is the TLS configuration and SASL mechanism (kafka-go's plain
// and scram packages) of the runner's security arguments, for the writer's
// Transport, the reader's Dialer and the Client.
func security(s rt.Security) (*tls.Config, sasl.Mechanism, error) {
	cfg, err := s.TLSConfig()
	if err != nil || !s.SASL() {
		return cfg, nil, err
	}
	var m sasl.Mechanism
	switch s.Mechanism {
	case "PLAIN":
		m = plain.Mechanism{Username: s.Username, Password: s.Password}
	case "SCRAM-SHA-256":
		m, err = scram.Mechanism(scram.SHA256, s.Username, s.Password)
	case "SCRAM-SHA-512":
		m, err = scram.Mechanism(scram.SHA512, s.Username, s.Password)
	default:
		err = fmt.Errorf("sasl.mechanism %q: kafka-go serves PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512", s.Mechanism)
	}
	return cfg, m, err
}

func (e env) auth() rt.Result { return e.authConsume("") }

// aclAllowed is auth with the records consumed back in the scenario's group.
func (e env) aclAllowed() rt.Result { return e.authConsume(e.a.Group()) }

// authConsume produces the auth records and reads them back from partition
// 0, or in group if one is given.
func (e env) authConsume(group string) rt.Result {
	s := e.a.Security()
	cfg, m, err := security(s)
	if err != nil {
		return rt.Failf("security arguments: %v", err)
	}
	w := e.writer(compress.None)
	w.Transport = &kafka.Transport{TLS: cfg, SASL: m, DialTimeout: 10 * time.Second}
	if err := e.produce(w, rt.AuthRecords()); err != nil {
		return rt.Failf("%s: produce: %v", s, err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: e.a.Brokers(), Topic: e.a.Topic, GroupID: group, StartOffset: kafka.FirstOffset,
		MaxWait: 200 * time.Millisecond, MinBytes: 1, MaxBytes: 10 << 20,
		Dialer: &kafka.Dialer{Timeout: 10 * time.Second, DualStack: true, TLS: cfg, SASLMechanism: m}})
	defer r.Close()
	if group == "" {
		r.SetOffset(kafka.FirstOffset)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	var got []rt.Rec
	for len(got) < len(rt.AuthRecords()) {
		msg, err := r.ReadMessage(ctx)
		if err != nil {
			return rt.AuthResult(s, fmt.Errorf("consume: after %d records: %w", len(got), err), got)
		}
		got = append(got, fromMsg(msg))
	}
	return rt.AuthResult(s, nil, got)
}

// authRefused asks for Metadata once.
func (e env) authRefused() rt.Result {
	cfg, m, err := security(e.a.Security())
	if err != nil {
		return rt.Failf("security arguments: %v", err)
	}
	cl := &kafka.Client{Addr: kafka.TCP(e.a.Brokers()...), Timeout: rt.RefusalBound, Transport: &kafka.Transport{TLS: cfg, SASL: m}}
	err, hung := rt.Bounded(func() error {
		_, err := cl.Metadata(e.ctx, &kafka.MetadataRequest{Topics: []string{e.a.Topic}})
		return err
	})
	return rt.RefusedResult(e.a.Scenario, err, hung)
}

// aclDenied produces the auth records once through a Conn (DialLeader,
// WriteMessages), within rt.RefusalBound: the Writer's Transport looks the
// topic up in its cache of the cluster's metadata, which lists only the
// topics the user may describe, so it names an unauthorized topic
// UNKNOWN_TOPIC_OR_PARTITION; DialLeader asks for the topic itself.
func (e env) aclDenied() rt.Result {
	cfg, m, err := security(e.a.Security())
	if err != nil {
		return rt.Failf("security arguments: %v", err)
	}
	d := &kafka.Dialer{Timeout: 10 * time.Second, DualStack: true, TLS: cfg, SASLMechanism: m}
	err, hung := rt.Bounded(func() error {
		conn, err := d.DialLeader(e.ctx, "tcp", e.a.Brokers()[0], e.a.Topic, 0)
		if err != nil {
			return err
		}
		defer conn.Close()
		var msgs []kafka.Message
		for _, r := range rt.AuthRecords() {
			msgs = append(msgs, kafka.Message{Key: r.Key, Value: r.Value})
		}
		_, err = conn.WriteMessages(msgs...)
		return err
	})
	return rt.RefusedResult(e.a.Scenario, err, hung)
}

// aclGroupDenied asks a ConsumerGroup for its first generation, within
// rt.RefusalBound: Next returns the coordinator lookup's or the join's
// error (the Reader would only log it and retry).
func (e env) aclGroupDenied() rt.Result {
	cfg, m, err := security(e.a.Security())
	if err != nil {
		return rt.Failf("security arguments: %v", err)
	}
	cg, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{ID: e.a.Group(), Brokers: e.a.Brokers(), Topics: []string{e.a.Topic},
		Dialer: &kafka.Dialer{Timeout: 10 * time.Second, DualStack: true, TLS: cfg, SASLMechanism: m}})
	if err != nil {
		return rt.Failf("NewConsumerGroup: %v", err)
	}
	defer cg.Close()
	err, hung := rt.Bounded(func() error {
		_, err := cg.Next(e.ctx)
		return err
	})
	return rt.GroupRefusedResult(e.a.Topic, err, hung)
}
