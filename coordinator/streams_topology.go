package coordinator

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A streams group's topology is what its members send when they join: the
// subtopologies with their source topics (named or by regex), the
// repartition topics they write and read, the changelog topics of their
// state stores and the groups of topics that must be copartitioned. The
// coordinator configures it against the cluster's topics as Kafka's
// InternalTopicManager.configureTopics does: the partition counts of the
// repartition topics are derived from the subtopologies that write them,
// copartitioned topics are made (or checked to be) equal, each
// subtopology has as many tasks as its most partitioned source topic, and
// each changelog topic has one partition per task. Missing internal
// topics are reported for the broker to create (MISSING_INTERNAL_TOPICS);
// until every source and internal topic exists the group has no tasks.

// Status codes of StreamsGroupHeartbeatResponse (Kafka's
// StreamsGroupHeartbeatResponse.Status).
const (
	streamsStatusStaleTopology         int8 = 0
	streamsStatusMissingSourceTopics   int8 = 1
	streamsStatusIncorrectlyPartitoned int8 = 2
	streamsStatusMissingInternalTopics int8 = 3
	streamsStatusShutdownApplication   int8 = 4
)

// StreamsInternalTopic is an internal topic (repartition or changelog) a
// streams group needs and the cluster lacks: the broker creates it.
type StreamsInternalTopic struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16 // 0: the broker's default
	Configs           map[string]string
}

// configuredTopology is a topology configured against the topics.
type configuredTopology struct {
	ready   bool             // every topic exists with the right partitions
	tasks   map[string]int32 // number of tasks by subtopology, when ready
	sources map[string][]string
	status  []kmsg.StreamsGroupHeartbeatResponseStatus
	missing []StreamsInternalTopic
	hash    int64 // of the involved topics' ids and partition counts
}

func streamsStatus(code int8, detail string) kmsg.StreamsGroupHeartbeatResponseStatus {
	st := kmsg.NewStreamsGroupHeartbeatResponseStatus()
	st.StatusCode, st.StatusDetail = code, detail
	return st
}

// configureStreamsTopology configures t against the shard's topic metadata.
func (s *groupShard) configureStreamsTopology(t *kmsg.StreamsGroupHeartbeatRequestTopology) configuredTopology {
	var c configuredTopology
	if t == nil {
		return c
	}
	internal := map[string]bool{}
	for _, st := range t.Subtopologies {
		for _, ti := range st.RepartitionSourceTopics {
			internal[ti.Topic] = true
		}
		for _, ti := range st.StateChangelogTopics {
			internal[ti.Topic] = true
		}
	}
	h := fnv.New64a()
	hashed := map[string]bool{}
	hashTopic := func(tm topicMeta) {
		if !hashed[tm.name] {
			hashed[tm.name] = true
			fmt.Fprintf(h, "%s/%x/%d;", tm.name, tm.id, tm.partitions)
		}
	}
	partitions := map[string]int32{}
	c.sources = map[string][]string{}
	var missingSources []string
	for _, st := range t.Subtopologies {
		var srcs []string
		for _, name := range st.SourceTopics {
			srcs = append(srcs, name)
			if tm, ok := s.topics.Topic(name); ok {
				partitions[name] = tm.partitions
				hashTopic(tm)
			} else {
				missingSources = append(missingSources, name)
			}
		}
		for _, expr := range st.SourceTopicRegex {
			re, err := regexp.Compile("^(?:" + expr + ")$")
			if err != nil {
				missingSources = append(missingSources, expr)
				continue
			}
			matched := false
			for _, tm := range s.topics.Topics() {
				if !tm.internal && !internal[tm.name] && re.MatchString(tm.name) {
					srcs, matched = append(srcs, tm.name), true
					partitions[tm.name] = tm.partitions
					hashTopic(tm)
				}
			}
			if !matched {
				missingSources = append(missingSources, expr)
			}
		}
		c.sources[st.SubtopologyID] = srcs
	}
	names := make([]string, 0, len(internal))
	for name := range internal {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if tm, ok := s.topics.Topic(name); ok {
			hashTopic(tm)
		}
	}
	c.hash = int64(h.Sum64())
	if len(missingSources) > 0 {
		slices.Sort(missingSources)
		c.status = append(c.status, streamsStatus(streamsStatusMissingSourceTopics,
			"Source topics "+strings.Join(slices.Compact(missingSources), ", ")+" are missing."))
		return c
	}
	if err := repartitionCounts(t, partitions); err != "" {
		c.status = append(c.status, streamsStatus(streamsStatusIncorrectlyPartitoned, err))
		return c
	}
	if err := enforceCopartitioning(t, partitions, internal); err != "" {
		c.status = append(c.status, streamsStatus(streamsStatusIncorrectlyPartitoned, err))
		return c
	}
	c.tasks = map[string]int32{}
	for _, st := range t.Subtopologies {
		var n int32
		for _, name := range c.sources[st.SubtopologyID] {
			n = max(n, partitions[name])
		}
		for _, ti := range st.RepartitionSourceTopics {
			n = max(n, partitions[ti.Topic])
		}
		c.tasks[st.SubtopologyID] = n
		for _, ti := range st.StateChangelogTopics {
			partitions[ti.Topic] = n
		}
	}
	var wrong []string
	for _, st := range t.Subtopologies {
		for _, list := range [][]kmsg.TopicInfo{st.RepartitionSourceTopics, st.StateChangelogTopics} {
			for _, ti := range list {
				want := partitions[ti.Topic]
				if tm, ok := s.topics.Topic(ti.Topic); ok {
					if tm.partitions != want {
						wrong = append(wrong, fmt.Sprintf("Existing internal topic %s has invalid number of partitions: expected: %d; actual: %d.", ti.Topic, want, tm.partitions))
					}
					continue
				}
				if slices.ContainsFunc(c.missing, func(m StreamsInternalTopic) bool { return m.Name == ti.Topic }) {
					continue
				}
				cfgs := map[string]string{}
				for _, kv := range ti.Configs {
					cfgs[kv.Key] = kv.Value
				}
				c.missing = append(c.missing, StreamsInternalTopic{Name: ti.Topic, Partitions: want, ReplicationFactor: ti.ReplicationFactor, Configs: cfgs})
			}
		}
	}
	if len(wrong) > 0 {
		sort.Strings(wrong)
		c.status = append(c.status, streamsStatus(streamsStatusIncorrectlyPartitoned, strings.Join(wrong, " ")))
		c.missing = nil
		return c
	}
	if len(c.missing) > 0 {
		sort.Slice(c.missing, func(i, j int) bool { return c.missing[i].Name < c.missing[j].Name })
		names := make([]string, len(c.missing))
		for i, m := range c.missing {
			names[i] = m.Name
		}
		c.status = append(c.status, streamsStatus(streamsStatusMissingInternalTopics, "Internal topics are missing: "+strings.Join(names, ", ")))
		return c
	}
	c.ready = true
	return c
}

