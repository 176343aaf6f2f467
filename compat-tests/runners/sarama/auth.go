package main

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"

	"github.com/IBM/sarama"
	"github.com/strata-io/strata/compat-tests/runners/rt"
	"github.com/xdg-go/scram"
)

// secure applies the runner's security arguments to every config(): TLS
// with the CA (and client certificate), SASL PLAIN or SCRAM (Sarama takes a
// SCRAM client from the application: xdg-go/scram's, as Sarama's example).
var secure = func(*sarama.Config) {}

func setSecurity(s rt.Security) error {
	cfg, err := s.TLSConfig()
	if err != nil {
		return err
	}
	var gen func() sarama.SCRAMClient
	switch s.Mechanism {
	case "", "PLAIN":
	case "SCRAM-SHA-256":
		gen = func() sarama.SCRAMClient { return &scramClient{hash: scram.HashGeneratorFcn(sha256.New)} }
	case "SCRAM-SHA-512":
		gen = func() sarama.SCRAMClient { return &scramClient{hash: scram.HashGeneratorFcn(sha512.New)} }
	default:
		return fmt.Errorf("sasl.mechanism %q: Sarama's runner serves PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512", s.Mechanism)
	}
	secure = func(c *sarama.Config) {
		if cfg != nil {
			c.Net.TLS.Enable, c.Net.TLS.Config = true, cfg
		}
		if s.SASL() {
			c.Net.SASL.Enable, c.Net.SASL.Handshake = true, true
			c.Net.SASL.Mechanism = sarama.SASLMechanism(s.Mechanism)
			c.Net.SASL.User, c.Net.SASL.Password = s.Username, s.Password
			c.Net.SASL.SCRAMClientGeneratorFunc = gen
		}
	}
	return nil
}

// scramClient is sarama.SCRAMClient over xdg-go/scram.
type scramClient struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (c *scramClient) Begin(user, password, authzID string) error {
	cl, err := c.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	c.conv = cl.NewConversation()
	return nil
}

func (c *scramClient) Step(challenge string) (string, error) { return c.conv.Step(challenge) }
func (c *scramClient) Done() bool                            { return c.conv.Done() }

func (e env) auth() rt.Result {
	s := e.a.Security()
	if err := e.produce(config(), rt.AuthRecords()); err != nil {
		return rt.Failf("%s: produce: %v", s, err)
	}
	got, err := e.consume(config(), len(rt.AuthRecords()), 0)
	return rt.AuthResult(s, err, got)
}

// aclAllowed produces the auth records and consumes them back in the
// scenario's group (groupRun).
func (e env) aclAllowed() rt.Result {
	s := e.a.Security()
	if err := e.produce(config(), rt.AuthRecords()); err != nil {
		return rt.Failf("%s: produce: %v", s, err)
	}
	got, stop, err := e.groupRun(len(rt.AuthRecords()), -1)
	stop()
	return rt.AuthResult(s, err, got)
}

// authRefused connects a client (ApiVersions, SASL, Metadata) once.
func (e env) authRefused() rt.Result {
	err, hung := rt.Bounded(func() error {
		cfg := config()
		cfg.Metadata.Retry.Max = 0
		cl, err := sarama.NewClient(e.a.Brokers(), cfg)
		if err == nil {
			cl.Close()
		}
		return err
	})
	return rt.RefusedResult(e.a.Scenario, err, hung)
}

// aclDenied produces the auth records once, within rt.RefusalBound; the
// error is the first record's (SendMessages' own only counts them).
func (e env) aclDenied() rt.Result {
	err, hung := rt.Bounded(func() error {
		err := e.produce(config(), rt.AuthRecords())
		var pes sarama.ProducerErrors
		if errors.As(err, &pes) && len(pes) > 0 {
			return pes[0]
		}
		return err
	})
	return rt.RefusedResult(e.a.Scenario, err, hung)
}

// aclGroupDenied runs one ConsumerGroup.Consume session in the scenario's
// group, within rt.RefusalBound: its error is the coordinator lookup's or
// the join's (a served session consumes until the bound). Sarama retries
// GROUP_AUTHORIZATION_FAILED from FindCoordinator Metadata.Retry.Max times
// and the session Rebalance.Retry.Max times, 2 s apart: no retries here.
func (e env) aclGroupDenied() rt.Result {
	err, hung := rt.Bounded(func() error {
		cfg := config()
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
		cfg.Metadata.Retry.Max, cfg.Consumer.Group.Rebalance.Retry.Max = 0, 0
		cg, err := sarama.NewConsumerGroup(e.a.Brokers(), e.a.Group(), cfg)
		if err != nil {
			return err
		}
		defer cg.Close()
		h := &handler{want: len(rt.AuthRecords()), commit: -1, done: make(chan struct{})}
		return cg.Consume(context.Background(), []string{e.a.Topic}, h)
	})
	return rt.GroupRefusedResult(e.a.Topic, err, hung)
}
