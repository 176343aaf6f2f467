package main

// End-to-end tests of the command line: Kafka's own server.properties, and what
// the binary says about itself.

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaStockFileServesClients starts the binary on Apache Kafka 4.1's
// config/server.properties, with only its ports (9092, 9093) and log.dirs
// changed so tests can run side by side, and produces and consumes over TCP.
func TestKafkaStockFileServesClients(t *testing.T) {
	e2e(t)
	stock, err := os.ReadFile(kafkaStockProperties)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	port, controllerPort := strconv.Itoa(freePort(t)), strconv.Itoa(freePort(t))
	text := strings.NewReplacer(":9092", ":"+port, ":9093", ":"+controllerPort,
		"log.dirs=/tmp/kraft-combined-logs", "log.dirs="+dir).Replace(string(stock))
	file := filepath.Join(t.TempDir(), "server.properties")
	writeFile(t, file, text)

	b := launchArgs(t, dir, net.JoinHostPort("127.0.0.1", port), "--config", file)
	b.waitReady(30 * time.Second)
	b.waitLog(regexp.MustCompile(`controller listener is validated but not served.*CONTROLLER://:`+controllerPort), 5*time.Second)
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", controllerPort), time.Second); err == nil {
		c.Close()
		t.Errorf("something accepts on the controller port %s; strata must not serve it", controllerPort)
	}

	cl := newClient(t, b.addr)
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(timeoutCtx(t, 15*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(meta.Brokers) != 1 || meta.Brokers[0].NodeID != 1 || meta.Brokers[0].Host != "localhost" ||
		strconv.Itoa(int(meta.Brokers[0].Port)) != port {
		t.Fatalf("metadata brokers %+v, want node 1 at localhost:%s (the PLAINTEXT entry of advertised.listeners)", meta.Brokers, port)
	}
	const topic = "stock-config"
	createTopic(t, cl, topic, 1)
	acked := produceAll(t, cl, topic, 0, 200)
	consumed := consumeAll(t, b.addr, topic, 200)
	checkAcked(t, acked, consumed)
}
