package broker

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/protocol"
)

// handler serves one decoded request. It returns the response to send, or
// nil when none is due (Produce with acks=0); an error closes the connection.
type handler func(b *Broker, c *conn, req *protocol.Request) (kmsg.Response, error)

// handlers has an entry for every key in protocol's served table except
// Fetch, which streams its response itself (see fetch.go).
var handlers = map[int16]handler{
	int16(kmsg.ApiVersions):          handleApiVersions,
	int16(kmsg.Metadata):             handleMetadata,
	int16(kmsg.Produce):              handleProduce,
	int16(kmsg.ListOffsets):          handleListOffsets,
	int16(kmsg.CreateTopics):         handleCreateTopics,
	int16(kmsg.DeleteTopics):         handleDeleteTopics,
	int16(kmsg.CreatePartitions):     handleCreatePartitions,
	int16(kmsg.InitProducerID):       handleInitProducerID,
	int16(kmsg.OffsetForLeaderEpoch): handleOffsetForLeaderEpoch,
	int16(kmsg.FindCoordinator):      handleFindCoordinator,
	int16(kmsg.JoinGroup):            handleJoinGroup,
	int16(kmsg.SyncGroup):            handleSyncGroup,
	int16(kmsg.Heartbeat):            handleHeartbeat,
	int16(kmsg.LeaveGroup):           handleLeaveGroup,
	int16(kmsg.DescribeGroups):       handleDescribeGroups,
	int16(kmsg.ListGroups):           handleListGroups,
	int16(kmsg.DeleteGroups):         handleDeleteGroups,
	int16(kmsg.OffsetCommit):         handleOffsetCommit,
	int16(kmsg.OffsetFetch):          handleOffsetFetch,
	int16(kmsg.OffsetDelete):         handleOffsetDelete,
	int16(kmsg.AddPartitionsToTxn):   handleAddPartitionsToTxn,
	int16(kmsg.AddOffsetsToTxn):      handleAddOffsetsToTxn,
	int16(kmsg.EndTxn):               handleEndTxn,
	int16(kmsg.TxnOffsetCommit):      handleTxnOffsetCommit,
	int16(kmsg.DescribeTransactions): handleDescribeTransactions,
	int16(kmsg.ListTransactions):     handleListTransactions,
}

// errorCode maps an error from storage or the coordinator to a Kafka error
// code: Kafka errors pass through, anything else is a storage failure.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.KafkaStorageError.Code
}

// errorMessage is the text sent in responses that carry one: nil for
// success, so clients print the code's own description otherwise.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
