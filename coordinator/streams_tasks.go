package coordinator

import (
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// taskID is a task of a streams group: a partition of a subtopology.
type taskID struct {
	subtopology string
	partition   int32
}

func compareTasks(a, b taskID) int {
	if a.subtopology != b.subtopology {
		if a.subtopology < b.subtopology {
			return -1
		}
		return 1
	}
	return int(a.partition) - int(b.partition)
}

// taskSet is a set of tasks: partitions by subtopology id, each sorted.
type taskSet map[string][]int32

func (s taskSet) has(t taskID) bool {
	_, ok := slices.BinarySearch(s[t.subtopology], t.partition)
	return ok
}

func (s taskSet) add(t taskID) {
	ps := s[t.subtopology]
	if i, ok := slices.BinarySearch(ps, t.partition); !ok {
		s[t.subtopology] = slices.Insert(ps, i, t.partition)
	}
}

func (s taskSet) count() int {
	n := 0
	for _, ps := range s {
		n += len(ps)
	}
	return n
}

// tasks lists the set's tasks in order.
func (s taskSet) tasks() []taskID {
	out := make([]taskID, 0, s.count())
	for id, ps := range s {
		for _, p := range ps {
			out = append(out, taskID{id, p})
		}
	}
	slices.SortFunc(out, compareTasks)
	return out
}

func (s taskSet) equal(o taskSet) bool {
	if s.count() != o.count() {
		return false
	}
	for id, ps := range s {
		if !slices.Equal(ps, o[id]) {
			return false
		}
	}
	return true
}

// minus is the tasks of s not in o.
func (s taskSet) minus(o taskSet) taskSet {
	out := taskSet{}
	for _, t := range s.tasks() {
		if !o.has(t) {
			out.add(t)
		}
	}
	return out
}

// intersect is the tasks in both s and o.
func (s taskSet) intersect(o taskSet) taskSet {
	out := taskSet{}
	for _, t := range s.tasks() {
		if o.has(t) {
			out.add(t)
		}
	}
	return out
}

func (s taskSet) clone() taskSet {
	out := make(taskSet, len(s))
	for id, ps := range s {
		out[id] = slices.Clone(ps)
	}
	return out
}

// taskSetOf reads a request's task list; nil stays nil (unchanged).
func taskSetOf(ts []kmsg.TaskIDs) taskSet {
	if ts == nil {
		return nil
	}
	out := taskSet{}
	for _, t := range ts {
		for _, p := range t.Partitions {
			out.add(taskID{t.SubtopologyID, p})
		}
	}
	return out
}

// taskIDs is the set as the protocol lists it, by subtopology id.
func (s taskSet) taskIDs() []kmsg.TaskIDs {
	ids := make([]string, 0, len(s))
	for id, ps := range s {
		if len(ps) > 0 {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	out := make([]kmsg.TaskIDs, 0, len(ids))
	for _, id := range ids {
		t := kmsg.NewTaskIDs()
		t.SubtopologyID, t.Partitions = id, slices.Clone(s[id])
		out = append(out, t)
	}
	return out
}

// streamsTasks is a member's three kinds of tasks.
type streamsTasks struct {
	active, standby, warmup taskSet
}

func emptyStreamsTasks() streamsTasks {
	return streamsTasks{active: taskSet{}, standby: taskSet{}, warmup: taskSet{}}
}

func (t streamsTasks) equal(o streamsTasks) bool {
	return t.active.equal(o.active) && t.standby.equal(o.standby) && t.warmup.equal(o.warmup)
}

func (t streamsTasks) assignment() kmsg.StreamsAssignment {
	a := kmsg.NewStreamsAssignment()
	a.ActiveTasks, a.StandbyTasks, a.WarmupTasks = t.active.taskIDs(), t.standby.taskIDs(), t.warmup.taskIDs()
	return a
}
