package broker

// DeleteTopics.
//
// Versions 1-5 name topics; v6 names each one by name or by topic id. As in
// the KRaft controller (ControllerApis.deleteTopics): a v6 entry with neither
// or both is INVALID_REQUEST, a name or id given twice is INVALID_REQUEST
// ("Duplicate topic name." / "Duplicate topic id.", once, after the other
// results), an unknown name is UNKNOWN_TOPIC_OR_PARTITION and an unknown id
// UNKNOWN_TOPIC_ID. The v6 result carries both the name and the id. A
// topic's partitions are charged to the client's controller_mutation_rate
// before it is deleted (mutationquota.go).
//
// Deletion is local and done before the response, so TimeoutMillis is
// ignored; topic deletion cannot be disabled (delete.topic.enable is true).
// Internal topics (__consumer_offsets, __transaction_state) are refused
// with INVALID_REQUEST. Difference from Kafka: its controller deletes them
// when asked (only kafka-topics refuses, "is a kafka internal topic and is
// not allowed to be marked for deletion"), which loses every committed
// offset; Strata's coordinators hold these logs open, so it refuses.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/storage"
)

// registerDeleteTopics serves DeleteTopics; its versions are here and nowhere else.
func registerDeleteTopics(r *registry) { r.add(kmsg.DeleteTopics, 1, 6, handleDeleteTopics) }

func handleDeleteTopics(rc *reqCtx) (kmsg.Response, error) {
	req := rc.req
	r := req.Body.(*kmsg.DeleteTopicsRequest)
	entries := r.Topics
	if r.Version < 6 {
		entries = make([]kmsg.DeleteTopicsRequestTopic, len(r.TopicNames))
		for i := range r.TopicNames {
			entries[i].Topic = &r.TopicNames[i]
		}
	}
	names := make(map[string]int)
	ids := make(map[[16]byte]int)
	for _, e := range entries {
		switch {
		case e.Topic != nil && e.TopicID == [16]byte{}:
			names[*e.Topic]++
		case e.Topic == nil && e.TopicID != [16]byte{}:
			ids[e.TopicID]++
		}
	}
	resp := kmsg.NewPtrDeleteTopicsResponse()
	quota := rc.mutationQuota(strictDeleteTopics)
	var dups []kmsg.DeleteTopicsResponseTopic
	for _, e := range entries {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = e.Topic, e.TopicID
		switch {
		case e.Topic == nil && e.TopicID == [16]byte{}:
			resp.Topics = append(resp.Topics, deleteTopicFailed(st, kerr.InvalidRequest.Code, "Neither topic name nor id were specified."))
		case e.Topic != nil && e.TopicID != [16]byte{}:
			resp.Topics = append(resp.Topics, deleteTopicFailed(st, kerr.InvalidRequest.Code, "You may not specify both topic name and topic id."))
		case e.Topic != nil && names[*e.Topic] > 1:
			dups = append(dups, deleteTopicFailed(st, kerr.InvalidRequest.Code, "Duplicate topic name."))
			names[*e.Topic] = -1 // report it once
		case e.Topic == nil && ids[e.TopicID] > 1:
			dups = append(dups, deleteTopicFailed(st, kerr.InvalidRequest.Code, "Duplicate topic id."))
			ids[e.TopicID] = -1
		case e.Topic != nil && names[*e.Topic] == 1, e.Topic == nil && ids[e.TopicID] == 1:
			resp.Topics = append(resp.Topics, deleteAuthorized(rc, st, &quota))
		}
	}
	resp.Topics = append(resp.Topics, dups...)
	resp.ThrottleMillis = quota.throttle()
	return resp, nil
}

// deleteAuthorized deletes the topic st names if the principal may, as
// the KRaft controller decides: DELETE on the cluster, or DELETE on the
// topic; a topic it may not DESCRIBE is refused before its existence is
// looked at, and one named by id is answered without its name.
func deleteAuthorized(rc *reqCtx, st kmsg.DeleteTopicsResponseTopic, quota *mutationQuota) kmsg.DeleteTopicsResponseTopic {
	if rc.authorizeCluster(OpDelete) {
		return rc.svc.deleteTopic(st, quota)
	}
	if st.Topic == nil {
		t := rc.svc.meta.Image().Topics.ByID(st.TopicID)
		switch {
		case t == nil:
		case !rc.authorize(OpDelete, ResourceTopic, t.Name):
			if rc.authorize(OpDescribe, ResourceTopic, t.Name) {
				name := t.Name
				st.Topic = &name
			}
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
			return st
		}
		return rc.svc.deleteTopic(st, quota)
	}
	switch {
	case !rc.authorize(OpDescribe, ResourceTopic, *st.Topic):
	case rc.svc.meta.Image().Topics.ByName(*st.Topic) == nil:
		return rc.svc.deleteTopic(st, quota)
	case rc.authorize(OpDelete, ResourceTopic, *st.Topic):
		return rc.svc.deleteTopic(st, quota)
	}
	st.ErrorCode = kerr.TopicAuthorizationFailed.Code
	return st
}

// deleteTopic deletes the topic st names, by name or else by id, and fills
// in the other of the two; its partitions are charged to quota once it
// is known to exist and may be deleted.
func (b *services) deleteTopic(st kmsg.DeleteTopicsResponseTopic, quota *mutationQuota) kmsg.DeleteTopicsResponseTopic {
	img := b.meta.Image()
	if st.Topic == nil {
		t := img.Topics.ByID(st.TopicID)
		if t == nil {
			st.ErrorCode = kerr.UnknownTopicID.Code
			return st
		}
		name := t.Name
		st.Topic = &name
	} else if t := img.Topics.ByName(*st.Topic); t != nil {
		st.TopicID = t.ID
	}
	if t := img.Topics.ByName(*st.Topic); t != nil {
		if storage.IsInternalTopic(*st.Topic) {
			return deleteTopicFailed(st, kerr.InvalidRequest.Code, "Topic "+*st.Topic+" is an internal topic and cannot be deleted.")
		}
		if !quota.allow(int32(len(t.Partitions))) {
			return deleteTopicFailed(st, kerr.ThrottlingQuotaExceeded.Code, throttlingQuotaExceeded)
		}
	}
	hosted := b.logs.Topic(*st.Topic)
	if err := b.removeTopic(*st.Topic); err != nil {
		st.ErrorCode = b.errorCode(kmsg.DeleteTopics, err)
		st.ErrorMessage = errorMessage(err)
	} else if hosted != nil {
		b.replicas.StopReplicas(hosted.Partitions())
	}
	return st
}

func deleteTopicFailed(st kmsg.DeleteTopicsResponseTopic, code int16, msg string) kmsg.DeleteTopicsResponseTopic {
	st.ErrorCode = code
	st.ErrorMessage = &msg
	return st
}
