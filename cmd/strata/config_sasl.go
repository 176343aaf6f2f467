package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strata-io/strata/broker"
)

// This file reads the SASL keys of each SASL_PLAINTEXT and SASL_SSL client
// listener with Kafka's names, defaults and precedence:
//
//   - sasl.enabled.mechanisms (default GSSAPI), listener.name.<listener>.
//     prefixed or not; strata serves PLAIN, SCRAM-SHA-256 and
//     SCRAM-SHA-512, and refuses the others;
//   - the JAAS configuration of each mechanism from
//     listener.name.<listener>.<mechanism>.sasl.jaas.config, both names in
//     lower case, as JaasContext.loadServerContext reads it: a broker's
//     sasl.jaas.config without the mechanism prefix is ignored by Kafka,
//     which then looks in the JAAS file of java.security.auth.login.config,
//     which strata has not;
//   - PLAIN's users are the user_<name>="<password>" options of
//     PlainLoginModule, as PlainServerCallbackHandler reads them; SCRAM's
//     are in the cluster metadata (kafka-configs --entity-type users),
//     its JAAS configuration (ScramLoginModule) only has to be there, as
//     Kafka loads one for every enabled mechanism;
//   - sasl.server.max.receive.size, connection.failed.authentication.delay.ms;
//   - on SASL_SSL, the SSL keys of the listener (config_ssl.go), but
//     ssl.client.auth only with the listener prefix, as Kafka's
//     ChannelBuilders has it.

const plainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"

// saslKeys are the keys read here, plain or with a listener prefix.
var saslKeys = []string{
	"sasl.enabled.mechanisms", "sasl.jaas.config", "sasl.server.max.receive.size",
	"sasl.mechanism.inter.broker.protocol", "sasl.mechanism.controller.protocol",
	"connection.failed.authentication.delay.ms", "connections.max.reauth.ms",
}

// isSASLKey says whether key is one of saslKeys, plain, of one listener, or
// of one listener and mechanism.
func isSASLKey(key string) bool {
	if rest, ok := strings.CutPrefix(key, "listener.name."); ok {
		_, key, _ = strings.Cut(rest, ".")
		if _, afterMechanism, ok := strings.Cut(key, "."); ok && !slices.Contains(saslKeys, key) {
			key = afterMechanism
		}
	}
	return slices.Contains(saslKeys, key)
}

// saslUnsupported is the missing feature a SASL key turns on, or "".
func saslUnsupported(key, value string) string {
	switch key {
	case "sasl.server.callback.handler.class", "sasl.client.callback.handler.class",
		"sasl.login.class", "sasl.login.callback.handler.class":
		return "custom SASL callback handlers and login classes"
	case "connections.max.reauth.ms":
		if n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64); err == nil && n > 0 {
			return "SASL re-authentication (KIP-368)"
		}
	case "principal.builder.class":
		if strings.TrimSpace(value) != "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder" {
			return "a custom principal builder"
		}
	}
	return ""
}

// saslMechanisms are Kafka's mechanisms strata does not serve yet.
var saslMechanisms = map[string]string{
	"GSSAPI":      "the SASL mechanism GSSAPI (Kerberos)",
	"OAUTHBEARER": "the SASL mechanism OAUTHBEARER",
}

// servedMechanisms are the SASL mechanisms strata serves.
var servedMechanisms = []string{broker.MechanismPlain, broker.MechanismScramSHA256, broker.MechanismScramSHA512}

// loadSASLListeners builds the SASL (and on SASL_SSL the TLS) of each
// client listener mapped to SASL_PLAINTEXT or SASL_SSL.
func loadSASLListeners(p *propReader, s *settings, clients []listenerEndpoint) {
	delay := broker.DefaultFailedAuthenticationDelay
	p.millis(&delay, "connection.failed.authentication.delay.ms", 0, math.MaxInt32)
	for _, e := range clients {
		if e.protocol != "SASL_PLAINTEXT" && e.protocol != "SASL_SSL" || p.err != nil {
			continue
		}
		r := sslReader{p: p, prefix: "listener.name." + strings.ToLower(e.name) + "."}
		ls := saslListener(r, e, delay)
		if p.err != nil {
			return
		}
		if s.ListenerSASL == nil {
			s.ListenerSASL = map[string]*broker.ListenerSASL{}
		}
		s.ListenerSASL[e.name] = ls
		if e.protocol != "SASL_SSL" {
			continue
		}
		lt := servedListenerTLS(p, e)
		if p.err != nil {
			return
		}
		if s.ListenerTLS == nil {
			s.ListenerTLS = map[string]*broker.ListenerTLS{}
		}
		s.ListenerTLS[e.name] = lt
	}
}

