// Package coordinator holds the broker-side state machines that sit above the
// partition logs: the producer id allocator (InitProducerId) and the group
// coordinator (Groups: classic consumer groups, KIP-848 consumer groups with
// server-side assignment (consumer.go), and committed offsets, kept as
// Kafka-format records in the compacted __consumer_offsets and replayed on
// start); later the transaction coordinator. It depends on replica and storage only; the broker layer
// calls it and the protocol package knows nothing of it.
package coordinator
