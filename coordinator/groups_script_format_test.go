package coordinator

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// scriptArgs are a step's key=value arguments (a (a,b) list joined by
// commas) and its bare words, in order.
type scriptArgs struct {
	kv    map[string]string
	words []string
}

func parseScriptArgs(d *datadriven.TestData) scriptArgs {
	a := scriptArgs{kv: map[string]string{}}
	for _, arg := range d.CmdArgs {
		if len(arg.Vals) == 0 {
			a.words = append(a.words, arg.Key)
			continue
		}
		a.kv[arg.Key] = strings.Join(arg.Vals, ",")
	}
	return a
}

// str is the key's value, or (key "") the first bare word; def when absent.
func (a scriptArgs) str(key, def string) string {
	if key == "" {
		if len(a.words) > 0 {
			return a.words[0]
		}
		return def
	}
	if v, ok := a.kv[key]; ok {
		return v
	}
	return def
}

func (a scriptArgs) has(key string) bool { _, ok := a.kv[key]; return ok }

func (a scriptArgs) int(key string, def int) int {
	v, err := strconv.Atoi(a.str(key, strconv.Itoa(def)))
	if err != nil {
		panic(fmt.Sprintf("%s: %v", key, err))
	}
	return v
}

func (a scriptArgs) dur(key string, def time.Duration) time.Duration {
	v, err := time.ParseDuration(a.str(key, def.String()))
	if err != nil {
		panic(fmt.Sprintf("%s: %v", key, err))
	}
	return v
}

