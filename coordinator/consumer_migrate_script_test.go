package coordinator

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The script commands of online migration (testdata/groups/migrate_*.txt):
//
//	policy value=upgrade                    group.consumer.migration.policy of every shard
//	cjoin member= instance= subscribe=(t) owned=(t:0:1) proto=(range,cooperative-sticky) session= rebalance= version=
//	                                        a JoinGroup of a Java-like consumer: ConsumerProtocolSubscription v3 per protocol
//	csync member= gen= assign=(A/t:0:1,B/t:2) instance=
//	                                        a SyncGroup whose assignments are ConsumerProtocolAssignment v3
func (h *scriptHarness) migrateStep(t *testing.T, cmd string, a scriptArgs, group string) bool {
	switch cmd {
	case "policy":
		h.cfg.ConsumerMigrationPolicy = a.str("value", MigrationBidirectional)
		for _, sl := range h.slots {
			sl.shard.cfg.ConsumerMigrationPolicy = h.cfg.ConsumerMigrationPolicy
		}
	case "cjoin":
		jr := &joinRequest{
			memberID: a.str("member", ""), instanceID: a.str("instance", ""),
			client:  Client{ID: a.str("client", "java"), Host: "/127.0.0.1"},
			session: a.dur("session", 45*time.Second), rebalance: a.dur("rebalance", 30*time.Second),
			protocolType: a.str("type", "consumer"), version: int16(a.int("version", 9)),
		}
		jr.requireKnownID = jr.version >= 4 && jr.instanceID == ""
		sub := kmsg.ConsumerMemberMetadata{Version: 3, Topics: a.list("subscribe", ""), Generation: int32(a.int("gen", -1))}
		if sub.Topics == nil {
			sub.Topics = []string{}
		}
		for _, o := range a.list("owned", "") {
			f := strings.Split(o, ":")
			op := kmsg.ConsumerMemberMetadataOwnedPartition{Topic: f[0]}
			for _, p := range f[1:] {
				n, _ := strconv.Atoi(p)
				op.Partitions = append(op.Partitions, int32(n))
			}
			sub.OwnedPartitions = append(sub.OwnedPartitions, op)
		}
		for _, p := range a.list("proto", "range") {
			jr.protocols = append(jr.protocols, protocolMeta{name: p, metadata: sub.AppendTo(nil)})
		}
		jr.waiter = h.waiter()
		fmt.Fprintf(h.out, "w%d: JoinGroup\n", jr.waiter)
		if err := h.run(group, func(s *groupShard) { s.joinGroup(group, jr) }); err != nil {
			fmt.Fprintf(h.out, "error: %s\n", err.Message)
		}
	case "csync":
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.MemberID, req.Generation = group, a.str("member", ""), int32(a.int("gen", 0))
		if i := a.str("instance", ""); i != "" {
			req.InstanceID = &i
		}
		if p := a.str("protocol", ""); p != "" {
			req.Protocol = &p
		}
		byMember := map[string]*kmsg.ConsumerMemberAssignment{}
		var order []string
		for _, as := range a.list("assign", "") {
			m, tp, _ := strings.Cut(as, "/")
			if byMember[m] == nil {
				byMember[m] = &kmsg.ConsumerMemberAssignment{Version: 3, Topics: []kmsg.ConsumerMemberAssignmentTopic{}}
				order = append(order, m)
			}
			if tp == "" {
				continue
			}
			f := strings.Split(tp, ":")
			at := kmsg.ConsumerMemberAssignmentTopic{Topic: f[0]}
			for _, p := range f[1:] {
				n, _ := strconv.Atoi(p)
				at.Partitions = append(at.Partitions, int32(n))
			}
			byMember[m].Topics = append(byMember[m].Topics, at)
		}
		for _, m := range order {
			ga := kmsg.NewSyncGroupRequestGroupAssignment()
			ga.MemberID, ga.MemberAssignment = m, byMember[m].AppendTo(nil)
			req.GroupAssignment = append(req.GroupAssignment, ga)
		}
		w := h.waiter()
		fmt.Fprintf(h.out, "w%d: SyncGroup\n", w)
		if err := h.run(group, func(s *groupShard) { s.syncGroup(req, w) }); err != nil {
			fmt.Fprintf(h.out, "error: %s\n", err.Message)
		}
	default:
		return false
	}
	return true
}

// formatAssignment prints a ConsumerProtocolAssignment as
// v<version>(topic:p,p ...), other bytes as they are.
func formatAssignment(b []byte) string {
	var a kmsg.ConsumerMemberAssignment
	if len(b) < 2 || b[0] != 0 || b[1] > 3 || a.ReadFrom(b) != nil {
		return string(b)
	}
	parts := make([]string, 0, len(a.Topics))
	for _, t := range a.Topics {
		parts = append(parts, t.Topic+":"+joinInts(t.Partitions))
	}
	return fmt.Sprintf("v%d(%s)", a.Version, strings.Join(parts, " "))
}
