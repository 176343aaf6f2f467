// Package share holds the state machines of KIP-932 share groups that sit
// above the partition logs, built as Kafka 4.4's:
//
//   - Partition (partition.go, acknowledge.go, state.go) is Kafka's
//     SharePartition: the in-flight records of one share group on one
//     topic partition, between the share-partition start offset (SPSO)
//     and end offset (SPEO), each AVAILABLE, ACQUIRED (by a member, under
//     an acquisition lock of group.share.record.lock.duration.ms),
//     ACKNOWLEDGED, ARCHIVING (on its way to the group's dead-letter
//     topic, deadletter.go) or ARCHIVED, with its delivery count. A whole log batch
//     shares one state until a request touches part of it; then its
//     offsets are tracked one by one, as Kafka's InFlightBatch does. It
//     reads nothing itself: the caller fetches the log from
//     NextFetchOffset and passes the batches it read to Acquire. It owns
//     no goroutine, lock or clock: every call takes the time, Tick expires
//     locks, NextDeadline says when to tick. A change that must be
//     persisted (an acknowledgement, a release, an expired lock) comes
//     back as a Write for the share coordinator (WriteShareGroupState);
//     acknowledged and released records stay in transition, neither
//     acquired nor acknowledged again, until WriteDone says whether the
//     write held, then complete or roll back, and the SPSO moves past the
//     records whose delivery is complete. Under read_committed the
//     batches of aborted transactions are archived, not delivered (txn.go).
//
//   - Combine (combine.go) is Kafka's PersisterStateBatchCombiner: how
//     the share coordinator folds written state batches into a
//     share-partition's state.
//
// The share coordinator itself (the state in __share_group_state) is in
// the coordinator package (share_coord.go), beside the other coordinators.
//
// testdata/partition holds scripts that drive a Partition step by step
// (acquire, ack, release, tick 30s, write-done) and print what it
// returned and its state.
package share
