package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// txnV2 drives one transactional id with raw requests at the versions
// of transactions v2, over TCP to a real broker.
type txnV2 struct {
	t     *testing.T
	b     *Broker
	cl    *kgo.Client
	id    string
	pid   int64
	epoch int16
}

// pinned is a client sending key at version at most (kgo picks the
// highest version both sides know).
func pinned(t *testing.T, b *Broker, key, version int16) *kgo.Client {
	v := kversion.Stable()
	v.SetMaxKeyVersion(key, version)
	return newClient(t, b, kgo.MaxVersions(v))
}

func (x *txnV2) produce(version int16, topic string, seq int32, values ...string) int16 {
	x.t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = version, -1, 10000, &x.id
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = producerBatch(x.pid, x.epoch, seq, true, values...)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(x.t), pinned(x.t, x.b, req.Key(), version))
	if err != nil {
		x.t.Fatalf("produce v%d: %v", version, err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func (x *txnV2) end(version int16, epoch int16, commit bool) *kmsg.EndTxnResponse {
	x.t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = version, x.id, x.pid, epoch, commit
	resp, err := req.RequestWith(testCtx(x.t), pinned(x.t, x.b, req.Key(), version))
	if err != nil {
		x.t.Fatalf("end txn v%d: %v", version, err)
	}
	return resp
}

// TestTxnV2RawFlow: a client at the versions of KIP-890 part 2 produces
// transactionally at Produce v12 with no AddPartitionsToTxn (the
// partition joins implicitly), and each EndTxn v5 bumps the epoch and
// answers it; a retried EndTxn at the previous epoch gets the same answer.
// read_committed sees the committed transaction only. A v11 produce (the
// v1 flow) of a partition not added is refused; AddPartitionsToTxn v4
// verify_only answers TRANSACTION_ABORTABLE for it; TxnOffsetCommit v5
// adds the group's partition itself, and the offsets commit with the
// transaction.
func TestTxnV2RawFlow(t *testing.T) {
	b := startBroker(t, nil)
	createTopicN(t, b, "v2", 1)
	cl := newClient(t, b)
	x := &txnV2{t: t, b: b, cl: cl, id: "tv2"}
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = &x.id, 60000
	ir, err := init.RequestWith(testCtx(t), cl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("init producer id: %v %v", err, kerr.ErrorForCode(ir.ErrorCode))
	}
	x.pid, x.epoch = ir.ProducerID, ir.ProducerEpoch
	e0 := x.epoch

	if code := x.produce(12, "v2", 0, "c0", "c1"); code != 0 {
		t.Fatalf("produce v12 without AddPartitionsToTxn: %v", kerr.ErrorForCode(code))
	}
	r := x.end(5, e0, true)
	if r.ErrorCode != 0 || r.ProducerID != x.pid || r.ProducerEpoch != e0+1 {
		t.Fatalf("EndTxn v5 commit: %v pid %d epoch %d, want pid %d epoch %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerID, r.ProducerEpoch, x.pid, e0+1)
	}
	if r := x.end(5, e0, true); r.ErrorCode != 0 || r.ProducerEpoch != e0+1 {
		t.Fatalf("retried EndTxn v5: %v epoch %d, want epoch %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch, e0+1)
	}
	x.epoch = e0 + 1
	if code := x.produce(12, "v2", 0, "a0"); code != 0 {
		t.Fatalf("produce v12 at the bumped epoch: %v", kerr.ErrorForCode(code))
	}
	if r := x.end(5, x.epoch, false); r.ErrorCode != 0 || r.ProducerEpoch != e0+2 {
		t.Fatalf("EndTxn v5 abort: %v epoch %d, want %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch, e0+2)
	}
	x.epoch = e0 + 2
	if got := consumeValues(t, b, "v2", kgo.ReadCommitted(), 2, 300e6); got[0] != "c0" || got[1] != "c1" {
		t.Fatalf("read_committed: %v", got)
	}

	if code := x.produce(11, "v2", 0, "old"); code != kerr.InvalidTxnState.Code {
		t.Fatalf("produce v11 of a partition not added: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.Version = 4
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = x.id, x.pid, x.epoch, true
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = "v2", []int32{0}
	tx.Topics = append(tx.Topics, tt)
	ap.Transactions = append(ap.Transactions, tx)
	apr, err := ap.RequestWith(testCtx(t), pinned(t, b, ap.Key(), 4))
	if err != nil || apr.ErrorCode != 0 || len(apr.Transactions) != 1 {
		t.Fatalf("AddPartitionsToTxn v4: %v %+v", err, apr)
	}
	if code := apr.Transactions[0].Topics[0].Partitions[0].ErrorCode; code != kerr.TransactionAbortable.Code {
		t.Fatalf("verify_only of a partition not in the transaction: %v, want TRANSACTION_ABORTABLE", kerr.ErrorForCode(code))
	}

	// TxnOffsetCommit v5: no AddOffsetsToTxn.
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g2"
	if _, err := fc.RequestWith(testCtx(t), cl); err != nil {
		t.Fatal(err)
	}
	oc := kmsg.NewPtrTxnOffsetCommitRequest()
	oc.Version, oc.TransactionalID, oc.Group, oc.ProducerID, oc.ProducerEpoch, oc.Generation = 5, x.id, "g2", x.pid, x.epoch, -1
	ot := kmsg.NewTxnOffsetCommitRequestTopic()
	ot.Topic = "v2"
	op := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	op.Partition, op.Offset = 0, 2
	ot.Partitions = append(ot.Partitions, op)
	oc.Topics = append(oc.Topics, ot)
	ocr, err := oc.RequestWith(testCtx(t), pinned(t, b, oc.Key(), 5))
	if err != nil || ocr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("TxnOffsetCommit v5: %v %+v", err, ocr)
	}
	if r := x.end(5, x.epoch, true); r.ErrorCode != 0 || r.ProducerEpoch != e0+3 {
		t.Fatalf("EndTxn v5 commit of the offsets: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch)
	}
	offs, err := newAdmin(t, b).FetchOffsets(testCtx(t), "g2")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("v2", 0); !ok || o.At != 2 {
		t.Fatalf("committed offset of g2: %+v %v, want 2", o, ok)
	}
}

// TestProduceV13TopicIDs: Produce v13 names the topic by id and the answer
// echoes it; an id no topic has is UNKNOWN_TOPIC_ID.
func TestProduceV13TopicIDs(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	id := createTopic(t, adm, "ids", 1).ID
	cl := newClient(t, b)
	send := func(id [16]byte) kmsg.ProduceResponseTopic {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 13, -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = testBatchValues("x")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testCtx(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0]
	}
	if st := send(id); st.TopicID != id || st.Partitions[0].ErrorCode != 0 || st.Partitions[0].BaseOffset != 0 {
		t.Fatalf("produce v13 by id: %+v", st)
	}
	if st := send([16]byte{1, 2, 3}); st.Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("produce v13 to an unknown id: %v, want UNKNOWN_TOPIC_ID", kerr.ErrorForCode(st.Partitions[0].ErrorCode))
	}
	if got := consumeValues(t, b, "ids", kgo.ReadUncommitted(), 1, 200e6); got[0] != "x" {
		t.Fatalf("consumed %v", got)
	}
}

// TestTxnV2FranzGo: with transaction.version 2 finalized, franz-go runs
// its transactions in the v2 flow: after three committed transactions
// the coordinator has bumped the epoch three times, and read_committed
// sees every record.
func TestTxnV2FranzGo(t *testing.T) {
	b := startBroker(t, nil)
	createTopicN(t, b, "fg", 1)
	cl := newClient(t, b, kgo.TransactionalID("fg-txn"), kgo.DefaultProduceTopic("fg"))
	for i := range 3 {
		produceTxn(t, cl, "fg", fmt.Sprintf("t%d-", i), 2, true)
	}
	ds, err := newAdmin(t, b).DescribeTransactions(testCtx(t), "fg-txn")
	if err != nil {
		t.Fatal(err)
	}
	d, ok := ds["fg-txn"]
	if !ok || d.Err != nil || d.ProducerEpoch != 3 {
		t.Fatalf("described fg-txn: %+v %v, want epoch 3 after three v2 transactions", d, ok)
	}
	consumeValues(t, b, "fg", kgo.ReadCommitted(), 6, 200e6)
}
