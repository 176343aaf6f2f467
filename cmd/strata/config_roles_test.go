package main

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/strata-io/strata/metadata/quorum"
)

// brokerOnly and controllerOnly are Kafka's properties of a broker-only
// and a controller-only node of three controllers, with changes applied
// ("<unset>" removes a key).
func brokerOnly(changes map[string]string) map[string]string {
	return withChanges(map[string]string{
		"process.roles":             "broker",
		"node.id":                   "4",
		"controller.quorum.voters":  "1@127.0.0.1:9093,2@127.0.0.1:9094,3@127.0.0.1:9095",
		"listeners":                 "PLAINTEXT://127.0.0.1:9092",
		"controller.listener.names": "CONTROLLER",
	}, changes)
}

func controllerOnly(changes map[string]string) map[string]string {
	return withChanges(map[string]string{
		"process.roles":             "controller",
		"node.id":                   "1",
		"controller.quorum.voters":  "1@127.0.0.1:9093,2@127.0.0.1:9094,3@127.0.0.1:9095",
		"listeners":                 "CONTROLLER://127.0.0.1:9093",
		"controller.listener.names": "CONTROLLER",
	}, changes)
}

// withChanges applies changes to props: "<unset>" removes a key.
func withChanges(props, changes map[string]string) map[string]string {
	maps.Copy(props, changes)
	for k, v := range changes {
		if v == "<unset>" {
			delete(props, k)
		}
	}
	return props
}

func TestBrokerOnlyAndControllerOnlyNodesForm(t *testing.T) {
	voters := []quorum.Voter{{ID: 1, Addr: "127.0.0.1:9093"}, {ID: 2, Addr: "127.0.0.1:9094"}, {ID: 3, Addr: "127.0.0.1:9095"}}
	b, err := loadSettings(brokerOnly(nil), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if !b.BrokerOnly || b.ControllerOnly || !b.clustered() || b.ControllerListener != "" || b.Listeners != "PLAINTEXT://127.0.0.1:9092" ||
		!slices.Equal(b.Voters, voters) || b.Cluster.ClusterID == "" {
		t.Errorf("broker-only: %+v", b)
	}
	c, err := loadSettings(controllerOnly(nil), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if c.BrokerOnly || !c.ControllerOnly || !c.clustered() || c.ControllerListener != "CONTROLLER://127.0.0.1:9093" || c.Listeners != "" ||
		!slices.Equal(c.Voters, voters) {
		t.Errorf("controller-only: %+v", c)
	}
	if b.Cluster.ClusterID != c.Cluster.ClusterID {
		t.Errorf("cluster ids differ: broker %s, controller %s", b.Cluster.ClusterID, c.Cluster.ClusterID)
	}
	// Nodes that know their quorum only by its bootstrap servers learn the
	// voters when they start.
	for _, props := range []map[string]string{
		brokerOnly(map[string]string{"controller.quorum.voters": "<unset>", "controller.quorum.bootstrap.servers": "127.0.0.1:9093,127.0.0.1:9094"}),
		controllerOnly(map[string]string{"controller.quorum.voters": "<unset>", "controller.quorum.bootstrap.servers": "127.0.0.1:9093,127.0.0.1:9094"}),
		combined(map[string]string{"controller.quorum.voters": "<unset>", "controller.quorum.bootstrap.servers": "127.0.0.1:9093,127.0.0.1:9094"}),
	} {
		s, err := loadSettings(props, zap.NewNop())
		if err != nil || !s.clustered() || s.Voters != nil || !slices.Equal(s.Bootstrap, []string{"127.0.0.1:9093", "127.0.0.1:9094"}) {
			t.Errorf("%s with bootstrap servers: voters %v, bootstrap %v, %v", props["process.roles"], s.Voters, s.Bootstrap, err)
		}
	}
	// One controller and its brokers are a cluster too.
	one, err := loadSettings(controllerOnly(map[string]string{"controller.quorum.voters": "1@127.0.0.1:9093"}), zap.NewNop())
	if err != nil || !one.clustered() {
		t.Errorf("the only controller: clustered %v, %v", one.clustered(), err)
	}
}

func TestBrokerOnlyAndControllerOnlyNodesRefused(t *testing.T) {
	tests := []struct {
		name      string
		props     map[string]string
		key, want string
	}{
		{"broker in the voters", brokerOnly(map[string]string{"node.id": "2"}), "controller.quorum.voters",
			"just the 'broker' role, the node id 2 must not be included in the set of voters"},
		{"broker without controller.listener.names", brokerOnly(map[string]string{"controller.listener.names": "<unset>"}),
			"controller.listener.names", "must contain at least one value when running KRaft with just the broker role"},
		{"broker with neither", brokerOnly(map[string]string{"controller.quorum.voters": "<unset>"}), "controller.quorum.voters",
			"must contain a parseable set of controllers"},
		{"broker with an unmapped controller name", brokerOnly(map[string]string{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT"}),
			"controller.listener.names", "CONTROLLER not found in listener.security.protocol.map"},
		{"controller not in the voters", controllerOnly(map[string]string{"node.id": "7"}), "controller.quorum.voters",
			"the node id 7 must be included in the set of voters"},
		{"controller with a client listener", controllerOnly(map[string]string{"listeners": "CONTROLLER://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9092"}),
			"listeners", "must only contain KRaft controller listeners"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadSettings(tt.props, zap.NewNop())
			if err == nil || !strings.Contains(err.Error(), tt.key) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one about %s saying %q", err, tt.key, tt.want)
			}
		})
	}
}
