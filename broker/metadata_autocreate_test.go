package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/coordinator"
)

// TestMetadataAutoCreationAnswersAsKafka checks Kafka 4.1's answers over
// the wire: at every Metadata version the request that auto-creates a topic
// gets UNKNOWN_TOPIC_OR_PARTITION and no partitions, and the next request
// describes it; a Produce to a topic that does not exist is
// UNKNOWN_TOPIC_OR_PARTITION and creates nothing.
func TestMetadataAutoCreationAnswersAsKafka(t *testing.T) {
	b := startBroker(t, nil)
	metadata := func(topic string, version int16, allow bool) kmsg.MetadataResponseTopic {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = allow
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		return adminRoundTrip[*kmsg.MetadataResponse](t, b, req, version).Topics[0]
	}
	for _, v := range []int16{0, 1, 3, 4, 7, 9, 10, 12} {
		topic := fmt.Sprintf("auto-v%d", v)
		if mt := metadata(topic, v, true); mt.ErrorCode != kerr.UnknownTopicOrPartition.Code || len(mt.Partitions) != 0 {
			t.Errorf("v%d creating %s: error %v, %d partitions; want UNKNOWN_TOPIC_OR_PARTITION and none", v, topic, kerr.ErrorForCode(mt.ErrorCode), len(mt.Partitions))
		}
		if mt := metadata(topic, v, true); mt.ErrorCode != 0 || len(mt.Partitions) != 1 || mt.Partitions[0].Leader != testNodeID {
			t.Errorf("v%d after creating %s: error %v, partitions %+v", v, topic, kerr.ErrorForCode(mt.ErrorCode), mt.Partitions)
		}
	}
	if mt := metadata("not-asked", 12, false); mt.ErrorCode != kerr.UnknownTopicOrPartition.Code || b.logs.Topic("not-asked") != nil {
		t.Errorf("v12 without allow_auto_topic_creation: error %v, created %v", kerr.ErrorForCode(mt.ErrorCode), b.logs.Topic("not-asked") != nil)
	}
	if mt := metadata(coordinator.TxnStateTopic, 12, false); mt.ErrorCode != kerr.UnknownTopicOrPartition.Code || !mt.IsInternal {
		t.Errorf("v12 %s before it exists: error %v, internal %v; want UNKNOWN_TOPIC_OR_PARTITION, internal", coordinator.TxnStateTopic, kerr.ErrorForCode(mt.ErrorCode), mt.IsInternal)
	}
	if mt := metadata("bad name!", 12, true); mt.ErrorCode != kerr.InvalidTopicException.Code {
		t.Errorf("invalid name: error %v, want INVALID_TOPIC_EXCEPTION", kerr.ErrorForCode(mt.ErrorCode))
	}
	o := produceRaw(t, b, "produced-to", 0, testBatch(t, 1), 1)
	checkProduceError(t, o.body, 9, "produce to a topic that does not exist", kerr.UnknownTopicOrPartition)
	if b.logs.Topic("produced-to") != nil {
		t.Error("produce created its topic; Kafka creates topics only on Metadata")
	}
}
