package broker

import (
	"errors"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func configValue(t *testing.T, rc kadm.ResourceConfig, name string) kadm.Config {
	t.Helper()
	for _, c := range rc.Configs {
		if c.Key == name {
			return c
		}
	}
	t.Fatalf("%s %q has no config %s", rc.Name, rc.Name, name)
	return kadm.Config{}
}

func TestDescribeAndAlterTopicConfigs(t *testing.T) {
	b := startBroker(t, func(c *Config) {
		c.StaticConfigs = map[string]string{"log.retention.hours": "24"}
		c.Log.RetentionMs = 24 * 3600000
	})
	adm := newAdmin(t, b)
	ctx := testCtx(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": kadm.StringPtr("100000")}, "cfg"); err != nil {
		t.Fatal(err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("cfg", nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe: %v %v", err, rc.Err)
	}
	seg := configValue(t, rc, "segment.bytes")
	if seg.MaybeValue() != "100000" || seg.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("segment.bytes %q source %v", seg.MaybeValue(), seg.Source)
	}
	if len(seg.Synonyms) != 2 || seg.Synonyms[1].Key != "log.segment.bytes" || seg.Synonyms[1].Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("segment.bytes synonyms %+v", seg.Synonyms)
	}
	ret := configValue(t, rc, "retention.ms")
	if ret.MaybeValue() != "86400000" || ret.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("retention.ms %q source %v, want 86400000 from log.retention.hours", ret.MaybeValue(), ret.Source)
	}
	if c := configValue(t, rc, "cleanup.policy"); c.MaybeValue() != "delete" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("cleanup.policy %q %v", c.MaybeValue(), c.Source)
	}

	// Incremental: set, append to a list, delete.
	alter := []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("3600000")},
		{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")},
		{Op: kadm.DeleteConfig, Name: "segment.bytes"},
	}
	resps, err := adm.AlterTopicConfigs(ctx, alter, "cfg")
	if err != nil || resps[0].Err != nil {
		t.Fatalf("incremental alter: %v %v", err, resps)
	}
	got := b.logs.Topic("cfg").ConfigMap()
	if len(got) != 2 || got["retention.ms"] != "3600000" || got["cleanup.policy"] != "delete,compact" {
		t.Fatalf("configs after incremental alter: %v", got)
	}
	if c := b.logs.Topic("cfg").Partitions()[0].Log.Config(); c.RetentionMs != 3600000 || !c.Compact || c.SegmentBytes != 1<<30 {
		t.Fatalf("log config not applied: %+v", c)
	}
	// APPEND on a non-list config is INVALID_CONFIG; an unknown key too.
	resps, _ = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "retention.ms", Value: kadm.StringPtr("1")}}, "cfg")
	wantErr(t, "append to a long", resps[0].Err, kerr.InvalidConfig)
	resps, _ = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "no.such.config", Value: kadm.StringPtr("1")}}, "cfg")
	wantErr(t, "unknown config", resps[0].Err, kerr.InvalidConfig)
	resps, _ = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1")}}, "missing")
	wantErr(t, "unknown topic", resps[0].Err, kerr.UnknownTopicOrPartition)

	// Legacy AlterConfigs replaces the whole set.
	resps, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr("2000")}}, "cfg")
	if err != nil || resps[0].Err != nil {
		t.Fatalf("legacy alter: %v %v", err, resps)
	}
	if got := b.logs.Topic("cfg").ConfigMap(); len(got) != 1 || got["max.message.bytes"] != "2000" {
		t.Fatalf("configs after legacy alter: %v", got)
	}
	rcs, err = adm.DescribeTopicConfigs(ctx, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	rc, _ = rcs.On("cfg", nil)
	if c := configValue(t, rc, "retention.ms"); c.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("retention.ms after legacy alter: %q %v", c.MaybeValue(), c.Source)
	}
	// A produce above the new max.message.bytes fails.
	cl := newClient(t, b, kgo.DefaultProduceTopic("cfg"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	err = cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 3000)}).FirstErr()
	wantErr(t, "produce above max.message.bytes", err, kerr.MessageTooLarge)

	// Describe of an unknown topic.
	rcs, err = adm.DescribeTopicConfigs(ctx, "missing")
	if err == nil {
		if rc, _ := rcs.On("missing", nil); !errors.Is(rc.Err, kerr.UnknownTopicOrPartition) {
			t.Fatalf("describe unknown topic: %v", rc.Err)
		}
	}
}

