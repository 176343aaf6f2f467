// Package rt is the shared toolkit of the Go compat runners: the runner protocol
// (flags in, one JSON result line out), the scenario data every client produces, and
// the checks applied to what it consumed. See compat-tests/README.md.
package rt

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"time"
)

// Args are the runner's command-line arguments.
type Args struct {
	Bootstrap string
	Scenario  string
	Topic     string
	Client    string
	// ReplicationFactor is the replication factor of every topic the runner creates
	// (--replication-factor, default 1; the orchestrator passes its -replication-factor).
	ReplicationFactor int16
	Extra             map[string]string
}

// Brokers is the bootstrap list: --bootstrap is HOST:PORT or a comma-separated list of them.
func (a Args) Brokers() []string { return strings.Split(a.Bootstrap, ",") }

// Arg returns --arg K=V's value, or def.
func (a Args) Arg(k, def string) string {
	if v, ok := a.Extra[k]; ok {
		return v
	}
	return def
}

// Group is the consumer group name a scenario uses (derived from the unique topic).
func (a Args) Group() string { return a.Arg("group", GroupName(a.Topic)) }

type kvFlag map[string]string

func (k kvFlag) String() string { return "" }
func (k kvFlag) Set(s string) error {
	i := strings.IndexByte(s, '=')
	if i < 0 {
		return fmt.Errorf("--arg %q: want K=V", s)
	}
	k[s[:i]] = s[i+1:]
	return nil
}

// Result is the one JSON line a runner prints last.
type Result struct {
	Result string         `json:"result"`
	Detail string         `json:"detail"`
	Data   map[string]any `json:"data,omitempty"`
}

// Pass, Fail and Skip build results.
func Pass(detail string, data map[string]any) Result { return Result{"pass", detail, data} }
func Fail(detail string, data map[string]any) Result { return Result{"fail", detail, data} }
func Skip(reason string) Result                      { return Result{"skip", reason, nil} }
func Failf(format string, a ...any) Result           { return Result{"fail", fmt.Sprintf(format, a...), nil} }

// Main parses the flags, runs fn and prints its result as the last stdout line.
// A panic becomes a fail result. The exit code is 0 whenever the line was printed.
func Main(client string, fn func(Args) Result) {
	a := Args{Client: client, Extra: map[string]string{}}
	fs := flag.NewFlagSet(client, flag.ExitOnError)
	fs.StringVar(&a.Bootstrap, "bootstrap", "127.0.0.1:9092", "broker HOST:PORT, or a comma-separated list of them")
	fs.StringVar(&a.Scenario, "scenario", "", "scenario name")
	fs.StringVar(&a.Topic, "topic", "", "topic name")
	rf := fs.Int("replication-factor", 1, "replication factor of the topics the runner creates")
	fs.Var(kvFlag(a.Extra), "arg", "extra K=V (repeatable)")
	fs.Parse(os.Args[1:])
	a.ReplicationFactor = int16(*rf)
	var res Result
	func() {
		defer func() {
			if r := recover(); r != nil {
				res = Failf("panic: %v\n%s", r, tail(string(debug.Stack()), 800))
			}
		}()
		res = fn(a)
	}()
	if res.Result == "" {
		res = Failf("runner returned no result")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(res)
	os.Stdout.Write(append([]byte("\n"), buf.Bytes()...))
	os.Exit(0)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// Rec is a record as the scenarios see it. A nil Key is a null key.
type Rec struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   [][2][]byte
	Timestamp int64
}

// CheckProduceConsume checks consumed against ProduceSet: exact content (multiset), per-partition
// offsets increasing in consumption order, and per key values in produce order.
func CheckProduceConsume(got []Rec) error {
	want := ProduceSet()
	if len(got) != len(want) {
		return fmt.Errorf("consumed %d records, want %d", len(got), len(want))
	}
	count := map[string]int{}
	for _, r := range want {
		count[recID(r)]++
	}
	for _, r := range got {
		id := recID(r)
		if count[id] == 0 {
			return fmt.Errorf("unexpected record %s at p%d o%d", id, r.Partition, r.Offset)
		}
		count[id]--
	}
	last := map[int32]int64{}
	keyLast := map[string]int{}
	for _, r := range got {
		if l, ok := last[r.Partition]; ok && r.Offset <= l {
			return fmt.Errorf("partition %d: offset %d after %d", r.Partition, r.Offset, l)
		}
		last[r.Partition] = r.Offset
		if r.Key != nil {
			var n int
			fmt.Sscanf(string(r.Value), "v%d", &n)
			k := string(r.Key)
			if l, ok := keyLast[k]; ok && n <= l {
				return fmt.Errorf("key %s: v%d consumed after v%d", k, n, l)
			}
			keyLast[k] = n
		}
	}
	// Same key, same partition.
	kp := map[string]int32{}
	for _, r := range got {
		if r.Key == nil {
			continue
		}
		if p, ok := kp[string(r.Key)]; ok && p != r.Partition {
			return fmt.Errorf("key %s in partitions %d and %d", r.Key, p, r.Partition)
		}
		kp[string(r.Key)] = r.Partition
	}
	return nil
}

func recID(r Rec) string {
	if r.Key == nil {
		return "<null>=" + string(r.Value)
	}
	return string(r.Key) + "=" + string(r.Value)
}

// SortByPartitionOffset orders records by (partition, offset).
func SortByPartitionOffset(rs []Rec) {
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].Partition != rs[j].Partition {
			return rs[i].Partition < rs[j].Partition
		}
		return rs[i].Offset < rs[j].Offset
	})
}

