package broker

import (
	"bufio"
	"encoding/binary"
	"io/fs"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/protocol"
	"github.com/strata-io/strata/storage"
)

// dirUsage is the apparent size (sum of file sizes), the bytes actually
// allocated on disk (pre-allocated index files are sparse) and the size
// of the .log files under dir.
func dirUsage(t *testing.T, dir string) (apparent, allocated, logBytes int64) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		apparent += fi.Size()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			allocated += st.Blocks * 512
		}
		if strings.HasSuffix(path, ".log") {
			logBytes += fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	return apparent, allocated, logBytes
}

// pipelineCommits sends n OffsetCommit v8 requests (simple commits,
// generation -1) of group for partitions 0-2 of topic on one connection,
// request i committing offset i+1 to every partition, writing ahead of the
// responses, and checks every response for errors.
func pipelineCommits(t *testing.T, b *Broker, group, topic string, n int) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", b.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Minute))
	const version = 8
	writeErr := make(chan error, 1)
	go func() {
		w := bufio.NewWriterSize(nc, 64<<10)
		var frame []byte
		for i := 0; i < n; i++ {
			req := kmsg.NewPtrOffsetCommitRequest()
			req.SetVersion(version)
			req.Group, req.Generation = group, -1
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = topic
			for p := int32(0); p < 3; p++ {
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch = p, int64(i+1), -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			frame = append(frame[:0], 0, 0, 0, 0)
			frame = binary.BigEndian.AppendUint16(frame, uint16(req.Key()))
			frame = binary.BigEndian.AppendUint16(frame, version)
			frame = binary.BigEndian.AppendUint32(frame, uint32(i))
			frame = binary.BigEndian.AppendUint16(frame, 0xffff) // null client id
			frame = append(frame, 0)                             // header tags
			frame = req.AppendTo(frame)
			binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
			if _, err := w.Write(frame); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- w.Flush()
	}()
	r := bufio.NewReaderSize(nc, 64<<10)
	for i := 0; i < n; i++ {
		body, err := protocol.ReadFrame(r, 1<<20, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if corr := int32(binary.BigEndian.Uint32(body)); corr != int32(i) {
			t.Fatalf("response %d has correlation id %d", i, corr)
		}
		resp := kmsg.NewPtrOffsetCommitResponse()
		resp.SetVersion(version)
		if err := resp.ReadFrom(body[5:]); err != nil { // correlation id, header tags
			t.Fatalf("response %d: %v", i, err)
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					t.Fatalf("commit %d partition %d: error %d", i, rp.Partition, rp.ErrorCode)
				}
			}
		}
	}
	if err := <-writeErr; err != nil {
		t.Fatalf("write: %v", err)
	}
}

