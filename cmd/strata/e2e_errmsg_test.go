package main

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// errorMessageCases are Kafka CLI invocations Kafka refuses with an error
// message, each with the message Apache Kafka 4.4.0 sends: the message
// alone, which the tool prints after the exception's name.
var errorMessageCases = []struct {
	class string
	args  []string
	want  string
}{
	{"org.apache.kafka.tools.ConfigCommand", []string{"--alter", "--entity-type", "topics", "--entity-name", "errmsg", "--add-config", "retention.ms=abc"},
		"InvalidConfigurationException: Invalid value abc for configuration retention.ms: Not a number of type LONG\n"},
	{"org.apache.kafka.tools.ConfigCommand", []string{"--alter", "--entity-type", "topics", "--entity-name", "errmsg", "--add-config", "no.such.config=1"},
		"InvalidConfigurationException: Unknown topic config name: no.such.config\n"},
	{"org.apache.kafka.tools.ConfigCommand", []string{"--alter", "--entity-type", "topics", "--entity-name", "errmsg", "--add-config", "cleanup.policy=[compact,forever]"},
		"InvalidConfigurationException: Invalid value forever for configuration cleanup.policy: String must be one of: compact, delete\n"},
	{"org.apache.kafka.tools.ConfigCommand", []string{"--alter", "--entity-type", "topics", "--entity-name", "errmsg", "--add-config", "min.cleanable.dirty.ratio=2"},
		"InvalidConfigurationException: Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1\n"},
	{"org.apache.kafka.tools.ConfigCommand", []string{"--alter", "--entity-type", "topics", "--entity-name", "no-such-topic", "--add-config", "retention.ms=1"},
		"UnknownTopicOrPartitionException: The topic 'no-such-topic' does not exist.\n"},
	{"org.apache.kafka.tools.ConfigCommand", []string{"--alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config", "log.retention.ms=abc"},
		"InvalidRequestException: Invalid value abc for configuration log.retention.ms: Not a number of type LONG\n"},
	{"org.apache.kafka.tools.ConfigCommand", []string{"--alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config", "log.dirs=/elsewhere"},
		"InvalidRequestException: Cannot update these configs dynamically: [log.dirs]\n"},
	{"org.apache.kafka.tools.TopicCommand", []string{"--create", "--topic", "errmsg"},
		"TopicExistsException: Topic 'errmsg' already exists.\n"},
	{"org.apache.kafka.tools.AclCommand", []string{"--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", ""},
		"InvalidRequestException: Invalid empty resource name\n"},
	{"org.apache.kafka.tools.ConfigCommand", []string{"--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config", "SCRAM-SHA-256=[iterations=20000,password=secret]"},
		"UnacceptableCredentialException: Too many iterations\n"},
	{"org.apache.kafka.tools.ConfigCommand", []string{"--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config", "producer_byte_rate=0"},
		"InvalidRequestException: Quota producer_byte_rate must be greater than 0\n"},
}

// errorMessageLines is what a tool printed about its failure: its lines
// but the stack frames, with the broker's address and the log lines'
// timestamps out, so two brokers' runs compare.
func errorMessageLines(out, addr string) string {
	stamp := regexp.MustCompile(`^\[[^]]*\] `)
	var keep []string
	for _, l := range strings.Split(strings.ReplaceAll(out, addr, "{addr}"), "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "at ") || strings.HasPrefix(t, "... ") {
			continue
		}
		keep = append(keep, stamp.ReplaceAllString(l, ""))
	}
	return strings.Join(keep, "\n")
}

// runErrorMessageCases creates topic errmsg on the broker at addr and runs
// errorMessageCases against it, returning what each printed.
func runErrorMessageCases(t *testing.T, home, addr string) []string {
	t.Helper()
	if out, _, err := runKafkaTool(t, home, "", "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", addr, "--create", "--topic", "errmsg"); err != nil {
		t.Fatalf("kafka-topics --create errmsg against %s: %v\n%s", addr, err, out)
	}
	outs := make([]string, len(errorMessageCases))
	for i, tc := range errorMessageCases {
		stdout, stderr, err := runKafkaTool(t, home, "", tc.class, append([]string{"--bootstrap-server", addr}, tc.args...)...)
		if err == nil {
			t.Errorf("%s %q against %s succeeded:\n%s%s", tc.class, tc.args, addr, stdout, stderr)
		}
		outs[i] = errorMessageLines(stdout+stderr, addr)
	}
	return outs
}

// TestErrorMessagesAsKafka runs Kafka's kafka-configs, kafka-topics and
// kafka-acls with an invalid topic config value, an unknown topic config,
// a topic that does not exist, an invalid and a read-only dynamic broker
// config, a topic that exists, an invalid ACL, a bad SCRAM iteration count
// and a bad quota against Strata and against Apache Kafka 4.4.0, both with
// the StandardAuthorizer: each tool prints Kafka's message alone (not
// followed by the error code's name and description) and prints the same
// against both.
func TestErrorMessagesAsKafka(t *testing.T) {
	e2e(t)
	home := installedKafkaTools(t)
	authorizer := []string{
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:ANONYMOUS",
	}
	var args []string
	for _, l := range authorizer {
		args = append(args, "--override", l)
	}
	b := startBroker(t, "", args...)
	strata := runErrorMessageCases(t, home, b.addr)
	for i, tc := range errorMessageCases {
		if !strings.Contains(strata[i], tc.want) {
			t.Errorf("%s %q against strata printed\n%s\nwant Kafka's message: %q", tc.class, tc.args, strata[i], tc.want)
		}
	}

	k := kafkaTargetFrom(t, home, t.TempDir(), authorizer...)
	if err := k.Start(timeoutCtx(t, 2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	kafka := runErrorMessageCases(t, home, k.Addr())
	for i, tc := range errorMessageCases {
		if strata[i] != kafka[i] {
			t.Errorf("%s %q against strata printed\n%s\nagainst kafka\n%s", tc.class, tc.args, strata[i], kafka[i])
		}
	}
}
