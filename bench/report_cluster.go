package bench

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strata-io/strata/chaos"
)

// clusterHeading starts the cluster pass's section of the report; a
// -cluster-only run replaces the section it starts (SpliceSection).
const clusterHeading = "## Three brokers on one machine: RF=3, acks=all"

// failoverTarget is issue 14's bound on the longest pause between
// acknowledgements across a leader failover.
const failoverTarget = time.Second

// ClusterMarkdown is the cluster pass's section: the machine it shared, the
// W1, W3 and W5 table and the failover figures. command, when set, is how
// the section was measured (a -cluster-only run).
func (run *Run) ClusterMarkdown(command string) string {
	var b strings.Builder
	b.WriteString(clusterHeading + "\n\n")
	fmt.Fprintf(&b, "**All six brokers share one machine**: the three nodes of each cluster run on this one %d-CPU machine, "+
		"beside the load generator, one cluster at a time. They share its cores, memory, disk and loopback network, so "+
		"these figures show what replication costs each broker in CPU and round trips here, not what three machines would do.", runtime.NumCPU())
	if load, busy := busyMachine(run.LoadBefore, runtime.NumCPU()); busy {
		fmt.Fprintf(&b, " The load average was %s before this run: other work was running on the machine at the same time, "+
			"so the figures are noisy and a rerun on a quiet machine will differ.", load)
	} else if load != "" {
		fmt.Fprintf(&b, " The load average was %s before this run.", load)
	}
	b.WriteString("\n\n")
	if command != "" {
		fmt.Fprintf(&b, "Measured %s (UTC) with `%s`.\n\n", run.Started.UTC().Format("2006-01-02 15:04"), command)
	}
	fmt.Fprintf(&b, "Each cluster is three KRaft combined nodes (broker and controller) on 127.0.0.1, started by the chaos "+
		"package's launcher from one server.properties template (`chaos/cluster.go`): Strata from the tree, and Apache Kafka 4.4.0 "+
		"(`KAFKA_VERSION=4.4.0 compat-tests/scripts/install-kafka.sh`; formatted with StorageTool) with kafka-server-start.sh's "+
		"JVM options and a 512 MiB heap per node: `%s`. Topics have replication factor 3 and min.insync.replicas=2; "+
		"producers are idempotent with acks=all, and every client bootstraps from all three brokers. W1 and W3 are the "+
		"single-broker workloads on the wire generator, with one connection per producer to each partition leader; W5 "+
		"is kgo.Client at the same fixed rate. CPU s and peak RSS are summed over the three nodes.\n\n",
		strings.Join(ClusterKafkaJVM, " "))
	b.WriteString(run.table(Cluster, []string{"W1", "W3", "W5"}))
	b.WriteString("\n")
	b.WriteString(run.failoverSection())
	var errs []string
	for _, e := range run.Errors {
		if strings.HasPrefix(e, string(Strata)+" "+string(Cluster)+":") || strings.HasPrefix(e, string(Kafka)+" "+string(Cluster)+":") {
			e, _, _ = strings.Cut(e, "\n")
			errs = append(errs, fmt.Sprintf("- `%s`\n", e[:min(len(e), 400)]))
		}
	}
	if len(errs) > 0 {
		b.WriteString("Errors during this pass:\n\n" + strings.Join(errs, "") + "\n")
	}
	if len(run.Notes) > 0 {
		b.WriteString("Notes on this pass:\n\n")
		for _, n := range run.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// busyMachine says whether the 1-minute load average of loadavg (as
// Run.LoadBefore holds it) shows other work on a machine of cpus CPUs: above
// half its CPUs. It returns the load as the report prints it.
func busyMachine(loadavg string, cpus int) (string, bool) {
	f := strings.Fields(loadavg)
	if len(f) == 0 {
		return "", false
	}
	one, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return "", false
	}
	return fmt.Sprintf("%s (1, 5 and 15 minutes) on %d CPUs", strings.Join(f, " / "), cpus), one > float64(cpus)/2
}

// failoverStats summarises one broker's failovers.
type failoverStats struct {
	Runs                   int
	Pauses                 []float64 // ms, in run order
	Controller             []bool    // whether each run's killed leader was the active controller
	MedianPause, MaxPause  float64   // ms
	MedianLeader           float64   // ms from the kill to a new leader named
	Acked, Lost, Duplicate int
}

// failovers is broker k's failover results of the cluster pass.
func (run *Run) failovers(k Kind) failoverStats {
	var st failoverStats
	var leaders []float64
	for _, r := range run.Results {
		if r.Workload != Failover || r.Broker != k || r.Mode != Cluster {
			continue
		}
		st.Runs++
		st.Pauses = append(st.Pauses, r.Millis["pause"])
		st.Controller = append(st.Controller, r.ControllerKilled)
		leaders = append(leaders, r.Millis["leader"])
		st.Acked += int(r.Records)
		st.Lost += r.Lost
		st.Duplicate += r.Duplicates
	}
	st.MedianPause, st.MedianLeader = median(st.Pauses), median(leaders)
	if len(st.Pauses) > 0 {
		st.MaxPause = slices.Max(st.Pauses)
	}
	return st
}

// median of xs: the middle value, or the mean of the two middle ones.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (run *Run) failoverSection() string {
	s, k := run.failovers(Strata), run.failovers(Kafka)
	if s.Runs == 0 && k.Runs == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("### Failover: SIGKILL of the partition leader\n\n")
	fmt.Fprintf(&b, "`chaos.Failover`, as `make cluster-chaos` runs it: a 1-partition topic (RF=3, min.insync.replicas=2), one "+
		"idempotent acks=all kgo.Client producer at 200 records/s bootstrapping from all three brokers; the partition's "+
		"leader is killed with SIGKILL, restarted once another node leads, and the run ends when the ISR is full again. "+
		"The figure is the longest pause between two consecutive acknowledgements over the whole run. The producer gives "+
		"up on a request after %v + %v and refreshes metadata at most every %v (`chaos.DefaultTuning`), which bounds "+
		"how soon it notices a dead leader. Every run's history is read back and checked: acknowledged records lost or "+
		"duplicated are counted below. A run marked (controller) killed a leader that was also the active controller, "+
		"so a new metadata quorum leader had to be elected first.\n\n",
		chaos.DefaultTuning.ProduceTimeout, chaos.DefaultTuning.TimeoutOverhead, chaos.DefaultTuning.MetadataMinAge)
	b.WriteString("| broker | runs | longest pause, median ms | longest pause, max ms | each run ms | new leader named, median ms | acked | lost | duplicates |\n")
	b.WriteString("| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |\n")
	for _, row := range []struct {
		k  Kind
		st failoverStats
	}{{Strata, s}, {Kafka, k}} {
		if row.st.Runs == 0 {
			continue
		}
		each := make([]string, len(row.st.Pauses))
		for i, p := range row.st.Pauses {
			each[i] = fmt.Sprintf("%.0f", p)
			if row.st.Controller[i] {
				each[i] += " (controller)"
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %.0f | %.0f | %s | %.0f | %d | %d | %d |\n", row.k, row.st.Runs, row.st.MedianPause,
			row.st.MaxPause, strings.Join(each, ", "), row.st.MedianLeader, row.st.Acked, row.st.Lost, row.st.Duplicate)
	}
	if s.Runs > 0 && k.Runs > 0 {
		fmt.Fprintf(&b, "| **ratio** | | **%s** | %s | | %s | | | |\n", ratio(s.MedianPause, k.MedianPause),
			ratio(s.MaxPause, k.MaxPause), ratio(s.MedianLeader, k.MedianLeader))
	}
	if s.Runs > 0 {
		verdict := "met"
		if s.MaxPause > float64(failoverTarget.Milliseconds()) {
			verdict = "**missed**"
		}
		fmt.Fprintf(&b, "\nTarget (issue 14): Strata's longest pause under %v in every run: %s (max %.0f ms).\n", failoverTarget, verdict, s.MaxPause)
	}
	b.WriteString("\n")
	return b.String()
}

// SpliceSection puts section, a report section starting with a "## "
// heading, into doc: in place of the section with the same heading, or
// when doc has none, before its targets (or charts) section, or at its end.
// Everything else in doc is kept as it was.
func SpliceSection(doc, section string) string {
	heading, _, _ := strings.Cut(section, "\n")
	if !strings.HasSuffix(section, "\n") {
		section += "\n"
	}
	lines := strings.SplitAfter(doc, "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.TrimRight(l, "\n") == heading })
	if start >= 0 {
		end := len(lines)
		for i := start + 1; i < len(lines); i++ {
			if strings.HasPrefix(lines[i], "## ") {
				end = i
				break
			}
		}
		return strings.Join(lines[:start], "") + section + strings.Join(lines[end:], "")
	}
	for _, before := range []string{"## Targets", "## Charts"} {
		if i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, before) }); i >= 0 {
			return strings.Join(lines[:i], "") + section + strings.Join(lines[i:], "")
		}
	}
	if doc != "" && !strings.HasSuffix(doc, "\n\n") {
		doc = strings.TrimRight(doc, "\n") + "\n\n"
	}
	return doc + section
}
