package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-io/strata/protocol"
)

// adminRoundTrip sends req at exactly version on a fresh connection and
// decodes the response, so a test sees what the broker answers at that
// version, untouched by a client's routing or retries.
func adminRoundTrip[R kmsg.Response](t *testing.T, b *Broker, req kmsg.Request, version int16) R {
	t.Helper()
	nc, err := net.DialTimeout("tcp", b.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	return roundTripOn[R](t, nc, "admin", req, version)
}

// roundTripOn sends req at version as clientID on nc and returns the
// decoded response.
func roundTripOn[R kmsg.Response](t *testing.T, nc net.Conn, clientID string, req kmsg.Request, version int16) R {
	t.Helper()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := nc.Write(requestFrame(req, clientID, version)); err != nil {
		t.Fatal(err)
	}
	body, err := protocol.ReadFrame(nc, 64<<20, nil)
	if err != nil {
		t.Fatalf("%s v%d: read response: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != 7 {
		t.Fatalf("correlation id %d, want 7", corr)
	}
	body = body[4:]
	if protocol.FlexibleResponseHeader(req.Key(), version) {
		body = body[1:]
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("%s v%d: decode response: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	return resp.(R)
}

// requestFrame is req at version as one request frame, correlation id 7,
// from clientID.
func requestFrame(req kmsg.Request, clientID string, version int16) []byte {
	req.SetVersion(version)
	frame := []byte{0, 0, 0, 0}
	frame = binary.BigEndian.AppendUint16(frame, uint16(req.Key()))
	frame = binary.BigEndian.AppendUint16(frame, uint16(version))
	frame = binary.BigEndian.AppendUint32(frame, 7)
	frame = binary.BigEndian.AppendUint16(frame, uint16(len(clientID)))
	frame = append(frame, clientID...)
	if req.IsFlexible() {
		frame = append(frame, 0)
	}
	frame = req.AppendTo(frame)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	return frame
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newAdmin(t *testing.T, b *Broker) *kadm.Client {
	return kadm.NewClient(newClient(t, b))
}

func wantErr(t *testing.T, what string, got error, want *kerr.Error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("%s: error %v, want %v", what, got, want)
	}
}

func createTopic(t *testing.T, adm *kadm.Client, name string, partitions int32) kadm.CreateTopicResponse {
	t.Helper()
	resp, err := adm.CreateTopic(testCtx(t), partitions, 1, nil, name)
	if err != nil {
		t.Fatalf("create %s: %v (%s)", name, err, resp.ErrMessage)
	}
	return resp
}

func partitionCount(t *testing.T, adm *kadm.Client, topic string) int {
	t.Helper()
	tds, err := adm.ListTopics(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	td, ok := tds[topic]
	if !ok || td.Err != nil {
		return -1
	}
	return len(td.Partitions)
}

func TestCreateTopicsWithKadm(t *testing.T) {
	b := startBroker(t, func(c *Config) { c.NumPartitions = 3 })
	adm := newAdmin(t, b)
	ctx := testCtx(t)

	resp := createTopic(t, adm, "defaults", -1)
	if resp.NumPartitions != 3 || resp.ReplicationFactor != 1 || resp.ID == (kadm.TopicID{}) {
		t.Fatalf("defaults: %d partitions, replication %d, id %v", resp.NumPartitions, resp.ReplicationFactor, resp.ID)
	}
	if n := partitionCount(t, adm, "defaults"); n != 3 {
		t.Fatalf("defaults has %d partitions in metadata, want 3", n)
	}

	resp, err := adm.CreateTopic(ctx, 2, -1, map[string]*string{
		"segment.bytes": kadm.StringPtr("1048576"),
		"retention.ms":  kadm.StringPtr("60000"),
	}, "configured")
	if err != nil {
		t.Fatalf("configured: %v (%s)", err, resp.ErrMessage)
	}
	if resp.NumPartitions != 2 || resp.ReplicationFactor != 1 {
		t.Fatalf("configured: %d partitions, replication %d", resp.NumPartitions, resp.ReplicationFactor)
	}
	for name, want := range map[string]struct {
		value  string
		source kmsg.ConfigSource
	}{
		"segment.bytes":     {"1048576", kmsg.ConfigSourceDynamicTopicConfig},
		"retention.ms":      {"60000", kmsg.ConfigSourceDynamicTopicConfig},
		"max.message.bytes": {"1048588", kmsg.ConfigSourceDefaultConfig},
	} {
		c, ok := resp.Configs[name]
		if !ok || c.Value == nil || *c.Value != want.value || c.Source != want.source {
			t.Errorf("config %s: %+v, want %s from %v", name, c, want.value, want.source)
		}
	}

	dry, err := adm.ValidateCreateTopics(ctx, 4, 1, nil, "dryrun")
	if err != nil || dry["dryrun"].Err != nil || dry["dryrun"].NumPartitions != 4 {
		t.Fatalf("validate only: %v %+v", err, dry["dryrun"])
	}
	if n := partitionCount(t, adm, "dryrun"); n != -1 {
		t.Fatalf("validate-only topic exists with %d partitions", n)
	}

	_, err = adm.CreateTopic(ctx, 1, 1, nil, "defaults")
	wantErr(t, "existing topic", err, kerr.TopicAlreadyExists)
	_, err = adm.CreateTopic(ctx, 1, 1, nil, "bad name!")
	wantErr(t, "bad name", err, kerr.InvalidTopicException)
	resp, err = adm.CreateTopic(ctx, 1, 3, nil, "replicated")
	wantErr(t, "replication factor 3", err, kerr.InvalidReplicationFactor)
	if !strings.Contains(resp.ErrMessage, "replication factor of 3 cannot be reached because only 1 broker(s)") {
		t.Errorf("replication factor 3 message: %q", resp.ErrMessage)
	}
	_, err = adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": kadm.StringPtr("lots")}, "badconfig")
	wantErr(t, "bad config value", err, kerr.InvalidConfig)
}

func TestCreateTopicsRequestChecks(t *testing.T) {
	b := startBroker(t, nil)
	topic := func(name string, partitions int32, rf int16, assignment ...[]int32) kmsg.CreateTopicsRequestTopic {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
		for i, replicas := range assignment {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(i), replicas
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		}
		return rt
	}
	nullConfig := topic("nullcfg", 1, 1)
	nullConfig.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.ms"}}
	gap := topic("gap", -1, -1, []int32{testNodeID}, []int32{testNodeID})
	gap.ReplicaAssignment[1].Partition = 2

	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics = []kmsg.CreateTopicsRequestTopic{
		topic("dup", 1, 1),
		topic("assigned", -1, -1, []int32{testNodeID}, []int32{testNodeID}),
		topic("counts-and-assignment", 2, -1, []int32{testNodeID}),
		gap,
		topic("other-broker", -1, -1, []int32{testNodeID + 1}),
		topic("twice", -1, -1, []int32{testNodeID, testNodeID}),
		topic("empty-replicas", -1, -1, []int32{}),
		nullConfig,
		topic("rf0", 1, 0),
		topic("p0", 0, 1),
		topic("dup", 2, 1),
	}
	resp := adminRoundTrip[*kmsg.CreateTopicsResponse](t, b, req, 7)
	want := []struct {
		name string
		code int16
		msg  string
	}{
		{"assigned", 0, ""},
		{"counts-and-assignment", kerr.InvalidRequest.Code, "A manual partition assignment was specified, but numPartitions was not set to -1."},
		{"gap", kerr.InvalidReplicaAssignment.Code, "partitions should be a consecutive 0-based integer sequence"},
		{"other-broker", kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes broker 2, but no such broker is registered."},
		{"twice", kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes the broker 1 more than once."},
		{"empty-replicas", kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes an empty replica list."},
		{"nullcfg", kerr.InvalidConfig.Code, "Null value not supported for topic configs: retention.ms"},
		{"rf0", kerr.InvalidReplicationFactor.Code, "Replication factor must be larger than 0, or -1 to use the default value."},
		{"p0", kerr.InvalidPartitions.Code, "Number of partitions was set to an invalid non-positive value."},
		{"dup", kerr.InvalidRequest.Code, "Duplicate topic name."},
	}
	if len(resp.Topics) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(resp.Topics), len(want), resp.Topics)
	}
	for i, w := range want {
		got := resp.Topics[i]
		msg := ""
		if got.ErrorMessage != nil {
			msg = *got.ErrorMessage
		}
		if got.Topic != w.name || got.ErrorCode != w.code || (w.msg != "" && msg != w.msg) {
			t.Errorf("result %d: %s code %d %q, want %s code %d %q", i, got.Topic, got.ErrorCode, msg, w.name, w.code, w.msg)
		}
	}
	if got := resp.Topics[0]; got.NumPartitions != 2 || got.ReplicationFactor != 1 || got.TopicID == [16]byte{} {
		t.Errorf("assigned: %d partitions, replication %d, id %x", got.NumPartitions, got.ReplicationFactor, got.TopicID)
	}

	// The oldest version served creates a topic too.
	old := kmsg.NewPtrCreateTopicsRequest()
	old.Topics = []kmsg.CreateTopicsRequestTopic{topic("v2", 1, 1)}
	if r := adminRoundTrip[*kmsg.CreateTopicsResponse](t, b, old, 2); len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 {
		t.Fatalf("v2: %+v", r.Topics)
	}
	if b.logs.Topic("v2") == nil || b.logs.Topic("assigned") == nil || b.logs.Topic("dup") != nil {
		t.Fatal("topics created do not match the successful results")
	}
}

func TestDeleteTopics(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	ctx := testCtx(t)
	for _, name := range []string{"a", "b", "c"} {
		createTopic(t, adm, name, 2)
	}

	resps, err := adm.DeleteTopics(ctx, "a", "missing")
	if err != nil {
		t.Fatal(err)
	}
	if err := resps["a"].Err; err != nil {
		t.Fatalf("delete a: %v", err)
	}
	wantErr(t, "delete missing", resps["missing"].Err, kerr.UnknownTopicOrPartition)
	if got := resps["missing"].ErrMessage; got != kerr.UnknownTopicOrPartition.Description {
		t.Errorf("delete missing: message %q, want Kafka's (its code's description)", got)
	}

	bID := b.logs.Topic("b").ID
	cID := b.logs.Topic("c").ID
	name := func(s string) *string { return &s }
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Topics = []kmsg.DeleteTopicsRequestTopic{
		{TopicID: bID},
		{TopicID: [16]byte{0xde, 0xad}},
		{Topic: name("c")},
		{},
		{Topic: name("c"), TopicID: cID},
	}
	resp := adminRoundTrip[*kmsg.DeleteTopicsResponse](t, b, req, 6)
	if len(resp.Topics) != 5 {
		t.Fatalf("%d results, want 5: %+v", len(resp.Topics), resp.Topics)
	}
	if r := resp.Topics[0]; r.ErrorCode != 0 || r.Topic == nil || *r.Topic != "b" || r.TopicID != bID {
		t.Errorf("delete by id: %+v", r)
	}
	if r := resp.Topics[1]; r.ErrorCode != kerr.UnknownTopicID.Code || r.Topic != nil {
		t.Errorf("unknown id: %+v", r)
	}
	if r := resp.Topics[2]; r.ErrorCode != 0 || r.TopicID != cID {
		t.Errorf("delete by name: %+v", r)
	}
	for _, r := range resp.Topics[3:] {
		if r.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("neither or both name and id: %+v", r)
		}
	}

	dup := kmsg.NewPtrDeleteTopicsRequest()
	dup.TopicNames = []string{"x", "x"}
	if r := adminRoundTrip[*kmsg.DeleteTopicsResponse](t, b, dup, 1); len(r.Topics) != 1 || r.Topics[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("duplicate names: %+v", r.Topics)
	}
	for _, topic := range []string{"a", "b", "c"} {
		if n := partitionCount(t, adm, topic); n != -1 {
			t.Errorf("%s still listed with %d partitions", topic, n)
		}
	}
}

func TestCreatePartitions(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	ctx := testCtx(t)
	createTopic(t, adm, "grow", 1)

	resps, err := adm.UpdatePartitions(ctx, 3, "grow", "nope")
	if err != nil {
		t.Fatal(err)
	}
	if err := resps["grow"].Err; err != nil {
		t.Fatalf("grow to 3: %v (%s)", err, resps["grow"].ErrMessage)
	}
	wantErr(t, "unknown topic", resps["nope"].Err, kerr.UnknownTopicOrPartition)
	if n := partitionCount(t, adm, "grow"); n != 3 {
		t.Fatalf("grow has %d partitions, want 3", n)
	}

	for count, msg := range map[int]string{
		2: "The topic grow currently has 3 partition(s); 2 would not be an increase.",
		3: "Topic already has 3 partition(s).",
	} {
		resps, err := adm.UpdatePartitions(ctx, count, "grow")
		if err != nil {
			t.Fatal(err)
		}
		wantErr(t, "shrink or keep", resps["grow"].Err, kerr.InvalidPartitions)
		if resps["grow"].ErrMessage != msg {
			t.Errorf("count %d: message %q, want %q", count, resps["grow"].ErrMessage, msg)
		}
	}

	if resps, err := adm.ValidateCreatePartitions(ctx, 2, "grow"); err != nil || resps["grow"].Err != nil {
		t.Fatalf("validate only: %v %+v", err, resps["grow"])
	}
	if n := partitionCount(t, adm, "grow"); n != 3 {
		t.Fatalf("validate-only changed the count to %d", n)
	}

	topic := func(name string, count int32, assignment ...[]int32) kmsg.CreatePartitionsRequestTopic {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, count
		for _, replicas := range assignment {
			rt.Assignment = append(rt.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: replicas})
		}
		return rt
	}
	createTopic(t, adm, "assign", 1)
	createTopic(t, adm, "short", 1)
	createTopic(t, adm, "elsewhere", 1)
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Topics = []kmsg.CreatePartitionsRequestTopic{
		topic("assign", 3, []int32{testNodeID}, []int32{testNodeID}),
		topic("short", 3, []int32{testNodeID}),
		topic("elsewhere", 2, []int32{testNodeID + 1}),
		topic("grow", 4),
		topic("grow", 5),
	}
	resp := adminRoundTrip[*kmsg.CreatePartitionsResponse](t, b, req, 3)
	want := []struct {
		name string
		code int16
		msg  string
	}{
		{"assign", 0, ""},
		{"short", kerr.InvalidReplicaAssignment.Code, "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."},
		{"elsewhere", kerr.InvalidReplicaAssignment.Code, "The manual partition assignment includes broker 2, but no such broker is registered."},
		{"grow", kerr.InvalidRequest.Code, "Duplicate topic name."},
	}
	if len(resp.Topics) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(resp.Topics), len(want), resp.Topics)
	}
	for i, w := range want {
		got := resp.Topics[i]
		msg := ""
		if got.ErrorMessage != nil {
			msg = *got.ErrorMessage
		}
		if got.Topic != w.name || got.ErrorCode != w.code || msg != w.msg {
			t.Errorf("result %d: %s code %d %q, want %s code %d %q", i, got.Topic, got.ErrorCode, msg, w.name, w.code, w.msg)
		}
	}
	for topic, n := range map[string]int{"assign": 3, "short": 1, "elsewhere": 1, "grow": 3} {
		if got := partitionCount(t, adm, topic); got != n {
			t.Errorf("%s has %d partitions, want %d", topic, got, n)
		}
	}
}

// produceTimed produces one batch to partition 0 of topic whose records carry
// the given timestamps, in order.
func produceTimed(t *testing.T, b *Broker, topic string, timestamps ...time.Time) {
	t.Helper()
	cl := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for _, ts := range timestamps {
		recs = append(recs, &kgo.Record{Value: []byte("v"), Timestamp: ts, Partition: 0})
	}
	produceSync(t, cl, recs...)
}

func TestListOffsets(t *testing.T) {
	b := startBroker(t, nil)
	adm := newAdmin(t, b)
	ctx := testCtx(t)
	createTopic(t, adm, "times", 1)
	createTopic(t, adm, "empty", 1)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	ms := func(d time.Duration) int64 { return base.Add(d).UnixMilli() }
	// Offsets 0, 1, 2 at base+1s, base+3s, base+2s: the largest timestamp is
	// not the last record's.
	produceTimed(t, b, "times", base.Add(time.Second), base.Add(3*time.Second), base.Add(2*time.Second))
	produceTimed(t, b, "times", base.Add(4*time.Second)) // offset 3, a second batch

	check := func(what string, got kadm.ListedOffsets, offset, timestamp int64) {
		t.Helper()
		o, ok := got.Lookup("times", 0)
		if !ok || o.Err != nil || o.Offset != offset || o.Timestamp != timestamp {
			t.Errorf("%s: %+v, want offset %d timestamp %d", what, o, offset, timestamp)
		}
	}
	start, err := adm.ListStartOffsets(ctx, "times")
	if err != nil {
		t.Fatal(err)
	}
	check("start", start, 0, -1)
	end, err := adm.ListEndOffsets(ctx, "times")
	if err != nil {
		t.Fatal(err)
	}
	check("end", end, 4, -1)
	maxTS, err := adm.ListMaxTimestampOffsets(ctx, "times")
	if err != nil {
		t.Fatal(err)
	}
	check("max timestamp", maxTS, 3, ms(4*time.Second))
	after, err := adm.ListOffsetsAfterMilli(ctx, ms(1500*time.Millisecond), "times")
	if err != nil {
		t.Fatal(err)
	}
	check("after base+1.5s", after, 1, ms(3*time.Second))

	partition := func(p int32, ts int64, epoch int32) kmsg.ListOffsetsRequestTopicPartition {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, ts, epoch
		return rp
	}
	type want struct {
		code      int16
		offset    int64
		timestamp int64
		epoch     int32
	}
	cases := []struct {
		name    string
		version int16
		topic   string
		part    kmsg.ListOffsetsRequestTopicPartition
		want    want
	}{
		{"earliest v1", 1, "times", partition(0, -2, -1), want{0, 0, -1, -1}},
		{"latest v1", 1, "times", partition(0, -1, -1), want{0, 4, -1, -1}},
		{"latest v4", 4, "times", partition(0, -1, 0), want{0, 4, -1, 0}},
		{"newer epoch", 4, "times", partition(0, -1, 5), want{kerr.UnknownLeaderEpoch.Code, -1, -1, -1}},
		{"older epoch", 4, "times", partition(0, -1, -3), want{kerr.FencedLeaderEpoch.Code, -1, -1, -1}},
		{"by timestamp in a batch", 5, "times", partition(0, ms(2500*time.Millisecond), -1), want{0, 1, ms(3 * time.Second), 0}},
		{"exact timestamp", 6, "times", partition(0, ms(2*time.Second), -1), want{0, 1, ms(3 * time.Second), 0}},
		{"second batch", 6, "times", partition(0, ms(3500*time.Millisecond), -1), want{0, 3, ms(4 * time.Second), 0}},
		{"after every record", 6, "times", partition(0, ms(time.Minute), -1), want{0, -1, -1, -1}},
		{"max timestamp", 7, "times", partition(0, -3, -1), want{0, 3, ms(4 * time.Second), 0}},
		{"max timestamp empty", 7, "empty", partition(0, -3, -1), want{0, -1, -1, -1}},
		{"earliest local", 8, "times", partition(0, -4, -1), want{0, 0, -1, 0}},
		{"latest tiered", 9, "times", partition(0, -5, -1), want{0, -1, -1, -1}},
		{"latest empty", 10, "empty", partition(0, -1, -1), want{0, 0, -1, 0}},
		{"unknown partition", 10, "times", partition(1, -1, -1), want{kerr.UnknownTopicOrPartition.Code, -1, -1, -1}},
		{"unknown topic", 10, "nope", partition(0, -1, -1), want{kerr.UnknownTopicOrPartition.Code, -1, -1, -1}},
	}
	for _, tc := range cases {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		req.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: tc.topic, Partitions: []kmsg.ListOffsetsRequestTopicPartition{tc.part}}}
		resp := adminRoundTrip[*kmsg.ListOffsetsResponse](t, b, req, tc.version)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Errorf("%s: %+v", tc.name, resp.Topics)
			continue
		}
		p := resp.Topics[0].Partitions[0]
		got := want{p.ErrorCode, p.Offset, p.Timestamp, p.LeaderEpoch}
		if got != tc.want {
			t.Errorf("%s (v%d): got %+v, want %+v", tc.name, tc.version, got, tc.want)
		}
	}

	dup := kmsg.NewPtrListOffsetsRequest()
	dup.Topics = []kmsg.ListOffsetsRequestTopic{
		{Topic: "times", Partitions: []kmsg.ListOffsetsRequestTopicPartition{partition(0, -1, -1)}},
		{Topic: "times", Partitions: []kmsg.ListOffsetsRequestTopicPartition{partition(0, -2, -1)}},
	}
	resp := adminRoundTrip[*kmsg.ListOffsetsResponse](t, b, dup, 10)
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if p.ErrorCode != kerr.InvalidRequest.Code {
				t.Errorf("partition named twice: code %d", p.ErrorCode)
			}
		}
	}
}

