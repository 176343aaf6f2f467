package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/strata-io/strata/broker"
)

// This file reads the ssl.* keys of each SSL client listener, with Kafka's
// names, defaults and checks (SslConfigs, DefaultSslEngineFactory), into
// the listener's tls.Config. A key prefixed listener.name.<listener name in
// lower case>. wins over the plain key, as Kafka's ListenerName.configPrefix.
// The stores are read by config_ssl_stores.go.

// sslReader reads one SSL listener's keys.
type sslReader struct {
	p      *propReader
	prefix string // listener.name.<name>.
}

// get is the listener's value of key and the key it was found under: the
// prefixed one when set, else the plain one.
func (r sslReader) get(key string) (value, name string, ok bool) {
	if v, ok := r.p.get(r.prefix + key); ok {
		return v, r.prefix + key, true
	}
	v, ok := r.p.get(key)
	return v, key, ok
}

// set is a key's non-empty value: Kafka treats an empty password or
// location as none.
func (r sslReader) set(key string) (value, name string, ok bool) {
	v, name, ok := r.get(key)
	return v, name, ok && v != ""
}

func (r sslReader) fail(name, reason string) {
	r.p.fail(name, r.p.props[name], reason)
}

// sslClientAuth maps ssl.client.auth to Go's policy.
var sslClientAuth = map[string]tls.ClientAuthType{
	"none":      tls.NoClientCert,
	"requested": tls.VerifyClientCertIfGiven,
	"required":  tls.RequireAndVerifyClientCert,
}

// sslProtocols are the ssl.enabled.protocols names Go serves.
var sslProtocols = map[string]uint16{
	"TLSv1":   tls.VersionTLS10,
	"TLSv1.1": tls.VersionTLS11,
	"TLSv1.2": tls.VersionTLS12,
	"TLSv1.3": tls.VersionTLS13,
}