func TestDescribeAndAlterBrokerConfigs(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, func(c *Config) { c.LogDirs = dir })
	adm := newAdmin(t, b)
	ctx := testCtx(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "bt"); err != nil {
		t.Fatal(err)
	}
	// Cluster default: log.retention.ms for every topic.
	resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: kadm.StringPtr("7200000")}})
	if err != nil || resps[0].Err != nil {
		t.Fatalf("alter cluster default: %v %+v", err, resps)
	}
	if c := b.logs.Topic("bt").Partitions()[0].Log.Config(); c.RetentionMs != 7200000 {
		t.Fatalf("dynamic default not applied: %d", c.RetentionMs)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "bt")
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := rcs.On("bt", nil)
	if c := configValue(t, rc, "retention.ms"); c.MaybeValue() != "7200000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("retention.ms %q %v", c.MaybeValue(), c.Source)
	}
	// This node's own config wins over the default.
	resps, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.segment.bytes", Value: kadm.StringPtr("50000")}}, testNodeID)
	if err != nil || resps[0].Err != nil {
		t.Fatalf("alter node config: %v %+v", err, resps)
	}
	brc, err := adm.DescribeBrokerConfigs(ctx, testNodeID)
	if err != nil {
		t.Fatal(err)
	}
	node, err := brc.On(strconv.Itoa(testNodeID), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := configValue(t, node, "log.segment.bytes"); c.MaybeValue() != "50000" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Fatalf("log.segment.bytes %q %v", c.MaybeValue(), c.Source)
	}
	if c := configValue(t, node, "log.retention.ms"); c.MaybeValue() != "7200000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("log.retention.ms %q %v", c.MaybeValue(), c.Source)
	}
	if c := configValue(t, node, "log.retention.hours"); c.MaybeValue() != "168" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("log.retention.hours %q %v", c.MaybeValue(), c.Source)
	}
	if c := configValue(t, node, "node.id"); c.MaybeValue() != "1" || c.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("node.id %+v", c)
	}
	// Read-only keys cannot change; another broker id is refused.
	resps, _ = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "num.partitions", Value: kadm.StringPtr("3")}})
	wantErr(t, "read-only broker config", resps[0].Err, kerr.InvalidRequest)
	resps, _ = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: kadm.StringPtr("x")}})
	wantErr(t, "bad broker value", resps[0].Err, kerr.InvalidRequest) // as Kafka's ConfigAdminManager
	if want := "Invalid value x for configuration log.retention.ms: Not a number of type LONG"; resps[0].ErrMessage != want {
		t.Fatalf("bad broker value: message %q, want Kafka's %q", resps[0].ErrMessage, want)
	}
	brc, err = adm.DescribeBrokerConfigs(ctx, 7)
	if err == nil {
		if rc, _ := brc.On("7", nil); !errors.Is(rc.Err, kerr.InvalidRequest) {
			t.Fatalf("describe broker 7: %v", rc.Err)
		}
	}
	// The cluster default lists only the dynamic default configs.
	def := adminRoundTrip[*kmsg.DescribeConfigsResponse](t, b, &kmsg.DescribeConfigsRequest{
		Resources: []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: ""}}}, 4)
	if r := def.Resources[0]; r.ErrorCode != 0 || len(r.Configs) != 1 || r.Configs[0].Name != "log.retention.ms" {
		t.Fatalf("cluster default configs: %+v", r)
	}
}

func TestDescribeConfigsEveryVersion(t *testing.T) {
	b := startBroker(t, nil)
	if _, err := newAdmin(t, b).CreateTopic(testCtx(t), 1, 1, nil, "v"); err != nil {
		t.Fatal(err)
	}
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.IncludeSynonyms, req.IncludeDocumentation = true, true
		req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "v", ConfigNames: []string{"retention.ms"}}}
		resp := adminRoundTrip[*kmsg.DescribeConfigsResponse](t, b, req, v)
		c := resp.Resources[0].Configs
		if len(c) != 1 || *c[0].Value != "604800000" || !c[0].IsDefault && v == 0 {
			t.Fatalf("v%d: %+v", v, resp.Resources[0])
		}
		if v >= 1 && len(c[0].ConfigSynonyms) != 1 {
			t.Fatalf("v%d synonyms %+v", v, c[0].ConfigSynonyms)
		}
		if v >= 3 && (c[0].Documentation == nil || c[0].ConfigType != kmsg.ConfigTypeLong) {
			t.Fatalf("v%d type %v doc %v", v, c[0].ConfigType, c[0].Documentation)
		}
	}
}

