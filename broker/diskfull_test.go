package broker

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-io/strata/storage/vfs"
	"github.com/strata-io/strata/storage/vfs/errorfs"
)

// TestProduceAfterDiskErrorRevives fails the broker's disk under a real
// producer (the broker's file system is injected), and checks the producer
// gets KAFKA_STORAGE_ERROR, the broker takes writes again at the next offset
// once the disk does, and every acknowledged record is read back.
func TestProduceAfterDiskErrorRevives(t *testing.T) {
	efs := errorfs.Wrap(vfs.Default)
	b := startBroker(t, func(c *Config) { c.FS = efs })
	createTopicN(t, b, "disk", 1)
	cl := newClient(t, b, kgo.DisableIdempotentWrite(), kgo.RecordRetries(0), kgo.ProducerLinger(0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produce := func(v string) (*kgo.Record, error) {
		r := &kgo.Record{Topic: "disk", Value: []byte(v)}
		return r, cl.ProduceSync(ctx, r).FirstErr()
	}
	var acked []*kgo.Record
	for i := range 10 {
		r, err := produce(fmt.Sprint("before-", i))
		if err != nil {
			t.Fatalf("produce before the fault: %v", err)
		}
		acked = append(acked, r)
	}
	efs.Inject(errorfs.Fault{Op: errorfs.OpWrite, PathSuffix: ".log", Sticky: true, Err: syscall.ENOSPC})
	if _, err := produce("lost"); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce on a full disk: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if off := b.logs.OfflinePartitions(); len(off) != 1 || off[0].Topic != "disk" {
		t.Fatalf("offline partitions: %v", off)
	}
	efs.Clear()
	deadline := time.Now().Add(10 * time.Second)
	for len(b.logs.OfflinePartitions()) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("partition not revived within 10 s of the disk taking writes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	r, err := produce("after")
	if err != nil {
		t.Fatalf("produce after revival: %v", err)
	}
	if r.Offset != 10 {
		t.Fatalf("record after revival at offset %d, want 10", r.Offset)
	}
	acked = append(acked, r)
	consumer := newClient(t, b, kgo.ConsumeTopics("disk"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []*kgo.Record
	for len(got) < len(acked) {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records: %v", len(got), len(acked), err)
		}
		got = append(got, fs.Records()...)
	}
	for i, a := range acked {
		if got[i].Offset != a.Offset || string(got[i].Value) != string(a.Value) {
			t.Fatalf("record %d: offset %d %q, want offset %d %q", i, got[i].Offset, got[i].Value, a.Offset, a.Value)
		}
	}
}

// TestDeletedTopicWhoseDirCannotBeRemovedIsGone fails the removal of a
// deleted topic's partition dir: the client hears of the error, as before,
// but the topic has left the registry, so it has left the metadata image
// too: Metadata no longer lists it and its name can be taken again.
func TestDeletedTopicWhoseDirCannotBeRemovedIsGone(t *testing.T) {
	efs := errorfs.Wrap(vfs.Default)
	b := startBroker(t, func(c *Config) { c.FS = efs })
	createTopicN(t, b, "stays", 1)
	adm := newAdmin(t, b)
	ctx := testCtx(t)
	efs.Inject(errorfs.Fault{Op: errorfs.OpRemove, PathSuffix: "-delete", Sticky: true})
	res, err := adm.DeleteTopic(ctx, "stays")
	if err == nil && res.Err == nil {
		t.Fatal("DeleteTopics succeeded though the partition dir stayed")
	}
	efs.Clear()
	if b.meta.Image().Topics.ByName("stays") != nil {
		t.Fatal("the deleted topic is still in the metadata image")
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has("stays") {
		t.Fatalf("Metadata lists the deleted topic: %+v", topics["stays"])
	}
	createTopicN(t, b, "stays", 2)
}
