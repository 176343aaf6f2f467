package main

import (
	"os"
	"path/filepath"
	"slices"
)

// clientDef is one entry of the runner registry: how to install a client's runner and the
// argv prefix that runs it (relative paths are relative to compat-tests/).
type clientDef struct {
	Name string
	// Argv is the command prefix; the orchestrator appends --bootstrap/--scenario/--topic/--arg.
	Argv []string
	// Install builds or installs the runner; nil when there is nothing to do. It returns
	// an error whose text becomes the skip reason of every cell of this client.
	Install func(h *harness) error
	// Ready, if set, reports why the runner cannot run ("" = ready), checked after Install.
	Ready func() string
	// PreCreate: the orchestrator creates the scenario's topic (with franz-go) before the run,
	// for clients without an admin API.
	PreCreate bool
	// SelfCreate lists scenarios whose topic a PreCreate client creates itself (with settings
	// the scenario checks), so the orchestrator leaves it alone.
	SelfCreate []string
	// Lacks lists scenarios the runner does not implement: their cells are
	// skips, recorded without running it (nor pre-creating their topics).
	Lacks []string
	// Streams: the client runs the Kafka Streams applications (streamsScenarios)
	// and nothing else, and no other client runs those: their other cells are
	// not run (empty in the matrix).
	Streams bool
}

// streamsScenarios are the Kafka Streams applications the kafka-streams client runs.
var streamsScenarios = []string{"streams_wordcount_classic", "streams_wordcount_streams"}

// runs says whether the client has a cell of scenario s (see Streams).
func (c clientDef) runs(s string) bool { return c.Streams == slices.Contains(streamsScenarios, s) }

// kafka44Scenarios are the scenarios of the Kafka 4.4 capabilities, which the
// kcat and kafka-cli runners lack.
var kafka44Scenarios = append([]string{"transactions_v2", "fetch_sessions", "group_consumer_restart", "group_configs", "delegation_token"}, shareScenarios...)

// shareScenarios are the share group scenarios (KIP-932): franz-go's
// kgo.ShareGroup and kafka-java's KafkaShareConsumer run them.
var shareScenarios = []string{"share_consume", "share_release", "share_reject", "share_delivery_limit", "share_lock_expiry", "share_read_committed"}

func goRunner(name, dir string, cgo bool) clientDef {
	bin := filepath.Join(".cache", "bin", dir)
	return clientDef{Name: name, Argv: []string{bin}, Install: func(h *harness) error {
		return h.goBuild("./runners/"+dir, bin, cgo)
	}}
}

func fileReady(paths ...string) func() string {
	return func() string {
		for _, p := range paths {
			if _, err := os.Stat(p); err != nil {
				return "runner not installed: " + p + " missing"
			}
		}
		return ""
	}
}

// registry lists every client of the matrix, in table order.
func registry() []clientDef {
	return []clientDef{
		goRunner("franz-go", "franzgo", false),
		goRunner("sarama", "sarama", false),
		goRunner("kafka-go", "kafkago", false),
		goRunner("confluent-kafka-go", "confluentgo", true),
		{Name: "kcat", Argv: []string{".cache/bin/kcat-runner"}, PreCreate: true, Lacks: kafka44Scenarios, Install: func(h *harness) error {
			if err := h.runScript("kcat", "../scripts/install-kcat.sh"); err != nil {
				return err
			}
			return h.goBuild("./runners/kcat", ".cache/bin/kcat-runner", false)
		}},
		{Name: "kafka-cli", Argv: []string{".cache/bin/kafkacli-runner"}, PreCreate: true, SelfCreate: []string{"describe_topic"}, Lacks: kafka44Scenarios, Install: func(h *harness) error {
			if err := h.kafkaInstalled(); err != nil {
				return err
			}
			return h.goBuild("./runners/kafkacli", ".cache/bin/kafkacli-runner", false)
		}},
		{Name: "kafka-java", Argv: []string{"java", "-jar", ".cache/java/runner.jar"},
			Install: func(h *harness) error { return h.clientsInstall("java") },
			Ready:   fileReady(".cache/java/runner.jar")},
		{Name: "kafka-streams", Argv: []string{".cache/bin/kstreams-runner"}, Streams: true, Install: func(h *harness) error {
			if err := h.runScript("streams", "scripts/install-streams.sh"); err != nil {
				return err
			}
			return h.goBuild("./runners/kstreams", ".cache/bin/kstreams-runner", false)
		}, Ready: fileReady(".cache/streams-4.4.0/classes/WordCount.class")},
		{Name: "kafkajs", Argv: []string{"node", "clients/kafkajs/runner.js"},
			Install: func(h *harness) error { return h.clientsInstall("kafkajs") },
			Ready:   fileReady("clients/kafkajs/runner.js", "clients/kafkajs/node_modules/kafkajs")},
		{Name: "kafka-python", Argv: []string{".cache/venv/bin/python", "clients/python/kafka_python_runner.py"},
			Install: func(h *harness) error { return h.clientsInstall("python") },
			Ready:   fileReady(".cache/venv/bin/python", "clients/python/kafka_python_runner.py")},
		{Name: "confluent-kafka-python", Argv: []string{".cache/venv/bin/python", "clients/python/confluent_kafka_runner.py"},
			Install: func(h *harness) error { return h.clientsInstall("python") },
			Ready:   fileReady(".cache/venv/bin/python", "clients/python/confluent_kafka_runner.py")},
	}
}

// scenarios run per client (cross_consume is driven separately, dump_log is orchestrator-only).
var scenarios = []string{
	"metadata", "create_topic",
	"produce_consume_none", "produce_consume_gzip", "produce_consume_snappy", "produce_consume_lz4", "produce_consume_zstd",
	"headers", "list_offsets", "idempotent_produce", "group_commit_resume", "transactions",
	"describe_list_groups", "describe_configs", "create_partitions", "delete_topic", "max_message_size",
	"alter_configs", "describe_topic", "log_dirs", "delete_records", "consumer_groups_cli", "group_consumer_protocol",
	"transactions_v2", "fetch_sessions", "group_consumer_restart", "group_configs",
	"share_consume", "share_release", "share_reject", "share_delivery_limit", "share_lock_expiry", "share_read_committed",
	"streams_wordcount_classic", "streams_wordcount_streams",
	"cross_produce", "cross_consume",
}

// allScenarios are the scenarios, then the secure columns' (secure.go).
func allScenarios() []string { return append(append([]string{}, scenarios...), secureScenarios...) }

// dumpLogClient is the matrix's name for the on-disk check (Kafka's DumpLogSegments).
const dumpLogClient = "kafka-dump-log"
