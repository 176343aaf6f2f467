package broker

import (
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/metadata"
	"github.com/strata-io/strata/metrics"
	"github.com/strata-io/strata/protocol"
	"github.com/strata-io/strata/replica"
	"github.com/strata-io/strata/storage"
)

// anonymousPrincipal is the principal of a PLAINTEXT client, in the string
// form of Kafka's KafkaPrincipal (type:name).
const anonymousPrincipal = "User:ANONYMOUS"

// reqCtx is everything a handler sees of one request: who sent it, where
// from, the request itself, and what of the broker it may use. It holds
// nothing of the connection's reader, buffers or socket.
type reqCtx struct {
	principal  string // KafkaPrincipal string form, e.g. User:ANONYMOUS
	clientAddr string // the client's host:port
	clientHost string // the client's IP address, what ACLs' hosts match
	listener   string // the listener's name, e.g. PLAINTEXT
	req        *protocol.Request
	// tokenAuthenticated: the principal logged in with a delegation token
	// (KafkaPrincipal.tokenAuthenticated); forwarded: the request came in
	// an Envelope, from the node the client is connected to.
	tokenAuthenticated bool
	forwarded          bool

	svc   *services
	authz Authorizer // never nil: allowAll when none is configured

	// fetch writes a Fetch response in place: records go from the segment
	// files to the socket. Nil for other keys.
	fetch fetchWriter
	// conn is the connection the request came on: a broker's heartbeats
	// bind its session to it (controller.go).
	conn *conn
	// waited is how long a fetch waited in its long poll, which the
	// request quota does not count (conn_quota.go).
	waited time.Duration
}

// fetchWriter sends a Fetch response; Fetch's handler returns no response
// of its own.
type fetchWriter interface {
	writeFetch(req *protocol.Request, fc *fetchContext, topics []fetchTopic, nodes []fetchNode) error
}

// services is what handlers use of their broker, each part behind the
// narrowest interface the handlers need.
type services struct {
	cfg      *Config
	logger   *zap.Logger
	clock    clockwork.Clock // Config.Clock, or the real one
	logs     logStore
	replicas *replica.Manager
	isr      *isrManager // a cluster node's leaders' ISR changes; nil on a single node
	pids     producerIDs
	groups   groupCoordinator
	txns     txnCoordinator
	shares   *coordinator.ShareCoordinator
	sharing  *shareManager            // share-partitions and share sessions (sharepartitions.go)
	markers  coordinator.MarkerWriter // writes markers on this node's own leaders (WriteTxnMarkers)
	peers    *clusterMarkers          // connections to other brokers (transaction markers, AddPartitionsToTxn); nil on one node
	metrics  requestMetrics
	meta     metadata.Store    // the cluster's metadata (image.go)
	listener string            // the client listener's name: brokers' endpoints on it are what clients are told
	served   []VersionRange    // what ApiVersions advertises
	shutdown <-chan struct{}   // closed when Shutdown starts: ends long polls
	forward  *forwarder        // a cluster node's way to the active controller; nil on one node
	quotas   *clientQuotas     // the client quotas (quotas.go)
	tokens   *delegationTokens // delegation tokens' HMACs and logins (delegationtoken_auth.go)
	// telemetry is the KIP-714 client instances and their pushed metrics
	// (telemetry.go).
	telemetry *telemetry
	// fetchSessions are the broker's fetch sessions (fetch_session.go);
	// nil when max.incremental.fetch.session.cache.slots is 0.
	fetchSessions *fetchSessionCache
	// controllerListener: these serve the controller listener, the
	// requests brokers forward, whose BROKER resources may name any node.
	controllerListener bool
}

// logStore is the log manager as handlers use it.
type logStore interface {
	ClusterID() string
	Topic(name string) *storage.Topic
	TopicByID(id [16]byte) *storage.Topic
	Topics() []*storage.Topic
	DeleteRecords(topic string, partition int32, offset int64) (int64, error)
	AlterBrokerConfigs(configs map[string]string, node, validateOnly bool) error
	AlterTopicConfigs(name string, configs map[string]string, validateOnly bool) error
}

// producerIDs hands out producer ids to non-transactional idempotent
// producers.
type producerIDs interface {
	Next() (int64, error)
}

