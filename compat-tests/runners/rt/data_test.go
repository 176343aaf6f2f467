package rt

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The scenario data in scenarios.json is the data the runners used to spell out in code;
// these tests pin it to those definitions, so a change to the file is a deliberate one.

func TestProduceSetIsKeyedThenUnkeyed(t *testing.T) {
	var want []Rec
	for i := 0; i < 30; i++ {
		want = append(want, Rec{Key: []byte(fmt.Sprintf("k%d", i%5)), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	for i := 0; i < 10; i++ {
		want = append(want, Rec{Value: []byte(fmt.Sprintf("u%d", i))})
	}
	if got := ProduceSet(); !reflect.DeepEqual(got, want) {
		t.Fatalf("ProduceSet() = %v, want %v", got, want)
	}
}

func TestHeadersAndCrossSet(t *testing.T) {
	wantH := [][2][]byte{{[]byte("h1"), []byte("a")}, {[]byte("h2"), {0x00, 0xff}}, {[]byte("h1"), []byte("b")}}
	if got := Headers(); !reflect.DeepEqual(got, wantH) || HeadersRecords != 5 || string(HeadersKey(3)) != "hk3" || string(HeadersValue(3)) != "hv3" {
		t.Fatalf("headers data: %q x%d, %s=%s", got, HeadersRecords, HeadersKey(3), HeadersValue(3))
	}
	cs := CrossSet("franz-go")
	if len(cs) != 20 {
		t.Fatalf("CrossSet has %d records, want 20", len(cs))
	}
	for i, r := range cs {
		w := CrossRec{Offset: int64(i), Key: fmt.Sprintf("ck%d", i), Value: fmt.Sprintf("cross-value-%d-", i) + strings.Repeat("ż", 50),
			Headers: [][2]string{{"src", "franz-go"}}}
		if !reflect.DeepEqual(r, w) {
			t.Fatalf("CrossSet[%d] = %+v, want %+v", i, r, w)
		}
	}
}

func TestScenarioCounts(t *testing.T) {
	for scenario, want := range map[string]int32{"create_topic": 3, "describe_topic": 3, "idempotent_produce": 3,
		"produce_consume_zstd": 3, "metadata": 1, "headers": 1, "cross_produce": 1} {
		if got := Partitions(scenario); got != want {
			t.Errorf("Partitions(%s) = %d, want %d", scenario, got, want)
		}
	}
	if BaseTS != 1_000_000_000_000 || TSStep != 1000 || ListOffsetsRecords != 10 || AlterRetentionMs != "123456" ||
		DynamicTopicConfig != "DYNAMIC_TOPIC_CONFIG" || DeleteRecordsProduce != 10 || DeleteRecordsBefore != 5 || LogDirsProduce != 10 ||
		!reflect.DeepEqual(Codecs, []string{"none", "gzip", "snappy", "lz4", "zstd"}) || GroupName("t") != "t-g" {
		t.Fatalf("scenario constants changed: %v %v %v %v %v %v %v %v %v %v", BaseTS, TSStep, ListOffsetsRecords, AlterRetentionMs,
			DynamicTopicConfig, DeleteRecordsProduce, DeleteRecordsBefore, LogDirsProduce, Codecs, GroupName("t"))
	}
}
