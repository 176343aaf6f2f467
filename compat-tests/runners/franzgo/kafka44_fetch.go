package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/strata-io/strata/compat-tests/runners/rt"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceRound writes rt.FetchRecords records valued rt.FetchValue(round,
// p, i) to each of the first n partitions, uncompressed.
func (e *env) produceRound(round, n int) error {
	var rs []*kgo.Record
	for p := range n {
		for i := range rt.FetchRecords {
			rs = append(rs, &kgo.Record{Topic: e.a.Topic, Partition: int32(p), Value: []byte(rt.FetchValue(round, p, i))})
		}
	}
	pc := e.client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordDeliveryTimeout(60*time.Second))
	defer pc.Close()
	return pc.ProduceSync(e.ctx, rs...).FirstErr()
}

// fetchSessions: rt.FetchRecords records on each partition of a
// rt.Partitions-partition topic, then as many again on its first
// rt.FetchSecondRound partitions, read by one consumer of every partition
// (franz-go fetches in incremental sessions, KIP-227) that must see every
// record once, in offset order. Meanwhile rawSession checks an incremental
// session by hand at the leader of partition 0.
func (e *env) fetchSessions() rt.Result {
	cl, adm := e.admin()
	defer cl.Close()
	parts := int(rt.Partitions(e.a.Scenario))
	if err := e.ensureTopic(adm, int32(parts)); err != nil {
		return e.failf("%v", err)
	}
	if err := e.produceRound(0, parts); err != nil {
		return e.failf("produce round 0: %v", err)
	}
	var mu sync.Mutex
	got := map[int32][]string{}
	offsets := map[int32][]int64{}
	c := e.client(kgo.ConsumeTopics(e.a.Topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(2*time.Second))
	defer c.Close()
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			c.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				mu.Lock()
				got[r.Partition] = append(got[r.Partition], string(r.Value))
				offsets[r.Partition] = append(offsets[r.Partition], r.Offset)
				mu.Unlock()
			})
		}
	}()
	stop := func() { cancel(); <-done }
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, v := range got {
			n += len(v)
		}
		return n
	}
	if err := waitUntil(e.ctx, 60*time.Second, func() (bool, error) { return count() >= parts*rt.FetchRecords, nil }); err != nil {
		stop()
		return e.failf("consumed %d of the %d records of round 0: %v", count(), parts*rt.FetchRecords, err)
	}
	session, err := e.rawSession(cl, adm, parts)
	if err != nil {
		stop()
		return e.failf("by hand: %v", err)
	}
	total := (parts + rt.FetchSecondRound) * rt.FetchRecords
	err = waitUntil(e.ctx, 60*time.Second, func() (bool, error) { return count() >= total, nil })
	if err == nil {
		time.Sleep(time.Second) // a surplus record would arrive within the consumer's next fetch
	}
	stop()
	if err != nil {
		return e.failf("consumed %d of %d records: %v", count(), total, err)
	}
	for p := range int32(parts) {
		var want []string
		var wantOff []int64
		for r := range 2 {
			if r == 1 && int(p) >= rt.FetchSecondRound {
				break
			}
			for i := range rt.FetchRecords {
				want = append(want, rt.FetchValue(r, int(p), i))
				wantOff = append(wantOff, int64(len(wantOff)))
			}
		}
		if !slices.Equal(got[p], want) || !slices.Equal(offsets[p], wantOff) {
			return e.failf("partition %d: consumed %v at offsets %v, want %v at %v", p, got[p], offsets[p], want, wantOff)
		}
	}
	return rt.Pass(fmt.Sprintf("%d records from %d partitions, each once in offset order; by hand: %s", total, parts, session), nil)
}

