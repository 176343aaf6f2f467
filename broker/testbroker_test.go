package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/storage"
)

// testNodeID is the node.id of brokers started by startBroker.
const testNodeID = 1

// startBroker starts an in-process broker on a loopback port with a fresh
// log dir and Kafka's defaults (one partition per auto-created topic,
// auto-creation on, 100 MiB request limit). mutate, when not nil, adjusts the
// config first. The broker is shut down, and Serve's return checked, when
// the test ends. Warnings and errors go to the test log.
func startBroker(t testing.TB, mutate func(*Config)) *Broker {
	t.Helper()
	return startBrokerLogging(t, mutate, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
}

// startBrokerLogging is startBroker with the broker logging to logger.
func startBrokerLogging(t testing.TB, mutate func(*Config), logger *zap.Logger) *Broker {
	t.Helper()
	b, _ := startStoppable(t, mutate, logger)
	return b
}

// startStoppable starts a broker as startBroker does and returns with it
// a stop that shuts it down (at most once; the test's end stops it
// otherwise).
func startStoppable(t testing.TB, mutate func(*Config), logger *zap.Logger) (*Broker, func()) {
	t.Helper()
	cfg := Config{
		Listeners:             "PLAINTEXT://127.0.0.1:0",
		LogDirs:               t.TempDir(),
		NodeID:                testNodeID,
		NumPartitions:         1,
		AutoCreateTopics:      true,
		SocketRequestMaxBytes: 100 << 20,
		Log:                   storage.DefaultConfig(),
		Groups:                testGroupConfig(),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	return runBrokerLogging(t, cfg, logger)
}

// runBroker starts a broker with cfg (a fixed log dir, so a test can
// restart on it) and returns it with a stop function that shuts it down
// and checks Serve's return. Unlike startBroker, stopping is the caller's.
func runBroker(t testing.TB, cfg Config) (*Broker, func()) {
	t.Helper()
	return runBrokerLogging(t, cfg, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
}

// runBrokerLogging is runBroker with the broker logging to logger.
func runBrokerLogging(t testing.TB, cfg Config, logger *zap.Logger) (*Broker, func()) {
	t.Helper()
	b, err := New(cfg, logger)
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- b.Serve() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	}
	t.Cleanup(stop)
	return b, stop
}

// testGroupConfig is Kafka's group defaults, except that a new group
// rebalances at once (no group.initial.rebalance.delay.ms).
func testGroupConfig() coordinator.GroupConfig {
	c := coordinator.DefaultGroupConfig()
	c.InitialRebalanceDelay = 0
	return c
}

// newClient returns a franz-go client seeded with b, closed when the test
// ends.
func newClient(t testing.TB, b *Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr().String())}, opts...)...)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}