// repartitionCounts derives the partition count of every repartition
// source topic that does not fix one, as Kafka's RepartitionTopics: the
// most partitioned input of the subtopologies writing it, repeated until
// every count is known.
func repartitionCounts(t *kmsg.StreamsGroupHeartbeatRequestTopology, partitions map[string]int32) string {
	var unknown []string
	for _, st := range t.Subtopologies {
		for _, ti := range st.RepartitionSourceTopics {
			if ti.NumPartitions > 0 {
				partitions[ti.Topic] = ti.NumPartitions
			} else {
				unknown = append(unknown, ti.Topic)
			}
		}
	}
	for len(unknown) > 0 {
		progress := false
		for i := 0; i < len(unknown); i++ {
			name := unknown[i]
			var n int32
			resolved, written := true, false
			for _, st := range t.Subtopologies {
				if !slices.Contains(st.RepartitionSinkTopics, name) {
					continue
				}
				written = true
				for _, src := range inputsOf(st) {
					p, ok := partitions[src]
					if !ok {
						resolved = false
					}
					n = max(n, p)
				}
			}
			if !written {
				return "Failed to compute number of partitions for all repartition topics, because a repartition source topic is never used as a sink topic."
			}
			if resolved && n > 0 {
				partitions[name] = n
				unknown = slices.Delete(unknown, i, i+1)
				i--
				progress = true
			}
		}
		if !progress {
			return "Failed to compute number of partitions for all repartition topics. There may be loops in the topology that cannot be resolved."
		}
	}
	return ""
}

// inputsOf is every topic a subtopology reads: its named source topics
// and its repartition source topics.
func inputsOf(st kmsg.StreamsGroupHeartbeatRequestTopologySubtopology) []string {
	out := slices.Clone(st.SourceTopics)
	for _, ti := range st.RepartitionSourceTopics {
		out = append(out, ti.Topic)
	}
	return out
}

// enforceCopartitioning is Kafka's CopartitionedTopicsEnforcer: the source
// topics of a copartition group must have the same partition count, and
// its repartition topics without a fixed count take it.
func enforceCopartitioning(t *kmsg.StreamsGroupHeartbeatRequestTopology, partitions map[string]int32, internal map[string]bool) string {
	for _, st := range t.Subtopologies {
		fixed := map[string]bool{}
		for _, ti := range st.RepartitionSourceTopics {
			fixed[ti.Topic] = ti.NumPartitions > 0
		}
		for _, cg := range st.CopartitionGroups {
			var sources, repartition []string
			for _, i := range cg.SourceTopics {
				if int(i) >= 0 && int(i) < len(st.SourceTopics) && !internal[st.SourceTopics[i]] {
					sources = append(sources, st.SourceTopics[i])
				}
			}
			for _, i := range cg.RepartitionSourceTopics {
				if int(i) >= 0 && int(i) < len(st.RepartitionSourceTopics) {
					repartition = append(repartition, st.RepartitionSourceTopics[i].Topic)
				}
			}
			var n int32
			if len(sources) > 0 {
				n = partitions[sources[0]]
				for _, name := range sources[1:] {
					if partitions[name] != n {
						parts := make([]string, 0, len(sources))
						for _, s := range sources {
							parts = append(parts, fmt.Sprintf("%s:%d", s, partitions[s]))
						}
						return fmt.Sprintf("Following topics do not have the same number of partitions: [%s]", strings.Join(parts, ", "))
					}
				}
			} else {
				for _, name := range repartition {
					n = max(n, partitions[name])
				}
			}
			for _, name := range repartition {
				if fixed[name] && partitions[name] != n {
					return fmt.Sprintf("Number of partitions [%d] of repartition topic [%s] doesn't match number of partitions [%d] of the source topic.", partitions[name], name, n)
				}
				partitions[name] = n
			}
		}
	}
	return ""
}