// CheckHeaders checks HeadersRecords consumed records each carry exactly Headers().
func CheckHeaders(got []Rec) error {
	if len(got) != HeadersRecords {
		return fmt.Errorf("consumed %d records, want %d", len(got), HeadersRecords)
	}
	want := Headers()
	for _, r := range got {
		if len(r.Headers) != len(want) {
			return fmt.Errorf("offset %d: %d headers %s, want %d", r.Offset, len(r.Headers), fmtHeaders(r.Headers), len(want))
		}
		for i := range want {
			if !bytes.Equal(r.Headers[i][0], want[i][0]) || !bytes.Equal(r.Headers[i][1], want[i][1]) {
				return fmt.Errorf("offset %d: headers %s, want %s", r.Offset, fmtHeaders(r.Headers), fmtHeaders(want))
			}
		}
	}
	return nil
}

func fmtHeaders(h [][2][]byte) string {
	var parts []string
	for _, kv := range h {
		parts = append(parts, fmt.Sprintf("(%q,%q)", kv[0], kv[1]))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// AwaitAlteredRetention is alter_configs' check after the alter: it polls
// describe, which returns the topic's retention.ms value ("(absent)" when
// missing) and config source, for up to 10 s until they show
// AlterRetentionMs as a per-topic override (Kafka applies an alter through
// its metadata log, so a describe right after it may still show the old
// value), and judges what it last saw. alter and describe name the
// client's calls in the messages. A describe error ends the poll and is
// returned, for the runner to report.
func AwaitAlteredRetention(alter, describeName string, describe func() (value, source string, err error)) (Result, error) {
	var value, source string
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if value, source, err = describe(); err != nil {
			return Result{}, err
		}
		if (value == AlterRetentionMs && source == DynamicTopicConfig) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	data := map[string]any{"value": value, "source": source}
	if value != AlterRetentionMs || source != DynamicTopicConfig {
		return Fail(fmt.Sprintf("after %s SET retention.ms=%s %s shows %s (source %s), want %s (%s)",
			alter, AlterRetentionMs, describeName, value, source, AlterRetentionMs, DynamicTopicConfig), data), nil
	}
	return Pass(fmt.Sprintf("%s SET retention.ms=%s; %s: %s, source %s", alter, AlterRetentionMs, describeName, value, source), data), nil
}

// SourceName is Kafka's name of a DescribeConfigs (v1+) config source code.
func SourceName(code int8) string {
	names := []string{"UNKNOWN", "DYNAMIC_TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG", "DYNAMIC_DEFAULT_BROKER_CONFIG",
		"STATIC_BROKER_CONFIG", "DEFAULT_CONFIG", "DYNAMIC_BROKER_LOGGER_CONFIG", "CLIENT_METRICS_CONFIG", "GROUP_CONFIG"}
	if code >= 0 && int(code) < len(names) {
		return names[code]
	}
	return fmt.Sprintf("source %d", code)
}

// CrossRec is one record of the cross-client set, as cross_consume reports it.
type CrossRec struct {
	Offset  int64       `json:"offset"`
	Key     string      `json:"key"`
	Value   string      `json:"value"`
	Headers [][2]string `json:"headers"`
}

// CheckCross compares a cross_consume dump with CrossSet(src); "" means identical.
func CheckCross(got []CrossRec, src string) string {
	want := CrossSet(src)
	if len(got) != len(want) {
		return fmt.Sprintf("read %d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Offset != w.Offset || g.Key != w.Key || g.Value != w.Value || fmt.Sprint(g.Headers) != fmt.Sprint(w.Headers) {
			gj, _ := json.Marshal(g)
			wj, _ := json.Marshal(w)
			return fmt.Sprintf("record %d: got %s want %s", i, gj, wj)
		}
	}
	return ""
}

// CrossResult turns consumed records into the cross_consume result.
func CrossResult(recs []Rec, expectFrom string) Result {
	var out []CrossRec
	for _, r := range recs {
		cr := CrossRec{Offset: r.Offset, Key: string(r.Key), Value: string(r.Value), Headers: [][2]string{}}
		for _, h := range r.Headers {
			cr.Headers = append(cr.Headers, [2]string{string(h[0]), string(h[1])})
		}
		out = append(out, cr)
	}
	data := map[string]any{"records": out}
	if expectFrom != "" {
		if d := CheckCross(out, expectFrom); d != "" {
			return Fail(d, data)
		}
	}
	return Pass(fmt.Sprintf("read %d records", len(out)), data)
}

// Deadline is the default in-runner deadline for one scenario step (the orchestrator kills at 60 s).
func Deadline() time.Time { return time.Now().Add(20 * time.Second) }

// Budget is a runner's whole time for scenario, within the orchestrator's
// timeout of it (cmd/compat's scenarioTimeouts): 50 s, more for the
// scenarios that create 200 partitions (fetch_sessions), wait out a
// node's restart (group_consumer_restart) or run a Kafka Streams
// application (streams_wordcount_*).
func Budget(scenario string) time.Duration {
	switch scenario {
	case "fetch_sessions":
		return 110 * time.Second
	case "group_consumer_restart":
		return 290 * time.Second
	case "streams_wordcount_classic", "streams_wordcount_streams":
		return 110 * time.Second
	}
	return 50 * time.Second
}

// Ring keeps the last few log lines of a client library for failure details.
type Ring struct{ lines []string }

// Add appends a line.
func (r *Ring) Add(s string) {
	r.lines = append(r.lines, s)
	if len(r.lines) > 6 {
		r.lines = r.lines[len(r.lines)-6:]
	}
}

// String joins the kept lines.
func (r *Ring) String() string {
	if len(r.lines) == 0 {
		return ""
	}
	return " | client log: " + strings.Join(r.lines, " / ")
}

// Handlers maps each scenario to a runner's implementation of it; a
// scenario the client cannot express gets Skipping with the reason.
type Handlers struct {
	Metadata, CreateTopic, Headers, ListOffsets, IdempotentProduce, GroupCommitResume,
	Transactions, DescribeListGroups, DescribeConfigs, CreatePartitions, DeleteTopic,
	MaxMessageSize, AlterConfigs, DescribeTopic, LogDirs, DeleteRecords, ConsumerGroupsCLI,
	GroupConsumerProtocol, CrossProduce, CrossConsume func() Result
	ProduceConsume func(codec string) Result // produce_consume_<codec>
	// Auth runs auth_plain, auth_scram_sha_256, auth_scram_sha_512 and
	// auth_mtls: with the Security of the arguments, produce AuthRecords
	// to the (pre-created) topic and consume them back (AuthResult).
	// AuthRefused runs auth_bad_password and auth_no_tls: one request with
	// the Security of the arguments, which must fail (RefusedResult).
	// AclAllowed runs acl_allowed: as a user the orchestrator granted the
	// topic's ACLs and READ on the groups prefixed by its name, produce
	// AuthRecords and consume them back in the scenario's group
	// (Args.Group; AuthResult). AclDenied runs acl_denied (one produce as a user
	// with no ACLs) and acl_deny_wins (one produce as a user allowed to
	// write the topic by a prefixed ACL and denied by a literal one), which
	// must fail with an authorization error (RefusedResult).
	// AclGroupDenied runs acl_group_denied: a consume in the scenario's
	// group (Args.Group) as a user allowed to read the topic but not the
	// group, which must fail with a group authorization error
	// (GroupRefusedResult).
	Auth, AuthRefused, AclAllowed, AclDenied, AclGroupDenied func() Result
	// The Kafka 4.4 scenarios (README.md): TransactionsV2 runs
	// transactions_v2, FetchSessions fetch_sessions, GroupConsumerRestart
	// group_consumer_restart (restarting the group's coordinator through
	// Args.Restart), GroupConfigs group_configs and DelegationToken the
	// secure columns' delegation_token.
	TransactionsV2, FetchSessions, GroupConsumerRestart, GroupConfigs, DelegationToken func() Result
	// The share group scenarios (KIP-932, README.md): share_consume,
	// share_release, share_reject, share_delivery_limit, share_lock_expiry
	// and share_read_committed.
	ShareConsume, ShareRelease, ShareReject, ShareDeliveryLimit, ShareLockExpiry, ShareReadCommitted func() Result
}

// Skipping is a handler that skips with reason.
func Skipping(reason string) func() Result { return func() Result { return Skip(reason) } }

// Dispatch runs the handler of scenario.
func Dispatch(scenario string, h Handlers) Result {
	if codec, ok := strings.CutPrefix(scenario, "produce_consume_"); ok && h.ProduceConsume != nil {
		return h.ProduceConsume(codec)
	}
	fn := map[string]func() Result{
		"metadata": h.Metadata, "create_topic": h.CreateTopic, "headers": h.Headers,
		"list_offsets": h.ListOffsets, "idempotent_produce": h.IdempotentProduce,
		"group_commit_resume": h.GroupCommitResume, "transactions": h.Transactions,
		"describe_list_groups": h.DescribeListGroups, "describe_configs": h.DescribeConfigs,
		"create_partitions": h.CreatePartitions, "delete_topic": h.DeleteTopic,
		"max_message_size": h.MaxMessageSize, "alter_configs": h.AlterConfigs,
		"describe_topic": h.DescribeTopic, "log_dirs": h.LogDirs, "delete_records": h.DeleteRecords,
		"consumer_groups_cli": h.ConsumerGroupsCLI, "group_consumer_protocol": h.GroupConsumerProtocol,
		"cross_produce": h.CrossProduce, "cross_consume": h.CrossConsume,
		"auth_plain": h.Auth, "auth_scram_sha_256": h.Auth, "auth_scram_sha_512": h.Auth, "auth_mtls": h.Auth,
		"auth_bad_password": h.AuthRefused, "auth_no_tls": h.AuthRefused,
		"acl_allowed": h.AclAllowed, "acl_denied": h.AclDenied, "acl_deny_wins": h.AclDenied,
		"acl_group_denied": h.AclGroupDenied,
		"transactions_v2":  h.TransactionsV2, "fetch_sessions": h.FetchSessions,
		"group_consumer_restart": h.GroupConsumerRestart, "group_configs": h.GroupConfigs,
		"delegation_token": h.DelegationToken,
		"share_consume":    h.ShareConsume, "share_release": h.ShareRelease, "share_reject": h.ShareReject,
		"share_delivery_limit": h.ShareDeliveryLimit, "share_lock_expiry": h.ShareLockExpiry,
		"share_read_committed": h.ShareReadCommitted,
	}[scenario]
	if fn == nil {
		return Skip("unknown scenario " + scenario)
	}
	return fn()
}
