package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareMember is one member's share session on a connection.
type shareMember struct {
	s      *shareConn
	group  string
	member string
	epoch  int32
	topic  [16]byte
	// recordLimit and maxRecords, when set, are v2's ShareAcquireMode 1
	// and MaxRecords (else batch-optimized and 500).
	recordLimit bool
	maxRecords  int32
}

func (m *shareMember) fetch(maxWait int32, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchResponse {
	m.s.t.Helper()
	r := kmsg.NewPtrShareFetchRequest()
	r.GroupID, r.MemberID, r.ShareSessionEpoch = kmsg.StringPtr(m.group), kmsg.StringPtr(m.member), m.epoch
	r.MaxWaitMillis, r.MinBytes, r.MaxBytes, r.MaxRecords, r.BatchSize = maxWait, 1, 1<<20, 500, 500
	if m.maxRecords > 0 {
		r.MaxRecords = m.maxRecords
	}
	if m.recordLimit {
		r.ShareAcquireMode = 1
	}
	p := kmsg.NewShareFetchRequestTopicPartition()
	p.AcknowledgementBatches = acks
	r.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: m.topic, Partitions: []kmsg.ShareFetchRequestTopicPartition{p}}}
	resp := m.s.do(r, 2).(*kmsg.ShareFetchResponse)
	if resp.ErrorCode == 0 && m.epoch >= 0 {
		m.epoch++
	}
	return resp
}

func (m *shareMember) ack(epoch int32, batches ...kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareAcknowledgeResponse {
	m.s.t.Helper()
	r := kmsg.NewPtrShareAcknowledgeRequest()
	r.GroupID, r.MemberID, r.ShareSessionEpoch = kmsg.StringPtr(m.group), kmsg.StringPtr(m.member), epoch
	p := kmsg.NewShareAcknowledgeRequestTopicPartition()
	p.AcknowledgementBatches = batches
	r.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: m.topic, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{p}}}
	resp := m.s.do(r, 2).(*kmsg.ShareAcknowledgeResponse)
	if resp.ErrorCode == 0 && epoch > 0 {
		m.epoch++
	}
	return resp
}

func shareAck(first, last int64, t int8) kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch {
	return kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{FirstOffset: first, LastOffset: last, AcknowledgeTypes: []int8{t}}
}

// acquired is a ShareFetch answer's acquired records, "first-last@count".
func acquired(t *testing.T, resp *kmsg.ShareFetchResponse) []string {
	t.Helper()
	if resp.ErrorCode != 0 {
		t.Fatalf("share fetch: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	var out []string
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 || rp.AcknowledgeErrorCode != 0 {
				t.Fatalf("share fetch partition %d: %v, acknowledgement %v", rp.Partition, kerr.ErrorForCode(rp.ErrorCode), kerr.ErrorForCode(rp.AcknowledgeErrorCode))
			}
			// Kafka 4.4's PartitionData.Records is not nullable: its
			// clients fail the whole response on a null one.
			if rp.Records == nil {
				t.Fatalf("share fetch partition %d: Records null", rp.Partition)
			}
			if len(rp.AcquiredRecords) > 0 && len(rp.Records) == 0 {
				t.Fatalf("acquired %v with no records", rp.AcquiredRecords)
			}
			for _, a := range rp.AcquiredRecords {
				out = append(out, fmt.Sprintf("%d-%d@%d", a.FirstOffset, a.LastOffset, a.DeliveryCount))
			}
		}
	}
	return out
}

func wantAcquired(t *testing.T, what string, resp *kmsg.ShareFetchResponse, want ...string) {
	t.Helper()
	if got := acquired(t, resp); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: acquired %v, want %v", what, got, want)
	}
}

