// Package coordinator holds the broker-side state machines that sit above the
// partition logs: the producer id allocator (InitProducerId), the group
// coordinator and the transaction coordinator. It depends on replica and
// storage only (every record it writes goes through a partition's replica);
// the broker layer calls it and the protocol package knows nothing of it.
//
// The group coordinator is built as Kafka's new one (GroupMetadataManager
// under a CoordinatorRuntime): one state machine per partition of
// __consumer_offsets, and a driver.
//
//   - groupShard (shard.go) is the machine of one partition: its groups,
//     their offsets and their timers. It takes an input with the time (a
//     request, a replayed batch, tick) and returns effects: records to
//     append, each with what to do once the append succeeded or failed,
//     answers to waiting JoinGroup/SyncGroup requests by waiter id, and
//     timers armed, cancelled or fired. No goroutines, locks or clock.
//     Classic groups are in group.go and join.go (rebalances, static
//     members, sessions), KIP-848 consumer groups in consumer.go,
//     consumer_assign.go and consumer_admin.go, the online migration
//     between the two (KIP-848 upgrade and downgrade, classic members in a
//     consumer group) in consumer_migrate.go, offsets in offsets.go with
//     the committed and pending transactional offsets kept apart in
//     offsetstore.go and txnoffsets.go, describe/list/delete in admin.go,
//     replay in load.go, the record formats in records.go. A consumer
//     group's state is Kafka's KIP-848 records (consumer_records.go, the
//     codecs of ConsumerGroupMetadata, -MemberMetadata,
//     -TargetAssignmentMetadata/-Member, -CurrentMemberAssignment and
//     -RegularExpression, byte for byte as Kafka 4.4 writes them):
//     consumer_replay.go writes what an input changed, as a difference from
//     the records last made durable, before the heartbeat is answered, puts
//     the group back as stored when a write fails, and builds the groups
//     from the records on load.
//   - Groups (groups.go, groups_api.go) is the driver: the shards this node
//     leads (OnElected replays a partition, answering
//     COORDINATOR_LOAD_IN_PROGRESS for its groups until done; OnResigned
//     drops it, NOT_COORDINATOR after), one lock per shard, the clock
//     (GroupConfig.Clock, a clockwork.Clock) armed at the shard's next
//     deadline, and appendRecords, the one place group records reach the
//     log. Records are durable before the answers that depend on them are
//     sent. The broker's publisher elects and resigns partitions from the
//     metadata image (broker/publisher.go, as Kafka's
//     BrokerMetadataPublisher): at start for every partition this node
//     leads, and within the change that creates the topic on first need,
//     where an empty partition is loaded before it is published.
//
// testdata/groups holds scripts that drive the shards step by step (join,
// sync, heartbeat, tick 10s, elect 3, ...) and show every effect.
//
// The transaction coordinator (KIP-98) is one state machine per partition of
// __transaction_state (txnPartition, txn_sm*.go): it takes a request, a
// replayed record or the time (tick) and returns effects, the record to
// append to __transaction_state, the markers to write, the answer, and owns
// no goroutine, lock or clock. Txns (txn.go) is its driver: it holds the
// locks, the clock (TxnConfig.Clock), the ticker, the one funnel appending
// to __transaction_state (appendState) and the MarkerWriter the markers go
// through (txn_markers.go: local control batches on a single node,
// TxnConfig.Markers on a cluster node, which sends WriteTxnMarkers to each
// partition's leader). Kafka's order is kept: the
// PrepareCommit/PrepareAbort record is durable before any marker, the
// CompleteCommit/CompleteAbort record is written after every marker. A
// partition is loaded when the metadata image makes this node its leader
// (OnElected from the broker's publisher, replaying it and finishing what
// it left prepared) and dropped when it stops (OnResigned); meanwhile its
// ids are COORDINATOR_LOAD_IN_PROGRESS, then NOT_COORDINATOR. Neither
// coordinator elects itself. The scripts under testdata/txn drive it step by step.
//
// The share coordinator (KIP-932) is one state machine per partition of
// __share_group_state (shareStateShard, share_coord.go) keeping each
// share-partition's state as Kafka's ShareSnapshot/ShareUpdate records;
// ShareCoordinator (share_driver.go, share_api.go) is its driver, elected
// and resigned by the publisher as the others, appending each write
// acks=all and replaying it before the answer. The share-partition's own
// machine, which a share-partition leader drives, is package share.
package coordinator
