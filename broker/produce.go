package broker

// Produce.
//
// A partition's records must hold exactly one batch, as Kafka's
// ProduceRequest.validateRecords requires from v3 on: a second whole batch
// is INVALID_RECORD and nothing is written. The batch is appended under
// that partition's lock; storage validates it (magic, length, CRC32C,
// record count, codec, size) and applies idempotent-producer sequence
// checks. The partition's replica (package replica) appends it: acks=1
// answers once the batch is in the leader's log (and fsynced, when
// log.flush.interval.messages asks for it), acks=-1 once every in-sync
// replica holds it (on a single node, at once); acks=0 gets no response.
// In a cluster acks=-1 with fewer in-sync replicas than the topic's
// min.insync.replicas is NOT_ENOUGH_REPLICAS and nothing is written; as
// Kafka 4 (KIP-966) the high watermark does not move while the ISR is
// that small, so an acks=-1 write caught by the ISR shrinking times out
// (NOT_ENOUGH_REPLICAS_AFTER_APPEND only when the ISR shrank between its
// replication and its answer). A transactional batch (attributes bit 4) needs the
// request's transactional id and is checked with the transaction
// coordinator before it is appended, as Kafka's KIP-890 part 1 verification
// does (txnverify.go): the producer's transaction must be Ongoing and hold the
// partition, else INVALID_TXN_STATE (INVALID_PRODUCER_EPOCH for a stale
// epoch); from v12 (KIP-890 part 2) the partition is added to the
// transaction instead (txnverify.go). v13 names topics by id: an id no
// topic has is UNKNOWN_TOPIC_ID, before authorization, as Kafka. From v10 a partition answered NOT_LEADER_OR_FOLLOWER names its
// current leader and epoch, and the response that leader's endpoint
// (KIP-951, leaderhints.go). On a compacted topic (cleanup.policy contains compact) a batch
// holding records without a key is refused whole with INVALID_RECORD, as
// Kafka's LogValidator: Kafka's message, and from v8 each keyless record
// in record_errors (its index in the batch and "Compacted topic cannot
// accept message without key in topic partition <tp>"), so clients can
// tell which records failed; only batches bound to compacted topics are
// decoded. Other errors cover all of a partition's records, with
// ErrorMessage saying why. A refused partition answers base offset -1, as
// Kafka. Internal topics (__consumer_offsets, __transaction_state) are
// written only by the coordinators: producing to them is
// INVALID_TOPIC_EXCEPTION, as Kafka answers clients other than its admin.
// Client quotas (producer_byte_rate, request_percentage) are checked on
// the answered request by the connection (conn_quota.go).

import (
	"errors"
	"fmt"
	"time"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/storage"
)

// registerProduce serves Produce; its versions are here and nowhere else.
func registerProduce(r *registry) { r.add(kmsg.Produce, 3, 13, handleProduce) }

