package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestReassignmentKeepsReplicationFactor checks AlterPartitionReassignments
// v1 (KIP-860) as Kafka 4.4's controller answers it: with
// AllowReplicationFactorChange false a target of the same size is taken and
// one of another size is INVALID_REPLICATION_FACTOR with Kafka's message,
// counted during a reassignment against its target; with it true the size
// may change; the answer echoes the flag.
func TestReassignmentKeepsReplicationFactor(t *testing.T) {
	c := startTestCluster(t, 3, nil)
	c.createTopic(t, "rf", [][]int32{{1, 2}})
	cl := newClient(t, c.brokers[1])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reassign := func(allow bool, replicas ...int32) (*kmsg.AlterPartitionAssignmentsResponse, int16, string) {
		t.Helper()
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		req.AllowReplicationFactorChange = allow
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rt.Topic = "rf"
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = 0, replicas
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Version != 1 {
			t.Fatalf("answered at v%d, want v1", resp.Version)
		}
		p := resp.Topics[0].Partitions[0]
		msg := ""
		if p.ErrorMessage != nil {
			msg = *p.ErrorMessage
		}
		return resp, p.ErrorCode, msg
	}
	for _, tc := range []struct {
		name     string
		allow    bool
		replicas []int32
		code     int16
		msg      string
	}{
		{"the same size, not allowed to change", false, []int32{2, 3}, 0, ""},
		{"bigger, not allowed (against the reassignment's target)", false, []int32{1, 2, 3}, kerr.InvalidReplicationFactor.Code, "The replication factor is changed from 2 to 3"},
		{"smaller, not allowed", false, []int32{3}, kerr.InvalidReplicationFactor.Code, "The replication factor is changed from 2 to 1"},
		{"bigger, allowed", true, []int32{1, 2, 3}, 0, ""},
	} {
		resp, code, msg := reassign(tc.allow, tc.replicas...)
		if code != tc.code || msg != tc.msg || resp.AllowReplicationFactorChange != tc.allow {
			t.Errorf("%s: %v %q, echoed %v; want %v %q, %v", tc.name, kerr.ErrorForCode(code), msg, resp.AllowReplicationFactorChange,
				kerr.ErrorForCode(tc.code), tc.msg, tc.allow)
		}
	}
}