func TestInitProducerID(t *testing.T) {
	b := startBroker(t, nil)
	seen := make(map[int64]bool)
	for v := int16(0); v <= 5; v++ {
		req := kmsg.NewPtrInitProducerIDRequest()
		resp := adminRoundTrip[*kmsg.InitProducerIDResponse](t, b, req, v)
		if resp.ErrorCode != 0 || resp.ProducerID < 0 || resp.ProducerEpoch != 0 || seen[resp.ProducerID] {
			t.Fatalf("v%d: code %d id %d epoch %d (seen: %v)", v, resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch, seen[resp.ProducerID])
		}
		seen[resp.ProducerID] = true
		if v >= 3 {
			// An idempotent producer bumping its epoch gets a new id, as in Kafka.
			req.ProducerID, req.ProducerEpoch = resp.ProducerID, resp.ProducerEpoch
			again := adminRoundTrip[*kmsg.InitProducerIDResponse](t, b, req, v)
			if again.ErrorCode != 0 || again.ProducerEpoch != 0 || seen[again.ProducerID] {
				t.Fatalf("v%d with current id: code %d id %d epoch %d", v, again.ErrorCode, again.ProducerID, again.ProducerEpoch)
			}
			seen[again.ProducerID] = true
		}
	}

	txn := func(s string) *string { return &s }
	for _, tc := range []struct {
		name          string
		transactional *string
		id            int64
		epoch         int16
		code          int16
	}{
		{"transactional without a timeout", txn("tx"), -1, -1, kerr.InvalidTransactionTimeout.Code},
		{"empty transactional id", txn(""), -1, -1, kerr.InvalidRequest.Code},
		{"id without epoch", nil, 5, -1, kerr.InvalidRequest.Code},
		{"epoch without id", nil, -1, 3, kerr.InvalidRequest.Code},
	} {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = tc.transactional, tc.id, tc.epoch
		resp := adminRoundTrip[*kmsg.InitProducerIDResponse](t, b, req, 4)
		if resp.ErrorCode != tc.code || resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
			t.Errorf("%s: code %d id %d epoch %d, want code %d and -1/-1", tc.name, resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch, tc.code)
		}
	}
}