func handleProduce(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.ProduceRequest)
	resp := kmsg.NewPtrProduceResponse()
	// As Kafka: transactional records need WRITE on the transactional id
	// (else every partition fails), each topic WRITE on it, before acks
	// and records are looked at.
	var requestErr error
	if producesTransactionally(r) && (r.TransactionID == nil || !rc.authorize(OpWrite, ResourceTransactionalID, *r.TransactionID)) {
		requestErr = kerr.TransactionalIDAuthorizationFailed
	}
	badAcks := r.Acks != 0 && r.Acks != 1 && r.Acks != -1
	hints := leaderHints{b: b}
	img := b.meta.Image()
	for _, rt := range r.Topics {
		st := kmsg.NewProduceResponseTopic()
		name := rt.Topic
		if req.Version >= 13 {
			name = ""
			if t := img.Topics.ByID(rt.TopicID); t != nil {
				name = t.Name
			}
		}
		st.Topic, st.TopicID = name, rt.TopicID
		topic := b.logs.Topic(name)
		topicErr := requestErr
		switch {
		case topicErr != nil:
		case name == "" && req.Version >= 13:
			topicErr = kerr.UnknownTopicID
		case !rc.authorize(OpWrite, ResourceTopic, name):
			topicErr = kerr.TopicAuthorizationFailed
		case badAcks:
			topicErr = kerr.InvalidRequiredAcks
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			err := topicErr
			if err == nil {
				err = checkOneBatch(req.Version, rp.Records)
			}
			if err == nil {
				err = b.verifyTxnBatch(req.Version, r.TransactionID, name, rp.Partition, rp.Records)
			}
			if err == nil {
				err = b.appendPartition(topic, rp.Partition, rp.Records, r.Acks, r.TimeoutMillis, &sp)
			}
			sp.ErrorCode = b.errorCode(kmsg.Produce, err)
			b.metrics.PartitionError(req.Key, sp.ErrorCode)
			if sp.ErrorCode == kerr.NotLeaderForPartition.Code && req.Version >= 10 {
				hints.add(&sp.CurrentLeader.LeaderID, &sp.CurrentLeader.LeaderEpoch, name, rp.Partition)
			}
			if err != nil {
				sp.BaseOffset = -1
			}
			if err != nil && req.Version >= 8 {
				sp.ErrorMessage = errorMessage(err)
				sp.ErrorRecords = recordErrors(err)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if r.Acks == 0 {
		return nil, nil
	}
	for _, reg := range hints.brokers() {
		pb := kmsg.NewProduceResponseBroker()
		pb.NodeID = reg.ID
		pb.Host, pb.Port, _ = b.endpoint(reg)
		if reg.Rack != "" {
			pb.Rack = kmsg.StringPtr(reg.Rack)
		}
		resp.Brokers = append(resp.Brokers, pb)
	}
	return resp, nil
}

func (b *services) appendPartition(topic *storage.Topic, partition int32, records []byte, acks int16, timeoutMs int32, sp *kmsg.ProduceResponseTopicPartition) error {
	p := lookupPartition(topic, partition)
	if p == nil {
		return missingPartition(topic, partition)
	}
	if topic.Internal {
		return kerr.InvalidTopicException // only the coordinators write internal topics
	}
	rp, err := b.replicas.Partition(p)
	if err != nil {
		return err
	}
	res, err := rp.AppendAsLeader(records, acks, time.Duration(timeoutMs)*time.Millisecond)
	if err != nil {
		return err
	}
	if !res.Duplicate {
		if st := b.metrics.Topic(topic.Name); st != nil {
			st.Produced(int64(len(records)), batchRecordCount(records))
		}
	}
	sp.BaseOffset = res.BaseOffset
	sp.LogAppendTime = res.LogAppendTime
	sp.LogStartOffset = res.LogStartOffset
	return nil
}

// recordErrors lists the records a batch was refused for, for Produce
// v8+'s record_errors; nil when the error is not about single records.
func recordErrors(err error) []kmsg.ProduceResponseTopicPartitionErrorRecord {
	var rve *storage.RecordValidationError
	if !errors.As(err, &rve) {
		return nil
	}
	out := make([]kmsg.ProduceResponseTopicPartitionErrorRecord, 0, len(rve.Records))
	for _, r := range rve.Records {
		er := kmsg.NewProduceResponseTopicPartitionErrorRecord()
		er.RelativeOffset, er.ErrorMessage = r.BatchIndex, &r.Message
		out = append(out, er)
	}
	return out
}

// checkOneBatch refuses a second whole batch after the first, with Kafka's
// message. What is wrong with a batch itself (too short, torn, an empty
// payload) is storage's validation to report, with its own codes.
func checkOneBatch(version int16, records []byte) error {
	_, rest, ok := batch.Next(records)
	if !ok {
		return nil
	}
	if _, _, ok := batch.Next(rest); ok {
		return fmt.Errorf("Produce requests with version %d are only allowed to contain exactly one record batch per partition: %w", version, kerr.InvalidRecord)
	}
	return nil
}
