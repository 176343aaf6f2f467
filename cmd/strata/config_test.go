package main

import (
	"bytes"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/strata-io/strata/coordinator"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		text string
		want map[string]string
	}{
		{"equals", "a=b\n", map[string]string{"a": "b"}},
		{"colon", "a:b", map[string]string{"a": "b"}},
		{"blank separator", "a   b", map[string]string{"a": "b"}},
		{"blanks around separator", "  a =  b c  ", map[string]string{"a": "b c  "}},
		{"blank then separator", "a  : b", map[string]string{"a": "b"}},
		{"second separator is value", "a==b", map[string]string{"a": "=b"}},
		{"empty value", "a=\nb", map[string]string{"a": "", "b": ""}},
		{"hash comment", "# a=b\nc=d", map[string]string{"c": "d"}},
		{"bang comment", "  ! a=b\nc=d", map[string]string{"c": "d"}},
		{"hash inside value", "a=b#c", map[string]string{"a": "b#c"}},
		{"blank lines", "\n\n  \t\na=b\n\n", map[string]string{"a": "b"}},
		{"crlf and cr", "a=1\r\nb=2\rc=3", map[string]string{"a": "1", "b": "2", "c": "3"}},
		{"continuation", "a=one, \\\n    two,\\\n three", map[string]string{"a": "one, two,three"}},
		{"continuation of key", "lo\\\n  ng=v", map[string]string{"long": "v"}},
		{"continuation line starting with hash", "a=b\\\n  #c", map[string]string{"a": "b#c"}},
		{"comment does not continue", "# x\\\na=b", map[string]string{"a": "b"}},
		{"even backslashes do not continue", "a=b\\\\\nc=d", map[string]string{"a": `b\`, "c": "d"}},
		{"continuation at end", "a=b\\", map[string]string{"a": "b"}},
		{"escaped separator in key", `a\=b\:c\ d=e`, map[string]string{"a=b:c d": "e"}},
		{"escapes", `a=\t\n\r\f\x\\`, map[string]string{"a": "\t\n\r\fx\\"}},
		{"unicode escape", `a=caf\u00e9 \u0041`, map[string]string{"a": "café A"}},
		{"surrogate pair", `a=\ud83d\ude00`, map[string]string{"a": "😀"}},
		{"later duplicate wins", "a=1\na=2", map[string]string{"a": "2"}},
		{"kafka sample", "listeners=PLAINTEXT://:9092\nlog.dirs=/tmp/kafka-logs\n" +
			"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
			map[string]string{"listeners": "PLAINTEXT://:9092", "log.dirs": "/tmp/kafka-logs",
				"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProperties(tt.text)
			if err != nil {
				t.Fatalf("parseProperties(%q): %v", tt.text, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseProperties(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestParsePropertiesMalformedUnicode(t *testing.T) {
	for _, text := range []string{`a=\u12`, `a=\u12zz`, "a=\\u\nb=c"} {
		if _, err := parseProperties(text); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("parseProperties(%q) error = %v, want a malformed escape on line 1", text, err)
		}
	}
}

func TestDefaults(t *testing.T) {
	s, err := loadSettings(nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	want := settings{
		Listeners:             "PLAINTEXT://127.0.0.1:9092",
		AdvertisedListeners:   "PLAINTEXT://127.0.0.1:9092",
		LogDir:                "./data",
		NodeID:                1,
		NumPartitions:         1,
		AutoCreateTopics:      true,
		SegmentBytes:          1073741824,
		SegmentMs:             604800000,
		IndexIntervalBytes:    4096,
		MaxIndexSize:          10485760,
		MaxMessageBytes:       1048588,
		SocketRequestMaxBytes: 104857600,
		FlushIntervalMessages: math.MaxInt64,
		MinInSyncReplicas:     1,
		FlushIntervalMs:       math.MaxInt64,
		TimestampType:         "CreateTime",
		TimestampBeforeMaxMs:  math.MaxInt64,
		TimestampAfterMaxMs:   3600000,

		OffsetsTopicPartitions:       50,
		OffsetsRetentionMinutes:      10080,
		OffsetsRetentionCheckMs:      600000,
		GroupMinSessionTimeoutMs:     6000,
		GroupMaxSessionTimeoutMs:     1800000,
		GroupInitialRebalanceDelayMs: 3000,
		GroupMaxSize:                 math.MaxInt32,
		OffsetsSegmentBytes:          104857600,
		Limits: limitSettings{MaxConnections: math.MaxInt32, MaxConnectionsPerIP: math.MaxInt32, MaxIdleMs: 600000,
			MaxConnectionCreationRate: math.MaxInt32, QuotaWindowNum: 11, QuotaWindowSizeSeconds: 1,
			ControllerQuotaWindowNum: 11, ControllerQuotaWindowSizeSeconds: 1},
		Retention: retentionSettings{RetentionMs: 604800000, RetentionBytes: -1, CheckIntervalMs: 300000, SegmentDeleteMs: 60000},
		Txn: txnSettings{StateLogPartitions: 50, MaxTimeoutMs: 900000, AbortCheckIntervalMs: 10000,
			IDExpirationMs: 604800000, IDExpirationCheckMs: 3600000},
		Tokens: tokenSettings{MaxLifetimeMs: 604800000, ExpiryTimeMs: 86400000, CheckIntervalMs: 3600000},
		Shares: coordinator.ShareConfig{StatePartitions: 50, StateSegmentBytes: 104857600, StateMinISR: 2,
			SnapshotUpdateRecords: 500, WriteTimeout: 5 * time.Second, PruneInterval: 5 * time.Minute, ColdSnapshotInterval: 5 * time.Minute},
		TxnVerification: true,

		ConsumerSessionTimeoutMs:       45000,
		ConsumerMinSessionTimeoutMs:    45000,
		ConsumerMaxSessionTimeoutMs:    60000,
		ConsumerHeartbeatIntervalMs:    5000,
		ConsumerMinHeartbeatIntervalMs: 5000,
		ConsumerMaxHeartbeatIntervalMs: 15000,
		ConsumerMaxSize:                math.MaxInt32,
		ConsumerMigrationPolicy:        "bidirectional",

		FetchSessionSlots: 1000,
		TelemetryMaxBytes: 1048576,

		CleanerEnable:     true,
		CleanerBackoffMs:  15000,
		DeleteRetentionMs: 86400000,
		MinCleanableRatio: 0.5,
	}
	want.Static = map[string]string{}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("defaults = %+v\nwant %+v", s, want)
	}
}

func TestValidValues(t *testing.T) {
	tests := []struct {
		props map[string]string
		check func(settings) bool
	}{
		{map[string]string{"listeners": "PLAINTEXT://:9093"}, func(s settings) bool {
			return s.Listeners == "PLAINTEXT://:9093" && s.AdvertisedListeners == "PLAINTEXT://:9093"
		}},
		{map[string]string{"listeners": " plaintext://[::1]:0 "}, func(s settings) bool { return s.Listeners == "PLAINTEXT://[::1]:0" }},
		{map[string]string{"listeners": "PLAINTEXT://0.0.0.0:9092", "advertised.listeners": "PLAINTEXT://kafka.example:19092"},
			func(s settings) bool { return s.AdvertisedListeners == "PLAINTEXT://kafka.example:19092" }},
		{map[string]string{"log.dir": "/a"}, func(s settings) bool { return s.LogDir == "/a" }},
		{map[string]string{"log.dir": "/a", "log.dirs": "/b"}, func(s settings) bool { return s.LogDir == "/b" }},
		{map[string]string{"log.dirs": " /b , "}, func(s settings) bool { return s.LogDir == "/b" }},
		{map[string]string{"node.id": "7"}, func(s settings) bool { return s.NodeID == 7 }},
		{map[string]string{"broker.id": "3"}, func(s settings) bool { return s.NodeID == 3 }},
		{map[string]string{"broker.id": "3", "node.id": "3"}, func(s settings) bool { return s.NodeID == 3 }},
		{map[string]string{"num.partitions": " 12 "}, func(s settings) bool { return s.NumPartitions == 12 }},
		{map[string]string{"auto.create.topics.enable": "FALSE"}, func(s settings) bool { return !s.AutoCreateTopics }},
		{map[string]string{"log.segment.bytes": "14"}, func(s settings) bool { return s.SegmentBytes == 14 }},
		{map[string]string{"log.roll.hours": "1"}, func(s settings) bool { return s.SegmentMs == 3600000 }},
		{map[string]string{"log.roll.hours": "1", "log.roll.ms": "500"}, func(s settings) bool { return s.SegmentMs == 500 }},
		{map[string]string{"log.index.interval.bytes": "0"}, func(s settings) bool { return s.IndexIntervalBytes == 0 }},
		{map[string]string{"log.index.size.max.bytes": "4"}, func(s settings) bool { return s.MaxIndexSize == 4 }},
		{map[string]string{"message.max.bytes": "100"}, func(s settings) bool { return s.MaxMessageBytes == 100 }},
		{map[string]string{"socket.request.max.bytes": "2048"}, func(s settings) bool { return s.SocketRequestMaxBytes == 2048 }},
		{map[string]string{"log.flush.interval.messages": "1"}, func(s settings) bool { return s.FlushIntervalMessages == 1 }},
		{map[string]string{"min.insync.replicas": "2"}, func(s settings) bool { return s.MinInSyncReplicas == 2 }},
		{map[string]string{"log.flush.interval.ms": "0"}, func(s settings) bool { return s.FlushIntervalMs == 0 }},
		{map[string]string{"log.message.timestamp.type": "LogAppendTime", "log.message.timestamp.before.max.ms": "0",
			"log.message.timestamp.after.max.ms": "9223372036854775807"},
			func(s settings) bool {
				return s.TimestampType == "LogAppendTime" && s.TimestampBeforeMaxMs == 0 && s.TimestampAfterMaxMs == math.MaxInt64
			}},
		{map[string]string{"offsets.topic.num.partitions": "3", "offsets.retention.minutes": "1", "offsets.commit.timeout.ms": "5000"},
			func(s settings) bool { return s.OffsetsTopicPartitions == 3 && s.OffsetsRetentionMinutes == 1 }},
		{map[string]string{"group.min.session.timeout.ms": "100", "group.max.session.timeout.ms": "200", "group.initial.rebalance.delay.ms": "0"},
			func(s settings) bool {
				return s.GroupMinSessionTimeoutMs == 100 && s.GroupMaxSessionTimeoutMs == 200 && s.GroupInitialRebalanceDelayMs == 0
			}},
		{map[string]string{"metrics.listener": "http://127.0.0.1:9644"}, func(s settings) bool { return s.MetricsListener == "http://127.0.0.1:9644" }},
		{map[string]string{"metrics.listener": " 0.0.0.0:0 "}, func(s settings) bool { return s.MetricsListener == "0.0.0.0:0" }},
		{map[string]string{"metrics.listener": ""}, func(s settings) bool { return s.MetricsListener == "" }},
		{map[string]string{"telemetry.max.bytes": "4096"}, func(s settings) bool { return s.TelemetryMaxBytes == 4096 }},
		{map[string]string{"share.coordinator.state.topic.num.partitions": "3", "share.coordinator.state.topic.segment.bytes": "1024",
			"share.coordinator.state.topic.min.isr": "1", "share.coordinator.snapshot.update.records.per.snapshot": "7"},
			func(s settings) bool {
				c := s.Shares
				return c.StatePartitions == 3 && c.StateSegmentBytes == 1024 && c.StateMinISR == 1 && c.SnapshotUpdateRecords == 7
			}},
		{map[string]string{"share.coordinator.write.timeout.ms": "100", "share.coordinator.state.topic.prune.interval.ms": "200",
			"share.coordinator.cold.partition.snapshot.interval.ms": "300"},
			func(s settings) bool {
				c := s.Shares
				return c.WriteTimeout == 100*time.Millisecond && c.PruneInterval == 200*time.Millisecond && c.ColdSnapshotInterval == 300*time.Millisecond
			}},
		{map[string]string{"share.coordinator.snapshot.update.records.per.snapshot": "0"},
			func(s settings) bool { return s.Shares.SnapshotUpdateRecords == coordinator.SnapshotEveryWrite }},
		{map[string]string{"offsets.topic.segment.bytes": "1"}, func(s settings) bool { return s.OffsetsSegmentBytes == 1 }},
		{map[string]string{"group.max.size": "3", "group.consumer.max.size": "1"},
			func(s settings) bool { return s.GroupMaxSize == 3 && s.ConsumerMaxSize == 1 }},
		{map[string]string{"group.consumer.migration.policy": " Upgrade "}, func(s settings) bool { return s.ConsumerMigrationPolicy == "upgrade" }},
		{map[string]string{"group.consumer.session.timeout.ms": "2000", "group.consumer.min.session.timeout.ms": "1000",
			"group.consumer.heartbeat.interval.ms": "100", "group.consumer.min.heartbeat.interval.ms": "100"},
			func(s settings) bool {
				return s.ConsumerSessionTimeoutMs == 2000 && s.ConsumerHeartbeatIntervalMs == 100
			}},
		{map[string]string{"group.consumer.max.session.timeout.ms": "90000", "group.consumer.session.timeout.ms": "90000",
			"group.consumer.max.heartbeat.interval.ms": "20000", "group.consumer.heartbeat.interval.ms": "20000"},
			func(s settings) bool {
				return s.ConsumerSessionTimeoutMs == 90000 && s.ConsumerMaxHeartbeatIntervalMs == 20000
			}},
		{map[string]string{"log.cleaner.enable": "False", "log.cleaner.backoff.ms": "0"},
			func(s settings) bool { return !s.CleanerEnable && s.CleanerBackoffMs == 0 }},
		{map[string]string{"log.cleanup.policy": "delete, compact"}, func(s settings) bool { return s.CleanupCompact }},
		{map[string]string{"log.cleanup.policy": "delete"}, func(s settings) bool { return !s.CleanupCompact }},
		{map[string]string{"log.cleaner.delete.retention.ms": "0", "log.cleaner.min.compaction.lag.ms": "7", "log.cleaner.min.cleanable.ratio": " 0.25 "},
			func(s settings) bool {
				return s.DeleteRetentionMs == 0 && s.MinCompactionLagMs == 7 && s.MinCleanableRatio == 0.25
			}},
	}
	for _, tt := range tests {
		s, err := loadSettings(tt.props, zap.NewNop())
		if err != nil {
			t.Errorf("%v: %v", tt.props, err)
			continue
		}
		if !tt.check(s) {
			t.Errorf("%v: got %+v", tt.props, s)
		}
	}
}

func TestInvalidValues(t *testing.T) {
	tests := []struct {
		key, value, reason string
	}{
		{"listeners", "", "no listener"},
		{"listeners", "127.0.0.1:9092", "NAME://host:port"},
		{"listeners", "CLIENT://127.0.0.1:9093", "no security protocol defined for listener CLIENT"},
		{"listeners", "PLAINTEXT://a:1,PLAINTEXT_HOST://b:1", "no security protocol defined"},
		{"listeners", "PLAINTEXT://127.0.0.1", "NAME://host:port"},
		{"listeners", "PLAINTEXT://127.0.0.1:70000", "port"},
		{"listeners", "PLAINTEXT://a:1,PLAINTEXT://b:2", "more than once"},
		{"advertised.listeners", "PLAINTEXT://0.0.0.0:9092", "non-routable"},
		{"log.dirs", "/a,/b", "exactly one log directory"},
		{"log.dirs", " , ", "no directory"},
		{"log.dir", "", "no directory"},
		{"node.id", "-1", "at least 0"},
		{"node.id", "x", "whole number"},
		{"broker.id", "2147483648", "at most 2147483647"},
		{"num.partitions", "abc", "whole number"},
		{"num.partitions", "0", "at least 1"},
		{"num.partitions", "1.5", "whole number"},
		{"auto.create.topics.enable", "yes", "true or false"},
		{"log.segment.bytes", "13", "at least 14"},
		{"log.segment.bytes", "2147483648", "at most"},
		{"log.roll.ms", "0", "at least 1"},
		{"log.roll.hours", "0", "at least 1"},
		{"log.index.interval.bytes", "-1", "at least 0"},
		{"log.index.size.max.bytes", "3", "at least 4"},
		{"message.max.bytes", "-5", "at least 0"},
		{"socket.request.max.bytes", "0", "at least 1"},
		{"log.flush.interval.messages", "0", "at least 1"},
		{"min.insync.replicas", "0", "at least 1"},
		{"log.flush.interval.messages", "9223372036854775808", "whole number"},
		{"offsets.topic.num.partitions", "0", "at least 1"},
		{"group.initial.rebalance.delay.ms", "-1", "at least 0"},
		{"group.max.size", "0", "at least 1"},
		{"log.message.timestamp.type", "createtime", "one of CreateTime, LogAppendTime"},
		{"log.message.timestamp.after.max.ms", "-1", "at least 0"},
		{"group.consumer.max.size", "0", "at least 1"},
		{"group.consumer.migration.policy", "both", "one of (case insensitive): bidirectional, upgrade, downgrade, disabled"},
		{"offsets.commit.timeout.ms", "x", "whole number"},
		{"log.flush.interval.ms", "-1", "at least 0"},
		{"offsets.topic.segment.bytes", "0", "at least 1"},
		{"offsets.topic.segment.bytes", "2147483648", "at most"},
		{"group.consumer.session.timeout.ms", "0", "at least 1"},
		{"group.consumer.session.timeout.ms", "1000", "group.consumer.min.session.timeout.ms"},
		{"group.consumer.session.timeout.ms", "70000", "group.consumer.max.session.timeout.ms"},
		{"group.consumer.min.session.timeout.ms", "-1", "at least 1"},
		{"group.consumer.max.session.timeout.ms", "40000", "group.consumer.min.session.timeout.ms"},
		{"group.consumer.heartbeat.interval.ms", "x", "whole number"},
		{"group.consumer.heartbeat.interval.ms", "4000", "group.consumer.min.heartbeat.interval.ms"},
		{"group.consumer.heartbeat.interval.ms", "16000", "group.consumer.max.heartbeat.interval.ms"},
		{"group.consumer.min.heartbeat.interval.ms", "0", "at least 1"},
		{"log.cleaner.enable", "1", "true or false"},
		{"log.cleaner.backoff.ms", "-1", "at least 0"},
		{"log.cleanup.policy", "compact,retain", "compact or delete"},
		{"log.cleanup.policy", "", "compact or delete"},
		{"log.cleaner.delete.retention.ms", "-1", "at least 0"},
		{"log.cleaner.min.compaction.lag.ms", "x", "whole number"},
		{"log.cleaner.min.cleanable.ratio", "1.5", "between 0 and 1"},
		{"log.cleaner.min.cleanable.ratio", "half", "not a number"},
		{"metrics.listener", "https://127.0.0.1:9644", "only http://"},
		{"metrics.listener", "http://127.0.0.1", "want http://host:port"},
		{"metrics.listener", "http://127.0.0.1:70000", "port must be"},
		{"metrics.listener", "http://127.0.0.1:9644/metrics", "without a path"},
		{"telemetry.max.bytes", "0", "at least 1"},
		{"share.coordinator.state.topic.num.partitions", "0", "at least 1"},
		{"share.coordinator.snapshot.update.records.per.snapshot", "501", "at most 500"},
	}
	for _, tt := range tests {
		_, err := loadSettings(map[string]string{tt.key: tt.value}, zap.NewNop())
		if err == nil {
			t.Errorf("%s=%q: no error", tt.key, tt.value)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.key) || !strings.Contains(msg, `"`+tt.value+`"`) || !strings.Contains(msg, tt.reason) {
			t.Errorf("%s=%q: error %q should name the key, the value and %q", tt.key, tt.value, msg, tt.reason)
		}
	}
}

func TestBrokerIDConflictsWithNodeID(t *testing.T) {
	_, err := loadSettings(map[string]string{"broker.id": "1", "node.id": "2"}, zap.NewNop())
	if err == nil || !strings.Contains(err.Error(), "broker.id") {
		t.Fatalf("error = %v, want one naming broker.id", err)
	}
}

func TestUnknownAndIgnoredKeys(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	props := map[string]string{
		"num.io.threads":                        "8",
		"controller.quorum.election.timeout.ms": "1000",
		"socket.send.buffer.bytes":              "102400",
		"log.roll.jitter.hours":                 "0",
		"transaction.state.log.min.isr":         "1",
		"offsets.topic.replication.factor":      "1",
		"no.such.key":                           "1",
	}
	if _, err := loadSettings(props, zap.New(core)); err != nil {
		t.Fatal(err)
	}
	warned := map[string]bool{}
	debugged := map[string]bool{}
	for _, e := range logs.All() {
		key, _ := e.ContextMap()["key"].(string)
		switch e.Level {
		case zapcore.WarnLevel:
			warned[key] = true
		case zapcore.DebugLevel:
			debugged[key] = true
		}
	}
	if len(warned) != 1 || !warned["no.such.key"] {
		t.Errorf("warned about %v, want only no.such.key", warned)
	}
	for k := range props {
		if k != "no.such.key" && !debugged[k] {
			t.Errorf("no debug line for ignored key %s", k)
		}
	}
}

func TestOverridePrecedence(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/server.properties"
	writeFile(t, file, "num.partitions=3\nnode.id=5\nlog.dirs=/from/file\n")
	opts, err := parseFlags([]string{"--config", file, "--override", "num.partitions=4",
		"--override", "num.partitions=6", "--override", "log.dirs=" + dir}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := loadConfig(opts, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if s.NumPartitions != 6 || s.NodeID != 5 || s.LogDir != dir {
		t.Errorf("got num.partitions=%d node.id=%d log.dir=%s, want 6, 5 (file), %s (override)", s.NumPartitions, s.NodeID, s.LogDir, dir)
	}
}

func TestParseFlags(t *testing.T) {
	opts, err := parseFlags([]string{"server.properties", "--override", "a=b=c", "-log-level", "debug", "--log-requests"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if opts.configFile != "server.properties" || !opts.logRequests || opts.logLevel != zapcore.DebugLevel ||
		!reflect.DeepEqual(opts.overrides, []string{"a=b=c"}) {
		t.Errorf("got %+v", opts)
	}
	k, v, _ := parseOverride(opts.overrides[0])
	if k != "a" || v != "b=c" {
		t.Errorf("override split into %q, %q; want a, b=c", k, v)
	}
	for _, args := range [][]string{
		{"--override", "novalue"},
		{"--override", "=v"},
		{"--log-level", "loud"},
		{"a.properties", "b.properties"},
		{"--config", "a.properties", "b.properties"},
		{"--no-such-flag"},
	} {
		if _, err := parseFlags(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parseFlags(%q): no error", args)
		}
	}
}

func TestRunRejectsInvalidConfig(t *testing.T) {
	var out bytes.Buffer
	code := run([]string{"--override", "num.partitions=abc", "--override", "log.dirs=" + t.TempDir()}, &out, &out)
	if code != 1 || !strings.Contains(out.String(), "num.partitions") || !strings.Contains(out.String(), "abc") {
		t.Errorf("exit %d, output %q; want 1 and a message naming num.partitions and abc", code, out.String())
	}
	if code := run([]string{"--config", t.TempDir() + "/missing.properties"}, &out, &out); code != 1 {
		t.Errorf("missing config file: exit %d, want 1", code)
	}
}

// TestUsageErrorsOnce: a bad argument is reported once, on stderr, with a pointer to
// --help, and exits 1 as kafka-server-start does.
func TestUsageErrorsOnce(t *testing.T) {
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"--log-level", "loud"}, `unrecognized level: "loud"`},
		{[]string{"--override", "novalue"}, "want key=value"},
		{[]string{"a.properties", "b.properties"}, "unexpected arguments"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tt.args, &stdout, &stderr)
		if code != 1 || stdout.Len() != 0 || strings.Count(stderr.String(), tt.msg) != 1 ||
			!strings.HasSuffix(stderr.String(), "Run 'strata --help' for usage.\n") || strings.Contains(stderr.String(), "Usage") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 1, nothing, and %q once with the --help hint", tt.args, code, stdout.String(), stderr.String(), tt.msg)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"--config", "x.properties", "--help"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
			t.Errorf("%q: exit %d, stderr %q; want 0 and nothing", args, code, stderr.String())
		}
		for _, want := range []string{"--config FILE", "FILE  ", "--override key=value", "README's Configuration", "-log-level",
			"-log-requests", "-pprof", "-version", "strata --version | strata version"} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("%q: usage lacks %q:\n%s", args, want, stdout.String())
			}
		}
	}
}

func writeFile(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