func (a scriptArgs) list(key, def string) []string {
	v := a.str(key, def)
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// commits is offsets=(topic:partition:offset,...).
func (a scriptArgs) commits() []Commit {
	var out []Commit
	for _, c := range a.list("offsets", "") {
		f := strings.Split(c, ":")
		p, _ := strconv.Atoi(f[1])
		o, _ := strconv.ParseInt(f[2], 10, 64)
		out = append(out, Commit{Topic: f[0], Partition: int32(p), Offset: o, LeaderEpoch: -1, ExpireTime: -1})
	}
	return out
}

// scriptTopics is the scripts' topic metadata.
type scriptTopics struct{ byName map[string]topicMeta }

func (s *scriptTopics) Topic(name string) (topicMeta, bool) {
	t, ok := s.byName[name]
	return t, ok
}

func (s *scriptTopics) TopicByID(id [16]byte) (topicMeta, bool) {
	for _, t := range s.byName {
		if t.id == id {
			return t, true
		}
	}
	return topicMeta{}, false
}

func (s *scriptTopics) Topics() []topicMeta {
	var out []topicMeta
	for _, t := range s.byName {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func (s *scriptTopics) name(id [16]byte) string {
	t, _ := s.TopicByID(id)
	return t.name
}

// consumerHeartbeat is a ConsumerGroupHeartbeat: member, epoch,
// topics=(a,b), regex, owned=(topic:p:p,...) (absent: the heartbeat does
// not say), assignor, rebalance, instance.
func (h *scriptHarness) consumerHeartbeat(t *testing.T, a scriptArgs, group string) {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, a.str("member", ""), int32(a.int("epoch", 0))
	req.RebalanceTimeoutMillis = -1
	if a.has("rebalance") {
		req.RebalanceTimeoutMillis = int32(a.dur("rebalance", 0).Milliseconds())
	}
	if a.has("topics") {
		req.SubscribedTopicNames = a.list("topics", "")
		if req.SubscribedTopicNames == nil {
			req.SubscribedTopicNames = []string{}
		}
	}
	if a.has("regex") {
		r := a.str("regex", "")
		req.SubscribedTopicRegex = &r
	}
	if i := a.str("instance", ""); i != "" {
		req.InstanceID = &i
	}
	if as := a.str("assignor", ""); as != "" {
		req.ServerAssignor = &as
	}
	if a.has("owned") {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, o := range a.list("owned", "") {
			f := strings.Split(o, ":")
			tp := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			tm, ok := h.topics.Topic(f[0])
			if !ok {
				t.Fatalf("owned: no topic %s", f[0])
			}
			tp.TopicID = tm.id
			for _, p := range f[1:] {
				n, _ := strconv.Atoi(p)
				tp.Partitions = append(tp.Partitions, int32(n))
			}
			req.Topics = append(req.Topics, tp)
		}
	}
	var resp *kmsg.ConsumerGroupHeartbeatResponse
	if err, msg := validateHeartbeat(req, 1); err != nil {
		resp = heartbeatError(err, msg)
	} else {
		var reply *heartbeatReply
		if err := h.run(group, func(s *groupShard) { reply = s.consumerHeartbeat(req, 1, Client{ID: "c", Host: "/127.0.0.1"}) }); err != nil {
			resp = heartbeatError(err, "")
		} else {
			resp = reply.resp
		}
	}
	if resp.ErrorCode != 0 {
		fmt.Fprintf(h.out, "heartbeat: %s\n", errName(kerr.ErrorForCode(resp.ErrorCode).(*kerr.Error)))
		if resp.ErrorMessage != nil && kerr.ErrorForCode(resp.ErrorCode) == kerr.InvalidRegularExpression {
			fmt.Fprintf(h.out, "  %s\n", *resp.ErrorMessage)
		}
		return
	}
	line := fmt.Sprintf("heartbeat: member=%s epoch=%d", deref(resp.MemberID), resp.MemberEpoch)
	if resp.Assignment != nil {
		var parts []string
		for _, tp := range resp.Assignment.Topics {
			parts = append(parts, h.topics.name(tp.TopicID)+":"+joinInts(tp.Partitions))
		}
		line += " assignment=(" + strings.Join(parts, " ") + ")"
	}
	fmt.Fprintln(h.out, line)
}

func joinInts(ps []int32) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ",")
}

func errName(err *kerr.Error) string {
	if err == nil {
		return "ok"
	}
	return err.Message
}

func errNames(errs []*kerr.Error) string {
	s := make([]string, len(errs))
	for i, e := range errs {
		s[i] = errName(e)
	}
	return strings.Join(s, " ")
}

func formatJoin(r joinResult) string {
	if r.err != nil {
		return fmt.Sprintf("%s member=%s", r.err.Message, r.memberID)
	}
	s := fmt.Sprintf("member=%s gen=%d protocol=%s leader=%s", r.memberID, r.generation, r.protocol, r.leader)
	if r.skipAssignment {
		s += " skip-assignment"
	}
	if len(r.members) > 0 {
		ids := make([]string, len(r.members))
		for i, m := range r.members {
			ids[i] = m.MemberID
		}
		s += " members=(" + strings.Join(ids, ",") + ")"
	}
	return s
}

func formatSync(r syncResult) string {
	if r.err != nil {
		return r.err.Message
	}
	return "assignment=" + formatAssignment(r.assignment)
}

// formatRecord describes a __consumer_offsets record.
func formatRecord(r kv, topicName func([16]byte) string) string {
	version, err := keyVersion(r.key)
	if err != nil {
		return err.Error()
	}
	switch version {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		_ = k.ReadFrom(r.key)
		if r.value == nil {
			return fmt.Sprintf("offset %s %s-%d tombstone", k.Group, k.Topic, k.Partition)
		}
		var v kmsg.OffsetCommitValue
		_ = v.ReadFrom(r.value)
		return fmt.Sprintf("offset %s %s-%d=%d", k.Group, k.Topic, k.Partition, v.Offset)
	case 2:
		var k kmsg.GroupMetadataKey
		_ = k.ReadFrom(r.key)
		if r.value == nil {
			return fmt.Sprintf("group %s tombstone", k.Group)
		}
		var v kmsg.GroupMetadataValue
		_ = v.ReadFrom(r.value)
		var ms []string
		for _, m := range v.Members {
			ms = append(ms, m.MemberID+":"+formatAssignment(m.Assignment))
		}
		return fmt.Sprintf("group %s gen=%d protocol=%s leader=%s members=(%s)", k.Group, v.Generation,
			deref(v.Protocol), deref(v.Leader), strings.Join(ms, ","))
	}
	if isStreamsType(version) {
		return formatStreamsRecord(r)
	}
	if version >= sgMemberType && version <= sgStatePartsType {
		return formatShareGroupRecord(r, topicName)
	}
	return formatConsumerRecord(r, topicName)
}

// dumpGroup prints a group's state, members and offsets.
func dumpGroup(out *strings.Builder, s *groupShard, id string) {
	g := s.groups[id]
	if g == nil {
		fmt.Fprintf(out, "%s: none\n", id)
		return
	}
	if g.streams != nil {
		dumpStreams(out, g)
	} else if cg := g.consumer; cg != nil {
		fmt.Fprintf(out, "%s: consumer %s epoch=%d assignment-epoch=%d\n", id, cg.state(), cg.epoch, cg.assignmentEpoch)
		for _, m := range cg.sortedMembers() {
			proto := ""
			if m.classic != nil {
				proto = " classic"
			}
			fmt.Fprintf(out, "  %s%s epoch=%d state=%s assigned=%s revoking=%s target=%s\n", m.id, proto, m.epoch,
				[...]string{"stable", "unrevoked", "unreleased"}[m.state],
				formatSet(s, m.assigned), formatSet(s, m.revoking), formatSet(s, cg.target[m.id]))
		}
	} else {
		fmt.Fprintf(out, "%s: %s gen=%d protocol=%s leader=%s\n", id, g.state, g.generation, g.protocol, g.leader)
		for _, m := range g.sortedMembers() {
			line := fmt.Sprintf("  %s", m.id)
			if m.instanceID != "" {
				line += " instance=" + m.instanceID
			}
			if m.joinWaiter != 0 {
				line += fmt.Sprintf(" joining=w%d", m.joinWaiter)
			}
			if m.syncWaiter != 0 {
				line += fmt.Sprintf(" syncing=w%d", m.syncWaiter)
			}
			fmt.Fprintf(out, "%s assignment=%s\n", line, formatAssignment(m.assignment))
		}
	}
	offs := s.offsets.of(id)
	tps := make([]topicPartition, 0, len(offs))
	for tp := range offs {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		return tps[i].topic < tps[j].topic || tps[i].topic == tps[j].topic && tps[i].partition < tps[j].partition
	})
	for _, tp := range tps {
		fmt.Fprintf(out, "  offset %s-%d=%d\n", tp.topic, tp.partition, offs[tp].offset)
	}
}

func formatSet(s *groupShard, set partitionSet) string {
	var parts []string
	for id, ps := range set {
		t, _ := s.topics.TopicByID(id)
		parts = append(parts, t.name+":"+joinInts(ps))
	}
	slices.Sort(parts)
	return "(" + strings.Join(parts, " ") + ")"
}
