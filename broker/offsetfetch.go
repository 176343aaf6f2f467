package broker

// OffsetFetch.
//
// Committed offsets of a group (v8+: of several groups), -1 with leader
// epoch -1 for a partition without one; a null topic list (v2+) returns
// every committed partition. A group that does not exist has no offsets
// and no error, as in Kafka. Until __consumer_offsets is loaded the group
// gets COORDINATOR_LOAD_IN_PROGRESS (per partition before v2, which has no
// group-level error). With require_stable (v7+) a partition whose
// transactional offset commit awaits its transaction's end gets
// UNSTABLE_OFFSET_COMMIT and offset -1, as in Kafka (the client retries). The
// v9 member id and epoch apply to KIP-848 consumer groups: when given, they
// must name a member at its current epoch (UNKNOWN_MEMBER_ID,
// STALE_MEMBER_EPOCH), as Kafka; classic groups ignore them. v10 (KIP-848)
// names topics by id and answers by id: an id the metadata image does not
// know is UNKNOWN_TOPIC_ID with offset -1 for each partition asked, and a
// fetch of all topics leaves out the committed topics that no longer exist
// (they have no id to answer with).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/metadata"
)

// registerOffsetFetch serves OffsetFetch; its versions are here and nowhere else.
func registerOffsetFetch(r *registry) { r.add(kmsg.OffsetFetch, 1, 10, handleOffsetFetch) }

