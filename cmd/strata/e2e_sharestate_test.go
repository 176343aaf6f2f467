package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareConn is a raw connection to a broker and its correlation ids.
type shareConn struct {
	t    *testing.T
	c    net.Conn
	corr int32
}

func dialShare(t *testing.T, addr string) *shareConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &shareConn{t: t, c: c}
}

func (s *shareConn) do(req kmsg.Request, version int16) kmsg.Response {
	s.t.Helper()
	s.corr++
	return rawRequest(s.t, s.c, req, version, s.corr)
}

// findShareCoordinator is FindCoordinator v6 for a share key, retried
// while the broker creates __share_group_state.
func (s *shareConn) findShareCoordinator(key string) kmsg.FindCoordinatorResponseCoordinator {
	s.t.Helper()
	r := kmsg.NewPtrFindCoordinatorRequest()
	r.CoordinatorType, r.CoordinatorKeys = 2, []string{key}
	var c kmsg.FindCoordinatorResponseCoordinator
	waitFor(s.t, "the share coordinator", 60*time.Second, func() bool {
		c = s.do(r, 6).(*kmsg.FindCoordinatorResponse).Coordinators[0]
		return c.ErrorCode != kerr.CoordinatorNotAvailable.Code
	})
	return c
}

func (s *shareConn) topicID(topic string) [16]byte {
	s.t.Helper()
	r := kmsg.NewPtrMetadataRequest()
	r.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
	resp := s.do(r, 12).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		s.t.Fatalf("metadata of %s: %+v", topic, resp.Topics)
	}
	return resp.Topics[0].TopicID
}

// readState is ReadShareGroupState of one share-partition, retried while
// its coordinator loads.
func (s *shareConn) readState(group string, id [16]byte, partition, leaderEpoch int32) kmsg.ReadShareGroupStateResponseTopicPartition {
	s.t.Helper()
	r := kmsg.NewPtrReadShareGroupStateRequest()
	r.GroupID = group
	r.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: id, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: partition, LeaderEpoch: leaderEpoch}}}}
	var p kmsg.ReadShareGroupStateResponseTopicPartition
	waitFor(s.t, "the share coordinator to load", 60*time.Second, func() bool {
		p = s.do(r, 0).(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0]
		return p.ErrorCode != kerr.CoordinatorLoadInProgress.Code
	})
	return p
}

func (s *shareConn) initializeState(group string, id [16]byte, partition, stateEpoch int32, start int64) kmsg.InitializeShareGroupStateResponseTopicPartition {
	s.t.Helper()
	r := kmsg.NewPtrInitializeShareGroupStateRequest()
	r.GroupID = group
	r.Topics = []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: id, Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: partition, StateEpoch: stateEpoch, StartOffset: start}}}}
	return s.do(r, 0).(*kmsg.InitializeShareGroupStateResponse).Topics[0].Partitions[0]
}

func (s *shareConn) writeState(group string, id [16]byte, p kmsg.WriteShareGroupStateRequestTopicPartition) kmsg.WriteShareGroupStateResponseTopicPartition {
	s.t.Helper()
	r := kmsg.NewPtrWriteShareGroupStateRequest()
	r.GroupID = group
	r.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: id, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{p}}}
	return s.do(r, 1).(*kmsg.WriteShareGroupStateResponse).Topics[0].Partitions[0]
}

func (s *shareConn) summary(group string, id [16]byte, partition int32) kmsg.ReadShareGroupStateSummaryResponseTopicPartition {
	s.t.Helper()
	r := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	r.GroupID = group
	r.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: id, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: partition}}}}
	return s.do(r, 1).(*kmsg.ReadShareGroupStateSummaryResponse).Topics[0].Partitions[0]
}

func (s *shareConn) deleteState(group string, id [16]byte, partition int32) kmsg.DeleteShareGroupStateResponseTopicPartition {
	s.t.Helper()
	r := kmsg.NewPtrDeleteShareGroupStateRequest()
	r.GroupID = group
	r.Topics = []kmsg.DeleteShareGroupStateRequestTopic{{TopicID: id, Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: partition}}}}
	return s.do(r, 0).(*kmsg.DeleteShareGroupStateResponse).Topics[0].Partitions[0]
}