// rawSession checks KIP-227 at the leader of partition 0, for the partitions
// it leads: a full fetch from offset 0 opens a session (its id not 0) and
// returns their rt.FetchRecords records each; an incremental fetch (epoch 1)
// moving every partition to its end returns no record; after round 1 is
// produced, an incremental fetch naming no partition (epoch 2) returns
// exactly the partitions that got new records, with them. Epoch -1 closes it.
func (e *env) rawSession(cl *kgo.Client, adm *kadm.Client, parts int) (string, error) {
	md, err := adm.Metadata(e.ctx, e.a.Topic)
	if err != nil {
		return "", fmt.Errorf("Metadata: %w", err)
	}
	td := md.Topics[e.a.Topic]
	leader := td.Partitions[0].Leader
	var mine []int32
	for p := range int32(parts) {
		if td.Partitions[p].Leader == leader {
			mine = append(mine, p)
		}
	}
	br := cl.Broker(int(leader))
	fetch := func(id, epoch int32, at map[int32]int64) (*kmsg.FetchResponse, map[int32]int, error) {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 1000, 1, 50<<20
		req.SessionID, req.SessionEpoch = id, epoch
		if len(at) > 0 {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = e.a.Topic, td.ID
			for _, p := range mine {
				if off, ok := at[p]; ok {
					fp := kmsg.NewFetchRequestTopicPartition()
					fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = p, off, 1<<20, -1, -1
					t.Partitions = append(t.Partitions, fp)
				}
			}
			req.Topics = append(req.Topics, t)
		}
		ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, br)
		if err != nil {
			return nil, nil, fmt.Errorf("Fetch (session %d, epoch %d): %w", id, epoch, err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, nil, fmt.Errorf("Fetch (session %d, epoch %d): %w", id, epoch, err)
		}
		n := map[int32]int{}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return nil, nil, fmt.Errorf("Fetch (session %d, epoch %d) partition %d: %w", id, epoch, p.Partition, err)
				}
				n[p.Partition] += batchRecords(p.RecordBatches)
			}
		}
		return resp, n, nil
	}
	from := map[int32]int64{}
	for _, p := range mine {
		from[p] = 0
	}
	full, n, err := fetch(0, 0, from)
	if err != nil {
		return "", err
	}
	if full.SessionID == 0 {
		return "", fmt.Errorf("the full fetch of %d partitions opened no session (session id 0)", len(mine))
	}
	for _, p := range mine {
		if n[p] != rt.FetchRecords {
			return "", fmt.Errorf("full fetch: partition %d returned %d records, want %d", p, n[p], rt.FetchRecords)
		}
		from[p] = int64(rt.FetchRecords)
	}
	id := full.SessionID
	inc, n, err := fetch(id, 1, from)
	if err != nil {
		return "", err
	}
	if inc.SessionID != id || len(n) > 0 && sum(n) > 0 {
		return "", fmt.Errorf("incremental fetch (epoch 1) at the ends: session %d, %d records, want session %d and none", inc.SessionID, sum(n), id)
	}
	emptyParts := len(n)
	if err := e.produceRound(1, rt.FetchSecondRound); err != nil {
		return "", fmt.Errorf("produce round 1: %w", err)
	}
	inc2, n, err := fetch(id, 2, nil)
	if err != nil {
		return "", err
	}
	want := map[int32]int{}
	for _, p := range mine {
		if int(p) < rt.FetchSecondRound {
			want[p] = rt.FetchRecords
		}
	}
	if inc2.SessionID != id || fmt.Sprint(n) != fmt.Sprint(want) {
		return "", fmt.Errorf("incremental fetch (epoch 2) after round 1: session %d, records per partition %v, want session %d and %v", inc2.SessionID, n, id, want)
	}
	if _, _, err := fetch(id, -1, nil); err != nil {
		return "", fmt.Errorf("closing the session: %w", err)
	}
	return fmt.Sprintf("node %d opened session %d for %d partitions; epoch 1 at the ends answered %d partitions, no record; epoch 2 naming none returned the %d partitions with round 1's records",
		leader, id, len(mine), emptyParts, len(want)), nil
}

