package coordinator

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// formatStreamsRecord prints a KIP-1071 record for the scripts: its type,
// group (and member) and what the scripts check of its value.
func formatStreamsRecord(r kv) string {
	k, err := decodeCGKey(r.key)
	if err != nil {
		return err.Error()
	}
	name := map[int16]string{stMetadataType: "st-group", stMemberType: "st-member", stTargetMetadataType: "st-target-epoch",
		stTargetMemberType: "st-target", stCurrentType: "st-current", stTopologyType: "st-topology"}[k.typ]
	id := k.group
	if k.sub != "" {
		id += "/" + k.sub
	}
	if r.value == nil {
		return name + " " + id + " tombstone"
	}
	tasks := func(ts []stTaskIDs) string {
		var out []string
		for _, t := range ts {
			out = append(out, t.subtopology+":"+joinInts(t.partitions))
		}
		return "(" + strings.Join(out, " ") + ")"
	}
	// withEpochs prints the current assignment's active tasks with their
	// assignment epochs: (0:0@2,1@3).
	withEpochs := func(ts []stTaskIDs) string {
		var out []string
		for _, t := range ts {
			ps := make([]string, len(t.partitions))
			for i, p := range t.partitions {
				ps[i] = strconv.Itoa(int(p))
				if i < len(t.epochs) {
					ps[i] += "@" + strconv.Itoa(int(t.epochs[i]))
				}
			}
			out = append(out, t.subtopology+":"+strings.Join(ps, ","))
		}
		return "(" + strings.Join(out, " ") + ")"
	}
	switch k.typ {
	case stMetadataType:
		v, _ := decodeSTMetadata(r.value)
		return fmt.Sprintf("%s %s epoch=%d validated-topology=%d configs=%s", name, id, v.epoch, v.validatedTopologyEpoch, configsString(v.lastAssignmentConfigs))
	case stMemberType:
		v, _ := decodeSTMember(r.value)
		return fmt.Sprintf("%s %s process=%s instance=%s topology=%d", name, id, v.processID, deref(v.instanceID), v.topologyEpoch)
	case stTopologyType:
		v, _ := decodeSTTopology(r.value)
		var subs []string
		for _, st := range v.subtopologies {
			subs = append(subs, st.id+":"+strings.Join(st.sourceTopics, ","))
		}
		return fmt.Sprintf("%s %s epoch=%d subtopologies=(%s)", name, id, v.epoch, strings.Join(subs, " "))
	case stTargetMetadataType:
		v, _ := decodeCGTargetMetadata(r.value)
		return fmt.Sprintf("%s %s epoch=%d", name, id, v.assignmentEpoch)
	case stTargetMemberType:
		v, _ := decodeSTTargetMember(r.value)
		return fmt.Sprintf("%s %s active=%s standby=%s", name, id, tasks(v.active), tasks(v.standby))
	case stCurrentType:
		v, _ := decodeSTCurrent(r.value)
		return fmt.Sprintf("%s %s epoch=%d prev=%d state=%d active=%s standby=%s revoking=%s", name, id, v.memberEpoch,
			v.previousMemberEpoch, v.state, withEpochs(v.active), tasks(v.standby), withEpochs(v.activeRevoking))
	}
	return fmt.Sprintf("%s %s", name, id)
}

// streamsHeartbeat is a StreamsGroupHeartbeat: member, epoch (0 joins
// with source=topic as subtopology 0's source and rebalance), instance,
// owned=(subtopology:p:p,...) the active tasks owned (absent: the
// heartbeat does not say; standby and warm-up tasks are then empty).
func (h *scriptHarness) streamsHeartbeat(t *testing.T, a scriptArgs, group string) {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, a.str("member", ""), int32(a.int("epoch", 0))
	req.RebalanceTimeoutMillis = -1
	if req.MemberEpoch == 0 {
		req.RebalanceTimeoutMillis = int32(a.dur("rebalance", 0).Milliseconds())
		req.ProcessID = kmsg.StringPtr("process-" + req.MemberID)
		req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
			{SubtopologyID: "0", SourceTopics: a.list("source", "")}}}
	}
	if i := a.str("instance", ""); i != "" {
		req.InstanceID = &i
	}
	if a.has("owned") || req.MemberEpoch == 0 {
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		for _, o := range a.list("owned", "") {
			f := strings.Split(o, ":")
			task := kmsg.NewTaskIDs()
			task.SubtopologyID = f[0]
			for _, p := range f[1:] {
				n, _ := strconv.Atoi(p)
				task.Partitions = append(task.Partitions, int32(n))
			}
			req.ActiveTasks = append(req.ActiveTasks, task)
		}
	}
	var resp *kmsg.StreamsGroupHeartbeatResponse
	if err, msg := validateStreamsHeartbeat(req); err != nil {
		resp = streamsHeartbeatError(err, msg)
	} else {
		var reply *streamsReply
		if err := h.run(group, func(s *groupShard) { reply = s.streamsHeartbeat(req, Client{ID: "c", Host: "/127.0.0.1"}) }); err != nil {
			resp = streamsHeartbeatError(err, "")
		} else {
			resp = reply.resp
		}
	}
	if resp.ErrorCode != 0 {
		fmt.Fprintf(h.out, "heartbeat: %s\n", errName(kerr.ErrorForCode(resp.ErrorCode).(*kerr.Error)))
		return
	}
	line := fmt.Sprintf("heartbeat: member=%s epoch=%d", resp.MemberID, resp.MemberEpoch)
	if resp.ActiveTasks != nil {
		line += " active=" + taskSetOf(resp.ActiveTasks).String()
	}
	fmt.Fprintln(h.out, line)
}

// String prints a task set as the scripts do: (0:0,1 1:2).
func (s taskSet) String() string {
	var out []string
	for _, t := range s.taskIDs() {
		out = append(out, t.SubtopologyID+":"+joinInts(t.Partitions))
	}
	return "(" + strings.Join(out, " ") + ")"
}

// dumpStreams prints a streams group's state and members.
func dumpStreams(out *strings.Builder, g *group) {
	sg := g.streams
	fmt.Fprintf(out, "%s: streams %s epoch=%d assignment-epoch=%d\n", g.id, sg.state(), sg.epoch, sg.assignmentEpoch)
	for _, m := range sg.sortedMembers() {
		line := fmt.Sprintf("  %s", m.id)
		if m.instanceID != "" {
			line += " instance=" + m.instanceID
		}
		fmt.Fprintf(out, "%s epoch=%d prev=%d state=%s active=%s revoking=%s target=%s\n", line, m.epoch, m.prevEpoch,
			strings.ToLower(m.state.String()), m.assigned.active, m.revoking, sg.target[m.id].active)
	}
}
