package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/strata-io/strata/metrics"
)

// TestAuthorizationAuditLog: with the StandardAuthorizer, a denied
// produce is one info line, "authorization denied", with the principal,
// host, operation, resource and request, as Kafka's authorizer logger
// gives; listing every topic leaves out what may not be seen without a
// line per topic. The decisions are counted by operation and resource
// type.
func TestAuthorizationAuditLog(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	b := startBrokerLogging(t, func(c *Config) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL://127.0.0.1:0"
		c.MetricsListener = "http://127.0.0.1:0"
		c.ListenerSASL = map[string]*ListenerSASL{"SASL": {
			Mechanisms:     []string{MechanismPlain},
			PlainUsers:     map[string]string{"alice": "alice-secret", "admin": "admin-secret"},
			MaxReceiveSize: DefaultSASLMaxReceiveSize,
		}}
		c.StandardAuthorizer = &StandardAuthorizerConfig{SuperUsers: []string{"User:admin", anonymousPrincipal}}
	}, zap.New(zapcore.NewTee(core, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)).Core())))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(newClient(t, b)).CreateTopics(ctx, 1, 1, nil, "secret", "other"); err != nil {
		t.Fatal(err)
	}
	alice := saslClient(t, b, "alice", "alice-secret", kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(10*time.Second))
	if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "secret", Value: []byte("v")}).FirstErr(); err != kerr.TopicAuthorizationFailed {
		t.Fatalf("alice's produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// franz-go asks Metadata of the topic first: that DESCRIBE is denied.
	line := func(request string) map[string]any {
		t.Helper()
		var found []map[string]any
		for _, e := range logs.FilterMessage("authorization denied").All() {
			if f := e.ContextMap(); f["request"] == request {
				found = append(found, f)
			}
		}
		if len(found) != 1 {
			t.Fatalf("denied %s logged %d lines (%v), want 1", request, len(found), found)
		}
		return found[0]
	}
	if f := line("Metadata"); f["principal"] != "User:alice" || f["host"] != "127.0.0.1" || f["operation"] != "DESCRIBE" || f["resource"] != "TOPIC:secret" {
		t.Errorf("fields %v, want User:alice from 127.0.0.1, DESCRIBE on TOPIC:secret", f)
	}
	before := logs.FilterMessage("authorization denied").Len()
	topics, err := kadm.NewClient(alice).ListTopics(ctx)
	if err != nil || len(topics) != 0 {
		t.Fatalf("alice lists %v, %v; want nothing", topics.Names(), err)
	}
	if n := logs.FilterMessage("authorization denied").Len(); n != before {
		t.Errorf("listing every topic logged %d denials, want none", n-before)
	}
	produce := kmsg.NewPtrProduceRequest()
	produce.Acks, produce.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic, pt.TopicID = "secret", b.meta.Image().Topics.ByName("secret").ID // v13 names it by id
	pt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: testBatch(t, 1)}}
	produce.Topics = append(produce.Topics, pt)
	resp := saslRoundTrip(t, b, "alice", "alice-secret", produce).(*kmsg.ProduceResponse)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("a Produce request: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	if f := line("Produce"); f["principal"] != "User:alice" || f["operation"] != "WRITE" || f["resource"] != "TOPIC:secret" {
		t.Errorf("fields %v, want User:alice, WRITE on TOPIC:secret", f)
	}
	m := scrapeMetrics(t, b)
	if d := m.get(metrics.AuthorizationsDenied, "operation", "WRITE", "resource_type", "TOPIC"); d != 1 {
		t.Errorf("denied WRITE on topics counted %v, want 1", d)
	}
	if a := m.get(metrics.AuthorizationsAllowed, "operation", "CREATE", "resource_type", "CLUSTER"); a < 1 {
		t.Errorf("allowed CREATE on the cluster counted %v, want at least 1 (admin's CreateTopics)", a)
	}
}
