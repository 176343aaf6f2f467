package broker

// ElectLeaders.
//
// Decided on the metadata image as the KRaft controller decides
// (ReplicationControlManager.electLeaders, electLeader below): a preferred
// election (0) moves leadership to each partition's first replica when it
// is in the ISR and unfenced, ELECTION_NOT_NEEDED when it leads already,
// PREFERRED_LEADER_NOT_AVAILABLE otherwise; an unclean one (1) gives a
// leaderless partition a leader, from the ISR first, else any unfenced
// replica, ELECTION_NOT_NEEDED when it has one. On a single node the only
// replica leads every partition, so every election is not needed. Unknown
// topics or partitions get UNKNOWN_TOPIC_OR_PARTITION; another
// ElectionType is INVALID_REQUEST at the top level (v1+). Null Topics
// means every partition, leaving out those that need no election. The
// answer comes once the new leaders are in the image; TimeoutMillis is
// ignored.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/metadata"
)

// registerElectLeaders serves ElectLeaders; its versions are here and nowhere else.
func registerElectLeaders(r *registry) { r.add(kmsg.ElectLeaders, 0, 2, handleElectLeaders) }

func handleElectLeaders(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.ElectLeadersRequest)
	resp := kmsg.NewPtrElectLeadersResponse()
	if !rc.authorizeCluster(OpAlter) {
		// Kafka's ElectLeadersRequest.getErrorResponse: the error at the top
		// and on every named partition.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		msg := kerr.ClusterAuthorizationFailed.Description
		for _, rt := range r.Topics {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewElectLeadersResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.ErrorMessage = p, resp.ErrorCode, &msg
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	if r.ElectionType != electPreferred && r.ElectionType != electUnclean {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	_, err := b.meta.Update(func(img *metadata.Image) ([]metadata.Record, error) {
		resp.Topics = resp.Topics[:0]
		var records []metadata.Record
		elect := func(st *kmsg.ElectLeadersResponseTopic, t *metadata.TopicImage, p int32, all bool) {
			change, code, msg := electLeader(img, t, st.Topic, p, r.ElectionType)
			if change != nil {
				records = append(records, *change)
			}
			if all && code == kerr.ElectionNotNeeded.Code {
				return // electing every partition leaves out those that need none, as Kafka
			}
			sp := kmsg.NewElectLeadersResponseTopicPartition()
			sp.Partition, sp.ErrorCode, sp.ErrorMessage = p, code, msg
			st.Partitions = append(st.Partitions, sp)
		}
		if r.Topics == nil {
			for _, t := range img.Topics.All() {
				st := kmsg.NewElectLeadersResponseTopic()
				st.Topic = t.Name
				for p := range t.Partitions {
					elect(&st, t, int32(p), true)
				}
				resp.Topics = append(resp.Topics, st)
			}
			return records, nil
		}
		for _, rt := range r.Topics {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				elect(&st, img.Topics.ByName(rt.Topic), p, false)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return records, nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// ElectLeaders' ElectionType values.
const (
	electPreferred int8 = 0
	electUnclean   int8 = 1
)

// electLeader is ReplicationControlManager.electLeader: a preferred
// election is not needed where the first replica leads, an unclean one
// where there is a leader; otherwise partitionChange elects. change is nil
// when no record is needed or none can be made.
func electLeader(img *metadata.Image, t *metadata.TopicImage, topic string, p int32, electionType int8) (change *metadata.PartitionChangeRecord, code int16, msg *string) {
	fail := func(e *kerr.Error, m string) (*metadata.PartitionChangeRecord, int16, *string) {
		return nil, e.Code, &m
	}
	if t == nil {
		return fail(kerr.UnknownTopicOrPartition, "No such topic as "+topic)
	}
	reg, ok := t.Partition(p)
	if !ok {
		return fail(kerr.UnknownTopicOrPartition, fmt.Sprintf("No such partition as %s-%d", topic, p))
	}
	if electionType == electPreferred && reg.Leader == reg.Replicas[0] || electionType == electUnclean && reg.Leader != metadata.NoLeader {
		return fail(kerr.ElectionNotNeeded, "Leader election not needed for topic partition")
	}
	c := newPartitionChange(img, t.ID, p, reg)
	c.election = electionPreferred
	if electionType == electUnclean {
		c.election = electionUnclean
	}
	if rec, ok := c.build(); ok {
		return &rec, 0, nil
	}
	if electionType == electPreferred {
		return fail(kerr.PreferredLeaderNotAvailable, kerr.PreferredLeaderNotAvailable.Description)
	}
	return fail(kerr.EligibleLeadersNotAvailable, kerr.EligibleLeadersNotAvailable.Description)
}
