package main

import (
	"fmt"
	"maps"
	"slices"
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
	"metadata.version": {7, 14}, "transaction.version": {0, 2}, "group.version": {0, 1},
	"eligible.leader.replicas.version": {0, 0}, "share.version": {0, 2}, "streams.version": {0, 1},
}

// strataDefaults is what a new node or cluster finalizes.
var strataDefaults = map[string]int16{"metadata.version": 14, "transaction.version": 2, "group.version": 1, "share.version": 2, "streams.version": 1}

// clusterSupported is what a cluster's nodes advertise: strataSupported
// and kraft.version 0-1 (TestClusterKRaftVersion).
var clusterSupported = func() map[string][2]int16 {
	m := maps.Clone(strataSupported)
	m["kraft.version"] = [2]int16{0, 1}
	return m
}()

// inCluster is finalized as a cluster's nodes answer it, with kraft.version 1.
func inCluster(finalized map[string]int16) map[string]int16 {
	m := maps.Clone(finalized)
	m["kraft.version"] = 1
	return m
}

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
		if err != nil || !maps.Equal(seen.supported, clusterSupported) || !maps.Equal(seen.finalized, inCluster(strataDefaults)) || seen.epoch != 0 {
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
// want (and kraft.version 1) finalized at epoch.
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
			return maps.Equal(seen.finalized, inCluster(want)) && seen.epoch == epoch && maps.Equal(seen.supported, clusterSupported), seen.String()
		})
	}
}

// featureUpdate is one update of an UpdateFeatures request.
type featureUpdate struct {
	name  string
	level int16
	typ   int8 // 1 upgrade, 2 safe downgrade, 3 unsafe downgrade
}

// updateFeatures sends UpdateFeatures at version to addr and returns its
// top-level code and message and the features its results list.
func updateFeatures(t *testing.T, addr string, version int16, validateOnly bool, updates ...featureUpdate) (int16, string, []string) {
	t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.Version, req.ValidateOnly, req.TimeoutMillis = version, validateOnly, 30000
	for _, u := range updates {
		fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		fu.Feature, fu.MaxVersionLevel, fu.UpgradeType, fu.AllowDowngrade = u.name, u.level, u.typ, u.typ > 1
		req.FeatureUpdates = append(req.FeatureUpdates, fu)
	}
	kresp, err := request(addr, req)
	if err != nil {
		t.Fatalf("UpdateFeatures: %v", err)
	}
	resp := kresp.(*kmsg.UpdateFeaturesResponse)
	var results []string
	for _, r := range resp.Results {
		msg := "<nil>"
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		results = append(results, fmt.Sprintf("%s %d %s", r.Feature, r.ErrorCode, msg))
	}
	msg := ""
	if resp.ErrorMessage != nil {
		msg = *resp.ErrorMessage
	}
	return resp.ErrorCode, msg, results
}

