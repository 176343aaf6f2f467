package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// dirsHolding is the ids of the nodes whose log dir holds name.
func dirsHolding(nodes []*clusterNode, name string) []int32 {
	var out []int32
	for _, n := range nodes {
		if _, err := os.Stat(filepath.Join(n.dir, name)); err == nil {
			out = append(out, n.id)
		}
	}
	return out
}

// TestClusterHostsOnlyReplicas checks on three strata processes that a
// partition's log is on its replicas only, as in Kafka: a topic of one
// replica on node 2 has its directory there alone; reassigned to node 3,
// node 3 gets the log with every record and node 2's directory goes once
// the reassignment completes; node 2 restarted (its metadata log replayed
// through the images where it was the replica) recreates nothing, and
// creates, once caught up, the log of a partition it was given while down.
func TestClusterHostsOnlyReplicas(t *testing.T) {
	e2e(t)
	nodes := startCluster(t)
	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.addr)
		waitUntil(t, 15*time.Second, fmt.Sprintf("node %d lists 3 brokers", n.id), func() (bool, string) {
			m, err := metadataOf(n.addr)
			if err != nil {
				return false, err.Error()
			}
			return slices.Equal(brokerIDs(m), []int32{1, 2, 3}), fmt.Sprint(brokerIDs(m))
		})
	}
	if resp, err := createAssigned(nodes[0].addr, "sparse", [][]int32{{2}}); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics: %v %+v", err, resp)
	}
	waitUntil(t, 10*time.Second, "sparse-0 on node 2", func() (bool, string) {
		on := dirsHolding(nodes, "sparse-0")
		return slices.Equal(on, []int32{2}), fmt.Sprint(on)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var values []string
	for i := range 50 {
		v := fmt.Sprintf("record-%d", i)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sparse", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		values = append(values, v)
	}

	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign("sparse", 0, []int32{3})
	if res, err := kadm.NewClient(cl).AlterPartitionAssignments(ctx, req); err != nil || res["sparse"][0].Err != nil {
		t.Fatalf("reassign sparse-0 to node 3: %v %+v", err, res)
	}
	waitUntil(t, 20*time.Second, "sparse-0 moved to node 3, its directory with it", func() (bool, string) {
		m, err := metadataOf(nodes[0].addr, "sparse")
		if err != nil {
			return false, err.Error()
		}
		p := m.Topics[0].Partitions[0]
		on := dirsHolding(nodes, "sparse-0")
		left, _ := filepath.Glob(filepath.Join(nodes[1].dir, "sparse-0*"))
		return slices.Equal(p.Replicas, []int32{3}) && p.Leader == 3 && slices.Equal(on, []int32{3}) && len(left) == 0,
			fmt.Sprintf("replicas %v leader %d, directories on %v, node 2 holds %v", p.Replicas, p.Leader, on, left)
	})

	if code := nodes[1].p.signal(syscall.SIGTERM, 20*time.Second); code != 0 {
		t.Fatalf("node 2 exited %d after SIGTERM", code)
	}
	// A partition given node 2 while it is down has its log created once
	// node 2 has caught up, and node 2 follows it into the ISR.
	if resp, err := createAssigned(nodes[0].addr, "while-down", [][]int32{{3, 2}}); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics while node 2 is down: %v %+v", err, resp)
	}
	if resp, err := cl.ProduceSync(ctx, &kgo.Record{Topic: "while-down", Value: []byte("x")}).First(); err != nil {
		t.Fatalf("produce to while-down: %v %+v", err, resp)
	}
	nodes[1].start(t)
	waitUntil(t, 20*time.Second, "node 2 follows while-down-0 into the ISR", func() (bool, string) {
		m, err := metadataOf(nodes[0].addr, "while-down")
		if err != nil {
			return false, err.Error()
		}
		p := m.Topics[0].Partitions[0]
		on := dirsHolding(nodes, "while-down-0")
		return slices.Equal(on, []int32{2, 3}) && len(p.ISR) == 2, fmt.Sprintf("directories on %v, isr %v", on, p.ISR)
	})
	// A topic created for node 2 once it is back shows it has caught up.
	waitUntil(t, 20*time.Second, "node 2 back in the cluster", func() (bool, string) {
		resp, err := createAssigned(nodes[0].addr, "after", [][]int32{{2}})
		if err != nil {
			return false, err.Error()
		}
		code := resp.Topics[0].ErrorCode
		return code == 0 || code == kerr.TopicAlreadyExists.Code, fmt.Sprint(kerr.ErrorForCode(code))
	})
	waitUntil(t, 20*time.Second, "after-0 on node 2", func() (bool, string) {
		on := dirsHolding(nodes, "after-0")
		return slices.Equal(on, []int32{2}), fmt.Sprint(on)
	})
	if on := dirsHolding(nodes, "sparse-0"); !slices.Equal(on, []int32{3}) {
		t.Fatalf("after node 2's restart sparse-0's directory is on nodes %v, want [3]", on)
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"sparse": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var got []string
	for len(got) < len(values) && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, values) {
		t.Fatalf("read %d records from node 3, want the %d produced: %v", len(got), len(values), got)
	}
}
