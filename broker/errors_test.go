package broker

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/strata-io/strata/storage/vfs"
	"github.com/strata-io/strata/storage/vfs/errorfs"
)

// TestCreateTopicOnFailedDiskIsStorageError fails the write of a new
// partition's partition.metadata and checks a real client's CreateTopics
// gets KAFKA_STORAGE_ERROR: storage marks its I/O failures, since an
// unmarked error is UNKNOWN_SERVER_ERROR.
func TestCreateTopicOnFailedDiskIsStorageError(t *testing.T) {
	efs := errorfs.Wrap(vfs.Default)
	b := startBroker(t, func(c *Config) { c.FS = efs })
	efs.Inject(errorfs.Fault{Op: errorfs.OpWrite, PathSuffix: "partition.metadata.tmp", Sticky: true, Err: syscall.EIO})
	cl := newClient(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "faildisk", 1, 1
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("create topic on a failed disk: %+v, want KAFKA_STORAGE_ERROR", resp.Topics)
	}
}

// TestUnclassifiedErrorIsUnknownServerError fails the write of the
// producer-id block, an error that carries no Kafka error code, and checks
// a real client's InitProducerID gets UNKNOWN_SERVER_ERROR, as Kafka's
// Errors.forException answers for an unexpected exception, and that the
// broker logs it once at error level with the request key.
func TestUnclassifiedErrorIsUnknownServerError(t *testing.T) {
	efs := errorfs.Wrap(vfs.Default)
	core, logs := observer.New(zapcore.ErrorLevel)
	b := startBrokerLogging(t, func(c *Config) { c.FS = efs }, zap.New(core))
	efs.Inject(errorfs.Fault{Op: errorfs.OpWrite, PathSuffix: "producer-ids.tmp", Sticky: true, Err: syscall.EIO})
	cl := newClient(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("InitProducerID with a failing producer-id block: error %d, want UNKNOWN_SERVER_ERROR", resp.ErrorCode)
	}
	lines := logs.All()
	if len(lines) != 1 || lines[0].Message != "unexpected error, answering UNKNOWN_SERVER_ERROR" ||
		lines[0].ContextMap()["request"] != "InitProducerID" {
		t.Fatalf("logged %+v, want one error line, for InitProducerID", lines)
	}
}
