package broker

// WriteTxnMarkers.
//
// A transaction coordinator's request to the leader of a transaction's
// partitions: write each marker as a control batch, acks=all, and answer
// per partition, as Kafka's KafkaApis.handleWriteTxnMarkersRequest. A
// partition this node does not hold is UNKNOWN_TOPIC_OR_PARTITION, one it
// only follows NOT_LEADER_OR_FOLLOWER; a marker on __consumer_offsets also
// completes the producer's pending transactional offsets there. Like
// Kafka it is served on the broker's listener to whoever may ALTER or
// CLUSTER_ACTION the cluster (with no authorizer, anyone). Kafka 4.4
// serves v1-2: v2 (KIP-1228) says the transaction version of each marker,
// and one of version 2 must bump the producer's epoch (storage's
// Log.AppendMarker).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/coordinator"
)

// registerWriteTxnMarkers serves WriteTxnMarkers; its versions are here
// and nowhere else.
func registerWriteTxnMarkers(r *registry) { r.add(kmsg.WriteTxnMarkers, 1, 2, handleWriteTxnMarkers) }

func handleWriteTxnMarkers(rc *reqCtx) (kmsg.Response, error) {
	b, r := rc.svc, rc.req.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := kmsg.NewPtrWriteTxnMarkersResponse()
	// Kafka asks ALTER first, without logging a denial, then CLUSTER_ACTION.
	refused := !rc.authorizeCluster(OpAlter) && !rc.authorizeCluster(OpClusterAction)

	// Kafka's response is a map by producer id: markers of one producer
	// share its entry.
	byPID := map[int64]int{}
	type slot struct{ marker, topic, partition int }
	var writes []coordinator.TxnMarker
	var slots []slot
	for _, m := range r.Markers {
		mi, ok := byPID[m.ProducerID]
		if !ok {
			mi = len(resp.Markers)
			byPID[m.ProducerID] = mi
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = m.ProducerID
			resp.Markers = append(resp.Markers, rm)
		}
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			st := b.logs.Topic(t.Topic)
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				switch {
				case refused:
					rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				case st == nil || p < 0 || p >= st.PartitionCount():
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				default:
					writes = append(writes, coordinator.TxnMarker{Topic: t.Topic, Partition: p, ProducerID: m.ProducerID,
						ProducerEpoch: m.ProducerEpoch, Commit: m.Committed, CoordinatorEpoch: m.CoordinatorEpoch,
						TransactionVersion: m.TransactionVersion})
					slots = append(slots, slot{mi, len(resp.Markers[mi].Topics), len(rt.Partitions)})
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Markers[mi].Topics = append(resp.Markers[mi].Topics, rt)
		}
	}
	if len(writes) == 0 {
		return resp, nil
	}
	for i, err := range b.markers.WriteMarkers(context.Background(), writes) {
		s := slots[i]
		resp.Markers[s.marker].Topics[s.topic].Partitions[s.partition].ErrorCode = b.errorCode(kmsg.WriteTxnMarkers, err)
	}
	return resp, nil
}
