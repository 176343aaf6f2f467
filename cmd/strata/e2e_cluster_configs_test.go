package main

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// retentionOf is node addr's log.retention.ms as DescribeConfigs answers
// it for BROKER resource name, with its source.
func retentionOf(addr, name string) (string, kmsg.ConfigSource, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.SetVersion(4)
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeBroker, name, []string{"log.retention.ms"}
	req.Resources = append(req.Resources, rr)
	resp, err := request(addr, req)
	if err != nil {
		return "", 0, err
	}
	r := resp.(*kmsg.DescribeConfigsResponse)
	if len(r.Resources) != 1 || r.Resources[0].ErrorCode != 0 || len(r.Resources[0].Configs) != 1 {
		return "", 0, fmt.Errorf("DescribeConfigs answered %+v", r.Resources)
	}
	c := r.Resources[0].Configs[0]
	if c.Value == nil {
		return "", c.Source, nil // Kafka's default for log.retention.ms is null
	}
	return *c.Value, c.Source, nil
}

// TestClusterAltersANodesBrokerConfig: a node's own BROKER config change,
// sent to it as Kafka's admin client sends it and forwarded to the active
// controller, is that node's, not the controller's (what
// kafka-reassign-partitions --verify does to clear every broker's
// throttles).
func TestClusterAltersANodesBrokerConfig(t *testing.T) {
	e2e(t)
	nodes := startCluster(t)
	ctrl := activeController(t, nodes)
	n := nodes[0]
	if n == ctrl {
		n = nodes[1]
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.SetVersion(1)
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(n.id))
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op, c.Value = "log.retention.ms", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("7200000")
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	waitUntil(t, 15*time.Second, fmt.Sprintf("node %d alters its own config", n.id), func() (bool, string) {
		resp, err := request(n.addr, req)
		if err != nil {
			return false, err.Error()
		}
		r := resp.(*kmsg.IncrementalAlterConfigsResponse)
		if len(r.Resources) != 1 || r.Resources[0].ErrorCode != 0 {
			return false, fmt.Sprintf("%+v", r.Resources)
		}
		return true, ""
	})
	waitUntil(t, 15*time.Second, fmt.Sprintf("node %d's log.retention.ms is dynamic", n.id), func() (bool, string) {
		v, src, err := retentionOf(n.addr, strconv.Itoa(int(n.id)))
		if err != nil {
			return false, err.Error()
		}
		return v == "7200000" && src == kmsg.ConfigSourceDynamicBrokerConfig, fmt.Sprintf("%s from %v", v, src)
	})
	if v, src, err := retentionOf(ctrl.addr, strconv.Itoa(int(ctrl.id))); err != nil || src == kmsg.ConfigSourceDynamicBrokerConfig {
		t.Errorf("the controller, node %d: log.retention.ms %s from %v (%v), want it untouched", ctrl.id, v, src, err)
	}

	// Another node's resource is refused by the node it is sent to, the
	// active controller or not, as Kafka's brokers do; the rest of the
	// request is still forwarded.
	for _, to := range []*clusterNode{ctrl, n} {
		other := rr
		other.ResourceName = strconv.Itoa(int(ctrl.id%3 + 1))
		if to != ctrl {
			other.ResourceName = strconv.Itoa(int(ctrl.id))
		}
		own := rr
		own.ResourceName = strconv.Itoa(int(to.id))
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{other, own}
		resp, err := request(to.addr, req)
		if err != nil {
			t.Fatal(err)
		}
		codes := map[string]int16{}
		for _, r := range resp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
			codes[r.ResourceName] = r.ErrorCode
		}
		if len(codes) != 2 || codes[other.ResourceName] != kerr.InvalidRequest.Code || codes[own.ResourceName] != 0 {
			t.Errorf("node %d asked to alter nodes %s and %s: error codes %v, want INVALID_REQUEST for the other node only", to.id, other.ResourceName, own.ResourceName, codes)
		}
	}
	if v, src, err := retentionOf(ctrl.addr, strconv.Itoa(int(ctrl.id))); err != nil || v != "7200000" || src != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Errorf("the controller, node %d, altered by itself: log.retention.ms %s from %v (%v)", ctrl.id, v, src, err)
	}
}
