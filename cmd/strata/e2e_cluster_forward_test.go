package main

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// pinnedNode is a franz-go client whose requests all go to one node of a
// cluster (kgo.Client.Broker), none routed to the controller or a leader
// by the client's metadata.
type pinnedNode struct {
	*clusterNode
	b *kgo.Broker
}

func pin(t *testing.T, n *clusterNode, opts ...kgo.Opt) pinnedNode {
	return pinnedNode{n, newClient(t, n.addr, opts...).Broker(int(n.id))}
}

func (p pinnedNode) ask(t *testing.T, req kmsg.Request) kmsg.Response {
	t.Helper()
	resp, err := p.b.Request(timeoutCtx(t, 20*time.Second), req)
	if err != nil {
		t.Fatalf("%s to node %d: %v", kmsg.Key(req.Key()).Name(), p.id, err)
	}
	return resp
}

// create creates topic through p, partition i on replicas[i], and
// returns its id (none below CreateTopics v7).
func (p pinnedNode) create(t *testing.T, topic string, replicas ...[]int32) [16]byte {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for i, r := range replicas {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), r
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	st := p.ask(t, req).(*kmsg.CreateTopicsResponse).Topics[0]
	if st.ErrorCode != 0 {
		t.Fatalf("CreateTopics %s on node %d: %v", topic, p.id, kerr.ErrorForCode(st.ErrorCode))
	}
	return st.TopicID
}

// metadata is p's Metadata for topics, nil for every topic, never
// auto-creating one.
func (p pinnedNode) metadata(t *testing.T, topics ...string) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	return p.ask(t, req).(*kmsg.MetadataResponse)
}

// partition0 is topic's partition 0 in p's Metadata.
func (p pinnedNode) partition0(t *testing.T, topic string) kmsg.MetadataResponseTopicPartition {
	t.Helper()
	m := p.metadata(t, topic)
	if len(m.Topics) != 1 || m.Topics[0].ErrorCode != 0 || len(m.Topics[0].Partitions) == 0 {
		t.Fatalf("node %d's Metadata for %s: %+v", p.id, topic, m.Topics)
	}
	return m.Topics[0].Partitions[0]
}

// retention is topic's retention.ms in p's DescribeConfigs.
func (p pinnedNode) retention(t *testing.T, topic string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{"retention.ms"}
	req.Resources = append(req.Resources, rr)
	r := p.ask(t, req).(*kmsg.DescribeConfigsResponse).Resources[0]
	if r.ErrorCode != 0 || len(r.Configs) != 1 || r.Configs[0].Value == nil {
		t.Fatalf("node %d's DescribeConfigs of %s: %v %+v", p.id, topic, kerr.ErrorForCode(r.ErrorCode), r.Configs)
	}
	return *r.Configs[0].Value
}

// setRetention is an IncrementalAlterConfigs setting topic's retention.ms.
func setRetention(topic, value string, validateOnly bool) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = "retention.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(value)
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	return req
}

// followers are the cluster's nodes other than the active controller,
// each pinned.
func followers(t *testing.T) []pinnedNode {
	nodes := startCluster(t)
	waitFormed(t, nodes, 15*time.Second)
	ctrl := activeController(t, nodes)
	var out []pinnedNode
	for _, n := range nodes {
		if n != ctrl {
			out = append(out, pin(t, n))
		}
	}
	return out
}

// rounds is how many times each check runs on each node: the window
// the wait closes is a follower's lag behind the controller's commit,
// tens of milliseconds, so one run could miss it.
const rounds = 5