// TestUpdateFeaturesOnOneNode: UpdateFeatures refuses what Kafka 4.4's
// controller refuses, with its messages, changes nothing when validating
// only, and a change it makes moves the epoch and survives a restart.
func TestUpdateFeaturesOnOneNode(t *testing.T) {
	e2e(t)
	p := startBroker(t, "")
	const failed = "The update failed for all features since the following feature had an error: "
	for _, c := range []struct {
		version int16
		updates []featureUpdate
		msg     string
	}{
		{1, []featureUpdate{{"foo.version", 1, 1}}, "Invalid update version 1 for feature foo.version. Local controller 1 does not support this feature."},
		{1, []featureUpdate{{"foo.version", 0, 2}}, "Invalid update version 0 for feature foo.version. Feature foo.version not found."},
		{2, []featureUpdate{{"group.version", 2, 1}}, "Invalid update version 2 for feature group.version. Local controller 1 only supports versions 0-1"},
		{2, []featureUpdate{{"transaction.version", 3, 1}}, "Invalid update version 3 for feature transaction.version. Local controller 1 only supports versions 0-2"},
		{1, []featureUpdate{{"group.version", 0, 1}}, "Invalid update version 0 for feature group.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."},
		{0, []featureUpdate{{"group.version", 0, 2}}, "Invalid update version 0 for feature group.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."},
		{1, []featureUpdate{{"group.version", 1, 4}}, "Invalid update version 1 for feature group.version. The controller does not support the given upgrade type."},
		{1, []featureUpdate{{"group.version", -1, 2}}, "Invalid update version -1 for feature group.version. A feature version cannot be less than 0."},
		{1, []featureUpdate{{"metadata.version", 15, 1}}, "Invalid update version 15 for feature metadata.version. Local controller 1 only supports versions 7-14"},
		{1, []featureUpdate{{"metadata.version", 12, 2}}, "Unsupported metadata.version downgrade from 14 to 12. Refusing to perform the requested downgrade because it might delete metadata information."},
		{1, []featureUpdate{{"metadata.version", 7, 3}}, "Unsupported metadata.version downgrade from 14 to 7. Unsafe metadata downgrade is not supported in this version."},
		{1, []featureUpdate{{"group.version", 0, 2}, {"share.version", 3, 1}}, "Invalid update version 3 for feature share.version. Local controller 1 only supports versions 0-2"},
	} {
		code, msg, results := updateFeatures(t, p.addr, c.version, false, c.updates...)
		if code != kerr.InvalidUpdateVersion.Code || msg != failed+c.msg || len(results) != 0 {
			t.Errorf("v%d %v: code %d %q, results %v; want INVALID_UPDATE_VERSION %q", c.version, c.updates, code, msg, results, failed+c.msg)
		}
	}
	// Nothing refused, nothing validated only, changed anything.
	code, _, results := updateFeatures(t, p.addr, 1, true, featureUpdate{"group.version", 0, 2})
	if code != 0 || !slices.Equal(results, []string{"group.version 0 NONE"}) {
		t.Fatalf("validate-only downgrade: code %d, results %v", code, results)
	}
	if seen, err := apiVersionsAt(p.addr, 4, nil, -1); err != nil || !maps.Equal(seen.finalized, strataDefaults) || seen.epoch != 0 {
		t.Fatalf("after refused and validate-only updates: %v, %v", seen, err)
	}

	if code, msg, results := updateFeatures(t, p.addr, 2, false, featureUpdate{"group.version", 0, 2}); code != 0 || len(results) != 0 {
		t.Fatalf("v2 safe downgrade of group.version: code %d %q, results %v", code, msg, results)
	}
	downgraded := map[string]int16{"metadata.version": 14, "transaction.version": 2, "share.version": 2, "streams.version": 1}
	if seen, err := apiVersionsAt(p.addr, 4, nil, -1); err != nil || !maps.Equal(seen.finalized, downgraded) || seen.epoch != 1 {
		t.Fatalf("after the downgrade: %v, %v", seen, err)
	}
	p.kill()
	p = p.restart()
	if seen, err := apiVersionsAt(p.addr, 4, nil, -1); err != nil || !maps.Equal(seen.finalized, downgraded) || seen.epoch != 1 {
		t.Fatalf("after kill -9 and restart: %v, %v; want %v at epoch 1", seen, err, downgraded)
	}
	if code, msg, _ := updateFeatures(t, p.addr, 1, false, featureUpdate{"group.version", 1, 1}); code != 0 {
		t.Fatalf("upgrade of group.version: %d %q", code, msg)
	}
	if seen, err := apiVersionsAt(p.addr, 4, nil, -1); err != nil || !maps.Equal(seen.finalized, strataDefaults) || seen.epoch != 2 {
		t.Fatalf("after the upgrade: %v, %v", seen, err)
	}
}

// TestClusterUpdateFeaturesSurvivesFailover: an UpdateFeatures sent to a
// node that is not the active controller is forwarded, and answered once
// that node's image shows it; the level is the same on every node, and
// survives the active controller's kill -9, the next controller changing
// it again, and the killed node's return.
func TestClusterUpdateFeaturesSurvivesFailover(t *testing.T) {
	e2e(t)
	nodes := startCluster(t)
	waitFormed(t, nodes, 30*time.Second)
	waitFeatures(t, nodes, strataDefaults, 0)
	ctrl := activeController(t, nodes)
	via := nodes[0]
	if via == ctrl {
		via = nodes[1]
	}
	if code, msg, results := updateFeatures(t, via.addr, 1, false, featureUpdate{"group.version", 0, 2}); code != 0 || !slices.Equal(results, []string{"group.version 0 NONE"}) {
		t.Fatalf("downgrade through node %d: %d %q %v", via.id, code, msg, results)
	}
	downgraded := map[string]int16{"metadata.version": 14, "transaction.version": 2, "share.version": 2, "streams.version": 1}
	if seen, err := apiVersionsAt(via.addr, 4, nil, -1); err != nil || !maps.Equal(seen.finalized, inCluster(downgraded)) || seen.epoch != 1 {
		t.Fatalf("node %d right after its answer: %v, %v", via.id, seen, err)
	}
	waitFeatures(t, nodes, downgraded, 1)

	ctrl.p.kill()
	next := activeController(t, nodes)
	waitFeatures(t, nodes, downgraded, 1)
	if code, msg, _ := updateFeatures(t, next.addr, 2, false, featureUpdate{"group.version", 1, 1}); code != 0 {
		t.Fatalf("upgrade on the next controller, node %d: %d %q", next.id, code, msg)
	}
	ctrl.start(t)
	waitFeatures(t, nodes, strataDefaults, 2)
}
