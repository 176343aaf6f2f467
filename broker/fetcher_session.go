package broker

// A follower's fetch session with its leader, as the client side of
// KIP-227 in Kafka's replica fetcher (FetchSessionHandler): the first
// fetch is full (epoch 0) and opens a session; each next one is
// incremental, naming only the partitions new to the session or whose
// fetch offset, log start offset, leader epoch, last fetched epoch or
// max bytes changed, and forgetting those no longer fetched (a partition
// set aside after an error is forgotten, and named again when it is due).
// A leader that lost the session (it restarted: FETCH_SESSION_ID_NOT_FOUND)
// gets a full fetch that opens a new one; any other top-level error, or a
// failed round trip, a full fetch naming the old session, which closes it
// (FetchMetadata.nextCloseExisting). A leader that declines sessions
// (session id 0) gets full fetches.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// replicaPartKey is a partition of the session, by topic id.
type replicaPartKey struct {
	topic     [16]byte
	partition int32
}

// replicaFetchSession is one fetcher's session; only its goroutine uses it.
type replicaFetchSession struct {
	id, epoch int32
	// sent is the session's partitions as the leader has them: what the
	// last answered fetch asked; pending what the fetch in flight asks.
	sent, pending map[replicaPartKey]kmsg.FetchRequestTopicPartition
}

// request is the fetch to send for full, which names every partition due.
func (s *replicaFetchSession) request(full *kmsg.FetchRequest) *kmsg.FetchRequest {
	s.pending = map[replicaPartKey]kmsg.FetchRequestTopicPartition{}
	for _, rt := range full.Topics {
		for _, rp := range rt.Partitions {
			s.pending[replicaPartKey{rt.TopicID, rp.Partition}] = rp
		}
	}
	wire := *full
	wire.SessionID, wire.SessionEpoch = s.id, s.epoch
	if s.epoch == initialFetchEpoch {
		return &wire
	}
	wire.Topics = nil
	for _, rt := range full.Topics {
		var changed []kmsg.FetchRequestTopicPartition
		for _, rp := range rt.Partitions {
			if old, ok := s.sent[replicaPartKey{rt.TopicID, rp.Partition}]; !ok || !sameFetchParams(&old, &rp) {
				changed = append(changed, rp)
			}
		}
		if len(changed) > 0 {
			t := rt
			t.Partitions = changed
			wire.Topics = append(wire.Topics, t)
		}
	}
	forgotten := map[[16]byte]int{}
	for k := range s.sent {
		if _, ok := s.pending[k]; ok {
			continue
		}
		i, ok := forgotten[k.topic]
		if !ok {
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.TopicID = k.topic
			wire.ForgottenTopics = append(wire.ForgottenTopics, ft)
			i = len(wire.ForgottenTopics) - 1
			forgotten[k.topic] = i
		}
		wire.ForgottenTopics[i].Partitions = append(wire.ForgottenTopics[i].Partitions, k.partition)
	}
	return &wire
}

// sameFetchParams reports whether a and b ask the same of a partition.
func sameFetchParams(a, b *kmsg.FetchRequestTopicPartition) bool {
	return a.FetchOffset == b.FetchOffset && a.LogStartOffset == b.LogStartOffset && a.PartitionMaxBytes == b.PartitionMaxBytes &&
		a.CurrentLeaderEpoch == b.CurrentLeaderEpoch && a.LastFetchedEpoch == b.LastFetchedEpoch
}

// answered takes the leader's answer in; false when it failed at the top
// level, and the next fetch is full.
func (s *replicaFetchSession) answered(resp *kmsg.FetchResponse) bool {
	switch {
	case resp.ErrorCode == kerr.FetchSessionIDNotFound.Code:
		s.id, s.epoch, s.sent = 0, initialFetchEpoch, nil
		return false
	case resp.ErrorCode != 0:
		s.lost()
		return false
	case s.epoch != initialFetchEpoch:
		s.epoch, s.sent = nextFetchEpoch(s.epoch), s.pending
	case resp.SessionID == 0:
		s.id, s.sent = 0, nil
	default:
		s.id, s.epoch, s.sent = resp.SessionID, nextFetchEpoch(initialFetchEpoch), s.pending
	}
	return true
}

// lost makes the next fetch full, closing the session the leader may
// still hold.
func (s *replicaFetchSession) lost() {
	s.epoch, s.sent = initialFetchEpoch, nil
}

// sessionError reports whether code is one a full fetch clears at once.
func sessionError(code int16) bool {
	return code == kerr.FetchSessionIDNotFound.Code || code == kerr.InvalidFetchSessionEpoch.Code ||
		code == kerr.FetchSessionTopicIDError.Code
}
