package coordinator

import (
	"slices"
	"sort"

	"go.uber.org/zap"
)

// The sticky task assignor, after Kafka's StickyTaskAssignor: every active
// task stays with the member that owns it while that member is under its
// share (tasks over members, rounded up), the rest go to the least loaded
// member, preferring one whose process already ran the task; then
// streams.num.standby.replicas standby copies of each stateful task go to
// the least loaded members of other processes, previous holders first.

// computeStreamsTarget computes the group's target assignment at its
// group epoch (Kafka's TargetAssignmentBuilder with the sticky assignor).
func (s *groupShard) computeStreamsTarget(g *group) {
	sg := g.streams
	members := sg.sortedMembers()
	target := make(map[string]streamsTasks, len(members))
	for _, m := range members {
		target[m.id] = emptyStreamsTasks()
	}
	if sg.configured.ready && len(members) > 0 {
		var tasks []taskID
		stateful := map[string]bool{}
		for _, st := range sg.topology.Subtopologies {
			stateful[st.SubtopologyID] = len(st.StateChangelogTopics) > 0
			for p := int32(0); p < sg.configured.tasks[st.SubtopologyID]; p++ {
				tasks = append(tasks, taskID{st.SubtopologyID, p})
			}
		}
		// By partition, then subtopology: each subtopology's tasks are
		// spread over the members, as Kafka's assignor spreads them.
		slices.SortFunc(tasks, func(a, b taskID) int {
			if a.partition != b.partition {
				return int(a.partition) - int(b.partition)
			}
			return compareTasks(a, b)
		})
		assignActive(members, tasks, target)
		if n := s.streamsSettings(g.id).NumStandbyReplicas; n > 0 {
			var standby []taskID
			for _, t := range tasks {
				if stateful[t.subtopology] {
					standby = append(standby, t)
				}
			}
			assignStandby(members, standby, n, target)
		}
	}
	sg.target = target
	sg.assignmentEpoch, sg.assignmentTime = sg.epoch, s.now.UnixMilli()
	if sg.configured.ready {
		sg.lastConfigs = s.assignmentConfigs(g.id)
	}
	sg.endpointEpoch++
	s.logger.Info("computed a new streams target assignment", zap.String("group", g.id), zap.Int32("epoch", sg.epoch),
		zap.Int("members", len(members)), zap.Bool("ready", sg.configured.ready))
}

// assignActive places the active tasks.
func assignActive(members []*smember, tasks []taskID, target map[string]streamsTasks) {
	quota := (len(tasks) + len(members) - 1) / len(members)
	load := map[string]int{}
	byID := map[string]*smember{}
	for _, m := range members {
		byID[m.id] = m
	}
	previous := map[taskID]*smember{}
	processes := map[taskID]map[string]bool{}
	for _, m := range members {
		for _, set := range []taskSet{m.assigned.active, m.revoking} {
			for _, t := range set.tasks() {
				previous[t] = m
			}
		}
		for _, set := range []taskSet{m.assigned.active, m.revoking, m.assigned.standby, m.assigned.warmup} {
			for _, t := range set.tasks() {
				if processes[t] == nil {
					processes[t] = map[string]bool{}
				}
				processes[t][m.processID] = true
			}
		}
	}
	var rest []taskID
	for _, t := range tasks {
		if m := previous[t]; m != nil && load[m.id] < quota {
			target[m.id].active.add(t)
			load[m.id]++
			continue
		}
		rest = append(rest, t)
	}
	for _, t := range rest {
		best := leastLoaded(members, load, func(m *smember) bool { return true }, func(m *smember) bool { return processes[t][m.processID] })
		target[best.id].active.add(t)
		load[best.id]++
	}
}

// assignStandby places n standby copies of each task on members of
// processes other than the one running it actively.
func assignStandby(members []*smember, tasks []taskID, n int, target map[string]streamsTasks) {
	load := map[string]int{}
	processOf := map[string]string{}
	for _, m := range members {
		load[m.id] = target[m.id].active.count()
		processOf[m.id] = m.processID
	}
	for _, t := range tasks {
		used := map[string]bool{}
		for _, m := range members {
			if target[m.id].active.has(t) {
				used[m.processID] = true
			}
		}
		for range n {
			ok := func(m *smember) bool { return !used[m.processID] }
			if !slices.ContainsFunc(members, ok) {
				break
			}
			best := leastLoaded(members, load, ok, func(m *smember) bool { return m.assigned.standby.has(t) })
			target[best.id].standby.add(t)
			load[best.id]++
			used[processOf[best.id]] = true
		}
	}
}

// leastLoaded is the member allowed by ok with the fewest tasks, those
// that prefer come first among equals, then by member id.
func leastLoaded(members []*smember, load map[string]int, ok, prefer func(*smember) bool) *smember {
	cands := make([]*smember, 0, len(members))
	for _, m := range members {
		if ok(m) {
			cands = append(cands, m)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if load[a.id] != load[b.id] {
			return load[a.id] < load[b.id]
		}
		return prefer(a) && !prefer(b)
	})
	return cands[0]
}

// reconcileStreams moves m towards its target (Kafka's streams
// CurrentAssignmentBuilder): active tasks it must give up are first taken
// out and kept pending revocation at its epoch until a heartbeat shows it
// no longer owns them; then it moves to the assignment epoch, getting the
// target's active tasks no other member still holds (UNRELEASED_TASKS
// until they are released) and its standby and warm-up tasks.
func (s *groupShard) reconcileStreams(g *group, m *smember, owned taskSet) {
	sg := g.streams
	if m.epoch == staticLeaveEpoch {
		return
	}
	if m.state == smemberUnrevoked {
		if owned == nil || len(owned.intersect(m.revoking)) > 0 {
			return
		}
		sg.setActive(m, m.assigned.active, taskSet{})
		s.cancel(timerKey{kind: timerStreamsRevoke, group: g.id, member: m.id})
		m.state = smemberStable
	}
	if m.epoch == sg.assignmentEpoch && m.state == smemberStable {
		return
	}
	target, ok := sg.target[m.id]
	if !ok {
		target = emptyStreamsTasks()
	}
	if revoke := m.assigned.active.minus(target.active); len(revoke) > 0 {
		sg.setActive(m, m.assigned.active.intersect(target.active), revoke)
		m.state = smemberUnrevoked
		s.schedule(timerKey{kind: timerStreamsRevoke, group: g.id, member: m.id}, m.rebalanceTimeout)
		return
	}
	active := taskSet{}
	for _, t := range target.active.tasks() {
		if o, held := sg.owners[t]; !held || o == m.id {
			active.add(t)
		}
	}
	sg.setActive(m, active, taskSet{})
	m.assigned.standby, m.assigned.warmup = target.standby.clone(), target.warmup.clone()
	if m.epoch != sg.assignmentEpoch {
		m.prevEpoch, m.epoch = m.epoch, sg.assignmentEpoch
	}
	m.state = smemberStable
	if active.count() < target.active.count() {
		m.state = smemberUnreleased
	}
}