func shareWrite(partition, leaderEpoch int32, start int64, complete int32, batches ...kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch) kmsg.WriteShareGroupStateRequestTopicPartition {
	p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	p.Partition, p.LeaderEpoch, p.StartOffset, p.DeliveryCompleteCount, p.StateBatches = partition, leaderEpoch, start, complete, batches
	return p
}

func strOr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestShareGroupStateE2E drives the share coordinator over TCP with the raw
// requests a share-partition leader sends: FindCoordinator v6 for a share
// key (which creates __share_group_state, an internal topic of 50
// partitions) names this broker; InitializeShareGroupState, two
// WriteShareGroupState and ReadShareGroupState(Summary) give back what was
// written; after kill -9 and a restart the state reads back the same and
// an older leader epoch is still fenced; DeleteShareGroupState removes it.
func TestShareGroupStateE2E(t *testing.T) {
	e2e(t)
	p := startBroker(t, "")
	cl := newClient(t, p.addr)
	createTopic(t, cl, "t", 2)
	s := dialShare(t, p.addr)
	id := s.topicID("t")
	key := "g:" + shareTopicIDString(id) + ":1"

	c := s.findShareCoordinator(key)
	host, port, _ := net.SplitHostPort(p.addr)
	if c.ErrorCode != 0 || c.Host != host || strconv.Itoa(int(c.Port)) != port || c.Key != key {
		t.Fatalf("share coordinator of %s: %+v, want %s", key, c, p.addr)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("__share_group_state")}}
	if mt := s.do(md, 12).(*kmsg.MetadataResponse).Topics[0]; mt.ErrorCode != 0 || !mt.IsInternal || len(mt.Partitions) != 50 {
		t.Fatalf("__share_group_state: error %d internal %v, %d partitions; want an internal topic of 50", mt.ErrorCode, mt.IsInternal, len(mt.Partitions))
	}
	for _, tc := range []struct {
		key     string
		version int16
	}{{key, 5}, {"g", 6}, {"g:notauuid:1", 6}, {":" + shareTopicIDString(id) + ":1", 6}} {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.CoordinatorType, r.CoordinatorKey, r.CoordinatorKeys = 2, tc.key, []string{tc.key}
		resp := s.do(r, tc.version).(*kmsg.FindCoordinatorResponse)
		code := resp.ErrorCode
		if tc.version >= 4 {
			code = resp.Coordinators[0].ErrorCode
		}
		if code != kerr.InvalidRequest.Code {
			t.Errorf("FindCoordinator v%d share key %q: %v, want INVALID_REQUEST", tc.version, tc.key, kerr.ErrorForCode(code))
		}
	}

	if r := s.initializeState("g", id, 1, 0, 0); r.ErrorCode != 0 {
		t.Fatalf("initialize: %v %s", kerr.ErrorForCode(r.ErrorCode), strOr(r.ErrorMessage))
	}
	batch := func(first, last int64, state int8, count int16) kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch {
		return kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{FirstOffset: first, LastOffset: last, DeliveryState: state, DeliveryCount: count}
	}
	for i, w := range []kmsg.WriteShareGroupStateRequestTopicPartition{
		shareWrite(1, 3, 0, 0, batch(0, 9, 2, 1), batch(10, 19, 1, 1)),
		shareWrite(1, 3, 10, 0, batch(10, 14, 2, 1), batch(15, 19, 0, 2)),
	} {
		if r := s.writeState("g", id, w); r.ErrorCode != 0 {
			t.Fatalf("write %d: %v %s", i, kerr.ErrorForCode(r.ErrorCode), strOr(r.ErrorMessage))
		}
	}
	check := func(when string) {
		t.Helper()
		r := s.readState("g", id, 1, 3)
		want := []kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch{
			{FirstOffset: 10, LastOffset: 14, DeliveryState: 2, DeliveryCount: 1},
			{FirstOffset: 15, LastOffset: 19, DeliveryState: 0, DeliveryCount: 2},
		}
		if r.ErrorCode != 0 || r.StartOffset != 10 || r.StateEpoch != 0 || len(r.StateBatches) != len(want) {
			t.Fatalf("%s: read %+v", when, r)
		}
		for i, b := range r.StateBatches {
			w := want[i]
			if b.FirstOffset != w.FirstOffset || b.LastOffset != w.LastOffset || b.DeliveryState != w.DeliveryState || b.DeliveryCount != w.DeliveryCount {
				t.Errorf("%s: batch %d %+v, want %+v", when, i, b, w)
			}
		}
		if sum := s.summary("g", id, 1); sum.ErrorCode != 0 || sum.StartOffset != 10 || sum.LeaderEpoch != 3 || sum.DeliveryCompleteCount != 0 {
			t.Errorf("%s: summary %+v", when, sum)
		}
	}
	check("before the restart")

	p.kill()
	p = p.restart()
	s = dialShare(t, p.addr)
	check("after kill -9 and restart")
	if r := s.writeState("g", id, shareWrite(1, 2, 10, 0)); r.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Errorf("after the restart a write at leader epoch 2: %v, want FENCED_LEADER_EPOCH", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := s.deleteState("g", id, 1); r.ErrorCode != 0 {
		t.Fatalf("delete: %v %s", kerr.ErrorForCode(r.ErrorCode), strOr(r.ErrorMessage))
	}
	if r := s.readState("g", id, 1, 3); r.ErrorCode != kerr.InvalidRequest.Code || strOr(r.ErrorMessage) != "Read operation on uninitialized share partition not allowed." {
		t.Errorf("read after delete: %v %q", kerr.ErrorForCode(r.ErrorCode), strOr(r.ErrorMessage))
	}
	if sum := s.summary("g", id, 1); sum.ErrorCode != 0 || sum.StartOffset != -1 {
		t.Errorf("summary after delete: %+v, want start offset -1", sum)
	}
}