// TestOffsetsTopicCompaction is the 100,000 commits to the same 3
// keys: __consumer_offsets stays small once the cleaner ran, and the
// latest offsets survive a restart that replays the compacted log.
func TestOffsetsTopicCompaction(t *testing.T) {
	const (
		group    = "compacted-group"
		topic    = "compacted-topic"
		requests = 33334 // x 3 partitions = 100,002 commits
	)
	cfg := Config{
		Listeners:             "PLAINTEXT://127.0.0.1:0",
		LogDirs:               t.TempDir(),
		NodeID:                testNodeID,
		NumPartitions:         3,
		AutoCreateTopics:      true,
		SocketRequestMaxBytes: 100 << 20,
		Log:                   storage.DefaultConfig(),
		Groups:                testGroupConfig(),
	}
	cfg.Log.CleanerDisable = true // cleaned by CleanNow, deterministically
	cfg.Groups.OffsetsTopicPartitions = 5
	cfg.Groups.OffsetsSegmentBytes = 64 << 10
	b, stop := runBroker(t, cfg)
	createTopic(t, newAdmin(t, b), topic, 3)
	waitUntil(t, 10*time.Second, func() (bool, string) { return b.groups.Loaded(), "coordinator not loaded" })

	start := time.Now()
	pipelineCommits(t, b, group, topic, requests)
	commitTime := time.Since(start)

	pdir := filepath.Join(cfg.LogDirs, coordinator.OffsetsTopic+"-"+strconv.Itoa(int(b.groups.PartitionFor(group))))
	apparentBefore, allocBefore, logBefore := dirUsage(t, pdir)
	segsBefore, _ := filepath.Glob(filepath.Join(pdir, "*.log"))
	start = time.Now()
	if n := b.logs.CleanNow(); n != 1 {
		t.Errorf("CleanNow cleaned %d logs, want 1", n)
	}
	cleanTime := time.Since(start)
	apparentAfter, allocAfter, logAfter := dirUsage(t, pdir)
	segsAfter, _ := filepath.Glob(filepath.Join(pdir, "*.log"))
	t.Logf("%d commits in %v; cleaning took %v", 3*requests, commitTime, cleanTime)
	t.Logf("partition dir before cleaning: %d segments, .log %d bytes, apparent %d, allocated %d",
		len(segsBefore), logBefore, apparentBefore, allocBefore)
	t.Logf("partition dir after cleaning:  %d segments, .log %d bytes, apparent %d, allocated %d",
		len(segsAfter), logAfter, apparentAfter, allocAfter)
	if logBefore < 4<<20 {
		t.Errorf("only %d bytes of commit records before cleaning: the test no longer writes what it means to", logBefore)
	}
	if logAfter >= 1<<20 || allocAfter >= 1<<20 {
		t.Errorf("after cleaning: .log %d bytes, %d allocated; want both < 1 MiB", logAfter, allocAfter)
	}

	stop()
	b2, _ := runBroker(t, cfg)
	waitUntil(t, 30*time.Second, func() (bool, string) { return b2.groups.Loaded(), "coordinator not loaded after restart" })
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = group
	ot := kmsg.NewOffsetFetchRequestTopic()
	ot.Topic, ot.Partitions = topic, []int32{0, 1, 2}
	of.Topics = append(of.Topics, ot)
	r := adminRoundTrip[*kmsg.OffsetFetchResponse](t, b2, of, 7)
	if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 3 {
		t.Fatalf("offset fetch after restart: %+v", r)
	}
	for _, p := range r.Topics[0].Partitions {
		if p.ErrorCode != 0 || p.Offset != requests {
			t.Errorf("partition %d after restart: offset %d error %d, want %d", p.Partition, p.Offset, p.ErrorCode, requests)
		}
	}
}

// TestInternalTopicNotDeleted: DeleteTopics refuses __consumer_offsets, by
// name and by id, and the coordinator keeps its log.
func TestInternalTopicNotDeleted(t *testing.T) {
	b := startGroupBroker(t)
	findCoordinator(t, b, 0, "g") // creates __consumer_offsets
	id := b.logs.Topic(coordinator.OffsetsTopic).ID
	for _, byID := range []bool{false, true} {
		dt := kmsg.NewPtrDeleteTopicsRequest()
		dtt := kmsg.NewDeleteTopicsRequestTopic()
		if byID {
			dtt.TopicID = id
		} else {
			dtt.Topic = kmsg.StringPtr(coordinator.OffsetsTopic)
		}
		dt.Topics = append(dt.Topics, dtt)
		r := adminRoundTrip[*kmsg.DeleteTopicsResponse](t, b, dt, 6)
		if len(r.Topics) != 1 || r.Topics[0].ErrorCode != kerr.InvalidRequest.Code ||
			r.Topics[0].Topic == nil || *r.Topics[0].Topic != coordinator.OffsetsTopic || r.Topics[0].TopicID != id {
			t.Fatalf("delete by id %v: %+v", byID, r.Topics)
		}
	}
	if tp := b.logs.Topic(coordinator.OffsetsTopic); tp == nil || !tp.Internal {
		t.Fatalf("%s gone or not internal after refused deletes", coordinator.OffsetsTopic)
	}
}