// batchRecords counts the records of the v2 record batches in b (a
// partial batch at the end excluded).
func batchRecords(b []byte) int {
	n := 0
	for len(b) >= 12 {
		size := 12 + int(binary.BigEndian.Uint32(b[8:12]))
		if size > len(b) {
			break
		}
		var rb kmsg.RecordBatch
		if rb.ReadFrom(b[:size]) == nil {
			n += int(rb.NumRecords)
		}
		b = b[size:]
	}
	return n
}

func sum(m map[int32]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// groupConfigs sets the group's consumer.session.timeout.ms with
// IncrementalAlterConfigs (GROUP), then DescribeConfigs must show it with
// source GROUP_CONFIG and ListConfigResources must list the group.
func (e *env) groupConfigs() rt.Result {
	cl, _ := e.admin()
	defer cl.Close()
	g := e.a.Group()
	name, value := rt.GroupConfigName, rt.GroupConfigValue
	if err := e.setGroupConfig(cl, g, name, value); err != nil {
		return e.failf("%v", err)
	}
	// Each request goes to any broker, which may not have applied it yet.
	var groups []string
	err := waitUntil(e.ctx, 30*time.Second, func() (bool, error) {
		l := kmsg.NewPtrListConfigResourcesRequest()
		l.ResourceTypes = []int8{int8(kmsg.ConfigResourceTypeGroupConfig)}
		lresp, err := l.RequestWith(e.ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(lresp.ErrorCode)
		}
		if err != nil {
			return false, fmt.Errorf("ListConfigResources: %w", err)
		}
		groups = groups[:0]
		for _, r := range lresp.ConfigResources {
			groups = append(groups, r.Name)
		}
		return slices.Contains(groups, g), nil
	})
	if err != nil {
		return e.failf("ListConfigResources (GROUP) lists %v, not %s: %v", groups, g, err)
	}
	return rt.Pass(fmt.Sprintf("GROUP %s: %s=%s, source GROUP_CONFIG; ListConfigResources lists it among %d group(s)", g, name, value, len(groups)), nil)
}

// setGroupConfig sets group g's config name to value with
// IncrementalAlterConfigs and waits until DescribeConfigs shows it with
// source GROUP_CONFIG.
func (e *env) setGroupConfig(cl *kgo.Client, g, name, value string) error {
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, g
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value, c.Op = name, kmsg.StringPtr(value), kmsg.IncrementalAlterConfigOpSet
	res.Configs = append(res.Configs, c)
	alter.Resources = append(alter.Resources, res)
	aresp, err := alter.RequestWith(e.ctx, cl)
	if err != nil {
		return fmt.Errorf("IncrementalAlterConfigs: %w", err)
	}
	if err := kerr.ErrorForCode(aresp.Resources[0].ErrorCode); err != nil {
		return fmt.Errorf("IncrementalAlterConfigs GROUP %s: %w %v", g, err, aresp.Resources[0].ErrorMessage)
	}
	var got, source string
	// Kafka's brokers apply it from the metadata log, on a loaded machine's
	// cluster tens of seconds after the controller.
	err = waitUntil(e.ctx, 30*time.Second, func() (bool, error) {
		d := kmsg.NewPtrDescribeConfigsRequest()
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, g, []string{name}
		d.Resources = append(d.Resources, r)
		resp, err := d.RequestWith(e.ctx, cl)
		if err != nil {
			return false, fmt.Errorf("DescribeConfigs: %w", err)
		}
		if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
			return false, fmt.Errorf("DescribeConfigs GROUP %s: %w", g, err)
		}
		got, source = "(absent)", ""
		for _, ce := range resp.Resources[0].Configs {
			if ce.Name == name && ce.Value != nil {
				got, source = *ce.Value, rt.SourceName(int8(ce.Source))
			}
		}
		return got == value && source == "GROUP_CONFIG", nil
	})
	if err != nil {
		return fmt.Errorf("DescribeConfigs GROUP %s shows %s=%s (source %s), want %s (GROUP_CONFIG): %w", g, name, got, source, value, err)
	}
	return nil
}
