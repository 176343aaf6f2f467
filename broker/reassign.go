package broker

// AlterPartitionReassignments and ListPartitionReassignments
// (kafka-reassign-partitions), decided on the metadata image as the KRaft
// controller decides them (ReplicationControlManager.alterPartitionReassignments,
// changePartitionReassignment, cancelPartitionReassignment,
// listPartitionReassignments).
//
// A new target list of replicas, checked as a manual assignment (every
// broker registered, none twice), makes the partition's replicas the
// target followed by the replicas it drops, with the added ones as
// AddingReplicas and the dropped ones as RemovingReplicas; the added
// replicas then fetch from the leader, and the reassignment completes when
// every target replica is in the ISR (partitionChange, on the ISR change
// that brings the last one in): the replicas become the target, the
// dropped ones leave the ISR, and a leader that was dropped hands over.
// A target equal to the replicas with nothing ongoing changes nothing. A
// null target cancels an ongoing reassignment: the added replicas leave
// (NO_REASSIGNMENT_IN_PROGRESS when there is none; an ISR that would be
// empty needs unclean.leader.election.enable, as Kafka).
//
// The whole request is one change: every partition's records commit
// together or, when one cannot be made, each partition gets its own error
// and the ones that could are made, as Kafka's atomicOf. TimeoutMillis is
// ignored. v1's AllowReplicationFactorChange false (KIP-860) refuses a
// target of another size than the partition's replication factor (during a
// reassignment, its target's) with INVALID_REPLICATION_FACTOR, as Kafka's
// validatePartitionReplicationFactorUnchanged, and is echoed in the answer.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/internal/kafkaerr"
	"github.com/strata-io/strata/metadata"
)

func registerReassignments(r *registry) {
	r.add(kmsg.AlterPartitionAssignments, 0, 1, handleAlterPartitionReassignments)
	r.add(kmsg.ListPartitionReassignments, 0, 0, handleListPartitionReassignments)
}

