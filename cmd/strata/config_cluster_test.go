package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/strata-io/strata/broker"
	"github.com/strata-io/strata/metadata/quorum"
)

const threeVoters = "1@127.0.0.1:9093,2@127.0.0.1:19093,3@127.0.0.1:29093"

func TestClusterNodeReadsTheClusterKeys(t *testing.T) {
	s, err := loadSettings(combined(map[string]string{
		"controller.quorum.voters":                         threeVoters,
		"controller.quorum.bootstrap.servers":              "127.0.0.1:9093,127.0.0.1:19093,127.0.0.1:29093",
		"broker.rack":                                      "r1",
		"replica.selector.class":                           " " + broker.RackAwareReplicaSelector,
		"broker.heartbeat.interval.ms":                     "500",
		"broker.session.timeout.ms":                        "3000",
		"default.replication.factor":                       "3",
		"offsets.topic.replication.factor":                 "2",
		"transaction.state.log.replication.factor":         "2",
		"transaction.state.log.min.isr":                    "1",
		"share.coordinator.state.topic.replication.factor": "2",
		"replica.lag.time.max.ms":                          "10000",
		"unclean.leader.election.enable":                   "TRUE",
		"replica.fetch.max.bytes":                          "1000",
		"replica.fetch.response.max.bytes":                 "2000",
		"replica.fetch.min.bytes":                          "10",
		"replica.fetch.wait.max.ms":                        "100",
		"replica.fetch.backoff.ms":                         "50",
		"auto.leader.rebalance.enable":                     "false",
		"leader.imbalance.check.interval.seconds":          "30",
		"controller.quorum.fetch.timeout.ms":               "700",
		"controller.quorum.election.timeout.ms":            "300",
		"controller.quorum.request.timeout.ms":             "900",
	}), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Voters) != 3 || s.Voters[2] != (quorum.Voter{ID: 3, Addr: "127.0.0.1:29093"}) {
		t.Fatalf("voters %+v", s.Voters)
	}
	want := broker.ClusterConfig{
		ClusterID: clusterID(s.Voters), ControllerListener: "CONTROLLER://127.0.0.1:9093", Voters: threeVoters,
		InterBrokerListener: "PLAINTEXT", Rack: "r1", ReplicaSelector: broker.RackAwareReplicaSelector, HeartbeatInterval: 500 * time.Millisecond, SessionTimeout: 3 * time.Second,
		DefaultReplicationFactor: 3, OffsetsTopicReplicationFactor: 2, TxnStateReplicationFactor: 2, TxnStateMinISR: 1, ShareStateReplicationFactor: 2,
		ReplicaLagTimeMax: 10 * time.Second, UncleanLeaderElection: true, LeaderImbalanceCheckInterval: 30 * time.Second,
		ReplicaFetch: broker.ReplicaFetchConfig{MaxBytes: 1000, ResponseMaxBytes: 2000, MinBytes: 10, MaxWait: 100 * time.Millisecond, Backoff: 50 * time.Millisecond},
	}
	if s.Cluster != want {
		t.Errorf("cluster settings\n%+v\nwant\n%+v", s.Cluster, want)
	}
	if q := (quorumTimeouts{Fetch: 700 * time.Millisecond, Election: 300 * time.Millisecond, Request: 900 * time.Millisecond}); s.Quorum != q {
		t.Errorf("quorum timeouts %+v, want %+v", s.Quorum, q)
	}

	def, err := loadSettings(combined(map[string]string{"controller.quorum.voters": threeVoters}), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	d := broker.DefaultClusterConfig()
	if def.Cluster.ReplicaSelector != "" || def.Cluster.SessionTimeout != d.SessionTimeout || def.Cluster.HeartbeatInterval != d.HeartbeatInterval || def.Cluster.ReplicaFetch != d.ReplicaFetch {
		t.Errorf("defaults %+v, want Kafka's %+v", def.Cluster, d)
	}
	if def.Quorum != (quorumTimeouts{Fetch: time.Second, Election: time.Second, Request: 2 * time.Second}) {
		t.Errorf("quorum timeouts %+v, want raft's 1000 and Kafka's 1000 and 2000 ms", def.Quorum)
	}

	single, err := loadSettings(combined(map[string]string{"broker.session.timeout.ms": "3000"}), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if single.clustered() || single.Cluster != (broker.ClusterConfig{}) {
		t.Errorf("a single voter is a single node, with no cluster settings: %+v %+v", single.Voters, single.Cluster)
	}
}

func TestClusterKeysRefusedOutOfRange(t *testing.T) {
	for _, tt := range []struct {
		changes map[string]string
		key     string
		reason  string
	}{
		{map[string]string{"broker.heartbeat.interval.ms": "9000"}, "broker.heartbeat.interval.ms", "less than broker.session.timeout.ms"},
		{map[string]string{"broker.session.timeout.ms": "0"}, "broker.session.timeout.ms", "at least 1"},
		{map[string]string{"default.replication.factor": "0"}, "default.replication.factor", "at least 1"},
		{map[string]string{"offsets.topic.replication.factor": "40000"}, "offsets.topic.replication.factor", "at most 32767"},
		{map[string]string{"transaction.state.log.min.isr": "x"}, "transaction.state.log.min.isr", "not a whole number"},
		{map[string]string{"replica.fetch.wait.max.ms": "40000"}, "replica.fetch.wait.max.ms", "less than or equal to replica.lag.time.max.ms"},
		{map[string]string{"replica.fetch.backoff.ms": "-1"}, "replica.fetch.backoff.ms", "at least 0"},
		{map[string]string{"unclean.leader.election.enable": "yes"}, "unclean.leader.election.enable", "true or false"},
		{map[string]string{"controller.quorum.fetch.timeout.ms": "1"}, "controller.quorum.fetch.timeout.ms", "at least 5"},
		{map[string]string{"replica.selector.class": "com.example.NearestSelector"}, "replica.selector.class", "no Java classes"},
	} {
		tt.changes["controller.quorum.voters"] = threeVoters
		_, err := loadSettings(combined(tt.changes), zap.NewNop())
		var ce *configError
		if !errors.As(err, &ce) || ce.Key != tt.key || !strings.Contains(err.Error(), tt.reason) {
			t.Errorf("%v: error %v, want one naming %s and %q", tt.changes, err, tt.key, tt.reason)
		}
	}
}

func TestClusterIDIsTheVoters(t *testing.T) {
	a, _ := quorum.ParseVoters(threeVoters)
	b, _ := quorum.ParseVoters("3@127.0.0.1:29093,1@127.0.0.1:9093,2@127.0.0.1:19093")
	c, _ := quorum.ParseVoters("1@127.0.0.1:9093,2@127.0.0.1:19093,3@127.0.0.1:39093")
	if clusterID(a) != clusterID(b) {
		t.Errorf("the same voters in another order: %s and %s", clusterID(a), clusterID(b))
	}
	if clusterID(a) == clusterID(c) {
		t.Errorf("other voters, the same id %s", clusterID(a))
	}
	if id := clusterID(a); len(id) != 22 || strings.HasPrefix(id, "-") {
		t.Errorf("cluster id %q is not a Kafka Uuid string", id)
	}
}