// shareTopicIDString is a topic id as Kafka prints a Uuid, as share keys
// hold it.
// shareKafka44 starts the share tests' Kafka 4.4.0 control, one KRaft
// node whose __share_group_state has one replica, and returns its address;
// it skips the test when Kafka's jars are not cached.
func shareKafka44(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(kafkaHome, "libs")); err != nil {
		t.Skip("Kafka 4.4.0's jars are not cached: no comparison with Kafka")
	}
	k := kafkaTargetFrom(t, kafkaHome, t.TempDir(), "share.coordinator.state.topic.replication.factor=1", "share.coordinator.state.topic.min.isr=1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	if err := k.Start(ctx); err != nil {
		t.Fatalf("start kafka: %v", err)
	}
	return k.Addr()
}

func shareTopicIDString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// shareStateScript sends the same raw share-state requests to a broker and
// prints what came back, the topic id masked: FindCoordinator for good and
// bad share keys, reads of state that is not there, of a topic or
// partition that is not, Initialize, writes (also fenced and invalid
// ones), Read and ReadSummary at both versions, Delete.
func shareStateScript(t *testing.T, addr string) []string {
	t.Helper()
	cl := newClient(t, addr)
	createTopic(t, cl, "t", 2)
	s := dialShare(t, addr)
	id := s.topicID("t")
	tid := shareTopicIDString(id)
	key := "g:" + tid + ":1"
	var out []string
	say := func(format string, args ...any) {
		out = append(out, strings.ReplaceAll(fmt.Sprintf(format, args...), tid, "<topic>"))
	}
	c := s.findShareCoordinator(key)
	say("find %s: %v node %d", c.Key, kerr.ErrorForCode(c.ErrorCode), c.NodeID)
	for _, tc := range []struct {
		key     string
		version int16
	}{{key, 5}, {"g", 6}, {"g:notauuid:1", 6}, {":" + tid + ":1", 6}, {"g:" + tid + ":x", 6}} {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.CoordinatorType, r.CoordinatorKey, r.CoordinatorKeys = 2, tc.key, []string{tc.key}
		resp := s.do(r, tc.version).(*kmsg.FindCoordinatorResponse)
		if tc.version < 4 || len(resp.Coordinators) == 0 {
			say("find v%d %q: %v %q node %d", tc.version, tc.key, kerr.ErrorForCode(resp.ErrorCode), strOr(resp.ErrorMessage), resp.NodeID)
			continue
		}
		rc := resp.Coordinators[0]
		say("find v%d %q: %v %q node %d", tc.version, tc.key, kerr.ErrorForCode(rc.ErrorCode), strOr(rc.ErrorMessage), rc.NodeID)
	}
	read := func(what string, group string, id [16]byte, partition, epoch int32) {
		r := s.readState(group, id, partition, epoch)
		say("read %s: %v %q state epoch %d start %d batches %+v", what, kerr.ErrorForCode(r.ErrorCode), strOr(r.ErrorMessage), r.StateEpoch, r.StartOffset, r.StateBatches)
	}
	summary := func(what string, version int16) {
		r := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		r.GroupID = "g"
		r.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: id, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 1}}}}
		p := s.do(r, version).(*kmsg.ReadShareGroupStateSummaryResponse).Topics[0].Partitions[0]
		say("summary v%d %s: %v %q state epoch %d leader epoch %d start %d complete %d", version, what, kerr.ErrorForCode(p.ErrorCode), strOr(p.ErrorMessage),
			p.StateEpoch, p.LeaderEpoch, p.StartOffset, p.DeliveryCompleteCount)
	}
	write := func(what string, w kmsg.WriteShareGroupStateRequestTopicPartition) {
		r := s.writeState("g", id, w)
		say("write %s: %v %q", what, kerr.ErrorForCode(r.ErrorCode), strOr(r.ErrorMessage))
	}
	batch := func(first, last int64, state int8, count int16) kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch {
		return kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{FirstOffset: first, LastOffset: last, DeliveryState: state, DeliveryCount: count}
	}
	// Kafka answers NOT_COORDINATOR until its share coordinator has
	// loaded the partition the topic's creation elected it for.
	waitFor(t, "the share coordinator to serve", 60*time.Second, func() bool {
		return s.readState("g", id, 1, 0).ErrorCode != kerr.NotCoordinator.Code
	})
	read("uninitialized", "g", id, 1, 0)
	summary("uninitialized", 1)
	write("uninitialized", shareWrite(1, 0, 0, 0))
	read("unknown topic", "g", [16]byte{1, 2, 3}, 0, 0)
	r := s.initializeState("g", id, 1, 0, 0)
	say("initialize: %v %q", kerr.ErrorForCode(r.ErrorCode), strOr(r.ErrorMessage))
	r = s.initializeState("g", id, 7, 0, 0)
	say("initialize partition 7: %v %q", kerr.ErrorForCode(r.ErrorCode), strOr(r.ErrorMessage))
	r = s.initializeState("g", id, 1, -1, 0)
	say("initialize state epoch -1: %v %q", kerr.ErrorForCode(r.ErrorCode), strOr(r.ErrorMessage))
	write("first", shareWrite(1, 3, 0, 0, batch(0, 9, 2, 1), batch(10, 19, 1, 1)))
	write("second", shareWrite(1, 3, 10, 2, batch(10, 14, 2, 1), batch(15, 19, 0, 2)))
	write("leader epoch 2", shareWrite(1, 2, 10, 0))
	write("leader epoch -1", shareWrite(1, -1, 10, 0))
	read("at leader epoch 3", "g", id, 1, 3)
	read("at leader epoch 2", "g", id, 1, 2)
	read("at leader epoch 4", "g", id, 1, 4)
	summary("written", 1)
	summary("written", 0)
	empty := kmsg.NewPtrReadShareGroupStateRequest()
	empty.GroupID = "g"
	say("read no topics: %d topics", len(s.do(empty, 0).(*kmsg.ReadShareGroupStateResponse).Topics))
	d := s.deleteState("g", id, 1)
	say("delete: %v %q", kerr.ErrorForCode(d.ErrorCode), strOr(d.ErrorMessage))
	read("deleted", "g", id, 1, 4)
	summary("deleted", 1)
	return out
}

