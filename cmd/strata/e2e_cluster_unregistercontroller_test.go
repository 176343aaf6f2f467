package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterUnregisterController runs Kafka's kafka-cluster
// unregister-controller through a broker (forwarded) and against the
// controllers (--bootstrap-controller): at Strata's metadata.version it
// prints what it prints against a Kafka 4.4 cluster below 4.4-IV2, the
// active controller answers UNSUPPORTED_VERSION with Kafka's message
// (INVALID_REQUEST when asked to unregister itself), a controller that is
// not active NOT_CONTROLLER, and the quorum keeps its three voters.
func TestClusterUnregisterController(t *testing.T) {
	e2e(t)
	controllers, brokers := startSplitCluster(t, false)
	via := brokers[0].addr
	var leader int32
	waitUntil(t, 20*time.Second, "a controller leads the quorum", func() (bool, string) {
		id, err := quorumLeader(via)
		leader = id
		return err == nil && id >= 1 && id <= 3, fmt.Sprint(id, err)
	})
	other := strconv.Itoa(int(leader%3 + 1)) // a controller that is not the active one
	var bootstrap []string
	for _, c := range controllers {
		bootstrap = append(bootstrap, c.addr)
	}
	const unsupported = "The target cluster does not support the controller unregistration API."
	for _, target := range [][]string{{"--bootstrap-server", via}, {"--bootstrap-controller", strings.Join(bootstrap, ",")}} {
		out, stderr, err := runKafkaTool(t, installedKafkaTools(t), "", "org.apache.kafka.tools.ClusterTool",
			append([]string{"unregister-controller"}, append(target, "--id", other)...)...)
		if err != nil || strings.TrimSpace(out) != unsupported {
			t.Errorf("kafka-cluster unregister-controller %v: %v, printed %q (%s), want %q", target, err, out, stderr, unsupported)
		}
	}

	req := kmsg.NewPtrUnregisterControllerRequest()
	req.ControllerID = leader%3 + 1
	for _, c := range append([]*clusterNode{brokers[1]}, controllers...) {
		resp, err := request(c.addr, req)
		if err != nil {
			t.Fatalf("UnregisterController to node %d: %v", c.id, err)
		}
		r := resp.(*kmsg.UnregisterControllerResponse)
		want, msg := kerr.UnsupportedVersion.Code, "The current MetadataVersion is too old to support controller unregistration."
		if c.id <= 3 && c.id != leader {
			want, msg = kerr.NotController.Code, ""
		}
		got := ""
		if r.ErrorMessage != nil {
			got = *r.ErrorMessage
		}
		if r.ErrorCode != want || got != msg {
			t.Errorf("node %d (leader %d) answered %v %q, want %v %q", c.id, leader, kerr.ErrorForCode(r.ErrorCode), got, kerr.ErrorForCode(want), msg)
		}
	}
	req.ControllerID = leader
	resp, err := request(via, req)
	if r, ok := resp.(*kmsg.UnregisterControllerResponse); err != nil || !ok || r.ErrorCode != kerr.InvalidRequest.Code ||
		r.ErrorMessage == nil || *r.ErrorMessage != "Controller cannot unregister itself while it is active." {
		t.Errorf("unregistering the active controller %d: %+v, %v; want INVALID_REQUEST", leader, resp, err)
	}
	if ids, err := quorumVoters(via); err != nil || !slices.Equal(ids, []int32{1, 2, 3}) {
		t.Fatalf("voters after unregister-controller: %v, %v", ids, err)
	}
}
