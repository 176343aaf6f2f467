package broker

// DescribeLogDirs.
//
// There is one log dir (log.dirs), reported by its absolute path with the
// size in bytes of each partition's segments; OffsetLag is 0 and IsFuture
// false (no replica movement between dirs). Null Topics describes every
// partition; named topics or partitions that do not exist are left out, as
// in Kafka. v4 adds the file system's total and usable bytes (statfs);
// when statfs fails they are -1, Kafka's "unknown". v5's IsCordoned
// (KIP-1066) is false: Strata has no cordoned.log.dirs, so its one dir
// always takes new partitions. Only the partitions this node is a replica
// of are listed.

import (
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/storage"
)

// registerDescribeLogDirs serves DescribeLogDirs; its versions are here and nowhere else.
func registerDescribeLogDirs(r *registry) { r.add(kmsg.DescribeLogDirs, 0, 5, handleDescribeLogDirs) }

func handleDescribeLogDirs(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.DescribeLogDirsRequest)
	resp := kmsg.NewPtrDescribeLogDirsResponse()
	if !rc.authorizeCluster(OpDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = b.cfg.LogDirs
	if abs, err := filepath.Abs(b.cfg.LogDirs); err == nil {
		dir.Dir = abs
	}
	dir.TotalBytes, dir.UsableBytes = -1, -1
	var st unix.Statfs_t
	if err := unix.Statfs(b.cfg.LogDirs, &st); err == nil {
		dir.TotalBytes = int64(st.Blocks) * int64(st.Bsize)
		dir.UsableBytes = int64(st.Bavail) * int64(st.Bsize)
	}
	img := b.meta.Image()
	addTopic := func(t *storage.Topic, want func(int32) bool) {
		dt := kmsg.NewDescribeLogDirsResponseDirTopic()
		dt.Topic = t.Name
		ti := img.Topics.ByID(t.ID)
		for _, p := range t.Partitions() {
			if p == nil || !want(p.Index) {
				continue
			}
			if !replicaOf(ti, p.Index, b.cfg.NodeID) {
				continue // a log this node keeps but is no replica of (hosting.go)
			}
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition, dp.Size = p.Index, p.Log.Size()
			dt.Partitions = append(dt.Partitions, dp)
		}
		if len(dt.Partitions) > 0 {
			dir.Topics = append(dir.Topics, dt)
		}
	}
	if r.Topics == nil {
		for _, t := range b.logs.Topics() {
			addTopic(t, func(int32) bool { return true })
		}
	} else {
		for _, rt := range r.Topics {
			t := b.logs.Topic(rt.Topic)
			if t == nil {
				continue
			}
			want := map[int32]bool{}
			for _, p := range rt.Partitions {
				want[p] = true
			}
			addTopic(t, func(p int32) bool { return want[p] })
		}
	}
	resp.Dirs = []kmsg.DescribeLogDirsResponseDir{dir}
	return resp, nil
}

// replicaOf reports whether node is a replica of t's partition p in the
// image.
func replicaOf(t *metadata.TopicImage, p, node int32) bool {
	if t == nil {
		return false
	}
	reg, ok := t.Partition(p)
	return ok && slices.Contains(reg.Replicas, node)
}
