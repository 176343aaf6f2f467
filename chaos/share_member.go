package chaos

// A share group member (KIP-932) driven request by request with kmsg
// rather than kgo.ShareGroup, because the check needs to know exactly
// which acknowledgements the broker confirmed: franz-go's ShareAckCallback
// reports an outcome per partition and acknowledge, not per record, and
// does not say which offsets a result covers. The member heartbeats
// (ShareGroupHeartbeat) for its assignment, fetches every assigned
// partition with ShareFetch (session epoch 0 opens its share session, each
// answered request moves it on by one) and acknowledges what it acquired
// with a separate ShareAcknowledge, so a partition answered with error
// code 0 confirms exactly the offsets that request carried. Any failed
// request (a dropped connection, a session error) starts a new session.

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Acknowledge types (ShareAcknowledge's AcknowledgeTypes).
const (
	shareAccept  int8 = 1
	shareRelease int8 = 2
)

// shareDelivery is one acquired record: its position and delivery count.
type shareDelivery struct {
	Pos   Pos
	Count int16
}

// shareMember is one member of a share group reading one topic.
type shareMember struct {
	cl     *kgo.Client
	group  string
	topic  string
	id     string
	notify func(string) // an event worth a log line (an error answer)

	mu       sync.Mutex
	topicID  [16]byte
	assigned []int32
	epoch    int32 // member epoch
	session  int32 // next share session epoch
}

func newShareMember(addr, group, topic string, notify func(string)) (*shareMember, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err != nil {
		return nil, err
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	return &shareMember{cl: cl, group: group, topic: topic, id: hex.EncodeToString(id[:]), notify: notify}, nil
}

func (m *shareMember) close() { m.cl.Close() }

// heartbeat keeps the member in the group until ctx ends, joining again
// (member epoch 0) after any error answer.
func (m *shareMember) heartbeat(ctx context.Context) {
	for ctx.Err() == nil {
		m.mu.Lock()
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
		if m.epoch == 0 {
			req.SubscribedTopicNames = []string{m.topic}
		}
		m.mu.Unlock()
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		resp, err := req.RequestWith(rctx, m.cl)
		cancel()
		m.mu.Lock()
		switch {
		case err != nil:
		case resp.ErrorCode != 0:
			m.epoch, m.assigned = 0, nil
			m.notify(fmt.Sprintf("heartbeat: %v", kerr.ErrorForCode(resp.ErrorCode)))
		default:
			m.epoch = resp.MemberEpoch
			if a := resp.Assignment; a != nil {
				m.assigned = nil
				for _, tp := range a.TopicPartitions {
					m.topicID = tp.TopicID
					m.assigned = append(m.assigned, tp.Partitions...)
				}
				m.notify(fmt.Sprintf("assigned %v at member epoch %d", m.assigned, m.epoch))
			}
		}
		m.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// fetch sends one ShareFetch for every assigned partition and returns what
// it acquired; nothing (and no error) when nothing is assigned yet.
func (m *shareMember) fetch(ctx context.Context) ([]shareDelivery, error) {
	m.mu.Lock()
	parts, topicID, session := append([]int32(nil), m.assigned...), m.topicID, m.session
	m.mu.Unlock()
	if len(parts) == 0 {
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
		return nil, nil
	}
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(m.group), kmsg.StringPtr(m.id), session
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 500, 1, 1<<20, 500, 500
	t := kmsg.NewShareFetchRequestTopic()
	t.TopicID = topicID
	for _, p := range parts {
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = p, 1<<20
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = []kmsg.ShareFetchRequestTopic{t}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, m.cl)
	if err == nil && resp.ErrorCode != 0 {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		m.restartSession()
		return nil, fmt.Errorf("share fetch: %w", err)
	}
	m.advanceSession(session)
	var got []shareDelivery
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				m.notify(fmt.Sprintf("share fetch partition %d: %v", rp.Partition, kerr.ErrorForCode(rp.ErrorCode)))
				continue
			}
			for _, a := range rp.AcquiredRecords {
				for o := a.FirstOffset; o <= a.LastOffset; o++ {
					got = append(got, shareDelivery{Pos{rp.Partition, o}, a.DeliveryCount})
				}
			}
		}
	}
	return got, nil
}

// acknowledge sends acks (a type per position) in one ShareAcknowledge and
// returns the positions whose partition the broker answered with error
// code 0: those it confirmed. A transport or top-level error confirms
// nothing.
func (m *shareMember) acknowledge(ctx context.Context, acks map[Pos]int8) (map[Pos]int8, error) {
	if len(acks) == 0 {
		return nil, nil
	}
	m.mu.Lock()
	topicID, session := m.topicID, m.session
	m.mu.Unlock()
	byPart := map[int32][]Pos{}
	for p := range acks {
		byPart[p.Partition] = append(byPart[p.Partition], p)
	}
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(m.group), kmsg.StringPtr(m.id), session
	t := kmsg.NewShareAcknowledgeRequestTopic()
	t.TopicID = topicID
	for part, ps := range byPart {
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		rp.Partition = part
		slices.SortFunc(ps, func(a, b Pos) int { return cmp.Compare(a.Offset, b.Offset) })
		for _, p := range ps {
			n := len(rp.AcknowledgementBatches)
			if n > 0 && rp.AcknowledgementBatches[n-1].LastOffset == p.Offset-1 {
				b := &rp.AcknowledgementBatches[n-1]
				b.LastOffset = p.Offset
				b.AcknowledgeTypes = append(b.AcknowledgeTypes, acks[p])
				continue
			}
			b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
			b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = p.Offset, p.Offset, []int8{acks[p]}
			rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
		}
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = []kmsg.ShareAcknowledgeRequestTopic{t}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, m.cl)
	if err == nil && resp.ErrorCode != 0 {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		m.restartSession()
		return nil, fmt.Errorf("share acknowledge: %w", err)
	}
	m.advanceSession(session)
	confirmed := map[Pos]int8{}
	var failed error
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				failed = errors.Join(failed, fmt.Errorf("partition %d: %w", rp.Partition, kerr.ErrorForCode(rp.ErrorCode)))
				continue
			}
			for _, p := range byPart[rp.Partition] {
				confirmed[p] = acks[p]
			}
		}
	}
	return confirmed, failed
}

// restartSession makes the next request open a new share session (epoch
// 0), as after any failed request the broker's epoch is not known.
func (m *shareMember) restartSession() {
	m.mu.Lock()
	m.session = 0
	m.mu.Unlock()
}

// advanceSession moves the session epoch on after an answered request
// sent with epoch sent.
func (m *shareMember) advanceSession(sent int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.session == sent {
		m.session = sent + 1
		if m.session < 0 {
			m.session = 1
		}
	}
}

// leave ends the member's share session (epoch -1) and leaves the group
// (member epoch -1), best effort.
func (m *shareMember) leave(ctx context.Context) {
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch = m.group, m.id, -1
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, _ = hb.RequestWith(rctx, m.cl)
}
