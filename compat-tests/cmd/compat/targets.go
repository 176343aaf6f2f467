package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// targetDef is one column of the matrix: which broker, on how many nodes.
type targetDef struct {
	name  string
	tag   string // topic-name suffix
	kafka bool
	nodes int
	// home is the Kafka install (relative to compat-tests/) a Kafka target runs from.
	home string
	// secure: the target serves SASL_SSL and SSL listeners and runs the
	// secureScenarios only (secure.go).
	secure bool
}

// kafkaHome is the reference Kafka's install (relative to compat-tests/), what
// scripts/install-kafka.sh installs by default: Apache Kafka 4.4.0, whose
// tools the kafka-cli runner and the on-disk check run too.
const kafkaHome = ".cache/kafka-4.4.0"

// targetDefs are the matrix's columns: a single node of each broker, a
// three-node cluster of each whose topics are RF=3 with min.insync.replicas=2,
// and a secured single node of each; every Kafka column is kafkaHome's.
var targetDefs = []targetDef{
	{name: "strata", tag: "s", nodes: 1},
	{name: "kafka", tag: "k", kafka: true, nodes: 1, home: kafkaHome},
	{name: "strata-cluster", tag: "s3", nodes: 3},
	{name: "kafka-cluster", tag: "k3", kafka: true, nodes: 3, home: kafkaHome},
	{name: "strata-secure", tag: "ss", nodes: 1, secure: true},
	{name: "kafka-secure", tag: "ks", kafka: true, nodes: 1, home: kafkaHome, secure: true},
}

// brokerPair is a Strata target and the Kafka target it is held to: a cell
// that passes on kafka must pass on strata.
type brokerPair struct{ strata, kafka string }

var brokerPairs = []brokerPair{{"strata", "kafka"}, {"strata-cluster", "kafka-cluster"}, {"strata-secure", "kafka-secure"}}

// defaultClusterSkip is what the cluster targets leave out by default, to keep
// `make compat` within CI's time: kafka-cli, which starts a JVM per tool run and
// is 40% of the cluster columns' time while kafka-java runs the same Java
// client on them, and three of the five codecs (compression is the client's and
// the log's, not the replication's: produce_consume_none and _zstd stay).
const defaultClusterSkip = "kafka-cli,produce_consume_gzip,produce_consume_snappy,produce_consume_lz4"

// targetSel is what the command line selected: the targets to run, and the
// clients and scenarios the cluster targets leave out.
type targetSel struct {
	names       map[string]bool
	clusterSkip map[string]bool
}

// covers says whether the target runs client's scenario: the single nodes run
// every cell but the secure scenarios, the clusters those -cluster-skip does
// not name, the secure targets the secure scenarios only.
func (b *broker) covers(client, scenario string) bool {
	return !b.skip[client] && !b.skip[scenario] && isSecureScenario(scenario) == b.secure
}

// startTargets installs what the selected targets need and starts them in
// parallel. A Kafka target that cannot start is recorded (its cells become
// skips); a Strata target that cannot start breaks the run (nil).
func (h *harness) startTargets(sel targetSel) ([]*broker, []brokerPair) {
	var defs []targetDef
	for _, d := range targetDefs {
		if sel.names[d.name] {
			defs = append(defs, d)
		}
	}
	got := make([]*broker, len(defs))
	errs := make([]error, len(defs))
	var wg sync.WaitGroup
	for i, d := range defs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rf := h.rf
			if d.nodes > 1 {
				rf = int16(d.nodes)
			}
			if !d.kafka {
				got[i], errs[i] = h.startStrata(d.name, d.tag, d.nodes, rf, d.secure)
			} else if _, err := os.Stat(filepath.Join(h.root, d.home, "VERSION")); err != nil {
				errs[i] = fmt.Errorf("Kafka not installed in %s (scripts/install-kafka.sh failed)", d.home)
			} else {
				got[i], errs[i] = h.startKafka(d.name, d.tag, d.home, d.nodes, rf, d.secure)
			}
			if errs[i] == nil && d.secure {
				h.scramUsers(got[i], d.kafka)
			}
		}()
	}
	wg.Wait()
	var up []*broker
	for i, d := range defs {
		if errs[i] != nil {
			h.breakf("start %s: %v", d.name, errs[i])
			if !d.kafka {
				return nil, nil
			}
			h.down = append(h.down, &broker{name: d.name, nodes: make([]*node, d.nodes), secure: d.secure})
			h.downErr = append(h.downErr, errs[i])
			continue
		}
		up = append(up, got[i])
	}
	for _, b := range append(append([]*broker{}, up...), h.down...) {
		if len(b.nodes) > 1 {
			b.skip = sel.clusterSkip
		}
		h.targets[b.name] = b
	}
	var pairs []brokerPair
	for _, p := range brokerPairs {
		if sel.names[p.strata] && sel.names[p.kafka] {
			pairs = append(pairs, p)
		}
	}
	return up, pairs
}

// skipUnavailable records every cell of a target that could not start as a skip.
func (h *harness) skipUnavailable(clients []clientDef, scen []string) {
	for i, b := range h.down {
		for _, c := range clients {
			for _, s := range scen {
				if c.runs(s) && b.covers(c.Name, s) {
					h.add(cell{Client: c.Name, Scenario: s, Broker: b.name, Result: "skip", Detail: "reference Kafka unavailable: " + h.downErr[i].Error()})
				}
			}
		}
	}
}

// parseTargets checks the -targets list against targetDefs.
func parseTargets(s string) (map[string]bool, error) {
	m := filter(s)
	for n := range m {
		known := false
		for _, d := range targetDefs {
			known = known || d.name == n
		}
		if !known {
			return nil, fmt.Errorf("-targets: unknown target %q", n)
		}
	}
	if !m["strata"] && !m["strata-cluster"] && !m["strata-secure"] {
		return nil, errors.New("-targets: no Strata target")
	}
	return m, nil
}

func targetNames() string {
	var n []string
	for _, d := range targetDefs {
		n = append(n, d.name)
	}
	return strings.Join(n, ",")
}

// targetIndex is the target's column order.
func targetIndex(name string) int {
	for i, d := range targetDefs {
		if d.name == name {
			return i
		}
	}
	return len(targetDefs)
}

// scramUsers creates the secure target's SCRAM credentials. Kafka failing to
// is a broken harness; Strata failing to is logged, and its SCRAM cells fail.
func (h *harness) scramUsers(b *broker, kafka bool) {
	err := createScramUsers(b.seeds())
	switch {
	case err == nil:
		fmt.Printf("compat: %s: SCRAM-SHA-256/512 credentials of %s created\n", b.name, secureUser)
	case kafka:
		h.breakf("%s: SCRAM credentials: %v", b.name, err)
	default:
		fmt.Printf("compat: %s: SCRAM credentials not created (its SCRAM cells fail): %v\n", b.name, err)
	}
}
