package broker

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/metadata/quorum"
)

// discardFSM is a raft state machine that keeps nothing: the observer
// below only has to take the log.
type discardFSM struct{}

func (discardFSM) Apply(*raft.Log) any                 { return nil }
func (discardFSM) Snapshot() (raft.FSMSnapshot, error) { return discardFSM{}, nil }
func (discardFSM) Restore(r io.ReadCloser) error       { return r.Close() }
func (discardFSM) Persist(s raft.SnapshotSink) error   { return s.Close() }
func (discardFSM) Release()                            {}

// TestDescribeQuorumListsRaftNonVotersAsObservers checks, over a client
// connection to a one-voter quorum's node, that a raft non-voter the
// active controller added (over TCP, on its controller listener) is one of
// DescribeQuorum's Observers, at the leader's log end and fetching now, as
// Kafka lists a broker that fetches the metadata log; that the voters are
// the voter alone; and that v2's Nodes are the voters' only, as Kafka's.
func TestDescribeQuorumListsRaftNonVotersAsObservers(t *testing.T) {
	// The observer's raft runs on a controller listener of its own, whose
	// connections open as the leader's transport opens them.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ocl, err := quorum.NewControllerListener(ln, addr, quorum.Security{}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ocl.Close() })
	trans := ocl.Transport(10*time.Second, zap.NewNop())
	rc := raft.DefaultConfig()
	rc.LocalID = "2"
	rc.LogOutput = io.Discard
	logs := raft.NewInmemStore()
	obs, err := raft.NewRaft(rc, discardFSM{}, logs, logs, raft.NewInmemSnapshotStore(), trans)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { obs.Shutdown() })

	cluster := DefaultClusterConfig()
	cluster.ClusterID, cluster.HeartbeatInterval = "test-cluster", 50*time.Millisecond
	b, _ := startQuorumNode(t, cluster)
	if err := b.cfg.Quorum.AddObserver(2, addr); err != nil {
		t.Fatal(err)
	}
	added := time.Now()

	cl := newClient(t, b)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := describeQuorumReq().RequestWith(context.Background(), cl)
		problem := ""
		switch {
		case err != nil:
			problem = err.Error()
		case resp.GetVersion() < 2 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1:
			problem = fmt.Sprintf("v%d, %+v", resp.GetVersion(), resp)
		default:
			problem = describeObserverProblem(resp.Topics[0].Partitions[0], resp.Nodes, added)
		}
		if problem == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("DescribeQuorum: %s", problem)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func describeQuorumReq() *kmsg.DescribeQuorumRequest {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = metadataTopic
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	return req
}

// describeObserverProblem is what is wrong with p and nodes for a quorum
// of voter testNodeID and observer 2 added at added, "" if nothing.
func describeObserverProblem(p kmsg.DescribeQuorumResponseTopicPartition, nodes []kmsg.DescribeQuorumResponseNode, added time.Time) string {
	if p.ErrorCode != 0 || len(p.CurrentVoters) != 1 || p.CurrentVoters[0].ReplicaID != testNodeID {
		return fmt.Sprintf("error %d, voters %+v", p.ErrorCode, p.CurrentVoters)
	}
	if len(nodes) != 1 || nodes[0].NodeID != testNodeID || len(nodes[0].Listeners) != 1 {
		return fmt.Sprintf("nodes %+v, want the voter's alone", nodes)
	}
	if len(p.Observers) != 1 {
		return fmt.Sprintf("observers %+v, want node 2", p.Observers)
	}
	o, leader := p.Observers[0], p.CurrentVoters[0]
	if o.ReplicaID != 2 || o.LogEndOffset != leader.LogEndOffset || o.LogEndOffset < p.HighWatermark ||
		o.LastFetchTimestamp < added.UnixMilli() || o.LastCaughtUpTimestamp < added.UnixMilli() || o.LastFetchTimestamp > time.Now().UnixMilli() {
		return fmt.Sprintf("observer %+v, leader %+v, high watermark %d, added at %d", o, leader, p.HighWatermark, added.UnixMilli())
	}
	return ""
}