// TestShareFetchAcknowledgeE2E drives ShareFetch and ShareAcknowledge
// over TCP: records acquired,
// accepted, released (delivered again, delivery count 2), rejected
// (never again), archived at the delivery count limit, redelivered when
// the lock expires, when the share session closes and when its connection
// ends; the session's epochs; and after kill -9 and a restart
// ReadShareGroupState shows what was persisted and the share-partition
// delivers only what was not accepted.
func TestShareFetchAcknowledgeE2E(t *testing.T) {
	e2e(t)
	p := startBroker(t, "")
	cl := newClient(t, p.addr)
	createTopic(t, cl, "sq", 1)
	for i := range 5 {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "sq", Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	s := dialShare(t, p.addr)
	av := s.do(kmsg.NewPtrApiVersionsRequest(), 3).(*kmsg.ApiVersionsResponse)
	advertised := map[int16][2]int16{}
	for _, k := range av.ApiKeys {
		advertised[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	if advertised[78] != [2]int16{1, 2} || advertised[79] != [2]int16{1, 2} {
		t.Fatalf("ShareFetch %v, ShareAcknowledge %v advertised, want 1-2", advertised[78], advertised[79])
	}
	id := s.topicID("sq")
	s.findShareCoordinator("g:" + shareTopicIDString(id) + ":0")
	waitFor(t, "the share-partition initialized", 60*time.Second, func() bool {
		return s.initializeState("g", id, 0, 0, 0).ErrorCode == 0
	})

	ac := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ac.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "g",
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.record.lock.duration.ms", Value: kmsg.StringPtr("15000")}}}}
	if r := s.do(ac, 1).(*kmsg.IncrementalAlterConfigsResponse); r.Resources[0].ErrorCode != 0 {
		t.Fatalf("share.record.lock.duration.ms=15000: %v", kerr.ErrorForCode(r.Resources[0].ErrorCode))
	}

	m1 := &shareMember{s: s, group: "g", member: "member-one", topic: id}
	first := time.Now()
	wantAcquired(t, "first fetch", m1.fetch(5000), "0-4@1")
	if r := m1.ack(1, shareAck(0, 0, 1), shareAck(1, 1, 2), shareAck(2, 2, 3)); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("accept 0, release 1, reject 2: %+v", r)
	}
	if r := m1.ack(7, shareAck(3, 3, 1)); r.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("acknowledge at epoch 7: %v, want INVALID_SHARE_SESSION_EPOCH", kerr.ErrorForCode(r.ErrorCode))
	}
	for count := 2; count <= 5; count++ {
		wantAcquired(t, fmt.Sprintf("released record, delivery %d", count), m1.fetch(5000), fmt.Sprintf("1-1@%d", count))
		if r := m1.ack(m1.epoch, shareAck(1, 1, 2)); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("release 1: %+v", r)
		}
	}
	wantAcquired(t, "record 1 released at the delivery count limit", m1.fetch(300))
	m1.epoch = -1
	if r := m1.fetch(0); r.ErrorCode != 0 {
		t.Fatalf("closing the session: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := m1.ack(3, shareAck(3, 3, 1)); r.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("acknowledge after the session closed: %v, want SHARE_SESSION_NOT_FOUND", kerr.ErrorForCode(r.ErrorCode))
	}

	m2 := &shareMember{s: s, group: "g", member: "member-two", topic: id}
	wantAcquired(t, "after member one's session closed", m2.fetch(5000), "3-4@2")
	if d := time.Since(first); d >= 15*time.Second {
		t.Fatalf("member one's session closed %v after its fetch, past its 15s lock: the release is not what redelivered", d)
	}
	start := time.Now()
	m3 := &shareMember{s: dialShare(t, p.addr), group: "g", member: "member-three", topic: id}
	var got []string
	waitFor(t, "member two's lock to expire", 40*time.Second, func() bool {
		got = acquired(t, m3.fetch(5000))
		return len(got) > 0
	})
	if fmt.Sprint(got) != "[3-4@3]" || time.Since(start) < 14*time.Second {
		t.Fatalf("after member two's lock expired: acquired %v after %v, want [3-4@3] after its 15s lock", got, time.Since(start))
	}
	if r := m3.fetch(0); r.AcquisitionLockTimeoutMillis != 15000 {
		t.Fatalf("AcquisitionLockTimeoutMillis %d, want the group's 15000", r.AcquisitionLockTimeoutMillis)
	}
	m3.s.c.Close()
	m4 := &shareMember{s: s, group: "g", member: "member-four", topic: id}
	// Member one's close left the group without a session: its
	// share-partition was loaded again, 3 and 4 as the two state batches
	// written, and each is delivered alone from its third delivery on
	// (SharePartition's throttling).
	wantAcquired(t, "after member three's connection closed", m4.fetch(1500), "3-3@4")
	wantAcquired(t, "the next throttled record", m4.fetch(1500), "4-4@4")
	r := m4.fetch(200, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: 3, LastOffset: 4, AcknowledgeTypes: []int8{1}})
	if pr := r.Topics[0].Partitions[0]; r.ErrorCode != 0 || pr.AcknowledgeErrorCode != 0 || len(pr.AcquiredRecords) != 0 {
		t.Fatalf("accepting 3-4 in a fetch: %+v", r)
	}

	for i := 5; i < 7; i++ {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "sq", Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	wantAcquired(t, "new records", m4.fetch(5000), "5-6@1")
	if r := m4.ack(m4.epoch, shareAck(5, 5, 1)); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("accept 5: %+v", r)
	}
	// The write of an acknowledgement carries the start offset it was
	// made at; the start offset moves past 5 with the next write.
	persisted := func(st kmsg.ReadShareGroupStateResponseTopicPartition) bool {
		return st.ErrorCode == 0 && st.StartOffset == 5 && len(st.StateBatches) == 1 &&
			st.StateBatches[0].FirstOffset == 5 && st.StateBatches[0].LastOffset == 5 && st.StateBatches[0].DeliveryState == 2
	}
	if st := s.readState("g", id, 0, 0); !persisted(st) {
		t.Fatalf("state before the restart: %+v, want start offset 5, 5 acknowledged", st)
	}

	p.kill()
	p = p.restart()
	s = dialShare(t, p.addr)
	if st := s.readState("g", id, 0, 0); !persisted(st) {
		t.Fatalf("state after kill -9 and restart: %+v, want start offset 5, 5 acknowledged", st)
	}
	m5 := &shareMember{s: s, group: "g", member: "member-five", topic: id}
	var resp *kmsg.ShareFetchResponse
	waitFor(t, "a share fetch after the restart", 60*time.Second, func() bool {
		m5.epoch = 0
		resp = m5.fetch(5000)
		return resp.ErrorCode != 0 || len(resp.Topics) == 0 || resp.Topics[0].Partitions[0].ErrorCode != kerr.CoordinatorNotAvailable.Code
	})
	wantAcquired(t, "after the restart", resp, "6-6@1")
}