func TestOffsetForLeaderEpoch(t *testing.T) {
	b := startBroker(t, nil)
	createTopic(t, newAdmin(t, b), "epochs", 1)
	produceTimed(t, b, "epochs", time.Now(), time.Now())

	type want struct {
		code   int16
		epoch  int32
		offset int64
	}
	for v := int16(2); v <= 4; v++ {
		for _, tc := range []struct {
			name      string
			topic     string
			partition int32
			current   int32
			epoch     int32
			want      want
		}{
			{"epoch 0", "epochs", 0, -1, 0, want{0, 0, 2}},
			{"epoch 0, current 0", "epochs", 0, 0, 0, want{0, 0, 2}},
			{"newer current epoch", "epochs", 0, 1, 0, want{kerr.UnknownLeaderEpoch.Code, -1, -1}},
			{"unknown partition", "epochs", 3, -1, 0, want{kerr.UnknownTopicOrPartition.Code, -1, -1}},
			{"unknown topic", "nope", 0, -1, 0, want{kerr.UnknownTopicOrPartition.Code, -1, -1}},
		} {
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.ReplicaID = -1
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = tc.partition, tc.current, tc.epoch
			req.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: tc.topic, Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{rp}}}
			resp := adminRoundTrip[*kmsg.OffsetForLeaderEpochResponse](t, b, req, v)
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("%s v%d: %+v", tc.name, v, resp.Topics)
			}
			p := resp.Topics[0].Partitions[0]
			if got := (want{p.ErrorCode, p.LeaderEpoch, p.EndOffset}); got != tc.want || p.Partition != tc.partition {
				t.Errorf("%s v%d: partition %d %+v, want %+v", tc.name, v, p.Partition, got, tc.want)
			}
		}
	}
}
