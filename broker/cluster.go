package broker

import (
	"crypto/tls"
	"time"
)

// ClusterConfig is what a broker of a cluster reads of server.properties
// beyond a single node's keys, with Kafka's names and defaults
// (DefaultClusterConfig). A single node ignores it: it is the only replica
// of every partition.
type ClusterConfig struct {
	ClusterID           string // the cluster's id, the same on every node (cmd/strata derives it)
	ControllerListener  string // the controller listener, CONTROLLER://host:port (controller.listener.names)
	Voters              string // controller.quorum.voters, {id}@{host}:{port},...
	InterBrokerListener string // inter.broker.listener.name: the listener followers fetch from
	// InterBrokerTLS and ControllerTLS are the client sides of the
	// inter-broker and controller listeners when they are SSL (tls.go);
	// nil: PLAINTEXT.
	InterBrokerTLS *tls.Config
	ControllerTLS  *tls.Config
	// InterBrokerSASL and ControllerSASL are the SASL logins to those
	// listeners when they are SASL_PLAINTEXT or SASL_SSL (peerlogin.go);
	// nil: none.
	InterBrokerSASL *PeerLogin
	ControllerSASL  *PeerLogin
	Rack            string // broker.rack; "" = none
	// ReplicaSelector is replica.selector.class: RackAwareReplicaSelector
	// or "" (Kafka's default: consumers read from the leader).
	ReplicaSelector string

	HeartbeatInterval time.Duration // broker.heartbeat.interval.ms
	SessionTimeout    time.Duration // broker.session.timeout.ms: a broker silent this long is fenced

	DefaultReplicationFactor      int16 // default.replication.factor: topics created without one
	OffsetsTopicReplicationFactor int16 // offsets.topic.replication.factor
	TxnStateReplicationFactor     int16 // transaction.state.log.replication.factor
	TxnStateMinISR                int   // transaction.state.log.min.isr
	ShareStateReplicationFactor   int16 // share.coordinator.state.topic.replication.factor

	ReplicaLagTimeMax     time.Duration // replica.lag.time.max.ms: a follower behind this long leaves the ISR
	UncleanLeaderElection bool          // unclean.leader.election.enable

	AutoLeaderRebalance          bool          // auto.leader.rebalance.enable (leaderbalance.go)
	LeaderImbalanceCheckInterval time.Duration // leader.imbalance.check.interval.seconds
	ReplicaFetch                 ReplicaFetchConfig
}

// ReplicaFetchConfig is how a follower fetches from its leaders
// (replica.fetch.*).
type ReplicaFetchConfig struct {
	MaxBytes         int32         // replica.fetch.max.bytes: per partition
	ResponseMaxBytes int32         // replica.fetch.response.max.bytes
	MinBytes         int32         // replica.fetch.min.bytes
	MaxWait          time.Duration // replica.fetch.wait.max.ms
	Backoff          time.Duration // replica.fetch.backoff.ms: after an error
}

// RackAwareReplicaSelector is the replica.selector.class of Kafka's
// selector that sends a consumer to an in-sync replica in its rack
// (KIP-392, readreplica.go).
const RackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

// DefaultClusterConfig is Kafka's defaults.
func DefaultClusterConfig() ClusterConfig {
	return ClusterConfig{
		InterBrokerListener:           "PLAINTEXT",
		HeartbeatInterval:             2 * time.Second,
		SessionTimeout:                9 * time.Second,
		DefaultReplicationFactor:      1,
		OffsetsTopicReplicationFactor: 3,
		TxnStateReplicationFactor:     3,
		TxnStateMinISR:                2,
		ShareStateReplicationFactor:   3,
		ReplicaLagTimeMax:             30 * time.Second,
		AutoLeaderRebalance:           true,
		LeaderImbalanceCheckInterval:  300 * time.Second,
		ReplicaFetch: ReplicaFetchConfig{
			MaxBytes:         1 << 20,
			ResponseMaxBytes: 10 << 20,
			MinBytes:         1,
			MaxWait:          500 * time.Millisecond,
			Backoff:          time.Second,
		},
	}
}
