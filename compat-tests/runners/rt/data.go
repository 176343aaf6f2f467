package rt

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/strata-io/strata/compat-tests/scenarios"
)

// data is scenarios/scenarios.json, the scenario data all runners (Go, Python, kafkajs,
// Java) read, so every client produces and checks the same records.
var data = mustParse(scenarios.JSON)

type scenarioData struct {
	Partitions struct {
		Default   int32            `json:"default"`
		Scenarios map[string]int32 `json:"scenarios"`
	} `json:"partitions"`
	Codecs         []string `json:"codecs"`
	ProduceConsume struct {
		Records []struct {
			Key   *string `json:"key"`
			Value string  `json:"value"`
		} `json:"records"`
	} `json:"produce_consume"`
	Headers struct {
		Records     int    `json:"records"`
		KeyPrefix   string `json:"key_prefix"`
		ValuePrefix string `json:"value_prefix"`
		Headers     []struct {
			Key      string `json:"key"`
			ValueHex string `json:"value_hex"`
		} `json:"headers"`
	} `json:"headers"`
	ListOffsets struct {
		Records         int   `json:"records"`
		BaseTimestampMs int64 `json:"base_timestamp_ms"`
		StepMs          int64 `json:"step_ms"`
	} `json:"list_offsets"`
	Cross struct {
		Header  string `json:"header"`
		Records []struct {
			Key   string `json:"key"`
			Value string `json:"value"`
		} `json:"records"`
	} `json:"cross"`
	AlterConfigs struct {
		RetentionMs string `json:"retention_ms"`
		Source      string `json:"source"`
	} `json:"alter_configs"`
	DeleteRecords struct {
		Produce int   `json:"produce"`
		Before  int64 `json:"before"`
	} `json:"delete_records"`
	LogDirs struct {
		Produce int `json:"produce"`
	} `json:"log_dirs"`
	Auth struct {
		Records       int    `json:"records"`
		KeyPrefix     string `json:"key_prefix"`
		ValuePrefix   string `json:"value_prefix"`
		RefusalBoundS int    `json:"refusal_bound_s"`
	} `json:"auth"`
	TransactionsV2 struct {
		Ends        []string `json:"ends"`
		Records     int      `json:"records"`
		ValuePrefix string   `json:"value_prefix"`
	} `json:"transactions_v2"`
	FetchSessions struct {
		RecordsPerPartition   int `json:"records_per_partition"`
		SecondRoundPartitions int `json:"second_round_partitions"`
	} `json:"fetch_sessions"`
	GroupConsumerRestart struct {
		Members          int    `json:"members"`
		RecordsBefore    int    `json:"records_before"`
		RecordsAfter     int    `json:"records_after"`
		SessionTimeoutMs string `json:"session_timeout_ms"`
	} `json:"group_consumer_restart"`
	GroupConfigs struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"group_configs"`
	StreamsWordCount struct {
		Lines int      `json:"lines"`
		Words []string `json:"words"`
		Store string   `json:"store"`
	} `json:"streams_wordcount"`
	Share struct {
		Records         int    `json:"records"`
		ValuePrefix     string `json:"value_prefix"`
		Sentinel        string `json:"sentinel"`
		Poison          int    `json:"poison"`
		AutoOffsetReset string `json:"auto_offset_reset"`
		LockDurationMs  string `json:"lock_duration_ms"`
		DeliveryLimit   string `json:"delivery_count_limit"`
		TxnRecords      int    `json:"txn_records"`
	} `json:"share"`
	Group string `json:"group"`
}

func mustParse(b []byte) scenarioData {
	var d scenarioData
	if err := json.Unmarshal(b, &d); err != nil {
		panic(fmt.Sprintf("scenarios.json: %v", err))
	}
	return d
}

// Scenario values shared by the runners (see scenarios/scenarios.json).
var (
	// Codecs are the produce_consume_<codec> scenario suffixes.
	Codecs = data.Codecs
	// AlterRetentionMs is the retention.ms alter_configs sets (incrementally where the client can).
	AlterRetentionMs = data.AlterConfigs.RetentionMs
	// DynamicTopicConfig is the config source (DescribeConfigs v1+ code 1) alter_configs expects.
	DynamicTopicConfig = data.AlterConfigs.Source
	// DeleteRecordsProduce records are produced, then delete_records deletes before DeleteRecordsBefore.
	DeleteRecordsProduce = data.DeleteRecords.Produce
	DeleteRecordsBefore  = data.DeleteRecords.Before
	// LogDirsProduce records are produced before log_dirs describes the topic's log dir.
	LogDirsProduce = data.LogDirs.Produce
	// HeadersRecords is how many records the headers scenario produces, each with Headers().
	HeadersRecords = data.Headers.Records
	// BaseTS is list_offsets' timestamp base: record i has BaseTS + i*TSStep.
	BaseTS = data.ListOffsets.BaseTimestampMs
	TSStep = data.ListOffsets.StepMs
	// ListOffsetsRecords is how many timestamped records list_offsets produces.
	ListOffsetsRecords = data.ListOffsets.Records
	// TxnV2Ends are how transactions_v2's transactions end ("commit" or
	// "abort"), one transaction each, of TxnV2Records records valued
	// TxnV2Value(txn, i).
	TxnV2Ends    = data.TransactionsV2.Ends
	TxnV2Records = data.TransactionsV2.Records
	// FetchRecords records go to every partition of fetch_sessions' topic,
	// then as many again to its first FetchSecondRound partitions while the
	// consumer polls (FetchValue(round, partition, i)).
	FetchRecords     = data.FetchSessions.RecordsPerPartition
	FetchSecondRound = data.FetchSessions.SecondRoundPartitions
	// RestartMembers members consume group_consumer_restart's topic in one
	// group: RestartBefore records per partition before the restart,
	// RestartAfter after it.
	RestartMembers = data.GroupConsumerRestart.Members
	RestartBefore  = data.GroupConsumerRestart.RecordsBefore
	RestartAfter   = data.GroupConsumerRestart.RecordsAfter
	// RestartSessionTimeoutMs is the group's consumer.session.timeout.ms
	// (a group config) in group_consumer_restart, which a node's restart
	// must not outlast.
	RestartSessionTimeoutMs = data.GroupConsumerRestart.SessionTimeoutMs
	// ShareRecords records valued ShareValue(i) go to the share scenarios'
	// 1-partition topic; ShareSentinel is produced after the acknowledgements
	// a scenario checks, so a record delivered again would come before it.
	// SharePoison is the index of the record share_release, share_reject and
	// share_delivery_limit release or reject. Every share group gets
	// share.auto.offset.reset=ShareAutoOffsetReset; share_lock_expiry sets
	// share.record.lock.duration.ms=ShareLockDurationMs (Kafka's minimum),
	// share_delivery_limit share.delivery.count.limit=ShareDeliveryLimit;
	// share_read_committed's transactions (commit, abort, commit) have
	// ShareTxnRecords records each.
	ShareRecords         = data.Share.Records
	ShareSentinel        = data.Share.Sentinel
	SharePoison          = data.Share.Poison
	ShareAutoOffsetReset = data.Share.AutoOffsetReset
	ShareLockDurationMs  = data.Share.LockDurationMs
	ShareDeliveryLimit   = data.Share.DeliveryLimit
	ShareTxnRecords      = data.Share.TxnRecords
	// GroupConfigName is the group config group_configs sets to GroupConfigValue.
	GroupConfigName  = data.GroupConfigs.Name
	GroupConfigValue = data.GroupConfigs.Value
	// WordCountStore is the word count's state store (WordCount.java's
	// Materialized.as), whose changelog the streams_wordcount scenarios read.
	WordCountStore = data.StreamsWordCount.Store
)

// WordCountLines are the streams_wordcount scenarios' input: line i holds
// 1 + i%7 words of the scenario's list, word j of it the list's
// (3i + 5j) mod len'th.
func WordCountLines() []string {
	words := data.StreamsWordCount.Words
	out := make([]string, data.StreamsWordCount.Lines)
	for i := range out {
		line := make([]string, 1+i%7)
		for j := range line {
			line[j] = words[(3*i+5*j)%len(words)]
		}
		out[i] = strings.Join(line, " ")
	}
	return out
}

// TxnV2Value is the value of record i of transactions_v2's transaction txn.
func TxnV2Value(txn, i int) string {
	return fmt.Sprintf("%s%d-%s-%d", data.TransactionsV2.ValuePrefix, txn, data.TransactionsV2.Ends[txn], i)
}

// ShareValue is the value of the share scenarios' record i.
func ShareValue(i int) string { return fmt.Sprintf("%s%d", data.Share.ValuePrefix, i) }

// ShareTxnValue is the value of share_read_committed's record i of
// transaction txn, which ends as TxnV2Ends[txn].
func ShareTxnValue(txn, i int) string {
	return fmt.Sprintf("%s%d-%s-%d", data.Share.ValuePrefix, txn, data.TransactionsV2.Ends[txn], i)
}

// FetchValue is the value of fetch_sessions' record i of partition p in round r (0 or 1).
func FetchValue(r, p, i int) string { return fmt.Sprintf("r%d-p%d-%d", r, p, i) }

// Partitions is the partition count each scenario's topic is created with.
func Partitions(scenario string) int32 {
	if n, ok := data.Partitions.Scenarios[scenario]; ok {
		return n
	}
	return data.Partitions.Default
}

// GroupName is the consumer group a scenario on topic uses unless --arg group= names one.
func GroupName(topic string) string { return strings.ReplaceAll(data.Group, "{topic}", topic) }

// ProduceSet is the produce_consume data: 30 keyed ("k<i%5>","v<i>") then 10 unkeyed ("u<i>").
func ProduceSet() []Rec {
	var out []Rec
	for _, r := range data.ProduceConsume.Records {
		rec := Rec{Value: []byte(r.Value)}
		if r.Key != nil {
			rec.Key = []byte(*r.Key)
		}
		out = append(out, rec)
	}
	return out
}

// HeadersKey and HeadersValue are the key and value of the headers scenario's record i.
func HeadersKey(i int) []byte   { return []byte(fmt.Sprintf("%s%d", data.Headers.KeyPrefix, i)) }
func HeadersValue(i int) []byte { return []byte(fmt.Sprintf("%s%d", data.Headers.ValuePrefix, i)) }

// Headers is the headers scenario's header list (order and duplicates kept).
func Headers() [][2][]byte {
	var out [][2][]byte
	for _, h := range data.Headers.Headers {
		v, err := hex.DecodeString(h.ValueHex)
		if err != nil {
			panic(fmt.Sprintf("scenarios.json: header %s: %v", h.Key, err))
		}
		out = append(out, [2][]byte{[]byte(h.Key), v})
	}
	return out
}

// CrossHeader is the header key naming the producer client of a cross_produce record.
var CrossHeader = data.Cross.Header

// CrossSet is what cross_produce writes for producer client src.
func CrossSet(src string) []CrossRec {
	var out []CrossRec
	for i, r := range data.Cross.Records {
		out = append(out, CrossRec{Offset: int64(i), Key: r.Key, Value: r.Value, Headers: [][2]string{{CrossHeader, src}}})
	}
	return out
}
