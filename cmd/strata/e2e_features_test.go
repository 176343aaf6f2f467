package main

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// featuresSeen is what one ApiVersions answer says of features.
type featuresSeen struct {
	code      int16
	keys      int
	supported map[string][2]int16
	finalized map[string]int16
	epoch     int64
}

func (f featuresSeen) String() string {
	return fmt.Sprintf("code %d, %d keys, supported %v, finalized %v, epoch %d", f.code, f.keys, f.supported, f.finalized, f.epoch)
}

// apiVersionsAt sends ApiVersions at version to addr; clusterID and node
// fill v5's ClusterId (nil: null) and NodeId.
func apiVersionsAt(addr string, version int16, clusterID *string, node int32) (featuresSeen, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = version, "strata-test", "1"
	req.ClusterID, req.NodeID = clusterID, node
	kresp, err := request(addr, req)
	if err != nil {
		return featuresSeen{}, err
	}
	resp := kresp.(*kmsg.ApiVersionsResponse)
	seen := featuresSeen{code: resp.ErrorCode, keys: len(resp.ApiKeys), supported: map[string][2]int16{}, finalized: map[string]int16{},
		epoch: resp.FinalizedFeaturesEpoch}
	for _, s := range resp.SupportedFeatures {
		seen.supported[s.Name] = [2]int16{s.MinVersion, s.MaxVersion}
	}
	for _, f := range resp.FinalizedFeatures {
		if f.MinVersionLevel != f.MaxVersionLevel {
			return seen, fmt.Errorf("feature %s finalized at %d-%d, not one level", f.Name, f.MinVersionLevel, f.MaxVersionLevel)
		}
		seen.finalized[f.Name] = f.MaxVersionLevel
	}
	return seen, nil
}

// strataSupported is what Strata advertises: Kafka 4.4's features, each up
// to the level Strata implements.
var strataSupported = map[string][2]int16{
	"metadata.version": {7, 13}, "transaction.version": {0, 2}, "group.version": {0, 1},
	"eligible.leader.replicas.version": {0, 0}, "share.version": {0, 0}, "streams.version": {0, 0},
}

// strataDefaults is what a new node or cluster finalizes.
var strataDefaults = map[string]int16{"metadata.version": 13, "transaction.version": 2, "group.version": 1}

// TestApiVersionsFeaturesOnOneNode: a fresh node finalizes the defaults at
// epoch 0 and advertises them from v3 on; v5 checks the cluster and node a
// client names, as Kafka 4.4's brokers do.
func TestApiVersionsFeaturesOnOneNode(t *testing.T) {
	e2e(t)
	p := startBroker(t, "")
	for _, v := range []int16{3, 4, 5} {
		seen, err := apiVersionsAt(p.addr, v, nil, -1)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if seen.code != 0 || !maps.Equal(seen.supported, strataSupported) || !maps.Equal(seen.finalized, strataDefaults) || seen.epoch != 0 {
			t.Fatalf("v%d: %v; want supported %v, finalized %v at epoch 0", v, seen, strataSupported, strataDefaults)
		}
	}
	m, err := metadataOf(p.addr)
	if err != nil || m.ClusterID == nil {
		t.Fatalf("metadata: %v", err)
	}
	other := "not-" + *m.ClusterID
	for _, c := range []struct {
		clusterID *string
		node      int32
		code      int16
	}{
		{m.ClusterID, 1, 0},
		{nil, 7, 0},
		{m.ClusterID, 2, kerr.RebootstrapRequired.Code},
		{&other, 1, kerr.RebootstrapRequired.Code},
		{m.ClusterID, -1, kerr.InvalidRequest.Code},
	} {
		seen, err := apiVersionsAt(p.addr, 5, c.clusterID, c.node)
		if err != nil {
			t.Fatal(err)
		}
		if seen.code != c.code || (c.code != 0) != (seen.keys == 0 && len(seen.finalized) == 0 && seen.epoch == -1) {
			t.Fatalf("v5 naming cluster %v node %d: %v; want code %d", c.clusterID, c.node, seen, c.code)
		}
	}
}

// TestClusterFinalizesFeaturesOnce: the first active controller finalizes
// the defaults in the metadata log, and every node answers them, on its
// client listener and its controller listener alike.
func TestClusterFinalizesFeaturesOnce(t *testing.T) {
	e2e(t)
	nodes := startCluster(t)
	waitFormed(t, nodes, 30*time.Second)
	waitFeatures(t, nodes, strataDefaults, 0)
	for _, n := range nodes {
		seen, err := apiVersionsAt(controllerAddr(t, n), 4, nil, -1)
		if err != nil || !maps.Equal(seen.supported, strataSupported) || !maps.Equal(seen.finalized, strataDefaults) || seen.epoch != 0 {
			t.Fatalf("node %d's controller listener: %v, %v", n.id, seen, err)
		}
		// The controller listener does not check v5's names.
		if seen, err := apiVersionsAt(controllerAddr(t, n), 5, kmsg.StringPtr("another"), 9); err != nil || seen.code != 0 {
			t.Fatalf("node %d's controller listener at v5: %v, %v", n.id, seen, err)
		}
	}
	for _, n := range nodes {
		if c := strings.Count(n.p.out.String(), "finalized the default feature levels"); c > 1 {
			t.Fatalf("node %d finalized the defaults %d times", n.id, c)
		}
	}
}

// waitFeatures waits until every running node's client listener answers
// want finalized at epoch.
func waitFeatures(t *testing.T, nodes []*clusterNode, want map[string]int16, epoch int64) {
	t.Helper()
	for _, n := range nodes {
		select {
		case <-n.p.done:
			continue
		default:
		}
		waitUntil(t, 15*time.Second, fmt.Sprintf("node %d finalizes %v at epoch %d", n.id, want, epoch), func() (bool, string) {
			seen, err := apiVersionsAt(n.addr, 4, nil, -1)
			if err != nil {
				return false, err.Error()
			}
			return maps.Equal(seen.finalized, want) && seen.epoch == epoch && maps.Equal(seen.supported, strataSupported), seen.String()
		})
	}
}