func handleAlterPartitionReassignments(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := kmsg.NewPtrAlterPartitionAssignmentsResponse()
	allowRFChange := req.Version < 1 || r.AllowReplicationFactorChange
	resp.AllowReplicationFactorChange = allowRFChange
	if !rc.authorizeCluster(OpAlter) {
		// Kafka's getErrorResponse: the error at the top and on every
		// named partition.
		msg := kerr.ClusterAuthorizationFailed.Description
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, &msg
		for _, rt := range r.Topics {
			st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.ErrorMessage = rp.Partition, resp.ErrorCode, &msg
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	_, err := b.meta.Update(func(img *metadata.Image) ([]metadata.Record, error) {
		resp.Topics = resp.Topics[:0]
		var records []metadata.Record
		for _, rt := range r.Topics {
			st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				sp.Partition = rp.Partition
				rec, err := b.reassign(img, rt.Topic, rp.Partition, rp.Replicas, allowRFChange)
				switch {
				case err != nil:
					sp.ErrorCode, sp.ErrorMessage = b.errorCode(kmsg.AlterPartitionAssignments, err), errorMessage(err)
				case rec != nil:
					records = append(records, *rec)
				}
				st.Partitions = append(st.Partitions, sp)
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

// reassign is the change reassigning one partition to target (nil:
// cancelling), nil when none is needed; allowRFChange false refuses a target
// that changes the replication factor.
func (b *services) reassign(img *metadata.Image, topic string, p int32, target []int32, allowRFChange bool) (*metadata.PartitionChangeRecord, error) {
	t := img.Topics.ByName(topic)
	if t == nil {
		return nil, kafkaerr.New(kerr.UnknownTopicOrPartition, "Unable to find a topic named %s.", topic)
	}
	part, ok := t.Partition(p)
	if !ok {
		return nil, kafkaerr.New(kerr.UnknownTopicOrPartition, "Unable to find partition %s:%d.", topic, p)
	}
	c := newPartitionChange(img, t.ID, p, part)
	if b.uncleanElection(img, topic) {
		c.election = electionUnclean
	}
	if target == nil {
		if !part.Reassigning() {
			return nil, kafkaerr.New(kerr.NoReassignmentInProgress, "%s", kerr.NoReassignmentInProgress.Description)
		}
		// PartitionReassignmentRevert: the replicas before, the ISR without
		// the added ones, or, if that leaves none, the first replica alone
		// (an unclean election).
		original := slices.DeleteFunc(slices.Clone(part.Replicas), func(r int32) bool { return slices.Contains(part.AddingReplicas, r) })
		isr := slices.DeleteFunc(slices.Clone(part.ISR), func(r int32) bool { return slices.Contains(part.AddingReplicas, r) })
		if len(isr) == 0 {
			if c.election != electionUnclean {
				return nil, kafkaerr.New(kerr.InvalidReplicaAssignment,
					"Unable to revert partition assignment for %s:%d because it would require an unclean leader election.", topic, p)
			}
			isr = original[:1]
		}
		c.replicas, c.isr, c.adding, c.removing = original, isr, nil, nil
	} else {
		if msg := checkReplicasOn(img, target, -1); msg != "" {
			return nil, kafkaerr.New(kerr.InvalidReplicaAssignment, "%s", msg)
		}
		if rf := replicationFactor(part); !allowRFChange && rf != len(target) {
			return nil, kafkaerr.New(kerr.InvalidReplicationFactor, "The replication factor is changed from %d to %d", rf, len(target))
		}
		removing := difference(part.Replicas, target)
		c.replicas = append(slices.Clone(target), removing...)
		c.adding = difference(target, part.Replicas)
		c.removing = removing
	}
	rec, ok := c.build()
	if !ok {
		return nil, nil
	}
	return &rec, nil
}

// replicationFactor is the partition's replication factor: during a
// reassignment its target's (the replicas with the adding ones, without the
// removing ones), as Kafka's validatePartitionReplicationFactorUnchanged
// counts it.
func replicationFactor(part metadata.PartitionRegistration) int {
	if !part.Reassigning() {
		return len(part.Replicas)
	}
	set := map[int32]bool{}
	for _, r := range append(slices.Clone(part.Replicas), part.AddingReplicas...) {
		set[r] = true
	}
	for _, r := range part.RemovingReplicas {
		delete(set, r)
	}
	return len(set)
}

// difference is the elements of a not in b, in increasing order, as
// Kafka's calculateDifference (a TreeSet).
func difference(a, b []int32) []int32 {
	var out []int32
	for _, x := range a {
		if !slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

// uncleanElection is the topic's unclean.leader.election.enable.
func (b *services) uncleanElection(img *metadata.Image, topic string) bool {
	return uncleanElectionFor(img, topic, b.cfg.Cluster.UncleanLeaderElection)
}

// uncleanElectionFor is topic's unclean.leader.election.enable: its
// dynamic config, else the cluster's, clusterDefault.
func uncleanElectionFor(img *metadata.Image, topic string, clusterDefault bool) bool {
	if v, ok := img.Configs.Of(metadata.ConfigResource{Type: metadata.TopicResource, Name: topic})["unclean.leader.election.enable"]; ok {
		return v == "true"
	}
	return clusterDefault
}

func handleListPartitionReassignments(rc *reqCtx) (kmsg.Response, error) {
	b, req := rc.svc, rc.req
	r := req.Body.(*kmsg.ListPartitionReassignmentsRequest)
	resp := kmsg.NewPtrListPartitionReassignmentsResponse()
	if !rc.authorizeCluster(OpDescribe) {
		// Kafka's getErrorResponse: the named partitions, with nothing
		// about them, and the error at the top.
		msg := kerr.ClusterAuthorizationFailed.Description
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, &msg
		for _, rt := range r.Topics {
			st := kmsg.NewListPartitionReassignmentsResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
				sp.Partition = p
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	img := b.meta.Image()
	list := func(t *metadata.TopicImage, partitions []int32) {
		st := kmsg.NewListPartitionReassignmentsResponseTopic()
		st.Topic = t.Name
		for _, p := range partitions {
			part, ok := t.Partition(p)
			if !ok || !part.Reassigning() {
				continue
			}
			sp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			sp.Partition = p
			sp.Replicas, sp.AddingReplicas, sp.RemovingReplicas = part.Replicas, nonNil(part.AddingReplicas), nonNil(part.RemovingReplicas)
			st.Partitions = append(st.Partitions, sp)
		}
		if len(st.Partitions) > 0 {
			resp.Topics = append(resp.Topics, st)
		}
	}
	if r.Topics == nil {
		for _, t := range img.Topics.All() {
			all := make([]int32, len(t.Partitions))
			for i := range all {
				all[i] = int32(i)
			}
			list(t, all)
		}
		return resp, nil
	}
	for _, rt := range r.Topics {
		if t := img.Topics.ByName(rt.Topic); t != nil {
			list(t, rt.Partitions)
		}
	}
	return resp, nil
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}
