package coordinator

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The share group commands of the group scripts (testdata/groups/share_*):
//
//	sg-config session=45s interval=5s assignment=1s max-size=200
//	sg-heartbeat member=A epoch=0 topics=(t) [init=fail]
//	sg-describe
//	sg-state
//
// sg-heartbeat runs ShareGroupHeartbeat as Groups does: the heartbeat and
// its records, then the share state initialization it asks for (printed,
// and answered as init= says) and the records of its outcome.
func (h *scriptHarness) shareStep(t *testing.T, cmd string, a scriptArgs, group string) bool {
	switch cmd {
	case "sg-config":
		set := ShareSettings{SessionTimeout: a.dur("session", 45*time.Second), HeartbeatInterval: a.dur("interval", 5*time.Second),
			AssignmentInterval: a.dur("assignment", time.Second), MaxSize: a.int("max-size", 200)}
		h.cfg.ShareSettings = func(string) ShareSettings { return set }
		for _, sl := range h.slots {
			sl.shard.cfg.ShareSettings = h.cfg.ShareSettings
		}
	case "sg-heartbeat":
		h.shareHeartbeat(a, group)
	case "sg-describe":
		var d kmsg.ShareGroupDescribeResponseGroup
		if err := h.run(group, func(s *groupShard) { d = s.shareGroupDescribe(group) }); err != nil {
			fmt.Fprintf(h.out, "error: %s\n", err.Message)
			break
		}
		if d.ErrorCode != 0 {
			fmt.Fprintf(h.out, "describe: %s %s\n", errName(kerr.ErrorForCode(d.ErrorCode).(*kerr.Error)), deref(d.ErrorMessage))
			break
		}
		fmt.Fprintf(h.out, "describe: %s epoch=%d assignment-epoch=%d assignor=%s\n", d.GroupState, d.GroupEpoch, d.AssignmentEpoch, d.Assignor)
		for _, m := range d.Members {
			var parts []string
			for _, tp := range m.Assignment.TopicPartitions {
				parts = append(parts, tp.Topic+":"+joinInts(tp.Partitions))
			}
			fmt.Fprintf(h.out, "  %s epoch=%d topics=(%s) assigned=(%s)\n", m.MemberID, m.MemberEpoch, strings.Join(m.SubscribedTopicNames, ","), strings.Join(parts, " "))
		}
	case "sg-state":
		_ = h.run(group, func(s *groupShard) {
			g := s.groups[group]
			if g == nil || g.share == nil {
				fmt.Fprintf(h.out, "%s: no share group\n", group)
				return
			}
			sg := g.share
			fmt.Fprintf(h.out, "%s: share %s epoch=%d assignment-epoch=%d initializing=%s initialized=%s\n", group, sg.state(), sg.epoch,
				sg.assignmentEpoch, formatShareTopics(sg.initializing), formatShareTopics(sg.initialized))
			for _, m := range sg.sortedMembers() {
				fmt.Fprintf(h.out, "  %s epoch=%d prev=%d assigned=%s target=%s\n", m.id, m.epoch, m.prevEpoch, formatSet(s, m.assigned), formatSet(s, sg.target[m.id]))
			}
		})
	default:
		return false
	}
	return true
}

func formatShareTopics(m map[[16]byte]shareTopicState) string {
	var out []string
	for _, st := range m {
		out = append(out, st.name+":"+joinInts(st.partitions))
	}
	slices.Sort(out)
	return "(" + strings.Join(out, " ") + ")"
}