// TestShareFetchSessionsE2E: the share session errors of ShareFetch and
// ShareAcknowledge, group.share.max.share.sessions, and
// share.isolation.level=read_committed, under which an aborted
// transaction's records are never acquired.
func TestShareFetchSessionsE2E(t *testing.T) {
	e2e(t)
	p := startBroker(t, "", "--override", "group.share.max.share.sessions=2")
	cl := newClient(t, p.addr)
	createTopic(t, cl, "rc", 1)
	tx := newClient(t, p.addr, kgo.TransactionalID("share-tx"))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(context.Background(), &kgo.Record{Topic: "rc", Value: []byte("aborted")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := tx.EndTransaction(context.Background(), kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "rc", Value: []byte("committed")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	s := dialShare(t, p.addr)
	id := s.topicID("rc")
	s.findShareCoordinator("rc-group:" + shareTopicIDString(id) + ":0")
	waitFor(t, "the share-partition initialized", 60*time.Second, func() bool {
		return s.initializeState("rc-group", id, 0, 0, 0).ErrorCode == 0
	})
	ac := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ac.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "rc-group",
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.isolation.level", Value: kmsg.StringPtr("read_committed")}}}}
	if r := s.do(ac, 1).(*kmsg.IncrementalAlterConfigsResponse); r.Resources[0].ErrorCode != 0 {
		t.Fatalf("share.isolation.level=read_committed: %v", kerr.ErrorForCode(r.Resources[0].ErrorCode))
	}

	a := &shareMember{s: s, group: "rc-group", member: "a", topic: id}
	if r := a.fetch(0, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("acknowledgements opening a session: %v, want INVALID_REQUEST", kerr.ErrorForCode(r.ErrorCode))
	}
	// The aborted record is offset 0, its marker 1, the committed record 2.
	wantAcquired(t, "read_committed", a.fetch(5000), "1-2@1")
	if r := a.ack(0, shareAck(1, 2, 1)); r.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("acknowledge at epoch 0: %v, want INVALID_SHARE_SESSION_EPOCH", kerr.ErrorForCode(r.ErrorCode))
	}
	a.epoch = 9
	if r := a.fetch(0); r.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("fetch at epoch 9 of a session at 2: %v, want INVALID_SHARE_SESSION_EPOCH", kerr.ErrorForCode(r.ErrorCode))
	}
	nobody := &shareMember{s: s, group: "rc-group", member: "nobody", topic: id, epoch: 1}
	if r := nobody.fetch(0); r.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("fetch at epoch 1 with no session: %v, want SHARE_SESSION_NOT_FOUND", kerr.ErrorForCode(r.ErrorCode))
	}
	for _, m := range []string{"", "0123456789012345678901234567890123456"} {
		bad := &shareMember{s: s, group: "rc-group", member: m, topic: id}
		if r := bad.fetch(0); r.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("member id %q: %v %q, want INVALID_REQUEST", m, kerr.ErrorForCode(r.ErrorCode), strOr(r.ErrorMessage))
		}
	}
	b := &shareMember{s: s, group: "rc-group", member: "b", topic: id}
	if r := b.fetch(0); r.ErrorCode != 0 {
		t.Fatalf("a second session: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	c := &shareMember{s: s, group: "rc-group", member: "c", topic: id}
	if r := c.fetch(0); r.ErrorCode != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("a third session past group.share.max.share.sessions=2: %v, want SHARE_SESSION_LIMIT_REACHED", kerr.ErrorForCode(r.ErrorCode))
	}
}

