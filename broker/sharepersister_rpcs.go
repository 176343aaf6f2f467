package broker

// The five share-state requests through runState (sharepersister.go): a
// request's share-partitions are flattened, sent to their coordinators,
// and their answers put back under their topics in the request's order.

import "github.com/twmb/franz-go/pkg/kmsg"

// topicParts is one topic's share-partitions, in request order.
type topicParts[Q any] struct {
	topic [16]byte
	parts []Q
}

// byTopic groups parts by topic, topics in order of first appearance.
func byTopic[Q any](parts []statePart[Q]) []topicParts[Q] {
	var out []topicParts[Q]
	at := map[[16]byte]int{}
	for _, p := range parts {
		i, ok := at[p.tp.topic]
		if !ok {
			i = len(out)
			at[p.tp.topic] = i
			out = append(out, topicParts[Q]{topic: p.tp.topic})
		}
		out[i].parts = append(out[i].parts, p.q)
	}
	return out
}

// answersByTopic is the answers of parts, grouped by topic as byTopic does.
func answersByTopic[Q, P any](parts []statePart[Q], got map[shareTopicPartition]P) []topicParts[P] {
	var out []topicParts[P]
	at := map[[16]byte]int{}
	for _, p := range parts {
		a, ok := got[p.tp]
		if !ok {
			continue
		}
		i, seen := at[p.tp.topic]
		if !seen {
			i = len(out)
			at[p.tp.topic] = i
			out = append(out, topicParts[P]{topic: p.tp.topic})
		}
		out[i].parts = append(out[i].parts, a)
	}
	return out
}

