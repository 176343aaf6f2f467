package main

import (
	"context"
	"fmt"

	"github.com/strata-io/strata/compat-tests/runners/rt"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// securityOpts are the client options of the runner's security arguments:
// kgo.DialTLSConfig over TLS, kgo.SASL with franz-go's PLAIN or SCRAM.
func securityOpts(s rt.Security) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	cfg, err := s.TLSConfig()
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if s.SASL() {
		var m sasl.Mechanism
		switch s.Mechanism {
		case "PLAIN":
			m = plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism()
		case "SCRAM-SHA-256":
			m = scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism()
		case "SCRAM-SHA-512":
			m = scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism()
		default:
			return nil, fmt.Errorf("sasl.mechanism %q: franz-go's runner serves PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512", s.Mechanism)
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

func (e *env) auth() rt.Result {
	s := e.a.Security()
	if err := e.produce(nil, rt.AuthRecords()); err != nil {
		return e.failf("%s: produce: %v", s, err)
	}
	got, err := e.consume(len(rt.AuthRecords()), 0)
	return rt.AuthResult(s, err, got)
}

// aclAllowed produces the auth records and consumes them back in the
// scenario's group.
func (e *env) aclAllowed() rt.Result {
	s := e.a.Security()
	if err := e.produce(nil, rt.AuthRecords()); err != nil {
		return e.failf("%s: produce: %v", s, err)
	}
	cl, got, err := e.groupConsume(len(rt.AuthRecords()))
	cl.Close()
	return rt.AuthResult(s, err, got)
}

// authRefused pings the broker (ApiVersions, then SASL) once, within rt.RefusalBound.
func (e *env) authRefused() rt.Result {
	cl := e.client(kgo.RequestRetries(0))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(e.ctx, rt.RefusalBound)
	defer cancel()
	return rt.RefusedResult(e.a.Scenario, cl.Ping(ctx), false)
}

// aclDenied produces the auth records once, within rt.RefusalBound.
func (e *env) aclDenied() rt.Result {
	err, hung := rt.Bounded(func() error { return e.produce([]kgo.Opt{kgo.RecordRetries(0)}, rt.AuthRecords()) })
	return rt.RefusedResult(e.a.Scenario, err, hung)
}

// aclGroupDenied consumes in the scenario's group once, within
// rt.RefusalBound: franz-go hands a group management error to PollFetches.
func (e *env) aclGroupDenied() rt.Result {
	err, hung := rt.Bounded(func() error {
		cl, _, err := e.groupConsume(len(rt.AuthRecords()))
		cl.Close()
		return err
	})
	return rt.GroupRefusedResult(e.a.Topic, err, hung)
}
