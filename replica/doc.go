// Package replica is the layer between every writer of a partition (the
// broker's Produce, the group and transaction coordinators, transaction
// markers) and its log, as Kafka's Partition and ReplicaManager: a
// Partition appends as leader and answers once what acks asks for is met,
// appends as follower keeping the leader's offsets and epochs, truncates,
// and moves the high watermark to the smallest log end offset of its
// in-sync replicas. On a single node a partition's only replica is this
// node, so the high watermark follows each append at once; in a cluster
// the leader tracks each follower's fetches, proposes ISR changes
// (isr.go) and enforces min.insync.replicas.
// The log sits behind the Log interface (storage.Log is one), so the
// replica logic is tested over an in-memory log. It depends on storage
// only; the coordinators and the broker call it.
package replica