// TestShareGroupStateAsKafka44 runs shareStateScript against a Kafka 4.4.0
// control (one KRaft node, __share_group_state at replication factor 1)
// and Strata and compares every line.
func TestShareGroupStateAsKafka44(t *testing.T) {
	e2e(t)
	kafkaAddr := shareKafka44(t)
	p := startBroker(t, "")
	want, got := shareStateScript(t, kafkaAddr), shareStateScript(t, p.addr)
	if len(got) != len(want) {
		t.Fatalf("strata printed %d lines, kafka %d:\n%s\n---\n%s", len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\nstrata %s\nkafka  %s", i, got[i], want[i])
		}
	}
}

// TestShareCoordinatorConfigsE2E: server.properties' share.coordinator.*
// keys shape __share_group_state as Kafka's: its partitions
// (share.coordinator.state.topic.num.partitions), its segment.bytes and
// min.insync.replicas; a share key's coordinator partition follows the
// partition count, and state written there reads back.
func TestShareCoordinatorConfigsE2E(t *testing.T) {
	e2e(t)
	p := startBroker(t, "", "--override", "share.coordinator.state.topic.num.partitions=3",
		"--override", "share.coordinator.state.topic.segment.bytes=1048576",
		"--override", "share.coordinator.state.topic.min.isr=1",
		"--override", "share.coordinator.snapshot.update.records.per.snapshot=0")
	cl := newClient(t, p.addr)
	createTopic(t, cl, "t", 1)
	s := dialShare(t, p.addr)
	id := s.topicID("t")
	if c := s.findShareCoordinator("g:" + shareTopicIDString(id) + ":0"); c.ErrorCode != 0 {
		t.Fatalf("share coordinator: %+v", c)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("__share_group_state")}}
	if mt := s.do(md, 12).(*kmsg.MetadataResponse).Topics[0]; mt.ErrorCode != 0 || len(mt.Partitions) != 3 {
		t.Fatalf("__share_group_state: error %d, %d partitions; want 3", mt.ErrorCode, len(mt.Partitions))
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "__share_group_state"
	dc.Resources = append(dc.Resources, res)
	got := map[string]string{}
	for _, c := range s.do(dc, 4).(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
		if c.Value != nil && c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			got[c.Name] = *c.Value
		}
	}
	if got["segment.bytes"] != "1048576" || got["min.insync.replicas"] != "1" {
		t.Fatalf("__share_group_state's configs %v, want segment.bytes 1048576 and min.insync.replicas 1", got)
	}
}

