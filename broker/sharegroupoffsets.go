package broker

// DescribeShareGroupOffsets (v0-1), AlterShareGroupOffsets (v0) and
// DeleteShareGroupOffsets (v0) (KIP-932), Kafka 4.4's versions, as
// Kafka's KafkaApis and GroupCoordinatorService serve them:
//
//   - Describe: DESCRIBE on each group (else GROUP_AUTHORIZATION_FAILED).
//     Null topics describe every partition whose share state the group
//     initialized, the topics the caller may not DESCRIBE left out; named
//     topics the caller may not DESCRIBE are TOPIC_AUTHORIZATION_FAILED
//     per partition, and a topic that does not exist has start offset -1.
//     The group itself is not looked up: an unknown group's partitions
//     have start offset -1. Each partition is answered from
//     ReadShareGroupStateSummary: its start offset and leader epoch (-1
//     and 0 when the summary failed) and, when the state has a start
//     offset and a delivery-complete count, the lag Kafka 4.4 computes:
//     the partition's latest offset (high watermark) less the start offset
//     and the delivery-complete count (else -1); a partition whose latest
//     offset cannot be read has that error.
//   - Alter: READ on the group (else GROUP_AUTHORIZATION_FAILED for the
//     whole request); a topic the caller may not READ is
//     TOPIC_AUTHORIZATION_FAILED, one that does not exist
//     UNKNOWN_TOPIC_OR_PARTITION, on each of its partitions. The group
//     coordinator creates the share group if needed, refuses one with
//     members (NON_EMPTY_GROUP) and initializes the share state of the
//     partitions (InitializeShareGroupState) at the new start offsets.
//   - Delete: DELETE on the group; a topic the caller may not READ is
//     TOPIC_AUTHORIZATION_FAILED. GROUP_ID_NOT_FOUND and NON_EMPTY_GROUP
//     answer the whole request; a topic without share state, or unknown,
//     is UNKNOWN_TOPIC_OR_PARTITION; the others' share state is deleted
//     (DeleteShareGroupState).
//
// Below share.version 1 all three answer UNSUPPORTED_VERSION first, as
// Kafka 4.4's KafkaApis (Describe in each group, Alter and Delete with
// the code's message).
//
// The share state summaries go through the share-state client
// (sharepersister.go) to each key's share coordinator, wherever it is.
// The lag's latest offset is read on the partition's leader (here, or
// with a ListOffsets to it), as Kafka's.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerShareGroupOffsets serves the share group offset keys; their
// versions are here and nowhere else.
func registerShareGroupOffsets(r *registry) {
	r.add(kmsg.DescribeShareGroupOffsets, 0, 1, handleDescribeShareGroupOffsets)
	r.add(kmsg.AlterShareGroupOffsets, 0, 0, handleAlterShareGroupOffsets)
	r.add(kmsg.DeleteShareGroupOffsets, 0, 0, handleDeleteShareGroupOffsets)
}

