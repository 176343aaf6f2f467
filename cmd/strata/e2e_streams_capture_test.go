package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCaptureKafkaStreamsSegment writes the segment of coordinator's
// TestStreamsGroupRecordsMatchKafka (coordinator/testdata/kafka-4.4.0-streams-groups.log):
// Kafka 4.4.0 with one __consumer_offsets partition and
// streams.num.standby.replicas=1 on both groups; two word counts join
// wc-cap, share its tasks and one leaves; kmsg-driven members of sg-raw
// (one static, with a rack, client tags and a user endpoint) join, take
// tasks, rebalance and leave (the static one with epoch -2, then -1); the
// word count closes and both groups are deleted. It runs only with
// STRATA_CAPTURE_STREAMS_SEGMENT set to the file to write.
func TestCaptureKafkaStreamsSegment(t *testing.T) {
	out := os.Getenv("STRATA_CAPTURE_STREAMS_SEGMENT")
	if out == "" {
		t.Skip("set STRATA_CAPTURE_STREAMS_SEGMENT to capture the segment")
	}
	home := installedKafkaTools(t)
	streams := streamsHome(t)
	dir := t.TempDir()
	k := kafkaTargetFrom(t, home, dir, "offsets.topic.num.partitions=1")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := k.Start(ctx); err != nil {
		t.Fatalf("start kafka: %v", err)
	}
	addr := k.Addr()
	cl := newClient(t, addr)
	createTopic(t, cl, "wc-in", 3)
	createTopic(t, cl, "wc-out", 1)
	createTopic(t, cl, "raw-src", 2)
	for i := range 30 {
		r := &kgo.Record{Topic: "wc-in", Partition: int32(i % 3), Value: []byte("alpha beta gamma")}
		if err := cl.ProduceSync(timeoutCtx(t, 30*time.Second), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	corr := int32(0)
	send := func(req kmsg.Request, v int16) kmsg.Response {
		corr++
		return rawRequest(t, c, req, v, corr)
	}
	cfg := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, g := range []string{"wc-cap", "sg-raw"} {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, g
		rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		rc.Name, rc.Value = "streams.num.standby.replicas", kmsg.StringPtr("1")
		rr.Configs = append(rr.Configs, rc)
		cfg.Resources = append(cfg.Resources, rr)
	}
	t.Logf("configs: %+v", send(cfg, 1))

	a := startWordCount(t, streams, addr, "wc-in", "wc-out", "wc-cap")
	waitFor(t, "A stable", 2*time.Minute, func() bool {
		d := describeStreamsGroup(t, addr, "wc-cap")
		return d.ErrorCode == 0 && d.State == "Stable" && len(d.Members) == 1 && countTasks(d.Members[0].Assignment.ActiveTasks) == 6
	})
	b := startWordCount(t, streams, addr, "wc-in", "wc-out", "wc-cap")
	waitFor(t, "A and B stable", 2*time.Minute, func() bool {
		d := describeStreamsGroup(t, addr, "wc-cap")
		return d.ErrorCode == 0 && d.State == "Stable" && len(d.Members) == 2 &&
			countTasks(d.Members[0].Assignment.ActiveTasks) > 0 && countTasks(d.Members[1].Assignment.ActiveTasks) > 0
	})
	_ = b.cmd.Process.Signal(os.Interrupt)
	_ = b.cmd.Wait()
	waitFor(t, "A alone", 2*time.Minute, func() bool {
		d := describeStreamsGroup(t, addr, "wc-cap")
		return d.State == "Stable" && len(d.Members) == 1
	})

	// A static member with a rack, client tags and an endpoint, and a
	// dynamic one.
	topo := &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 0, Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		{SubtopologyID: "0", SourceTopics: []string{"raw-src"}},
	}}
	hb := func(member string, epoch int32, owned []kmsg.TaskIDs, standby []kmsg.TaskIDs) *kmsg.StreamsGroupHeartbeatResponse {
		r := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		r.Group, r.MemberID, r.MemberEpoch = "sg-raw", member, epoch
		if epoch == -2 {
			r.InstanceID = kmsg.StringPtr("inst-a")
		}
		if epoch == 0 {
			r.RebalanceTimeoutMillis, r.ProcessID = 30000, kmsg.StringPtr("process-"+member)
			r.Topology = topo
			if member == "m1" {
				r.InstanceID, r.RackID = kmsg.StringPtr("inst-a"), kmsg.StringPtr("r1")
				r.UserEndpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: "h1", Port: 8080}
				r.ClientTags = []kmsg.StreamsGroupHeartbeatRequestClientTag{{Key: "zone", Value: "z1"}}
			}
		}
		if owned != nil {
			r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = owned, standby, []kmsg.TaskIDs{}
		}
		resp := send(r, 1).(*kmsg.StreamsGroupHeartbeatResponse)
		t.Logf("hb %s %d: err=%d epoch=%d active=%v standby=%v status=%v", member, epoch, resp.ErrorCode, resp.MemberEpoch, resp.ActiveTasks, resp.StandbyTasks, resp.Status)
		return resp
	}
	none := []kmsg.TaskIDs{}
	type mstate struct {
		epoch         int32
		active, stdby []kmsg.TaskIDs
	}
	st := map[string]*mstate{}
	beat := func(id string) {
		m := st[id]
		r := hb(id, m.epoch, m.active, m.stdby)
		if r.ErrorCode != 0 {
			t.Fatalf("%s: error %d", id, r.ErrorCode)
		}
		m.epoch = r.MemberEpoch
		if r.ActiveTasks != nil {
			m.active, m.stdby = r.ActiveTasks, r.StandbyTasks
		}
	}
	st["m1"] = &mstate{0, none, none}
	beat("m1")
	waitFor(t, "m1 tasks", time.Minute, func() bool { beat("m1"); return len(st["m1"].active) > 0 })
	beat("m1")
	st["m2"] = &mstate{0, none, none}
	beat("m2")
	waitFor(t, "m2 tasks", time.Minute, func() bool {
		beat("m1")
		beat("m2")
		return len(st["m2"].active) > 0
	})
	beat("m1")
	beat("m2")
	hb("m2", -1, nil, nil)
	hb("m1", -2, nil, nil)
	lv := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	lv.Group, lv.MemberID, lv.MemberEpoch, lv.InstanceID = "sg-raw", "m1", -1, kmsg.StringPtr("inst-a")
	t.Logf("leave: %+v", send(lv, 1))

	_ = a.cmd.Process.Signal(os.Interrupt)
	_ = a.cmd.Wait()
	waitFor(t, "wc-cap empty", 2*time.Minute, func() bool { return describeStreamsGroup(t, addr, "wc-cap").State == "Empty" })
	dres, err := kadm.NewClient(cl).DeleteGroups(timeoutCtx(t, 30*time.Second), "wc-cap", "sg-raw")
	if err != nil || dres.Error() != nil {
		t.Fatalf("delete groups: %v %v", err, dres.Error())
	}
	data, err := os.ReadFile(filepath.Join(dir, "data", "__consumer_offsets-0", "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d bytes", len(data))
}
