package broker

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/storage/vfs"
	"github.com/strata-io/strata/storage/vfs/errorfs"
)

// alterReplicaLogDirs asks for each topic's partitions to be in dir and
// returns the answer's codes by "topic/partition".
func alterReplicaLogDirs(t *testing.T, send func(kmsg.Request) kmsg.Response, dir string, topics map[string][]int32) map[string]int16 {
	t.Helper()
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	d := kmsg.AlterReplicaLogDirsRequestDir{Dir: dir}
	for topic, parts := range topics {
		d.Topics = append(d.Topics, kmsg.AlterReplicaLogDirsRequestDirTopic{Topic: topic, Partitions: parts})
	}
	req.Dirs = append(req.Dirs, d)
	got := map[string]int16{}
	for _, rt := range send(req).(*kmsg.AlterReplicaLogDirsResponse).Topics {
		for _, p := range rt.Partitions {
			got[rt.Topic+"/"+strconv.Itoa(int(p.Partition))] = p.ErrorCode
		}
	}
	return got
}

// checkCodes compares the codes by partition with want.
func checkCodes(t *testing.T, got map[string]int16, want map[string]*kerr.Error) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("answered %v, want %v", got, want)
	}
	for k, w := range want {
		code := int16(0)
		if w != nil {
			code = w.Code
		}
		if got[k] != code {
			t.Errorf("%s: %v, want %v", k, kerr.ErrorForCode(got[k]), w)
		}
	}
}

// TestAlterReplicaLogDirsSingleDir: the one log dir, by its absolute path,
// is where every replica already is (NONE, nothing moves); any other path,
// relative included, is LOG_DIR_NOT_FOUND before anything else is looked
// at; a partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION, one
// whose log failed KAFKA_STORAGE_ERROR, a topic name too long for a
// future directory INVALID_TOPIC_EXCEPTION; and the records stay readable.
func TestAlterReplicaLogDirsSingleDir(t *testing.T) {
	efs := errorfs.Wrap(vfs.Default)
	b := startBroker(t, func(c *Config) { c.FS = efs })
	createTopicN(t, b, "move", 2)
	createTopicN(t, b, "broken", 1)
	long := strings.Repeat("x", 249)
	createTopicN(t, b, long, 1)
	cl := newClient(t, b, kgo.DisableIdempotentWrite(), kgo.RecordRetries(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "move", Partition: 0, Value: []byte("kept")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	efs.Inject(errorfs.Fault{Op: errorfs.OpWrite, PathSuffix: ".log", Sticky: true, Err: syscall.EIO})
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "broken", Value: []byte("lost")}).FirstErr(); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce on a failing disk: %v", err)
	}
	send := func(req kmsg.Request) kmsg.Response { return adminRoundTrip[kmsg.Response](t, b, req, 2) }
	abs, err := filepath.Abs(b.svc.cfg.LogDirs)
	if err != nil {
		t.Fatal(err)
	}
	all := map[string][]int32{"move": {0, 1, 5}, "broken": {0}, "nope": {0}, long: {0}}
	checkCodes(t, alterReplicaLogDirs(t, send, abs, all), map[string]*kerr.Error{
		"move/0": nil, "move/1": nil, "move/5": kerr.UnknownTopicOrPartition,
		"broken/0": kerr.KafkaStorageError, "nope/0": kerr.UnknownTopicOrPartition, long + "/0": kerr.InvalidTopicException,
	})
	for _, dir := range []string{abs + "-other", "/", abs + "/", "data"} {
		checkCodes(t, alterReplicaLogDirs(t, send, dir, map[string][]int32{"move": {0}, "nope": {0}}), map[string]*kerr.Error{
			"move/0": kerr.LogDirNotFound, "nope/0": kerr.LogDirNotFound,
		})
	}
	efs.Clear()

	// A partition named under two dirs is answered for the last.
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	req.Dirs = []kmsg.AlterReplicaLogDirsRequestDir{
		{Dir: abs, Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "move", Partitions: []int32{0, 1}}}},
		{Dir: "/elsewhere", Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "move", Partitions: []int32{1}}}},
	}
	resp := send(req).(*kmsg.AlterReplicaLogDirsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 ||
		resp.Topics[0].Partitions[0].ErrorCode != 0 || resp.Topics[0].Partitions[1].ErrorCode != kerr.LogDirNotFound.Code {
		t.Fatalf("move-0 to the log dir and move-1 to two dirs: %+v, want NONE and LOG_DIR_NOT_FOUND", resp.Topics)
	}

	dresp := send(kmsg.NewPtrDescribeLogDirsRequest()).(*kmsg.DescribeLogDirsResponse)
	if len(dresp.Dirs) != 1 || dresp.Dirs[0].Dir != abs {
		t.Fatalf("DescribeLogDirs: %+v", dresp.Dirs)
	}
	for _, dt := range dresp.Dirs[0].Topics {
		for _, dp := range dt.Partitions {
			if dp.IsFuture {
				t.Errorf("%s-%d described as a future replica", dt.Topic, dp.Partition)
			}
		}
	}
	consumer := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"move": {0: kgo.NewOffset().AtStart()}}))
	if fs := consumer.PollFetches(ctx); fs.Err() != nil || len(fs.Records()) != 1 || string(fs.Records()[0].Value) != "kept" {
		t.Fatalf("move-0 after the requests: %v %d records", fs.Err(), len(fs.Records()))
	}
}

// TestClusterAlterReplicaLogDirs: on a node of a cluster, a partition it is
// no replica of is REPLICA_NOT_AVAILABLE, one it is a replica of NONE.
func TestClusterAlterReplicaLogDirs(t *testing.T) {
	c := startTestCluster(t, 3, nil)
	c.createTopic(t, "spread", [][]int32{{1}, {2, 3}, {3}})
	for _, node := range []int32{1, 2, 3} {
		b := c.brokers[node-1]
		waitUntil(t, 10*time.Second, func() (bool, string) {
			return b.logs.Topic("spread") != nil && len(b.logs.Topic("spread").Partitions()) > 0, "node hosts no replica of spread"
		})
	}
	send := func(req kmsg.Request) kmsg.Response { return c.requestTo(t, 2, req) }
	abs, err := filepath.Abs(c.dirs[1])
	if err != nil {
		t.Fatal(err)
	}
	checkCodes(t, alterReplicaLogDirs(t, send, abs, map[string][]int32{"spread": {0, 1, 2}}), map[string]*kerr.Error{
		"spread/0": kerr.ReplicaNotAvailable, "spread/1": nil, "spread/2": kerr.ReplicaNotAvailable,
	})
	checkCodes(t, alterReplicaLogDirs(t, send, c.dirs[0], map[string][]int32{"spread": {1}}), map[string]*kerr.Error{
		"spread/1": kerr.LogDirNotFound,
	})
}
