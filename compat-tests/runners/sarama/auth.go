package main

import (
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
