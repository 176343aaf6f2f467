package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// servedSerial is the serial number of the certificate a new TLS
// connection to addr is served.
func servedSerial(t *testing.T, addr string, roots *x509.CertPool) *big.Int {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "localhost"})
	if err != nil {
		t.Fatalf("TLS to %s: %v", addr, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber
}

// TestTLSKeyStoreReload: an SSL listener's key store changes without a
// restart, as in Kafka (KIP-226, and KAFKA-14136 for a file replaced in
// place). kafka-configs sets listener.name.ssl.ssl.keystore.location on
// the broker's own resource and new connections get the new certificate;
// the same command again, with the file rewritten in place, reloads it,
// and a restart keeps it. A new store of another subject is refused with
// INVALID_REQUEST and changes nothing; rewritten in place, it is answered
// as a success, logged and not loaded, as Kafka does; the cluster default
// and the unprefixed key are refused with Kafka's messages; a PKCS12
// store's password is described as sensitive, without its value.
func TestTLSKeyStoreReload(t *testing.T) {
	e2e(t)
	pki := newTestPKI(t)
	launch := newSSLLaunch(t, map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": pki.serverPEM})
	p, ssl := launch.start(), launch.ssl
	roots := pki.rootCAs()
	start := servedSerial(t, ssl, roots)

	dynamic := filepath.Join(t.TempDir(), "dynamic.pem")
	second := pki.writeServerPEM(t, dynamic, pkix.Name{CommonName: "localhost"})
	alter := func(config string) string {
		return kafkaTool(t, "org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", p.addr, "--entity-type", "brokers", "--entity-name", "1",
			"--alter", "--add-config", config)
	}
	alter("listener.name.ssl.ssl.keystore.location=" + dynamic)
	if got := servedSerial(t, ssl, roots); got.Cmp(second.SerialNumber) != 0 {
		t.Fatalf("after kafka-configs set the key store, served serial %v, want the new certificate's %v (was %v)", got, second.SerialNumber, start)
	}

	third := pki.writeServerPEM(t, dynamic, pkix.Name{CommonName: "localhost"})
	alter("listener.name.ssl.ssl.keystore.location=" + dynamic)
	if got := servedSerial(t, ssl, roots); got.Cmp(third.SerialNumber) != 0 {
		t.Fatalf("after the file was rewritten and the same config set again, served serial %v, want %v", got, third.SerialNumber)
	}

	p.kill()
	p = launch.start()
	if got := servedSerial(t, ssl, roots); got.Cmp(third.SerialNumber) != 0 {
		t.Fatalf("after a restart, served serial %v, want the dynamic key store's %v", got, third.SerialNumber)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	refused := func(what string, node int32, config, want string) {
		t.Helper()
		set := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: config, Value: kadm.StringPtr(dynamic)}}
		var resps kadm.AlterConfigsResponses
		var err error
		if node < 0 {
			resps, err = adm.AlterBrokerConfigs(ctx, set)
		} else {
			resps, err = adm.AlterBrokerConfigs(ctx, set, node)
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(resps) != 1 || resps[0].Err == nil || !strings.Contains(resps[0].ErrMessage, want) {
			t.Fatalf("%s: %+v, want INVALID_REQUEST with %q", what, resps, want)
		}
		if got := servedSerial(t, ssl, roots); got.Cmp(third.SerialNumber) != 0 {
			t.Fatalf("%s changed the served certificate to serial %v", what, got)
		}
	}
	pki.writeServerPEM(t, dynamic, pkix.Name{CommonName: "mallory"})
	same, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "listener.name.ssl.ssl.keystore.location", Value: kadm.StringPtr(dynamic)}}, 1)
	if err != nil || same[0].Err != nil {
		t.Fatalf("the same location again, its file rewritten with another subject: %v %+v, want success as Kafka answers it", err, same)
	}
	if got := servedSerial(t, ssl, roots); got.Cmp(third.SerialNumber) != 0 {
		t.Fatalf("a rewritten file of another subject was loaded: served serial %v", got)
	}
	p.waitLog(regexp.MustCompile(`cannot reload a listener's TLS.*Keystore DistinguishedName does not match`), 10*time.Second)
	mallory := filepath.Join(t.TempDir(), "mallory.pem")
	pki.writeServerPEM(t, mallory, pkix.Name{CommonName: "mallory"})
	dynamic = mallory
	refused("another subject", 1, "listener.name.ssl.ssl.keystore.location", "Keystore DistinguishedName does not match")
	refused("the cluster default", -1, "listener.name.ssl.ssl.keystore.location", "Cannot update these configs at default cluster level, broker id must be specified")
	refused("no listener prefix", 1, "ssl.keystore.location", "These security configs can be dynamically updated only per-listener using the listener prefix")

	resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "listener.name.ssl.ssl.keystore.type", Value: kadm.StringPtr("PKCS12")},
		{Op: kadm.SetConfig, Name: "listener.name.ssl.ssl.keystore.location", Value: kadm.StringPtr(pki.serverP12)},
		{Op: kadm.SetConfig, Name: "listener.name.ssl.ssl.keystore.password", Value: kadm.StringPtr(storePass)},
	}, 1)
	if err != nil || resps[0].Err != nil {
		t.Fatalf("switch to the PKCS12 store: %v %+v", err, resps)
	}
	if got := servedSerial(t, ssl, roots); got.Cmp(start) != 0 {
		t.Fatalf("after switching to the PKCS12 store, served serial %v, want its certificate's %v", got, start)
	}
	described, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	pass, err := described.On("1", nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range pass.Configs {
		if c.Key == "listener.name.ssl.ssl.keystore.password" {
			found = true
			if !c.Sensitive || c.Value != nil || c.Source.String() != "DYNAMIC_BROKER_CONFIG" {
				t.Fatalf("the store password is described as %+v, want sensitive, no value, DYNAMIC_BROKER_CONFIG", c)
			}
		}
	}
	if !found {
		t.Fatal("DescribeConfigs leaves out the dynamic store password")
	}
}