// TestClusterForwardedChangesShowOnTheForwardingNode checks that each
// change a node forwards to the active controller is answered once that
// node shows it: the client's next request to the same node sees the
// change, with no retry.
func TestClusterForwardedChangesShowOnTheForwardingNode(t *testing.T) {
	e2e(t)
	nodes := followers(t)

	// A deleted topic is gone from the node's Metadata at once, and its
	// name can be created again at the first try and is then in the
	// node's Metadata at once, also at versions whose answers carry no
	// topic id (DeleteTopics v5, CreateTopics v4, as older clients send).
	t.Run("DeleteTopics", func(t *testing.T) {
		old := kversion.Stable()
		old.SetMaxKeyVersion(kmsg.DeleteTopics.Int16(), 5)
		old.SetMaxKeyVersion(kmsg.CreateTopics.Int16(), 4)
		for _, n := range nodes {
			clients := []struct {
				versions string
				pinnedNode
			}{{"the latest versions", n}, {"DeleteTopics v5, CreateTopics v4", pin(t, n.clusterNode, kgo.MaxVersions(old))}}
			for i := range rounds {
				for j, c := range clients {
					versions := c.versions
					topic := fmt.Sprintf("deleted-%d-%d-%d", n.id, i, j)
					deleted := c.create(t, topic, []int32{1, 2, 3})
					if deleted == ([16]byte{}) {
						deleted = topicID(t, n.addr, topic)
					}
					req := kmsg.NewPtrDeleteTopicsRequest()
					req.TimeoutMillis = 10000
					rt := kmsg.NewDeleteTopicsRequestTopic()
					rt.Topic = kmsg.StringPtr(topic)
					req.Topics = append(req.Topics, rt)
					req.TopicNames = append(req.TopicNames, topic) // below v6
					if st := c.ask(t, req).(*kmsg.DeleteTopicsResponse).Topics; len(st) != 1 || st[0].ErrorCode != 0 {
						t.Fatalf("DeleteTopics %s on node %d (%s): %+v", topic, n.id, versions, st)
					}
					for _, mt := range n.metadata(t).Topics {
						if mt.Topic != nil && *mt.Topic == topic {
							t.Errorf("node %d, right after answering DeleteTopics %s (%s): Metadata still lists it (id %x, the deleted one's %x)", n.id, topic, versions, mt.TopicID, deleted)
						}
					}
					c.create(t, topic, []int32{1, 2, 3})
					if mt := n.metadata(t, topic).Topics[0]; mt.ErrorCode != 0 || mt.TopicID == deleted {
						t.Errorf("node %d, right after answering CreateTopics %s again (%s): Metadata says %v, id %x (the deleted one's %x)", n.id, topic, versions, kerr.ErrorForCode(mt.ErrorCode), mt.TopicID, deleted)
					}
				}
			}
		}
	})

	// Added partitions are in the node's Metadata at once, and the node
	// takes a produce to the one it leads at once: the two are sent
	// together, right after the answer.
	t.Run("CreatePartitions", func(t *testing.T) {
		for _, n := range nodes {
			// acks=1: the client sets the produce's acks (acks=all would
			// wait for the followers' first fetch of the new partition).
			producer := pin(t, n.clusterNode, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
			for i := range rounds {
				topic := fmt.Sprintf("grown-%d-%d", n.id, i)
				n.create(t, topic, []int32{1, 2, 3})
				req := kmsg.NewPtrCreatePartitionsRequest()
				req.TimeoutMillis = 10000
				rt := kmsg.NewCreatePartitionsRequestTopic()
				rt.Topic, rt.Count = topic, 2
				a := kmsg.NewCreatePartitionsRequestTopicAssignment()
				a.Replicas = []int32{n.id} // the new partition's leader
				for _, id := range []int32{1, 2, 3} {
					if id != n.id {
						a.Replicas = append(a.Replicas, id)
					}
				}
				rt.Assignment = append(rt.Assignment, a)
				req.Topics = append(req.Topics, rt)
				if st := n.ask(t, req).(*kmsg.CreatePartitionsResponse).Topics[0]; st.ErrorCode != 0 {
					t.Fatalf("CreatePartitions %s on node %d: %v", topic, n.id, kerr.ErrorForCode(st.ErrorCode))
				}

				mreq := kmsg.NewPtrMetadataRequest()
				mreq.AllowAutoTopicCreation = false
				mt := kmsg.NewMetadataRequestTopic()
				mt.Topic = kmsg.StringPtr(topic)
				mreq.Topics = append(mreq.Topics, mt)
				preq := kmsg.NewPtrProduceRequest()
				preq.Acks, preq.TimeoutMillis = 1, 10000
				pt := kmsg.NewProduceRequestTopic()
				// Produce v13 names the topic by its id.
				pt.Topic, pt.TopicID = topic, n.ask(t, mreq).(*kmsg.MetadataResponse).Topics[0].TopicID
				pp := kmsg.NewProduceRequestTopicPartition()
				pp.Partition, pp.Records = 1, corruptBatch(t, true)
				pt.Partitions = append(pt.Partitions, pp)
				preq.Topics = append(preq.Topics, pt)
				var (
					wg           sync.WaitGroup
					mresp, presp kmsg.Response
					merr, perr   error
				)
				wg.Add(2)
				go func() { defer wg.Done(); mresp, merr = n.b.Request(timeoutCtx(t, 20*time.Second), mreq) }()
				go func() { defer wg.Done(); presp, perr = producer.b.Request(timeoutCtx(t, 20*time.Second), preq) }()
				wg.Wait()
				if merr != nil || perr != nil {
					t.Fatalf("Metadata, Produce to node %d: %v, %v", n.id, merr, perr)
				}
				if m := mresp.(*kmsg.MetadataResponse).Topics[0]; len(m.Partitions) != 2 {
					t.Errorf("node %d, right after answering CreatePartitions %s to 2: Metadata lists %d partitions (%v)", n.id, topic, len(m.Partitions), kerr.ErrorForCode(m.ErrorCode))
				}
				if code := presp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
					t.Errorf("node %d, right after answering CreatePartitions %s: a produce to the new partition it leads: %v", n.id, topic, kerr.ErrorForCode(code))
				}
			}
		}
	})

	// An altered topic config is in the node's DescribeConfigs at once,
	// by IncrementalAlterConfigs and by AlterConfigs.
	t.Run("AlterConfigs", func(t *testing.T) {
		for _, n := range nodes {
			for i := range rounds {
				topic := fmt.Sprintf("configured-%d-%d", n.id, i)
				n.create(t, topic, []int32{1, 2, 3})

				incremental := fmt.Sprint(3600000 + i)
				req := setRetention(topic, incremental, false)
				if r := n.ask(t, req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]; r.ErrorCode != 0 {
					t.Fatalf("IncrementalAlterConfigs %s on node %d: %v", topic, n.id, kerr.ErrorForCode(r.ErrorCode))
				}
				if got := n.retention(t, topic); got != incremental {
					t.Errorf("node %d, right after answering IncrementalAlterConfigs of %s: retention.ms %s, want %s", n.id, topic, got, incremental)
				}

				replaced := fmt.Sprint(7200000 + i)
				areq := kmsg.NewPtrAlterConfigsRequest()
				ar := kmsg.NewAlterConfigsRequestResource()
				ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeTopic, topic
				ac := kmsg.NewAlterConfigsRequestResourceConfig()
				ac.Name, ac.Value = "retention.ms", kmsg.StringPtr(replaced)
				ar.Configs = append(ar.Configs, ac)
				areq.Resources = append(areq.Resources, ar)
				if r := n.ask(t, areq).(*kmsg.AlterConfigsResponse).Resources[0]; r.ErrorCode != 0 {
					t.Fatalf("AlterConfigs %s on node %d: %v", topic, n.id, kerr.ErrorForCode(r.ErrorCode))
				}
				if got := n.retention(t, topic); got != replaced {
					t.Errorf("node %d, right after answering AlterConfigs of %s: retention.ms %s, want %s", n.id, topic, got, replaced)
				}
			}
		}
	})

	// A reassignment's new replicas, then a preferred election's new
	// leader, are in the node's Metadata at once.
	t.Run("ReassignAndElect", func(t *testing.T) {
		for _, n := range nodes {
			for i := range rounds {
				topic := fmt.Sprintf("moved-%d-%d", n.id, i)
				n.create(t, topic, []int32{1, 2, 3})
				waitUntil(t, 10*time.Second, topic+" led by node 1", func() (bool, string) {
					p := n.partition0(t, topic)
					return p.Leader == 1 && len(p.ISR) == 3, fmt.Sprintf("leader %d, ISR %v", p.Leader, p.ISR)
				})
				target := []int32{3, 1, 2}
				req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
				req.TimeoutMillis = 10000
				rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
				rt.Topic = topic
				rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
				rp.Partition, rp.Replicas = 0, target
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				resp := n.ask(t, req).(*kmsg.AlterPartitionAssignmentsResponse)
				if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
					t.Fatalf("AlterPartitionReassignments %s on node %d: %v / %v", topic, n.id,
						kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
				}
				if p := n.partition0(t, topic); !slices.Equal(p.Replicas, target) {
					t.Errorf("node %d, right after answering AlterPartitionReassignments of %s to %v: replicas %v", n.id, topic, target, p.Replicas)
					continue
				}

				ereq := kmsg.NewPtrElectLeadersRequest()
				ereq.TimeoutMillis = 10000
				et := kmsg.NewElectLeadersRequestTopic()
				et.Topic, et.Partitions = topic, []int32{0}
				ereq.Topics = append(ereq.Topics, et)
				eresp := n.ask(t, ereq).(*kmsg.ElectLeadersResponse)
				if eresp.ErrorCode != 0 || eresp.Topics[0].Partitions[0].ErrorCode != 0 {
					t.Fatalf("ElectLeaders %s on node %d: %v / %v", topic, n.id,
						kerr.ErrorForCode(eresp.ErrorCode), kerr.ErrorForCode(eresp.Topics[0].Partitions[0].ErrorCode))
				}
				if p := n.partition0(t, topic); p.Leader != 3 {
					t.Errorf("node %d, right after answering ElectLeaders of %s: leader %d, want 3", n.id, topic, p.Leader)
				}
			}
		}
	})

	// A validate-only change and a refused one change nothing, so there
	// is nothing to wait for: each is answered at once, not after the
	// wait's bound (imageWait, 10 s).
	t.Run("NothingToWaitFor", func(t *testing.T) {
		n := nodes[0]
		topic := "unchanged"
		n.create(t, topic, []int32{1, 2, 3})
		answered := func(what string, req kmsg.Request) kmsg.Response {
			start := time.Now()
			resp := n.ask(t, req)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("node %d answered %s after %v", n.id, what, took)
			}
			return resp
		}
		r := answered("a validate-only IncrementalAlterConfigs", setRetention(topic, "123456", true)).(*kmsg.IncrementalAlterConfigsResponse)
		if code := r.Resources[0].ErrorCode; code != 0 {
			t.Errorf("validate-only IncrementalAlterConfigs: %v", kerr.ErrorForCode(code))
		}
		if got := n.retention(t, topic); got == "123456" {
			t.Errorf("a validate-only IncrementalAlterConfigs set retention.ms")
		}
		r = answered("a refused IncrementalAlterConfigs", setRetention(topic, "soon", false)).(*kmsg.IncrementalAlterConfigsResponse)
		if code := r.Resources[0].ErrorCode; code != kerr.InvalidConfig.Code {
			t.Errorf("IncrementalAlterConfigs retention.ms=soon: %v, want INVALID_CONFIG", kerr.ErrorForCode(code))
		}
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis, req.ValidateOnly = 10000, true
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = topic, 4
		req.Topics = append(req.Topics, rt)
		if code := answered("a validate-only CreatePartitions", req).(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode; code != 0 {
			t.Errorf("validate-only CreatePartitions: %v", kerr.ErrorForCode(code))
		}
		if got := len(n.metadata(t, topic).Topics[0].Partitions); got != 1 {
			t.Errorf("a validate-only CreatePartitions left %d partitions", got)
		}
	})
}
