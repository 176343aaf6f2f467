package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/metadata"
)

// TestClusterDescribeClusterIncludesFencedBrokers: DescribeCluster leaves a
// fenced broker out unless v2's IncludeFencedBrokers asks for it, and then
// marks it IsFenced, as Kafka's handleDescribeCluster (KIP-1073).
func TestClusterDescribeClusterIncludesFencedBrokers(t *testing.T) {
	c := startTestCluster(t, 3, nil)
	reg, _ := c.store.Image().Cluster.Broker(3)
	if _, err := c.store.Propose(metadata.RegisterBrokerRecord{BrokerID: 3, Endpoints: reg.Endpoints, Fenced: true}); err != nil {
		t.Fatal(err)
	}
	for _, include := range []bool{false, true} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeFencedBrokers, req.EndpointType = include, endpointTypeBroker
		resp := adminRoundTrip[*kmsg.DescribeClusterResponse](t, c.brokers[0], req, 2)
		fenced := map[int32]bool{}
		for _, br := range resp.Brokers {
			fenced[br.NodeID] = br.IsFenced
		}
		want := map[int32]bool{1: false, 2: false}
		if include {
			want[3] = true
		}
		if resp.ErrorCode != 0 || len(fenced) != len(want) || fenced[1] || fenced[2] || fenced[3] != want[3] {
			t.Errorf("IncludeFencedBrokers %v: error %d, brokers (id: fenced) %v, want %v", include, resp.ErrorCode, fenced, want)
		}
	}
}
