// Package coordinator holds the broker-side state machines that sit above the
// partition logs: the producer id allocator (InitProducerId), the group
// coordinator (Groups: classic consumer groups, KIP-848 consumer groups with
// server-side assignment (consumer.go), and committed offsets, kept as
// Kafka-format records in the compacted __consumer_offsets and replayed on
// start) and the transaction coordinator.
//
// The transaction coordinator (KIP-98) is one state machine per partition of
// __transaction_state (txnPartition, txn_sm*.go): it takes a request, a
// replayed record or the time (tick) and returns effects, the record to
// append to __transaction_state, the markers to write, the answer, and owns
// no goroutine, lock or clock. Txns (txn.go) is its driver: it holds the
// locks, the clock (TxnConfig.Clock), the ticker, the one funnel appending
// to __transaction_state (appendState) and the MarkerWriter the markers go
// through (txn_markers.go: local control batches today, a WriteTxnMarkers
// request to the partition's leader later). Kafka's order is kept: the
// PrepareCommit/PrepareAbort record is durable before any marker, the
// CompleteCommit/CompleteAbort record is written after every marker. A
// partition is loaded when this node is elected its leader (OnElected,
// replaying it and finishing what it left prepared; a single node elects
// every partition when the topic is opened or created) and dropped on
// OnResigned; meanwhile its ids are COORDINATOR_LOAD_IN_PROGRESS, then
// NOT_COORDINATOR. The scripts under testdata/txn drive it step by step.
//
// It depends on storage only; the broker layer calls it and the protocol
// package knows nothing of it.
package coordinator