// initialize sends InitializeShareGroupState (the group coordinator's initializations).
func (c *shareStateClient) initialize(r *kmsg.InitializeShareGroupStateRequest) *kmsg.InitializeShareGroupStateResponse {
	var parts []statePart[kmsg.InitializeShareGroupStateRequestTopicPartition]
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, statePart[kmsg.InitializeShareGroupStateRequestTopicPartition]{tp: shareTopicPartition{t.TopicID, p.Partition}, q: p})
		}
	}
	got := runState(c, stateRPC[kmsg.InitializeShareGroupStateRequestTopicPartition, kmsg.InitializeShareGroupStateResponseTopicPartition]{
		name: "initialize state",
		build: func(group string, ps []statePart[kmsg.InitializeShareGroupStateRequestTopicPartition]) kmsg.Request {
			req := kmsg.NewPtrInitializeShareGroupStateRequest()
			req.GroupID = group
			for _, t := range byTopic(ps) {
				rt := kmsg.NewInitializeShareGroupStateRequestTopic()
				rt.TopicID, rt.Partitions = t.topic, t.parts
				req.Topics = append(req.Topics, rt)
			}
			return req
		},
		split: func(resp kmsg.Response) map[shareTopicPartition]kmsg.InitializeShareGroupStateResponseTopicPartition {
			m := map[shareTopicPartition]kmsg.InitializeShareGroupStateResponseTopicPartition{}
			for _, t := range resp.(*kmsg.InitializeShareGroupStateResponse).Topics {
				for _, p := range t.Partitions {
					m[shareTopicPartition{t.TopicID, p.Partition}] = p
				}
			}
			return m
		},
		code: func(p kmsg.InitializeShareGroupStateResponseTopicPartition) (int16, *string) {
			return p.ErrorCode, p.ErrorMessage
		},
		fail: func(tp shareTopicPartition, code int16, msg string) kmsg.InitializeShareGroupStateResponseTopicPartition {
			p := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			p.Partition, p.ErrorCode, p.ErrorMessage = tp.partition, code, &msg
			return p
		},
	}, r.GroupID, parts)
	resp := kmsg.NewPtrInitializeShareGroupStateResponse()
	for _, t := range answersByTopic(parts, got) {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID, rt.Partitions = t.topic, t.parts
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// read sends ReadShareGroupState (a share-partition's load).
func (c *shareStateClient) read(r *kmsg.ReadShareGroupStateRequest) *kmsg.ReadShareGroupStateResponse {
	var parts []statePart[kmsg.ReadShareGroupStateRequestTopicPartition]
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, statePart[kmsg.ReadShareGroupStateRequestTopicPartition]{tp: shareTopicPartition{t.TopicID, p.Partition}, q: p})
		}
	}
	got := runState(c, stateRPC[kmsg.ReadShareGroupStateRequestTopicPartition, kmsg.ReadShareGroupStateResponseTopicPartition]{
		name: "read state",
		build: func(group string, ps []statePart[kmsg.ReadShareGroupStateRequestTopicPartition]) kmsg.Request {
			req := kmsg.NewPtrReadShareGroupStateRequest()
			req.GroupID = group
			for _, t := range byTopic(ps) {
				rt := kmsg.NewReadShareGroupStateRequestTopic()
				rt.TopicID, rt.Partitions = t.topic, t.parts
				req.Topics = append(req.Topics, rt)
			}
			return req
		},
		split: func(resp kmsg.Response) map[shareTopicPartition]kmsg.ReadShareGroupStateResponseTopicPartition {
			m := map[shareTopicPartition]kmsg.ReadShareGroupStateResponseTopicPartition{}
			for _, t := range resp.(*kmsg.ReadShareGroupStateResponse).Topics {
				for _, p := range t.Partitions {
					m[shareTopicPartition{t.TopicID, p.Partition}] = p
				}
			}
			return m
		},
		code: func(p kmsg.ReadShareGroupStateResponseTopicPartition) (int16, *string) {
			return p.ErrorCode, p.ErrorMessage
		},
		fail: func(tp shareTopicPartition, code int16, msg string) kmsg.ReadShareGroupStateResponseTopicPartition {
			p := kmsg.NewReadShareGroupStateResponseTopicPartition()
			p.Partition, p.ErrorCode, p.ErrorMessage = tp.partition, code, &msg
			return p
		},
	}, r.GroupID, parts)
	resp := kmsg.NewPtrReadShareGroupStateResponse()
	for _, t := range answersByTopic(parts, got) {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID, rt.Partitions = t.topic, t.parts
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// write sends WriteShareGroupState v1 (a share-partition's changes).
func (c *shareStateClient) write(r *kmsg.WriteShareGroupStateRequest) *kmsg.WriteShareGroupStateResponse {
	var parts []statePart[kmsg.WriteShareGroupStateRequestTopicPartition]
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, statePart[kmsg.WriteShareGroupStateRequestTopicPartition]{tp: shareTopicPartition{t.TopicID, p.Partition}, q: p})
		}
	}
	got := runState(c, stateRPC[kmsg.WriteShareGroupStateRequestTopicPartition, kmsg.WriteShareGroupStateResponseTopicPartition]{
		name: "write state",
		build: func(group string, ps []statePart[kmsg.WriteShareGroupStateRequestTopicPartition]) kmsg.Request {
			req := kmsg.NewPtrWriteShareGroupStateRequest()
			req.SetVersion(1)
			req.GroupID = group
			for _, t := range byTopic(ps) {
				rt := kmsg.NewWriteShareGroupStateRequestTopic()
				rt.TopicID, rt.Partitions = t.topic, t.parts
				req.Topics = append(req.Topics, rt)
			}
			return req
		},
		split: func(resp kmsg.Response) map[shareTopicPartition]kmsg.WriteShareGroupStateResponseTopicPartition {
			m := map[shareTopicPartition]kmsg.WriteShareGroupStateResponseTopicPartition{}
			for _, t := range resp.(*kmsg.WriteShareGroupStateResponse).Topics {
				for _, p := range t.Partitions {
					m[shareTopicPartition{t.TopicID, p.Partition}] = p
				}
			}
			return m
		},
		code: func(p kmsg.WriteShareGroupStateResponseTopicPartition) (int16, *string) {
			return p.ErrorCode, p.ErrorMessage
		},
		fail: func(tp shareTopicPartition, code int16, msg string) kmsg.WriteShareGroupStateResponseTopicPartition {
			p := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			p.Partition, p.ErrorCode, p.ErrorMessage = tp.partition, code, &msg
			return p
		},
	}, r.GroupID, parts)
	resp := kmsg.NewPtrWriteShareGroupStateResponse()
	for _, t := range answersByTopic(parts, got) {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID, rt.Partitions = t.topic, t.parts
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// delete sends DeleteShareGroupState (the group coordinator's deletions).
func (c *shareStateClient) delete(r *kmsg.DeleteShareGroupStateRequest) *kmsg.DeleteShareGroupStateResponse {
	var parts []statePart[kmsg.DeleteShareGroupStateRequestTopicPartition]
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, statePart[kmsg.DeleteShareGroupStateRequestTopicPartition]{tp: shareTopicPartition{t.TopicID, p.Partition}, q: p})
		}
	}
	got := runState(c, stateRPC[kmsg.DeleteShareGroupStateRequestTopicPartition, kmsg.DeleteShareGroupStateResponseTopicPartition]{
		name: "delete state",
		build: func(group string, ps []statePart[kmsg.DeleteShareGroupStateRequestTopicPartition]) kmsg.Request {
			req := kmsg.NewPtrDeleteShareGroupStateRequest()
			req.GroupID = group
			for _, t := range byTopic(ps) {
				rt := kmsg.NewDeleteShareGroupStateRequestTopic()
				rt.TopicID, rt.Partitions = t.topic, t.parts
				req.Topics = append(req.Topics, rt)
			}
			return req
		},
		split: func(resp kmsg.Response) map[shareTopicPartition]kmsg.DeleteShareGroupStateResponseTopicPartition {
			m := map[shareTopicPartition]kmsg.DeleteShareGroupStateResponseTopicPartition{}
			for _, t := range resp.(*kmsg.DeleteShareGroupStateResponse).Topics {
				for _, p := range t.Partitions {
					m[shareTopicPartition{t.TopicID, p.Partition}] = p
				}
			}
			return m
		},
		code: func(p kmsg.DeleteShareGroupStateResponseTopicPartition) (int16, *string) {
			return p.ErrorCode, p.ErrorMessage
		},
		fail: func(tp shareTopicPartition, code int16, msg string) kmsg.DeleteShareGroupStateResponseTopicPartition {
			p := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			p.Partition, p.ErrorCode, p.ErrorMessage = tp.partition, code, &msg
			return p
		},
	}, r.GroupID, parts)
	resp := kmsg.NewPtrDeleteShareGroupStateResponse()
	for _, t := range answersByTopic(parts, got) {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID, rt.Partitions = t.topic, t.parts
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// readSummary sends ReadShareGroupStateSummary v1.
func (c *shareStateClient) readSummary(r *kmsg.ReadShareGroupStateSummaryRequest) *kmsg.ReadShareGroupStateSummaryResponse {
	var parts []statePart[kmsg.ReadShareGroupStateSummaryRequestTopicPartition]
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, statePart[kmsg.ReadShareGroupStateSummaryRequestTopicPartition]{tp: shareTopicPartition{t.TopicID, p.Partition}, q: p})
		}
	}
	got := runState(c, stateRPC[kmsg.ReadShareGroupStateSummaryRequestTopicPartition, kmsg.ReadShareGroupStateSummaryResponseTopicPartition]{
		name: "read state summary",
		build: func(group string, ps []statePart[kmsg.ReadShareGroupStateSummaryRequestTopicPartition]) kmsg.Request {
			req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
			req.SetVersion(1)
			req.GroupID = group
			for _, t := range byTopic(ps) {
				rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
				rt.TopicID, rt.Partitions = t.topic, t.parts
				req.Topics = append(req.Topics, rt)
			}
			return req
		},
		split: func(resp kmsg.Response) map[shareTopicPartition]kmsg.ReadShareGroupStateSummaryResponseTopicPartition {
			m := map[shareTopicPartition]kmsg.ReadShareGroupStateSummaryResponseTopicPartition{}
			for _, t := range resp.(*kmsg.ReadShareGroupStateSummaryResponse).Topics {
				for _, p := range t.Partitions {
					m[shareTopicPartition{t.TopicID, p.Partition}] = p
				}
			}
			return m
		},
		code: func(p kmsg.ReadShareGroupStateSummaryResponseTopicPartition) (int16, *string) {
			return p.ErrorCode, p.ErrorMessage
		},
		fail: func(tp shareTopicPartition, code int16, msg string) kmsg.ReadShareGroupStateSummaryResponseTopicPartition {
			p := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			p.Partition, p.ErrorCode, p.ErrorMessage = tp.partition, code, &msg
			return p
		},
	}, r.GroupID, parts)
	resp := kmsg.NewPtrReadShareGroupStateSummaryResponse()
	for _, t := range answersByTopic(parts, got) {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID, rt.Partitions = t.topic, t.parts
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