// loadSSLListeners builds the TLS of each client listener mapped to SSL.
func loadSSLListeners(p *propReader, s *settings, clients []listenerEndpoint) {
	for _, e := range clients {
		if e.protocol != "SSL" || p.err != nil {
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

// servedListenerTLS is the TLS of client listener e, an SSL or SASL_SSL
// one, able to rebuild itself with dynamic keys (Rebuild).
func servedListenerTLS(p *propReader, e listenerEndpoint) *broker.ListenerTLS {
	lt := readServedListenerTLS(p, e)
	if lt == nil {
		return nil
	}
	static := maps.Clone(p.props)
	lt.Rebuild = func(dynamic map[string]string) (*tls.Config, error) {
		merged := maps.Clone(static)
		maps.Copy(merged, dynamic)
		p := &propReader{props: merged}
		again := readServedListenerTLS(p, e)
		if p.err != nil {
			return nil, p.err
		}
		return again.Config, nil
	}
	return lt
}

// readServedListenerTLS reads the keys of client listener e. On SASL_SSL,
// ssl.client.auth applies only with the listener's prefix, as in Kafka.
func readServedListenerTLS(p *propReader, e listenerEndpoint) *broker.ListenerTLS {
	r := sslReader{p: p, prefix: "listener.name." + strings.ToLower(e.name) + "."}
	lt := sslListenerSides(r, e.name, true)
	if p.err != nil {
		return nil
	}
	if e.protocol == "SASL_SSL" {
		if _, ok := p.get(r.prefix + "ssl.client.auth"); !ok {
			lt.Config.ClientAuth = tls.NoClientCert
		}
	}
	for key, allow := range map[string]*bool{"ssl.allow.dn.changes": &lt.AllowDNChanges, "ssl.allow.san.changes": &lt.AllowSANChanges} {
		v, name, ok := r.get(key)
		if !ok {
			continue
		}
		switch strings.ToLower(v) {
		case "true", "false":
			*allow = strings.EqualFold(v, "true")
		default:
			r.fail(name, "Expected value to be either true or false")
			return nil
		}
	}
	return lt
}

// sslListenerSides reads a listener's server and client sides; a
// listener only dialed (served is false) may have no key store, as a
// Kafka client needs none.
func sslListenerSides(r sslReader, listener string, served bool) *broker.ListenerTLS {
	cfg := &tls.Config{}
	if v, name, ok := r.set("ssl.engine.factory.class"); ok {
		r.p.err = &unsupportedError{Key: name, Value: v, Feature: "a custom SSL engine factory"}
		return nil
	}
	if served || hasKeyStore(r) {
		certs, ok := loadKeyStore(r, listener)
		if !ok {
			return nil
		}
		cfg.Certificates = certs
	}
	pool, ok := loadTrustStore(r)
	if !ok {
		return nil
	}
	cfg.ClientCAs = pool

	auth, name, _ := r.get("ssl.client.auth")
	if auth == "" {
		auth = "none"
	}
	policy, ok := sslClientAuth[auth]
	if !ok {
		r.fail(name, "String must be one of: required, requested, none")
		return nil
	}
	cfg.ClientAuth = policy

	protocols, name, ok := r.get("ssl.enabled.protocols")
	if !ok {
		protocols = "TLSv1.2,TLSv1.3"
	}
	if !setProtocols(r, name, protocols, cfg) {
		return nil
	}
	if !setCipherSuites(r, cfg) {
		return nil
	}
	rules, name, ok := r.get("ssl.principal.mapping.rules")
	if !ok {
		rules = broker.DefaultSSLPrincipalMappingRules
	}
	mapper, err := broker.ParseSSLPrincipalMappingRules(rules)
	if err != nil {
		r.fail(name, err.Error())
		return nil
	}
	client := sslClient(r, cfg)
	if client == nil {
		return nil
	}
	return &broker.ListenerTLS{Config: cfg, Client: client, Principals: mapper}
}

// hasKeyStore says whether the listener names a key store.
func hasKeyStore(r sslReader) bool {
	for _, k := range []string{"ssl.keystore.location", "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.keystore.password"} {
		if _, _, ok := r.set(k); ok {
			return true
		}
	}
	return false
}

// setProtocols sets cfg's versions from ssl.enabled.protocols: from the
// lowest named to the highest, which must leave none out (Go serves a
// range of versions).
func setProtocols(r sslReader, name, value string, cfg *tls.Config) bool {
	var versions []uint16
	for _, item := range csvList(value) {
		v, ok := sslProtocols[item]
		if !ok {
			r.fail(name, fmt.Sprintf("unsupported protocol %s; strata serves TLSv1, TLSv1.1, TLSv1.2 and TLSv1.3", item))
			return false
		}
		versions = append(versions, v)
	}
	if len(versions) == 0 {
		r.fail(name, "no protocol enabled")
		return false
	}
	slices.Sort(versions)
	versions = slices.Compact(versions)
	lo, hi := versions[0], versions[len(versions)-1]
	if int(hi-lo)+1 != len(versions) {
		r.fail(name, "the enabled protocols must be consecutive versions (e.g. TLSv1.2,TLSv1.3)")
		return false
	}
	cfg.MinVersion, cfg.MaxVersion = lo, hi
	return true
}

// setCipherSuites sets cfg's TLS 1.2 and older suites from
// ssl.cipher.suites, Java's names (IANA's; SSL_ for TLS_ as Java's older
// names have it). Empty is every suite Go enables by default. Go serves the
// TLS 1.3 suites it has whatever is listed; a list naming none of them
// turns TLS 1.3 off, as in Java where TLS 1.3 has no suite left.
func setCipherSuites(r sslReader, cfg *tls.Config) bool {
	value, name, _ := r.get("ssl.cipher.suites")
	items := csvList(value)
	if len(items) == 0 {
		return true
	}
	byName := map[string]*tls.CipherSuite{}
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		byName[s.Name] = s
	}
	tls13 := false
	for _, item := range items {
		if item == "TLS_EMPTY_RENEGOTIATION_INFO_SCSV" {
			continue // a signal Java lists as a suite; Go sends it whenever it should
		}
		s, ok := byName[item]
		if !ok {
			s, ok = byName["TLS_"+strings.TrimPrefix(item, "SSL_")]
		}
		if !ok {
			r.fail(name, fmt.Sprintf("unknown cipher suite %s", item))
			return false
		}
		if slices.Contains(s.SupportedVersions, tls.VersionTLS13) {
			tls13 = true
			continue
		}
		cfg.CipherSuites = append(cfg.CipherSuites, s.ID)
	}
	if !tls13 && cfg.MaxVersion == tls.VersionTLS13 {
		cfg.MaxVersion = tls.VersionTLS12
		if cfg.MinVersion > cfg.MaxVersion {
			r.fail(name, "names no TLS 1.3 cipher suite, and TLSv1.3 is the only enabled protocol")
			return false
		}
	}
	if tls13 && len(cfg.CipherSuites) == 0 && cfg.MinVersion < tls.VersionTLS13 {
		cfg.MinVersion = tls.VersionTLS13
	}
	return true
}

// readStoreFile reads the store file named by key.
func readStoreFile(r sslReader, name, path string) ([]byte, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		r.fail(name, fmt.Sprintf("cannot read the store: %v", err))
		return nil, false
	}
	return data, true
}

// loadKeyStore reads the listener's certificate chains and keys, with
// DefaultSslEngineFactory.createKeystore's rules.
func loadKeyStore(r sslReader, listener string) ([]tls.Certificate, bool) {
	typ, typeName, _ := r.get("ssl.keystore.type")
	if typ == "" {
		typ = "JKS"
	}
	location, locationName, hasLocation := r.set("ssl.keystore.location")
	password, passwordName, hasPassword := r.set("ssl.keystore.password")
	keyPassword, _, hasKeyPassword := r.set("ssl.key.password")
	key, keyName, hasKey := r.set("ssl.keystore.key")
	chain, chainName, hasChain := r.set("ssl.keystore.certificate.chain")
	pem := strings.EqualFold(typ, "PEM")
	switch {
	case hasKey && !pem:
		r.fail(keyName, "SSL private key can be specified only for PEM, but key store type is "+typ)
	case hasKey && !hasChain:
		r.fail(keyName, "SSL private key is specified, but certificate chain is not specified")
	case hasKey && hasLocation:
		r.fail(locationName, "Both SSL key store location and separate private key are specified")
	case hasKey && hasPassword:
		r.fail(passwordName, "SSL key store password cannot be specified with PEM format, only key password may be specified")
	case hasChain && !hasKey:
		r.fail(chainName, "SSL certificate chain is specified, but private key is not specified")
	case hasKey:
		cert, err := pemKeyPair(key, chain, keyPassword, hasKeyPassword)
		if err != nil {
			r.fail(keyName, fmt.Sprintf("Invalid PEM keystore configs: %v", err))
			return nil, false
		}
		return []tls.Certificate{cert}, true
	case pem && hasLocation && hasPassword:
		r.fail(passwordName, "SSL key store password cannot be specified with PEM format, only key password may be specified")
	case pem && hasLocation:
		data, ok := readStoreFile(r, locationName, location)
		if !ok {
			return nil, false
		}
		cert, err := pemKeyPair(string(data), string(data), keyPassword, hasKeyPassword)
		if err != nil {
			r.fail(locationName, fmt.Sprintf("Failed to load PEM SSL keystore %s: %v", location, err))
			return nil, false
		}
		return []tls.Certificate{cert}, true
	case !hasLocation && hasPassword:
		r.fail(passwordName, "SSL key store is not specified, but key store password is specified")
	case hasLocation && !hasPassword:
		r.fail(passwordName, "SSL key store is specified, but key store password is not specified")
	case hasLocation:
		if !hasKeyPassword {
			keyPassword = password
		}
		data, ok := readStoreFile(r, locationName, location)
		if !ok {
			return nil, false
		}
		certs, err := fileKeyStore(typ, data, password, keyPassword)
		if err != nil {
			if _, known := storeTypes[strings.ToUpper(typ)]; !known {
				r.fail(typeName, err.Error())
			} else {
				r.fail(locationName, fmt.Sprintf("Failed to load SSL keystore %s of type %s: %v", location, typ, err))
			}
			return nil, false
		}
		return certs, true
	default:
		r.fail("ssl.keystore.location", fmt.Sprintf("listener %s is SSL and has no key store: set ssl.keystore.location, or ssl.keystore.key and ssl.keystore.certificate.chain", listener))
	}
	return nil, false
}

// loadTrustStore reads the CAs client certificates are verified against,
// with DefaultSslEngineFactory.createTruststore's rules; none is the
// system's, as Java's default trust store.
func loadTrustStore(r sslReader) (*x509.CertPool, bool) {
	typ, typeName, _ := r.get("ssl.truststore.type")
	if typ == "" {
		typ = "JKS"
	}
	location, locationName, hasLocation := r.set("ssl.truststore.location")
	password, passwordName, hasPassword := r.set("ssl.truststore.password")
	inline, inlineName, hasInline := r.set("ssl.truststore.certificates")
	pem := strings.EqualFold(typ, "PEM")
	var certs []*x509.Certificate
	var err error
	switch {
	case hasInline && !pem:
		r.fail(inlineName, "SSL trust store certs can be specified only for PEM, but trust store type is "+typ)
		return nil, false
	case hasInline && hasLocation:
		r.fail(locationName, "Both SSL trust store location and separate trust certificates are specified")
		return nil, false
	case (hasInline || pem && hasLocation) && hasPassword:
		r.fail(passwordName, "SSL trust store password cannot be specified for PEM format")
		return nil, false
	case hasInline:
		if certs, err = pemCertificates(inline); err != nil {
			r.fail(inlineName, fmt.Sprintf("Invalid PEM truststore configs: %v", err))
			return nil, false
		}
	case !hasLocation && hasPassword:
		r.fail(passwordName, "SSL trust store is not specified, but trust store password is specified")
		return nil, false
	case !hasLocation:
		return nil, true
	default:
		data, ok := readStoreFile(r, locationName, location)
		if !ok {
			return nil, false
		}
		if certs, err = fileTrustStore(typ, data, password); err != nil {
			if _, known := storeTypes[strings.ToUpper(typ)]; !known {
				r.fail(typeName, err.Error())
			} else {
				r.fail(locationName, fmt.Sprintf("Failed to load SSL truststore %s of type %s: %v", location, typ, err))
			}
			return nil, false
		}
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, true
}

// sslKeys are Kafka's broker ssl.* keys (SslConfigs, BrokerSecurityConfigs):
// those read here, and those that tune only a client's or the JVM's side,
// accepted and unused.
var sslKeys = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.keystore.key", "ssl.keystore.certificate.chain",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
	"ssl.client.auth", "ssl.enabled.protocols", "ssl.cipher.suites", "ssl.principal.mapping.rules",
	"ssl.engine.factory.class", "ssl.endpoint.identification.algorithm",
	"ssl.allow.dn.changes", "ssl.allow.san.changes",
	"ssl.protocol", "ssl.provider",
	"ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.secure.random.implementation",
}

// isSSLKey says whether key is one of sslKeys, plain or of one listener.
func isSSLKey(key string) bool {
	if rest, ok := strings.CutPrefix(key, "listener.name."); ok {
		_, key, _ = strings.Cut(rest, ".")
	}
	return slices.Contains(sslKeys, key)
}
