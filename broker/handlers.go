package broker

import (
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/internal/kafkaerr"
	"github.com/strata-io/strata/metadata/quorum"
)

// handler serves one decoded request. It returns the response to send, or
// nil when none is due (Produce with acks=0, and Fetch, which writes its
// response itself); an error closes the connection.
type handler func(rc *reqCtx) (kmsg.Response, error)

// VersionRange is the inclusive range of versions served for one key.
type VersionRange struct {
	Key      int16
	Min, Max int16
}

// api is one served key: its versions and its handler.
type api struct {
	VersionRange
	serve handler
}

// registry is the APIs one broker serves. A key goes in only together with
// its handler and tests: ApiVersions offers exactly these ranges, and
// requests for anything else are refused before their body is decoded.
type registry struct {
	apis map[int16]api
}

// add registers a key's version range and handler; a key registered twice
// is a programming error.
func (r *registry) add(key kmsg.Key, minVersion, maxVersion int16, h handler) {
	if _, dup := r.apis[int16(key)]; dup || minVersion > maxVersion {
		panic(fmt.Sprintf("registry: %s registered twice or with versions %d-%d", key.Name(), minVersion, maxVersion))
	}
	r.apis[int16(key)] = api{VersionRange{int16(key), minVersion, maxVersion}, h}
}

// unstableRegistrations are the register functions of keys still being
// built, served only with unstable.api.versions.enable (Kafka's internal
// config of the same name); none today. Neither ServedVersions nor the
// controller listener serves them.
var unstableRegistrations []func(*registry)

// newRegistry calls each handler file's register function: the file that
// serves a key is the one place its versions are written. unstable adds
// unstableRegistrations.
func newRegistry(unstable bool) *registry {
	r := &registry{apis: make(map[int16]api)}
	for _, register := range []func(*registry){
		registerProduce, registerFetch, registerListOffsets, registerMetadata, registerApiVersions,
		registerCreateTopics, registerDeleteTopics, registerInitProducerID, registerOffsetForLeaderEpoch,
		registerCreatePartitions,
		registerUpdateFeatures,
		registerDescribeConfigs, registerAlterConfigs, registerIncrementalAlterConfigs, registerDeleteRecords,
		registerDescribeCluster, registerDescribeTopicPartitions, registerDescribeLogDirs, registerAlterReplicaLogDirs, registerElectLeaders, registerReassignments,
		registerFindCoordinator, registerJoinGroup, registerSyncGroup, registerHeartbeat, registerLeaveGroup,
		registerDescribeGroups, registerListGroups, registerDeleteGroups,
		registerOffsetCommit, registerOffsetFetch, registerOffsetDelete,
		registerConsumerGroupHeartbeat, registerConsumerGroupDescribe,
		registerStreamsGroupHeartbeat, registerStreamsGroupDescribe, registerStreamsGroupTopologyDescriptionUpdate,
		registerAddPartitionsToTxn, registerAddOffsetsToTxn, registerEndTxn, registerTxnOffsetCommit,
		registerDescribeTransactions, registerListTransactions, registerDescribeProducers, registerWriteTxnMarkers, registerSASL, registerACLs,
		registerScramCredentials, registerDelegationTokens,
		registerClientQuotas, registerListConfigResources, registerTelemetry, registerShareGroupState,
		registerShareGroupOffsets,
		registerShareGroupHeartbeat, registerShareGroupDescribe, registerShareFetch, registerShareAcknowledge,
	} {
		register(r)
	}
	if unstable {
		for _, register := range unstableRegistrations {
			register(r)
		}
	}
	return r
}

// supports reports whether key is served at version.
func (r *registry) supports(key, version int16) bool {
	a, ok := r.apis[key]
	return ok && version >= a.Min && version <= a.Max
}

// ranges lists the served ranges in key order.
func (r *registry) ranges() []VersionRange {
	out := make([]VersionRange, 0, len(r.apis))
	for _, a := range r.apis {
		out = append(out, a.VersionRange)
	}
	slices.SortFunc(out, func(a, b VersionRange) int { return int(a.Key) - int(b.Key) })
	return out
}

// ServedVersions lists every API key and version range a broker serves,
// in key order: what ApiVersions advertises.
func ServedVersions() []VersionRange {
	return newRegistry(false).ranges()
}

// errorCode maps an error from storage or the coordinator to the Kafka error
// code answered for key: a Kafka error passes through (storage marks its I/O
// failures KAFKA_STORAGE_ERROR); anything else is a failure nobody
// classified, UNKNOWN_SERVER_ERROR as in Kafka's Errors.forException, and is
// logged here since the client learns nothing of it.
func (b *services) errorCode(key kmsg.Key, err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	if errors.Is(err, quorum.ErrNotController) {
		return kerr.NotController.Code // the quorum's leadership moved: the client retries
	}
	b.logger.Error("unexpected error, answering UNKNOWN_SERVER_ERROR", zap.String("request", key.Name()), zap.Error(err))
	return kerr.UnknownServerError.Code
}

// errorMessage is the message sent in responses that carry one: nil for
// success, otherwise kafkaerr.Message, Kafka's message alone without the
// name and description of the code err wraps.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := kafkaerr.Message(err)
	return &s
}