func TestDeleteRecordsAndLogDirs(t *testing.T) {
	b := startBroker(t, func(c *Config) { c.Log.SegmentBytes = 2000 })
	adm := newAdmin(t, b)
	ctx := testCtx(t)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "dr"); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, b, kgo.DefaultProduceTopic("dr"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < 50; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 100)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "dr", Partition: 0, At: 30})
	offs.Add(kadm.Offset{Topic: "dr", Partition: 1, At: 5}) // empty partition: above the high watermark
	res, err := adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup("dr", 0); r.Err != nil || r.LowWatermark != 30 {
		t.Fatalf("partition 0: %+v", r)
	}
	if r, _ := res.Lookup("dr", 1); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("partition 1: %+v", r)
	}
	starts, err := adm.ListStartOffsets(ctx, "dr")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("dr", 0); o.Offset != 30 {
		t.Fatalf("earliest offset %d, want 30", o.Offset)
	}
	// A fetch below the start is OFFSET_OUT_OF_RANGE.
	fr := adminRoundTrip[*kmsg.FetchResponse](t, b, &kmsg.FetchRequest{ReplicaID: -1, MaxBytes: 1 << 20,
		Topics: []kmsg.FetchRequestTopic{{Topic: "dr", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, FetchOffset: 10, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}}}}}, 11)
	if p := fr.Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code || p.LogStartOffset != 30 {
		t.Fatalf("fetch below the start: error %d, log start %d", p.ErrorCode, p.LogStartOffset)
	}
	size := b.logs.Topic("dr").Partitions()[0].Log.Size()
	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == "dr" && p.Partition == 0 {
				found = p.Size == size && size > 0
			}
		})
		if d.TotalBytes <= 0 || d.UsableBytes <= 0 {
			t.Errorf("dir %s total %d usable %d", d.Dir, d.TotalBytes, d.UsableBytes)
		}
	})
	if !found {
		t.Fatalf("log dirs do not report dr-0 with %d bytes: %+v", size, dirs)
	}
	// Internal topics refuse.
	offs = kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "__consumer_offsets", Partition: 0, At: 0})
	if res, err = adm.DeleteRecords(ctx, offs); err == nil {
		if r, _ := res.Lookup("__consumer_offsets", 0); !errors.Is(r.Err, kerr.InvalidTopicException) {
			t.Fatalf("internal topic: %+v", r)
		}
	}
}

func TestDescribeClusterAndElectLeaders(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	ctx := testCtx(t)
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Cluster != b.logs.ClusterID() || meta.Controller != testNodeID || len(meta.Brokers) != 1 {
		t.Fatalf("cluster %+v", meta)
	}
	for v := int16(0); v <= 1; v++ {
		dc := adminRoundTrip[*kmsg.DescribeClusterResponse](t, b, &kmsg.DescribeClusterRequest{EndpointType: 1}, v)
		if dc.ErrorCode != 0 || dc.ClusterID != b.logs.ClusterID() || len(dc.Brokers) != 1 || dc.Brokers[0].Port != int32(b.Addr().(*net.TCPAddr).Port) {
			t.Fatalf("DescribeCluster v%d: %+v", v, dc)
		}
	}
	if dc := adminRoundTrip[*kmsg.DescribeClusterResponse](t, b, &kmsg.DescribeClusterRequest{EndpointType: 2}, 1); dc.ErrorCode != kerr.MismatchedEndpointType.Code {
		t.Fatalf("controllers endpoint: %d", dc.ErrorCode)
	}
	if dc := adminRoundTrip[*kmsg.DescribeClusterResponse](t, b, &kmsg.DescribeClusterRequest{EndpointType: 3}, 1); dc.ErrorCode != kerr.UnsupportedEndpointType.Code {
		t.Fatalf("unknown endpoint type: %d", dc.ErrorCode)
	}
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "el"); err != nil {
		t.Fatal(err)
	}
	set := kadm.TopicsSet{}
	set.Add("el", 0, 1)
	set.Add("nope", 0)
	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []int32{0, 1} {
		if r := res["el"][p]; !errors.Is(r.Err, kerr.ElectionNotNeeded) {
			t.Fatalf("el-%d: %+v", p, r)
		}
	}
	if r := res["nope"][0]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("nope-0: %+v", r)
	}
	for v := int16(0); v <= 2; v++ {
		resp := adminRoundTrip[*kmsg.ElectLeadersResponse](t, b, &kmsg.ElectLeadersRequest{}, v)
		// Kafka's controller answers every topic, leaving out the
		// partitions that need no election.
		if resp.ErrorCode != 0 || slices.ContainsFunc(resp.Topics, func(t kmsg.ElectLeadersResponseTopic) bool { return len(t.Partitions) > 0 }) {
			t.Fatalf("ElectLeaders v%d all partitions: %+v", v, resp)
		}
	}
}

// TestRetentionThroughBroker runs the retention goroutine of a broker with
// a 50 ms check interval and retention.bytes: old segments go and the start
// offset moves, seen through ListOffsets.
func TestRetentionThroughBroker(t *testing.T) {
	b := startBroker(t, func(c *Config) {
		c.Log.SegmentBytes = 1000
		c.Log.RetentionCheckIntervalMs = 50
		c.Log.FileDeleteDelayMs = 0
	})
	adm := newAdmin(t, b)
	ctx := testCtx(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.bytes": kadm.StringPtr("2000")}, "rt"); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, b, kgo.DefaultProduceTopic("rt"))
	for i := 0; i < 40; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 100)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		starts, err := adm.ListStartOffsets(ctx, "rt")
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := starts.Lookup("rt", 0); o.Offset > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("retention.bytes never moved the log start offset")
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if size := b.logs.Topic("rt").Partitions()[0].Log.Size(); size > 3000 {
		t.Fatalf("size %d after retention.bytes=2000", size)
	}
}