func (h *scriptHarness) shareHeartbeat(a scriptArgs, group string) {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = group, a.str("member", ""), int32(a.int("epoch", 0))
	if a.has("topics") {
		req.SubscribedTopicNames = a.list("topics", "")
	}
	var resp *kmsg.ShareGroupHeartbeatResponse
	var init *ShareInit
	if err, msg := validateShareHeartbeat(req); err != nil {
		resp = shareHeartbeatError(err, msg)
	} else {
		var reply *shareHeartbeatReply
		if err := h.run(group, func(s *groupShard) { reply = s.shareHeartbeat(req, Client{ID: "c", Host: "/127.0.0.1"}) }); err != nil {
			resp = shareHeartbeatError(err, "")
		} else {
			resp, init = reply.resp, reply.init
		}
	}
	if resp.ErrorCode != 0 {
		fmt.Fprintln(h.out, strings.TrimSpace("heartbeat: "+errName(kerr.ErrorForCode(resp.ErrorCode).(*kerr.Error))+" "+deref(resp.ErrorMessage)))
		return
	}
	line := fmt.Sprintf("heartbeat: member=%s epoch=%d", deref(resp.MemberID), resp.MemberEpoch)
	if resp.Assignment != nil {
		var parts []string
		for _, tp := range resp.Assignment.TopicPartitions {
			parts = append(parts, h.topics.name(tp.TopicID)+":"+joinInts(tp.Partitions))
		}
		line += " assignment=(" + strings.Join(parts, " ") + ")"
	}
	fmt.Fprintln(h.out, line)
	if init == nil {
		return
	}
	done, failed := map[[16]byte][]int32{}, map[[16]byte][]int32{}
	for _, t := range init.Topics {
		fmt.Fprintf(h.out, "initialize %s %s:%s state-epoch=%d start=%d\n", init.Group, h.topics.name(t.TopicID), joinInts(t.Partitions), init.Epoch, t.StartOffset)
		if a.str("init", "ok") == "ok" {
			done[t.TopicID] = t.Partitions
		} else {
			failed[t.TopicID] = t.Partitions
		}
	}
	_ = h.run(group, func(s *groupShard) { s.shareStateInitialized(group, done, failed) })
}

// formatShareGroupRecord prints a share group record for the scripts.
func formatShareGroupRecord(r kv, topicName func([16]byte) string) string {
	k, err := decodeSGKey(r.key)
	if err != nil {
		return err.Error()
	}
	name := map[int16]string{sgMemberType: "sg-member", sgMetadataType: "sg-group", sgTargetMetadataType: "sg-target-epoch",
		sgTargetMemberType: "sg-target", sgCurrentType: "sg-current", sgStatePartsType: "sg-state-partitions"}[k.typ]
	id := k.group
	if k.member != "" {
		id += "/" + k.member
	}
	if r.value == nil {
		return name + " " + id + " tombstone"
	}
	parts := func(ts []cgTopicPartitions) string {
		var out []string
		for _, t := range ts {
			out = append(out, topicName(t.topicID)+":"+joinInts(t.partitions))
		}
		return "(" + strings.Join(out, " ") + ")"
	}
	infos := func(ts []sgTopicInfo) string {
		var out []string
		for _, t := range ts {
			out = append(out, t.name+":"+joinInts(t.partitions))
		}
		return "(" + strings.Join(out, " ") + ")"
	}
	switch k.typ {
	case sgMemberType:
		v, _ := decodeSGMember(r.value)
		return fmt.Sprintf("%s %s topics=(%s)", name, id, strings.Join(v.topics, ","))
	case sgMetadataType:
		v, _ := decodeSGMetadata(r.value)
		return fmt.Sprintf("%s %s epoch=%d", name, id, v.epoch)
	case sgTargetMetadataType:
		v, _ := decodeSGTargetMetadata(r.value)
		return fmt.Sprintf("%s %s epoch=%d", name, id, v.assignmentEpoch)
	case sgTargetMemberType:
		v, _ := decodeSGTargetMember(r.value)
		return fmt.Sprintf("%s %s %s", name, id, parts(v.topics))
	case sgCurrentType:
		v, _ := decodeSGCurrent(r.value)
		return fmt.Sprintf("%s %s epoch=%d prev=%d assigned=%s", name, id, v.memberEpoch, v.previousMemberEpoch, parts(v.assigned))
	case sgStatePartsType:
		v, _ := decodeSGStateParts(r.value)
		return fmt.Sprintf("%s %s initializing=%s initialized=%s deleting=%s", name, id, infos(v.initializing), infos(v.initialized), infos(v.deleting))
	}
	return name + " " + id
}