func handleOffsetFetch(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.OffsetFetchRequest)
	resp := kmsg.NewPtrOffsetFetchResponse()
	if req.Version >= 8 {
		byID := req.Version >= 10
		img := b.meta.Image()
		for _, rg := range r.Groups {
			var topics []coordinator.TopicPartitions
			var unknownIDs []kmsg.OffsetFetchRequestGroupTopic
			var ids map[string][16]byte
			if rg.Topics != nil {
				topics = []coordinator.TopicPartitions{}
				names := make([]string, len(rg.Topics))
				for i, t := range rg.Topics {
					names[i] = t.Topic
				}
				if byID {
					names = topicNamesByID(b, rg.Topics, func(t kmsg.OffsetFetchRequestGroupTopic) [16]byte { return t.TopicID })
					ids = make(map[string][16]byte, len(names))
				}
				for i, t := range rg.Topics {
					if byID && names[i] == "" {
						unknownIDs = append(unknownIDs, t)
						continue
					}
					if byID {
						ids[names[i]] = t.TopicID
					}
					topics = append(topics, coordinator.TopicPartitions{Topic: names[i], Partitions: t.Partitions})
				}
			}
			memberEpoch := int32(-1)
			var memberID *string
			if req.Version >= 9 {
				memberID, memberEpoch = rg.MemberID, rg.MemberEpoch
			}
			offsets, denied, err := authorizedOffsets(rc, rg.Group, topics, func(topics []coordinator.TopicPartitions) ([]coordinator.FetchedOffset, *kerr.Error) {
				return b.groups.FetchOffsetsAs(rg.Group, memberID, memberEpoch, topics)
			})
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = rg.Group
			if err != nil {
				g.ErrorCode = err.Code
			}
			for _, o := range offsets {
				if n := len(g.Topics); n == 0 || g.Topics[n-1].Topic != o.Topic {
					t := kmsg.NewOffsetFetchResponseGroupTopic()
					t.Topic = o.Topic
					if byID {
						if t.TopicID = ids[o.Topic]; rg.Topics == nil {
							t.TopicID = topicID(img, o.Topic)
						}
						if t.TopicID == ([16]byte{}) {
							continue // committed to a topic that no longer exists
						}
					}
					g.Topics = append(g.Topics, t)
				}
				p := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				p.Partition, p.Offset, p.LeaderEpoch = o.Partition, o.Offset, o.LeaderEpoch
				md := o.Metadata
				p.Metadata = &md
				if denied[o.Topic] {
					p.ErrorCode = kerr.TopicAuthorizationFailed.Code
				} else if r.RequireStable && b.groups.HasPendingTxnOffset(rg.Group, o.Topic, o.Partition) {
					p.Offset, p.LeaderEpoch, p.ErrorCode = -1, -1, kerr.UnstableOffsetCommit.Code
				}
				t := &g.Topics[len(g.Topics)-1]
				t.Partitions = append(t.Partitions, p)
			}
			if err == nil {
				for _, u := range unknownIDs {
					t := kmsg.NewOffsetFetchResponseGroupTopic()
					t.TopicID = u.TopicID
					for _, part := range u.Partitions {
						p := kmsg.NewOffsetFetchResponseGroupTopicPartition()
						p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = part, -1, -1, kmsg.StringPtr("")
						p.ErrorCode = kerr.UnknownTopicID.Code
						t.Partitions = append(t.Partitions, p)
					}
					g.Topics = append(g.Topics, t)
				}
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil
	}
	var topics []coordinator.TopicPartitions
	if r.Topics != nil || req.Version < 2 {
		topics = []coordinator.TopicPartitions{}
		for _, t := range r.Topics {
			topics = append(topics, coordinator.TopicPartitions{Topic: t.Topic, Partitions: t.Partitions})
		}
	}
	offsets, denied, err := authorizedOffsets(rc, r.Group, topics, func(topics []coordinator.TopicPartitions) ([]coordinator.FetchedOffset, *kerr.Error) {
		return b.groups.FetchOffsets(r.Group, topics)
	})
	if err != nil && req.Version >= 2 {
		resp.ErrorCode = err.Code
		return resp, nil
	}
	if err != nil {
		for _, t := range topics {
			for _, p := range t.Partitions {
				offsets = append(offsets, coordinator.FetchedOffset{Topic: t.Topic, Partition: p, Offset: -1, LeaderEpoch: -1})
			}
		}
	}
	for _, o := range offsets {
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != o.Topic {
			t := kmsg.NewOffsetFetchResponseTopic()
			t.Topic = o.Topic
			resp.Topics = append(resp.Topics, t)
		}
		p := kmsg.NewOffsetFetchResponseTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch = o.Partition, o.Offset, o.LeaderEpoch
		md := o.Metadata
		p.Metadata = &md
		p.ErrorCode = errCode(err)
		if denied[o.Topic] {
			p.ErrorCode = kerr.TopicAuthorizationFailed.Code
		} else if err == nil && req.Version >= 7 && r.RequireStable && b.groups.HasPendingTxnOffset(r.Group, o.Topic, o.Partition) {
			p.Offset, p.LeaderEpoch, p.ErrorCode = -1, -1, kerr.UnstableOffsetCommit.Code
		}
		t := &resp.Topics[len(resp.Topics)-1]
		t.Partitions = append(t.Partitions, p)
	}
	return resp, nil
}

// authorizedOffsets fetches a group's committed offsets as Kafka's
// handleOffsetFetchRequestFromCoordinator authorizes them: DESCRIBE on the
// group, then on each topic. Topics refused DESCRIBE are not fetched: when
// named in the request they come back with offset -1 and are in denied
// (TOPIC_AUTHORIZATION_FAILED); a fetch of all topics leaves them out.
// topics nil means all topics.
func authorizedOffsets(rc *reqCtx, group string, topics []coordinator.TopicPartitions,
	fetch func([]coordinator.TopicPartitions) ([]coordinator.FetchedOffset, *kerr.Error),
) (offsets []coordinator.FetchedOffset, denied map[string]bool, err *kerr.Error) {
	if !rc.authorize(OpDescribe, ResourceGroup, group) {
		return nil, nil, kerr.GroupAuthorizationFailed
	}
	if topics == nil {
		offsets, err = fetch(nil)
		names := make([]string, len(offsets))
		for i, o := range offsets {
			names[i] = o.Topic
		}
		allowed := rc.authorizedTopics(OpDescribe, names)
		return slices.DeleteFunc(offsets, func(o coordinator.FetchedOffset) bool { return !allowed[o.Topic] }), nil, err
	}
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = t.Topic
	}
	allowed := rc.authorizedTopics(OpDescribe, names)
	permitted := []coordinator.TopicPartitions{}
	for _, t := range topics {
		if allowed[t.Topic] {
			permitted = append(permitted, t)
		}
	}
	if offsets, err = fetch(permitted); err != nil {
		return offsets, nil, err
	}
	for _, t := range topics {
		if allowed[t.Topic] {
			continue
		}
		if denied == nil {
			denied = make(map[string]bool)
		}
		denied[t.Topic] = true
		for _, p := range t.Partitions {
			offsets = append(offsets, coordinator.FetchedOffset{Topic: t.Topic, Partition: p, Offset: -1, LeaderEpoch: -1})
		}
	}
	return offsets, denied, nil
}

func errCode(err *kerr.Error) int16 {
	if err == nil {
		return 0
	}
	return err.Code
}

// topicID is the id of the topic named name in img, zero when there is none.
func topicID(img *metadata.Image, name string) [16]byte {
	if t := img.Topics.ByName(name); t != nil {
		return t.ID
	}
	return [16]byte{}
}
