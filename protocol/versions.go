package protocol

import "github.com/twmb/franz-go/pkg/kmsg"

// VersionRange is the inclusive range of versions Strata serves for one key.
type VersionRange struct {
	Key      int16
	Min, Max int16
}

// served lists every API key and version that works end to end. A client is
// offered exactly these in ApiVersions, so a key goes here only together with
// its handler and tests.
var served = []VersionRange{
	{Key: int16(kmsg.Produce), Min: 3, Max: 11},
	{Key: int16(kmsg.Fetch), Min: 4, Max: 17},
	{Key: int16(kmsg.ListOffsets), Min: 1, Max: 10},
	{Key: int16(kmsg.Metadata), Min: 0, Max: 12},
	{Key: int16(kmsg.ApiVersions), Min: 0, Max: 4},
	{Key: int16(kmsg.CreateTopics), Min: 2, Max: 7},
	{Key: int16(kmsg.DeleteTopics), Min: 1, Max: 6},
	{Key: int16(kmsg.InitProducerID), Min: 0, Max: 5},
	{Key: int16(kmsg.OffsetForLeaderEpoch), Min: 2, Max: 4},
	{Key: int16(kmsg.CreatePartitions), Min: 0, Max: 3},
	// Operations: see broker/configs.go and the files named after each key.
	{Key: int16(kmsg.DescribeConfigs), Min: 0, Max: 4},
	{Key: int16(kmsg.AlterConfigs), Min: 0, Max: 2},
	{Key: int16(kmsg.IncrementalAlterConfigs), Min: 0, Max: 1},
	{Key: int16(kmsg.DeleteRecords), Min: 0, Max: 2},
	{Key: int16(kmsg.DescribeCluster), Min: 0, Max: 1},
	{Key: int16(kmsg.DescribeLogDirs), Min: 0, Max: 4},
	{Key: int16(kmsg.ElectLeaders), Min: 0, Max: 2},
	{Key: int16(kmsg.FindCoordinator), Min: 0, Max: 6},
	{Key: int16(kmsg.JoinGroup), Min: 0, Max: 9},
	{Key: int16(kmsg.SyncGroup), Min: 0, Max: 5},
	{Key: int16(kmsg.Heartbeat), Min: 0, Max: 4},
	{Key: int16(kmsg.LeaveGroup), Min: 0, Max: 5},
	{Key: int16(kmsg.DescribeGroups), Min: 0, Max: 5},
	{Key: int16(kmsg.ListGroups), Min: 0, Max: 5},
	{Key: int16(kmsg.DeleteGroups), Min: 0, Max: 2},
	{Key: int16(kmsg.OffsetCommit), Min: 2, Max: 9},
	{Key: int16(kmsg.OffsetFetch), Min: 1, Max: 9},
	{Key: int16(kmsg.OffsetDelete), Min: 0, Max: 0},
	// KIP-848 consumer groups: see broker/consumergroupheartbeat.go.
	{Key: int16(kmsg.ConsumerGroupHeartbeat), Min: 0, Max: 1},
	{Key: int16(kmsg.ConsumerGroupDescribe), Min: 0, Max: 1},
	// Transactions (KIP-98) without KIP-890 part 2: see broker/endtxn.go.
	{Key: int16(kmsg.AddPartitionsToTxn), Min: 0, Max: 3},
	{Key: int16(kmsg.AddOffsetsToTxn), Min: 0, Max: 4},
	{Key: int16(kmsg.EndTxn), Min: 0, Max: 4},
	{Key: int16(kmsg.TxnOffsetCommit), Min: 0, Max: 4},
	{Key: int16(kmsg.DescribeTransactions), Min: 0, Max: 0},
	{Key: int16(kmsg.ListTransactions), Min: 0, Max: 1},
}

// Served returns the served ranges in key order.
func Served() []VersionRange {
	return append([]VersionRange(nil), served...)
}

// Supported reports the versions served for key.
func Supported(key int16) (VersionRange, bool) {
	for _, r := range served {
		if r.Key == key {
			return r, true
		}
	}
	return VersionRange{}, false
}

// SupportsVersion reports whether key is served at version.
func SupportsVersion(key, version int16) bool {
	r, ok := Supported(key)
	return ok && version >= r.Min && version <= r.Max
}
