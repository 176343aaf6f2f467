package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareStateDenyCases are the deny-all cases of the share-state requests
// and of FindCoordinator for a share key: CLUSTER_AUTHORIZATION_FAILED
// for every share-partition, with Kafka's message, and nothing written.
func shareStateDenyCases(topicID [16]byte) []authzCase {
	refused := func(t *testing.T, what string, code int16, msg *string) {
		t.Helper()
		if code != kerr.ClusterAuthorizationFailed.Code || msg == nil || *msg != "Cluster authorization failed." {
			t.Errorf("%s: %v %q, want CLUSTER_AUTHORIZATION_FAILED %q", what, kerr.ErrorForCode(code), derefOr(msg), "Cluster authorization failed.")
		}
	}
	return []authzCase{
		{"FindCoordinator share v6", func() kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorType, r.CoordinatorKeys = 2, []string{"g:AAAAAAAAAAAAAAAAAAAAAQ:0"}
			return r
		}, 6, func(t *testing.T, resp kmsg.Response) {
			cs := resp.(*kmsg.FindCoordinatorResponse).Coordinators
			if len(cs) != 1 || cs[0].NodeID != -1 {
				t.Fatalf("coordinators %+v, want the key refused", cs)
			}
			refused(t, "coordinator", cs[0].ErrorCode, cs[0].ErrorMessage)
		}},
		{"InitializeShareGroupState", func() kmsg.Request {
			r := kmsg.NewPtrInitializeShareGroupStateRequest()
			r.GroupID = "g"
			r.Topics = []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: topicID, Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: 0}}}}
			return r
		}, 0, func(t *testing.T, resp kmsg.Response) {
			p := resp.(*kmsg.InitializeShareGroupStateResponse).Topics[0].Partitions[0]
			refused(t, "partition", p.ErrorCode, p.ErrorMessage)
		}},
		{"ReadShareGroupState", func() kmsg.Request {
			r := kmsg.NewPtrReadShareGroupStateRequest()
			r.GroupID = "g"
			r.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: topicID, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0}}}}
			return r
		}, 0, func(t *testing.T, resp kmsg.Response) {
			p := resp.(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0]
			refused(t, "partition", p.ErrorCode, p.ErrorMessage)
		}},
		{"WriteShareGroupState", func() kmsg.Request {
			r := kmsg.NewPtrWriteShareGroupStateRequest()
			r.GroupID = "g"
			p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
			r.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: topicID, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{p}}}
			return r
		}, 1, func(t *testing.T, resp kmsg.Response) {
			p := resp.(*kmsg.WriteShareGroupStateResponse).Topics[0].Partitions[0]
			refused(t, "partition", p.ErrorCode, p.ErrorMessage)
		}},
		{"DeleteShareGroupState", func() kmsg.Request {
			r := kmsg.NewPtrDeleteShareGroupStateRequest()
			r.GroupID = "g"
			r.Topics = []kmsg.DeleteShareGroupStateRequestTopic{{TopicID: topicID, Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: 0}}}}
			return r
		}, 0, func(t *testing.T, resp kmsg.Response) {
			p := resp.(*kmsg.DeleteShareGroupStateResponse).Topics[0].Partitions[0]
			refused(t, "partition", p.ErrorCode, p.ErrorMessage)
		}},
		{"ReadShareGroupStateSummary", func() kmsg.Request {
			r := kmsg.NewPtrReadShareGroupStateSummaryRequest()
			r.GroupID = "g"
			r.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: topicID, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0}}}}
			return r
		}, 1, func(t *testing.T, resp kmsg.Response) {
			p := resp.(*kmsg.ReadShareGroupStateSummaryResponse).Topics[0].Partitions[0]
			refused(t, "partition", p.ErrorCode, p.ErrorMessage)
		}},
	}
}