// shareFetchScript is one sequence of ShareFetch and ShareAcknowledge
// against addr, each answer printed: acquisition, accept, release and
// reject, record_limit, RENEW, the throttled delivery of a record delivered
// often, the session's epochs, its close releasing what the member held,
// and the state the share coordinator keeps.
func shareFetchScript(t *testing.T, addr string) []string {
	cl := newClient(t, addr)
	createTopic(t, cl, "sf", 1)
	for i := range 5 {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "sf", Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	s := dialShare(t, addr)
	id := s.topicID("sf")
	s.findShareCoordinator("sg:" + shareTopicIDString(id) + ":0")
	waitFor(t, "the share-partition initialized", 60*time.Second, func() bool {
		return s.initializeState("sg", id, 0, 0, 0).ErrorCode == 0
	})
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	code := func(c int16) string {
		if c == 0 {
			return "ok"
		}
		return kerr.ErrorForCode(c).Error()
	}
	fetched := func(what string, m *shareMember) {
		var got []string
		waitFor(t, what, 30*time.Second, func() bool {
			r := m.fetch(2000)
			if r.ErrorCode != 0 {
				t.Fatalf("%s: %v", what, kerr.ErrorForCode(r.ErrorCode))
			}
			got = acquired(t, r)
			return len(got) > 0
		})
		say("%s: acquired %v", what, got)
	}
	acked := func(what string, r *kmsg.ShareAcknowledgeResponse) {
		parts := "none"
		if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			parts = code(r.Topics[0].Partitions[0].ErrorCode)
		}
		say("%s: %s %q, partition %s", what, code(r.ErrorCode), strOr(r.ErrorMessage), parts)
	}
	m1 := &shareMember{s: s, group: "sg", member: "member-one", topic: id}
	fetched("first fetch", m1)
	acked("accept 0, release 1, reject 2", m1.ack(m1.epoch, shareAck(0, 0, 1), shareAck(1, 1, 2), shareAck(2, 2, 3)))
	acked("acknowledge at a wrong epoch", m1.ack(m1.epoch+5, shareAck(3, 3, 1)))
	acked("acknowledge at epoch 0", m1.ack(0, shareAck(3, 3, 1)))
	acked("accept 0 again", m1.ack(m1.epoch, shareAck(0, 0, 1)))
	fetched("released record", m1)
	m1.epoch = -1
	r := m1.fetch(0)
	say("close: %s, %d topics, lock %dms", code(r.ErrorCode), len(r.Topics), r.AcquisitionLockTimeoutMillis)
	acked("acknowledge after the close", m1.ack(5, shareAck(3, 3, 1)))
	m2 := &shareMember{s: s, group: "sg", member: "member-two", topic: id}
	fetched("after member one's session closed", m2)
	bad := &shareMember{s: s, group: "sg", member: "", topic: id}
	r = bad.fetch(0)
	say("empty member id: %s %q", code(r.ErrorCode), strOr(r.ErrorMessage))
	acked("accept 1, 3 and 4", m2.ack(m2.epoch, shareAck(1, 1, 1), shareAck(3, 4, 1)))
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "sf", Value: []byte("5")}, &kgo.Record{Topic: "sf", Value: []byte("6")},
		&kgo.Record{Topic: "sf", Value: []byte("7")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	m2.recordLimit, m2.maxRecords = true, 1
	fetched("record_limit, 1 record of a batch of 3", m2)
	m2.recordLimit = false
	fetched("batch_optimized, 1 record", m2)
	renew := kmsg.NewPtrShareAcknowledgeRequest()
	renew.GroupID, renew.MemberID, renew.ShareSessionEpoch, renew.IsRenewAck = kmsg.StringPtr("sg"), kmsg.StringPtr("member-two"), m2.epoch, true
	renew.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: id, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{shareAck(5, 7, 4)}}}}}
	rr := s.do(renew, 2).(*kmsg.ShareAcknowledgeResponse)
	if rr.ErrorCode == 0 {
		m2.epoch++
	}
	acked("renew 5-7", rr)
	acked("reject 5, accept 6-7", m2.ack(m2.epoch, shareAck(5, 5, 3), shareAck(6, 7, 1)))
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "sf", Value: []byte("8")}, &kgo.Record{Topic: "sf", Value: []byte("9")},
		&kgo.Record{Topic: "sf", Value: []byte("10")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	m2.maxRecords = 0
	for range 3 {
		fetched("a batch of 3", m2)
		acked("release 8-10", m2.ack(m2.epoch, shareAck(8, 10, 2)))
	}
	fetched("a batch delivered 3 times", m2)
	fetched("the rest of it", m2)
	st := s.readState("sg", id, 0, 0)
	var batches []string
	for _, b := range st.StateBatches {
		batches = append(batches, fmt.Sprintf("%d-%d state %d count %d", b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount))
	}
	say("state: %s start %d, batches %v", code(st.ErrorCode), st.StartOffset, batches)
	return out
}

// TestShareFetchAsKafka44 runs shareFetchScript against a Kafka 4.4.0
// control and Strata and compares every line.
func TestShareFetchAsKafka44(t *testing.T) {
	e2e(t)
	kafkaAddr := shareKafka44(t)
	p := startBroker(t, "")
	want, got := shareFetchScript(t, kafkaAddr), shareFetchScript(t, p.addr)
	if len(got) != len(want) {
		t.Fatalf("strata printed %d lines, kafka %d:\n%s\n---\n%s", len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\nstrata %s\nkafka  %s", i, got[i], want[i])
		}
	}
}