func handleDescribeShareGroupOffsets(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := kmsg.NewPtrDescribeShareGroupOffsetsResponse()
	for _, rg := range r.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		switch {
		case !rc.svc.shareGroupsEnabled():
			g.ErrorCode = kerr.UnsupportedVersion.Code
		case !rc.authorize(OpDescribe, ResourceGroup, rg.GroupID):
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
		case rg.Topics == nil:
			rc.describeAllShareOffsets(&g)
		case len(rg.Topics) > 0:
			rc.describeShareOffsets(&g, rg.Topics)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

// describeAllShareOffsets describes every initialized share-partition of
// g's group whose topic the caller may DESCRIBE.
func (rc *reqCtx) describeAllShareOffsets(g *kmsg.DescribeShareGroupOffsetsResponseGroup) {
	parts, err := rc.svc.groups.InitializedSharePartitions(g.GroupID)
	if err != nil {
		g.ErrorCode, g.ErrorMessage = err.Code, kafkaMessage(err)
		return
	}
	img := rc.svc.meta.Image()
	names := map[[16]byte]string{}
	var topicNames []string
	for tid := range parts {
		if ti := img.Topics.ByID(tid); ti != nil {
			names[tid] = ti.Name
			topicNames = append(topicNames, ti.Name)
		}
	}
	allowed := rc.authorizedTopics(OpDescribe, topicNames)
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.GroupID = g.GroupID
	slices.Sort(topicNames)
	for _, name := range topicNames {
		if allowed[name] {
			tid := img.Topics.ByName(name).ID
			req.Topics = append(req.Topics, summaryTopic(tid, parts[tid]))
		}
	}
	g.Topics = rc.svc.shareOffsets(req, names)
}

// describeShareOffsets describes the named topics' partitions.
func (rc *reqCtx) describeShareOffsets(g *kmsg.DescribeShareGroupOffsetsResponseGroup, topics []kmsg.DescribeShareGroupOffsetsRequestGroupTopic) {
	names := make([]string, 0, len(topics))
	for _, t := range topics {
		names = append(names, t.Topic)
	}
	allowed := rc.authorizedTopics(OpDescribe, names)
	img := rc.svc.meta.Image()
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.GroupID = g.GroupID
	ids := map[[16]byte]string{}
	var missing, refused []kmsg.DescribeShareGroupOffsetsResponseGroupTopic
	for _, t := range topics {
		rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		rt.Topic = t.Topic
		ti := img.Topics.ByName(t.Topic)
		switch {
		case !allowed[t.Topic]:
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset = p, -1
				rp.ErrorCode, rp.ErrorMessage = kerr.TopicAuthorizationFailed.Code, kafkaMessage(kerr.TopicAuthorizationFailed)
				rt.Partitions = append(rt.Partitions, rp)
			}
			refused = append(refused, rt)
		case ti == nil:
			// As Kafka: no data rather than an error, as OffsetFetch.
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				rp.Partition, rp.StartOffset = p, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			missing = append(missing, rt)
		default:
			ids[ti.ID] = t.Topic
			req.Topics = append(req.Topics, summaryTopic(ti.ID, t.Partitions))
		}
	}
	g.Topics = append(append(missing, rc.svc.shareOffsets(req, ids)...), refused...)
}

func summaryTopic(tid [16]byte, parts []int32) kmsg.ReadShareGroupStateSummaryRequestTopic {
	t := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	t.TopicID = tid
	for _, p := range parts {
		rp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
		rp.Partition = p
		t.Partitions = append(t.Partitions, rp)
	}
	return t
}

// shareOffsets reads req's share state summaries and answers each
// partition with its start offset, leader epoch and lag.
func (b *services) shareOffsets(req *kmsg.ReadShareGroupStateSummaryRequest, names map[[16]byte]string) []kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
	if len(req.Topics) == 0 {
		return nil
	}
	var out []kmsg.DescribeShareGroupOffsetsResponseGroupTopic
	for _, t := range b.sharing.state.readSummary(req).Topics {
		rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		rt.TopicID, rt.Topic = t.TopicID, names[t.TopicID]
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			rp.Partition = p.Partition
			switch {
			case p.ErrorCode != 0:
				rp.StartOffset = -1
			case p.StartOffset == -1 || p.DeliveryCompleteCount == -1:
				rp.StartOffset, rp.LeaderEpoch = p.StartOffset, p.LeaderEpoch
			default:
				latest, err := b.latestOffset(rt.Topic, p.Partition)
				if err != nil {
					rp.ErrorCode, rp.ErrorMessage = err.Code, kafkaMessage(err)
					break
				}
				rp.StartOffset, rp.LeaderEpoch = p.StartOffset, p.LeaderEpoch
				rp.Lag = latest - p.StartOffset - int64(p.DeliveryCompleteCount)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}

// latestOffset is a partition's high watermark, read on its leader: here,
// or with a ListOffsets (latest, read_uncommitted) sent to the leader over
// the inter-broker listener, as Kafka's coordinator asks the leader.
func (b *services) latestOffset(topic string, partition int32) (int64, *kerr.Error) {
	addr, err := b.sharing.state.leaderAddr(topic, partition)
	if err != nil {
		return 0, kerr.NotLeaderForPartition
	}
	if addr != "" {
		return b.remoteLatestOffset(addr, topic, partition)
	}
	t := b.logs.Topic(topic)
	p := lookupPartition(t, partition)
	if p == nil {
		return 0, missingPartition(t, partition)
	}
	if _, err := b.replicas.Partition(p); err != nil {
		return 0, kerr.TypedErrorForCode(b.errorCode(kmsg.ListOffsets, err))
	}
	return p.Log.HighWatermark(), nil
}

// remoteLatestOffset asks the leader at addr for the latest offset of a
// partition.
func (b *services) remoteLatestOffset(addr, topic string, partition int32) (int64, *kerr.Error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(7)
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := b.sharing.state.peers.roundTrip(addr, req, shareStateTimeout)
	if err != nil {
		return 0, kerr.NotLeaderForPartition
	}
	lr := resp.(*kmsg.ListOffsetsResponse)
	if len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 1 {
		return 0, kerr.UnknownServerError
	}
	got := lr.Topics[0].Partitions[0]
	if got.ErrorCode != 0 {
		return 0, kerr.TypedErrorForCode(got.ErrorCode)
	}
	return got.Offset, nil
}

func handleAlterShareGroupOffsets(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.AlterShareGroupOffsetsRequest)
	for _, refusal := range []struct {
		err *kerr.Error
		ok  func() bool
	}{
		{kerr.UnsupportedVersion, rc.svc.shareGroupsEnabled},
		{kerr.GroupAuthorizationFailed, func() bool { return rc.authorize(OpRead, ResourceGroup, r.GroupID) }},
	} {
		if !refusal.ok() {
			resp := kmsg.NewPtrAlterShareGroupOffsetsResponse()
			resp.ErrorCode, resp.ErrorMessage = refusal.err.Code, kafkaMessage(refusal.err)
			return resp, nil
		}
	}
	img := rc.svc.meta.Image()
	var refused []kmsg.AlterShareGroupOffsetsResponseTopic
	let := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	let.GroupID = r.GroupID
	for _, t := range r.Topics {
		var code *kerr.Error
		ti := img.Topics.ByName(t.Topic)
		switch {
		case !rc.authorize(OpRead, ResourceTopic, t.Topic):
			code = kerr.TopicAuthorizationFailed
		case ti == nil:
			code = kerr.UnknownTopicOrPartition
		default:
			let.Topics = append(let.Topics, t)
			continue
		}
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		if ti != nil {
			rt.TopicID = ti.ID
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code.Code, kafkaMessage(code)
			rt.Partitions = append(rt.Partitions, rp)
		}
		refused = append(refused, rt)
	}
	resp := rc.svc.groups.AlterShareGroupOffsets(let)
	if resp.ErrorCode != 0 {
		return resp, nil
	}
	resp.Topics = append(refused, resp.Topics...)
	return resp, nil
}

func handleDeleteShareGroupOffsets(rc *reqCtx) (kmsg.Response, error) {
	r := rc.req.Body.(*kmsg.DeleteShareGroupOffsetsRequest)
	for _, refusal := range []struct {
		err *kerr.Error
		ok  func() bool
	}{
		{kerr.UnsupportedVersion, rc.svc.shareGroupsEnabled},
		{kerr.GroupAuthorizationFailed, func() bool { return rc.authorize(OpDelete, ResourceGroup, r.GroupID) }},
	} {
		if !refusal.ok() {
			resp := kmsg.NewPtrDeleteShareGroupOffsetsResponse()
			resp.ErrorCode, resp.ErrorMessage = refusal.err.Code, kafkaMessage(refusal.err)
			return resp, nil
		}
	}
	var refused []kmsg.DeleteShareGroupOffsetsResponseTopic
	let := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	let.GroupID = r.GroupID
	for _, t := range r.Topics {
		if rc.authorize(OpRead, ResourceTopic, t.Topic) {
			let.Topics = append(let.Topics, t)
			continue
		}
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
		rt.ErrorMessage = kafkaMessage(kerr.TopicAuthorizationFailed)
		refused = append(refused, rt)
	}
	resp := rc.svc.groups.DeleteShareGroupOffsets(let)
	if resp.ErrorCode != 0 {
		return resp, nil
	}
	resp.Topics = append(refused, resp.Topics...)
	return resp, nil
}

// kafkaMessage is Kafka's Errors.message() of err.
func kafkaMessage(err *kerr.Error) *string {
	if msg := refusalMessages[err]; msg != "" {
		return &msg
	}
	msg := err.Description
	return &msg
}