func saslListener(r sslReader, e listenerEndpoint, delay time.Duration) *broker.ListenerSASL {
	listener := e.name
	ls := &broker.ListenerSASL{MaxReceiveSize: broker.DefaultSASLMaxReceiveSize, FailedDelay: delay}
	v, name, ok := r.get("sasl.enabled.mechanisms")
	if !ok {
		v = "GSSAPI" // Kafka's default
	}
	for _, m := range csvList(v) {
		if slices.Contains(ls.Mechanisms, m) {
			continue
		}
		if f, known := saslMechanisms[m]; known {
			r.p.err = &unsupportedError{Key: name, Value: v,
				Feature: fmt.Sprintf("%s on the %s listener %s (%sstrata serves PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512)", f, e.protocol, listener, mechanismsSource(ok))}
			return nil
		}
		if !slices.Contains(servedMechanisms, m) {
			r.fail(name, fmt.Sprintf("unknown SASL mechanism %s on listener %s; Kafka's are GSSAPI, PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER, "+
				"of which strata serves PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512", m, listener))
			return nil
		}
		ls.Mechanisms = append(ls.Mechanisms, m)
	}
	if len(ls.Mechanisms) == 0 {
		r.fail(name, fmt.Sprintf("No SASL mechanisms are enabled (listener %s)", listener))
		return nil
	}
	for _, m := range ls.Mechanisms {
		entry, ok := mechanismJAAS(r, listener, m)
		if !ok {
			return nil
		}
		if m != broker.MechanismPlain {
			continue
		}
		if ls.PlainUsers, ok = plainUsers(r, entry); !ok {
			return nil
		}
	}
	if v, name, ok := r.get("sasl.server.max.receive.size"); ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			r.fail(name, "must be a whole number from 0 to 2147483647")
			return nil
		}
		ls.MaxReceiveSize = int32(n)
	}
	return ls
}

// mechanismsSource says where an unset sasl.enabled.mechanisms came from.
func mechanismsSource(set bool) string {
	if set {
		return ""
	}
	return "Kafka's default when sasl.enabled.mechanisms is unset; "
}

// mechanismJAAS reads the listener's JAAS configuration of mechanism: one
// login module, as Kafka's JaasContext requires.
func mechanismJAAS(r sslReader, listener, mechanism string) (jaasEntry, bool) {
	key := r.prefix + strings.ToLower(mechanism) + ".sasl.jaas.config"
	v, ok := r.p.get(key)
	if !ok || v == "" {
		reason := fmt.Sprintf("missing: the JAAS configuration of mechanism %s on listener %s. Kafka would look for a 'KafkaServer' or '%sKafkaServer' "+
			"entry in the JAAS file named by java.security.auth.login.config; strata reads it only from this key", mechanism, listener, strings.TrimPrefix(r.prefix, "listener.name."))
		if _, name, set := r.set("sasl.jaas.config"); set {
			reason += fmt.Sprintf(" (%s is ignored, as Kafka ignores a broker's sasl.jaas.config not prefixed with the SASL mechanism name)", name)
		}
		r.fail(key, reason)
		return jaasEntry{}, false
	}
	// A JAAS configuration holds passwords: errors show it as Kafka logs
	// a password, hidden.
	fail := func(reason string) { r.p.fail(key, "[hidden]", reason) }
	entries, err := parseJAAS(v)
	if err != nil {
		fail(err.Error())
		return jaasEntry{}, false
	}
	if len(entries) != 1 {
		fail(fmt.Sprintf("JAAS config property contains %d login modules, should be 1 module", len(entries)))
		return jaasEntry{}, false
	}
	return entries[0], true
}

// plainUsers reads PLAIN's users from the listener's PLAIN JAAS entry.
func plainUsers(r sslReader, entry jaasEntry) (map[string]string, bool) {
	key := r.prefix + "plain.sasl.jaas.config"
	fail := func(reason string) { r.p.fail(key, "[hidden]", reason) }
	if entry.module != plainLoginModule {
		fail(fmt.Sprintf("login module %s: the users of PLAIN are the user_<name> options of %s", entry.module, plainLoginModule))
		return nil, false
	}
	users := map[string]string{}
	for k, pw := range entry.options {
		if name, ok := strings.CutPrefix(k, "user_"); ok {
			users[name] = pw
		}
	}
	return users, true
}
