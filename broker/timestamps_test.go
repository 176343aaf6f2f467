package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestProduceTimestampBounds: a franz-go producer whose record is stamped
// two hours ahead gets INVALID_TIMESTAMP (message.timestamp.after.max.ms
// defaults to one hour, as in Kafka 4); half an hour ahead is accepted, and
// so is two hours ahead on a LogAppendTime topic, for which Kafka checks no
// bounds.
func TestProduceTimestampBounds(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	logAppend := "LogAppendTime"
	for topic, configs := range map[string]map[string]*string{"create": nil, "append": {"message.timestamp.type": &logAppend}} {
		if _, err := adm.CreateTopic(testCtx(t), 1, 1, configs, topic); err != nil {
			t.Fatal(err)
		}
	}
	cl := newClient(t, b, kgo.RecordRetries(0))
	produce := func(topic string, ahead time.Duration) error {
		return cl.ProduceSync(testCtx(t), &kgo.Record{Topic: topic, Value: []byte("v"), Timestamp: time.Now().Add(ahead)}).FirstErr()
	}
	if err := produce("create", 2*time.Hour); !errors.Is(err, kerr.InvalidTimestamp) {
		t.Fatalf("a record two hours ahead: %v, want INVALID_TIMESTAMP", err)
	}
	if err := produce("create", 30*time.Minute); err != nil {
		t.Fatalf("a record half an hour ahead: %v", err)
	}
	if err := produce("append", 2*time.Hour); err != nil {
		t.Fatalf("a record two hours ahead on a LogAppendTime topic: %v", err)
	}
}