// TestShareStateOfDeletedTopicE2E: deleting a topic removes its
// share-partitions' state from __share_group_state, as Kafka's share
// coordinator does on onTopicsDeleted: a ShareSnapshot tombstone of each,
// read back over TCP, and none for another topic's state, which a kill -9
// and restart keep.
func TestShareStateOfDeletedTopicE2E(t *testing.T) {
	e2e(t)
	p := startBroker(t, "")
	cl := newClient(t, p.addr)
	createTopic(t, cl, "gone", 1)
	createTopic(t, cl, "kept", 1)
	s := dialShare(t, p.addr)
	gone, kept := s.topicID("gone"), s.topicID("kept")
	s.findShareCoordinator("g:" + shareTopicIDString(gone) + ":0")
	for _, id := range [][16]byte{gone, kept} {
		if r := s.initializeState("g", id, 0, 1, 0); r.ErrorCode != 0 {
			t.Fatalf("initialize: %v %s", kerr.ErrorForCode(r.ErrorCode), strOr(r.ErrorMessage))
		}
	}
	if _, err := kadm.NewClient(cl).DeleteTopic(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}

	reader := newClient(t, p.addr, kgo.ConsumeTopics("__share_group_state"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tombstoned := map[[16]byte]bool{}
	for !tombstoned[gone] {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("no tombstone of the deleted topic's share state in __share_group_state: %v", fs.Errors())
		}
		fs.EachRecord(func(r *kgo.Record) {
			for _, id := range [][16]byte{gone, kept} {
				if r.Value == nil && bytes.Contains(r.Key, id[:]) {
					tombstoned[id] = true
				}
			}
		})
	}
	if tombstoned[kept] {
		t.Fatal("the kept topic's share state was tombstoned too")
	}

	p.kill()
	p = p.restart()
	s = dialShare(t, p.addr)
	if r := s.readState("g", kept, 0, 0); r.ErrorCode != 0 || r.StateEpoch != 1 {
		t.Fatalf("the kept topic's state after a restart: %v %s, state epoch %d", kerr.ErrorForCode(r.ErrorCode), strOr(r.ErrorMessage), r.StateEpoch)
	}
}
