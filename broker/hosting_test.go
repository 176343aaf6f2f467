package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/metadata"
)

// hasPartitionDir reports whether node's log dir holds <topic>-<p>.
func (c *testCluster) hasPartitionDir(t *testing.T, node int32, topic string, p int32) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(c.dirs[node-1], fmt.Sprintf("%s-%d", topic, p)))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

// partitionDirsOn is which nodes' log dirs hold <topic>-<p>.
func (c *testCluster) partitionDirsOn(t *testing.T, topic string, p int32) []int32 {
	t.Helper()
	var out []int32
	for node := int32(1); node <= int32(len(c.dirs)); node++ {
		if c.hasPartitionDir(t, node, topic, p) {
			out = append(out, node)
		}
	}
	return out
}

// partitionErrorOn is the error code node answers a consumer's Fetch and
// ListOffsets of topic's partition p with.
func partitionErrorOn(t *testing.T, c *testCluster, node int32, topic string, p int32) (fetch, list int16) {
	t.Helper()
	f := kmsg.NewPtrFetchRequest()
	f.ReplicaID, f.MaxWaitMillis, f.MaxBytes = -1, 0, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = p, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	f.Topics = append(f.Topics, ft)
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = p, -1, -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	fetch = c.requestTo(t, node, f).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode
	list = c.requestTo(t, node, lo).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode
	return fetch, list
}

// TestClusterHostsOnlyReplicas checks a node holds the logs of the
// partitions it is a replica of, as Kafka's LogManager: a topic of one
// replica on node 2 has a directory on node 2 only; the other nodes answer
// Produce, Fetch and ListOffsets for it NOT_LEADER_OR_FOLLOWER; moved to
// node 3 (AlterPartitionReassignments) node 3 gets the log with every
// record, readable by a consumer, and node 2's directory is gone once the
// reassignment completes; node 2 restarted recreates nothing, and a log a
// node kept of a partition moved away while it was down (a stray) is kept
// and not served.
func TestClusterHostsOnlyReplicas(t *testing.T) {
	c := startTestCluster(t, 3, func(cfg *Config) { cfg.Cluster.ReplicaLagTimeMax = 2 * time.Second })
	id := c.createTopic(t, "sparse", [][]int32{{2}})
	if on := c.partitionDirsOn(t, "sparse", 0); !slices.Equal(on, []int32{2}) {
		t.Fatalf("sparse-0's directory is on nodes %v, want [2]", on)
	}
	var values []string
	for i := range 20 {
		batch := []string{fmt.Sprintf("v%d-a", i), fmt.Sprintf("v%d-b", i)}
		if r := produceTo(t, c, 2, "sparse", 0, -1, testBatchValues(batch...)); r.ErrorCode != 0 {
			t.Fatalf("produce %d: %v", i, kerr.ErrorForCode(r.ErrorCode))
		}
		values = append(values, batch...)
	}
	for _, node := range []int32{1, 3} {
		if r := produceTo(t, c, node, "sparse", 0, -1, testBatchValues("x")); r.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("produce to node %d, no replica: %v, want NOT_LEADER_OR_FOLLOWER", node, kerr.ErrorForCode(r.ErrorCode))
		}
		if fetch, list := partitionErrorOn(t, c, node, "sparse", 0); fetch != kerr.NotLeaderForPartition.Code || list != kerr.NotLeaderForPartition.Code {
			t.Fatalf("node %d, no replica: fetch %v, list offsets %v, want NOT_LEADER_OR_FOLLOWER", node, kerr.ErrorForCode(fetch), kerr.ErrorForCode(list))
		}
	}

	adm := kadm.NewClient(rawClient(t, c.brokers[0]))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign("sparse", 0, []int32{3})
	if res, err := adm.AlterPartitionAssignments(ctx, req); err != nil || res["sparse"][0].Err != nil {
		t.Fatalf("reassign sparse-0 to node 3: %v %+v", err, res)
	}
	waitUntil(t, 20*time.Second, func() (bool, string) {
		reg := c.registration(t, "sparse", 0)
		on := c.partitionDirsOn(t, "sparse", 0)
		left, err := filepath.Glob(filepath.Join(c.dirs[1], "sparse-0.*"))
		if err != nil {
			t.Fatal(err)
		}
		if reg.Reassigning() || !slices.Equal(reg.Replicas, []int32{3}) || !slices.Equal(on, []int32{3}) || len(left) != 0 {
			return false, fmt.Sprintf("replicas %v adding %v removing %v, directories on %v, node 2 holds %v",
				reg.Replicas, reg.AddingReplicas, reg.RemovingReplicas, on, left)
		}
		return true, ""
	})
	if lookupPartition(c.brokers[1].logs.Topic("sparse"), 0) != nil {
		t.Fatal("node 2 still serves the log it deleted")
	}
	consume := func() []string {
		t.Helper()
		cl := clusterClient(t, c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"sparse": {0: kgo.NewOffset().AtStart()}}))
		var got []string
		for len(got) < len(values) && ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		return got
	}
	if got := consume(); !slices.Equal(got, values) {
		t.Fatalf("after the move a consumer reads %d records, want the %d produced: %v", len(got), len(values), got)
	}

	// Node 1 is down while a partition it holds moves away: its log is
	// then a stray when it starts again.
	c.createTopic(t, "kept", [][]int32{{1, 3}})
	c.waitInSync(t, "kept", 0)
	c.stop(t, 1)
	if _, err := c.store.Propose(metadata.PartitionChangeRecord{TopicID: c.store.Image().Topics.ByName("kept").ID, PartitionID: 0,
		Leader: 3, ISR: []int32{3}, Replicas: []int32{3}}); err != nil {
		t.Fatal(err)
	}
	c.stop(t, 2)
	c.start(t, 2)
	c.start(t, 1)
	if on := c.partitionDirsOn(t, "sparse", 0); !slices.Equal(on, []int32{3}) {
		t.Fatalf("after node 2's restart sparse-0's directory is on nodes %v, want [3]", on)
	}
	if st := c.brokers[1].logs.TopicByID(id); st == nil || st.PartitionCount() != 1 || len(st.Partitions()) != 0 {
		t.Fatalf("node 2 after its restart: %+v", st)
	}
	if on := c.partitionDirsOn(t, "kept", 0); !slices.Equal(on, []int32{1, 3}) {
		t.Fatalf("kept-0's directory is on nodes %v, want the stray kept on 1 and on 3", on)
	}
	if fetch, _ := partitionErrorOn(t, c, 1, "kept", 0); fetch != kerr.NotLeaderForPartition.Code {
		t.Fatalf("node 1 serves its stray: fetch %v", kerr.ErrorForCode(fetch))
	}
	if got := consume(); !slices.Equal(got, values) {
		t.Fatalf("after the restarts a consumer reads %d records, want the %d produced", len(got), len(values))
	}
}