// groupCoordinator is the group coordinator as handlers use it.
type groupCoordinator interface {
	Ensure() error
	PartitionFor(groupID string) int32
	JoinGroup(req *kmsg.JoinGroupRequest, version int16, client coordinator.Client, done <-chan struct{}) *kmsg.JoinGroupResponse
	SyncGroup(req *kmsg.SyncGroupRequest, version int16, done <-chan struct{}) *kmsg.SyncGroupResponse
	Heartbeat(req *kmsg.HeartbeatRequest) *kerr.Error
	LeaveGroup(groupID string, leaving []coordinator.LeaveMember) (*kerr.Error, []*kerr.Error)
	ConsumerGroupHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, version int16, client coordinator.Client) *kmsg.ConsumerGroupHeartbeatResponse
	ConsumerGroupDescribe(id string, version int16) kmsg.ConsumerGroupDescribeResponseGroup
	StreamsGroupHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest, client coordinator.Client) (*kmsg.StreamsGroupHeartbeatResponse, []coordinator.StreamsInternalTopic)
	StreamsGroupDescribe(id string, version int16, includeDescription bool) kmsg.StreamsGroupDescribeResponseGroup
	ShareGroupHeartbeat(req *kmsg.ShareGroupHeartbeatRequest, client coordinator.Client) *kmsg.ShareGroupHeartbeatResponse
	ShareGroupDescribe(id string) kmsg.ShareGroupDescribeResponseGroup
	InitializedSharePartitions(id string) (map[[16]byte][]int32, *kerr.Error)
	AlterShareGroupOffsets(r *kmsg.AlterShareGroupOffsetsRequest) *kmsg.AlterShareGroupOffsetsResponse
	DeleteShareGroupOffsets(r *kmsg.DeleteShareGroupOffsetsRequest) *kmsg.DeleteShareGroupOffsetsResponse
	DescribeGroup(id string) kmsg.DescribeGroupsResponseGroup
	ListGroups(states, types []string) ([]kmsg.ListGroupsResponseGroup, *kerr.Error)
	DeleteGroup(id string) *kerr.Error
	CommitOffsets(req coordinator.CommitRequest) []*kerr.Error
	TxnCommitOffsets(req coordinator.TxnCommitRequest) []*kerr.Error
	FetchOffsets(groupID string, topics []coordinator.TopicPartitions) ([]coordinator.FetchedOffset, *kerr.Error)
	FetchOffsetsAs(groupID string, memberID *string, memberEpoch int32, topics []coordinator.TopicPartitions) ([]coordinator.FetchedOffset, *kerr.Error)
	DeleteOffsets(groupID string, topics []coordinator.TopicPartitions) (*kerr.Error, []coordinator.PartitionError)
	HasPendingTxnOffset(group, topic string, partition int32) bool
}

// txnCoordinator is the transaction coordinator as handlers use it.
type txnCoordinator interface {
	Ensure() error
	PartitionFor(transactionalID string) int32
	InitProducerID(id string, timeoutMs int32, reqPid int64, reqEpoch int16) coordinator.InitProducerIDResult
	AddPartitions(id string, pid int64, epoch int16, parts []coordinator.TxnPartition, tv int16)
	AddOffsets(id string, pid int64, epoch int16, group string) *kerr.Error
	EndTxn(id string, pid int64, epoch int16, commit bool, tv int16) coordinator.EndTxnResult
	VerifyPartition(id string, pid int64, epoch int16, topic string, partition int32) *kerr.Error
	VerifyPartitions(id string, pid int64, epoch int16, parts []coordinator.TxnPartition)
	DescribeTransaction(id string) kmsg.DescribeTransactionsResponseTransactionState
	ListTransactions(states []string, pids []int64, minDuration time.Duration) ([]kmsg.ListTransactionsResponseTransactionState, []string, *kerr.Error)
}

// requestMetrics are the hooks handlers count into; both answer (and do)
// nothing when metrics are off.
type requestMetrics interface {
	Topic(name string) *metrics.TopicStats
	PartitionError(key, errorCode int16)
	Authorization(operation, resourceType string, allowed bool)
}

// newServices is the part of b its handlers see.
func newServices(b *Broker, listener string) *services {
	return &services{
		cfg:      &b.cfg,
		logger:   b.logger,
		clock:    b.clock,
		logs:     b.logs,
		replicas: b.replicas,
		pids:     b.pids,
		groups:   b.groups,
		txns:     b.txns,
		shares:   b.shares,
		sharing:  b.sharing,
		markers:  b.local,
		peers:    b.markers,
		metrics:  b.metrics,
		meta:     b.meta,
		listener: listener,
		served:   b.apis.ranges(),
		shutdown: b.shutdown,
		forward:  b.forward,
		quotas:   b.quotas,
		tokens:   b.tokens,

		fetchSessions: b.fetchSessions,
		telemetry:     b.telemetry,
	}
}

// clusterID is the cluster's id: a cluster node's (ClusterConfig.ClusterID),
// else the log dir's meta.properties'.
func (b *services) clusterID() string {
	if id := b.cfg.Cluster.ClusterID; id != "" {
		return id
	}
	return b.logs.ClusterID()
}
