package broker

// Dead-letter topics for share groups (KIP-1191), as Kafka 4.4's
// ShareGroupDLQStateManager writes them. A share group with
// errors.deadletterqueue.topic.name has its rejected records, and the ones
// released or whose lock expired at the delivery count limit, go
// ARCHIVING (coordinator/share/deadletter.go); once that is persisted the
// share-partition hands them here as a share.DeadLetter, and a goroutine
// writes one dead letter per offset to the dead-letter topic, in
// partition (source partition mod the topic's partition count), acks=all:
// no key or value unless errors.deadletterqueue.copy.record.enable (then
// the original record's key and value, not its headers), the headers
// __dlq.errors.topic, __dlq.errors.partition, __dlq.errors.offset,
// __dlq.errors.group, __dlq.errors.delivery.count and __dlq.errors.message
// (UTF-8 text), the time of the write as timestamp, uncompressed batches
// of at most the topic's max.message.bytes. Then, whether the write
// worked or not, the records are ARCHIVED and that is persisted.
//
// Nothing is written (the records are archived with one log line, Kafka's
// "Failed to write to DLQ, proceeding to ARCHIVED regardless.") when the
// topic name starts with "__", when the topic exists without
// errors.deadletterqueue.group.enable=true, when it does not exist and
// errors.deadletterqueue.auto.create.topics.enable is false, or when its
// name lacks errors.deadletterqueue.topic.name.prefix; these checks and
// their messages are Kafka's, in its order. A missing topic is created
// with errors.deadletterqueue.group.enable=true and
// message.timestamp.type=CreateTime. The dead letters go to the leader of
// the dead-letter partition: appended here when this node leads it, else
// sent as a Produce (acks=all) over the inter-broker listener, as Kafka's
// DLQ sends its Produce to the leader. NOT_LEADER_OR_FOLLOWER, a broken
// connection and a topic not yet visible after its creation are retried
// up to 5 attempts, 1s doubling (at most 30s, 20% jitter), as Kafka's
// backoff; any other error fails the write.
//
// Strata differs: the DLQ metrics are not kept; a record too large for
// the topic is written with headers only, where Kafka also drops a record
// whose copy passes its read budget.

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/coordinator/share"
	"github.com/strata-io/strata/internal/batch"
)

// shareDLQSupported ties dead-letter queues to the cluster's features:
// Kafka 4.4 writes dead letters only at share.version 2 or more
// (ShareVersion.supportsShareGroupDLQ).
func (b *services) shareDLQSupported() bool {
	return b.meta.Image().Features.Level(shareVersionFeature) >= shareDLQLevel
}

// shareDLQEnabled is SharePartition.isDLQEnabledForGroup, for a group's
// own configs.
func (b *services) shareDLQEnabled(own map[string]string) bool {
	return b.shareDLQSupported() && own["errors.deadletterqueue.topic.name"] != ""
}

// shareDLQ runs the dead-letter writes of a broker's share-partitions one
// at a time, in the order they came, as Kafka's one DLQ send thread does.
type shareDLQ struct {
	b    *services
	wg   sync.WaitGroup
	once sync.Once
	done chan struct{} // closed by stop

	mu      sync.Mutex
	queue   []dlqJob
	running bool // a goroutine drains queue
}

// dlqJob is a dead letter of a share-partition as it was loaded.
type dlqJob struct {
	sp *sharePart
	p  *share.Partition
	dl share.DeadLetter
}

func newShareDLQ(b *services) *shareDLQ { return &shareDLQ{b: b, done: make(chan struct{})} }

// stop ends the retries and waits for the writes in flight.
func (d *shareDLQ) stop() {
	d.once.Do(func() { close(d.done) })
	d.wg.Wait()
}

// sendDeadLetters starts the writes of the dead letters sp.p has; sp.mu
// held.
func (sp *sharePart) sendDeadLetters() {
	d := sp.m.dlq
	if sp.p == nil || d == nil {
		return
	}
	dls := sp.p.DeadLetters()
	if len(dls) == 0 {
		return
	}
	d.mu.Lock()
	for _, dl := range dls {
		d.queue = append(d.queue, dlqJob{sp: sp, p: sp.p, dl: dl})
	}
	start := !d.running
	d.running = true
	d.mu.Unlock()
	if start {
		d.wg.Add(1)
		go d.drain()
	}
}

// drain runs the queued dead letters until none is left.
func (d *shareDLQ) drain() {
	defer d.wg.Done()
	for {
		d.mu.Lock()
		if len(d.queue) == 0 {
			d.running = false
			d.mu.Unlock()
			return
		}
		j := d.queue[0]
		d.queue = d.queue[1:]
		d.mu.Unlock()
		d.run(j.sp, j.p, j.dl)
	}
}

// run writes one dead letter, then archives its records.
func (d *shareDLQ) run(sp *sharePart, p *share.Partition, dl share.DeadLetter) {
	if err := d.write(sp, dl); err != nil {
		sp.m.logger.Error("Failed to write to DLQ, proceeding to ARCHIVED regardless.", zap.String("group", sp.key.group),
			zap.Int32("partition", sp.key.tp.partition), zap.Int64("first", dl.First), zap.Int64("last", dl.Last), zap.Error(err))
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.p != p || sp.m.isClosed() {
		return // loaded again since: the load resumes what is still ARCHIVING
	}
	if w := p.Archive(dl); w != nil {
		sp.persist(w)
		sp.settle(true)
	}
}

// errDLQRetry is an error worth another attempt.
var errDLQRetry = errors.New("retriable")

// backoff waits before attempt n+1 (Kafka's ExponentialBackoffManager of
// 1s, doubling, at most 30s, 20% jitter); false once stopped.
func (d *shareDLQ) backoff(n int) bool {
	wait := float64(time.Second) * float64(int(1)<<n)
	wait = min(wait, float64(30*time.Second)) * (0.8 + 0.4*rand.Float64())
	select {
	case <-d.b.clock.After(time.Duration(wait)):
		return true
	case <-d.done:
		return false
	}
}

// retry runs fn up to 5 times while it fails with errDLQRetry.
func (d *shareDLQ) retry(fn func() error) error {
	var err error
	for n := 0; n < 5; n++ {
		if err = fn(); !errors.Is(err, errDLQRetry) {
			return err
		}
		if n < 4 && !d.backoff(n) {
			break
		}
	}
	return fmt.Errorf("exhausted max retries: %w", err)
}

// write is ProduceRequestHandler: validate the topic, create it if it may,
// write the dead letters.
func (d *shareDLQ) write(sp *sharePart, dl share.DeadLetter) error {
	b, group := d.b, sp.key.group
	own := b.groupConfigs(group)
	name := own["errors.deadletterqueue.topic.name"]
	if err := d.validate(group, name); err != nil {
		return err
	}
	if b.meta.Image().Topics.ByName(name) == nil {
		if err := d.create(name); err != nil {
			return err
		}
	}
	recs, err := d.deadLetters(sp, dl, name, strings.EqualFold(strings.TrimSpace(own["errors.deadletterqueue.copy.record.enable"]), "true"))
	if err != nil {
		return err
	}
	return d.retry(func() error {
		img := b.meta.Image()
		ti := img.Topics.ByName(name)
		if ti == nil || len(ti.Partitions) == 0 {
			return fmt.Errorf("DLQ topic %s is not in the metadata yet: %w", name, errDLQRetry)
		}
		partition := sp.key.tp.partition % int32(len(ti.Partitions))
		addr, err := b.sharing.state.leaderAddr(name, partition)
		if err != nil {
			return fmt.Errorf("DLQ topic %s: %w: %w", name, err, errDLQRetry)
		}
		st := b.logs.Topic(name)
		maxBytes := dlqDefaultMaxMessageBytes
		switch v, perr := strconv.Atoi(topicConfigsOf(img, name)["max.message.bytes"]); {
		case st != nil:
			maxBytes = st.LogConfig().MaxMessageBytes
		case addr == "":
			return fmt.Errorf("DLQ topic %s has no log here yet: %w", name, errDLQRetry)
		case perr == nil:
			maxBytes = v
		}
		for _, data := range dlqBatches(recs, maxBytes, b.clock.Now()) {
			if addr != "" {
				err = d.produceTo(addr, name, partition, data)
			} else {
				var resp kmsg.ProduceResponseTopicPartition
				err = b.appendPartition(st, partition, data, -1, 30000, &resp)
			}
			if errors.Is(err, kerr.NotLeaderForPartition) || errors.Is(err, errDLQRetry) {
				return fmt.Errorf("%w: %w", err, errDLQRetry)
			}
			if err != nil {
				return fmt.Errorf("produce to DLQ topic %s: %w", name, err)
			}
		}
		return nil
	})
}

// dlqDefaultMaxMessageBytes is Kafka's max.message.bytes default, the
// batch size for a DLQ topic this node has no replica of and no override.
const dlqDefaultMaxMessageBytes = 1048588

// produceTo sends one batch of dead letters to the leader of the DLQ
// partition at addr (acks=all, 30 s), as Kafka's DLQ sends its Produce to
// the partition's leader; a broken connection is worth another attempt.
func (d *shareDLQ) produceTo(addr, topic string, partition int32, data []byte) error {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = -1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, data
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := d.b.sharing.state.peers.roundTrip(addr, req, 35*time.Second)
	if err != nil {
		return fmt.Errorf("produce to %s: %w: %w", addr, err, errDLQRetry)
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		return fmt.Errorf("produce to %s: %d topics answered", addr, len(pr.Topics))
	}
	return kerr.ErrorForCode(pr.Topics[0].Partitions[0].ErrorCode)
}

// validate is validateDlqTopic, with Kafka's messages.
func (d *shareDLQ) validate(group, name string) error {
	b := d.b
	img := b.meta.Image()
	exists := img.Topics.ByName(name) != nil
	prefix := b.shareDLQBrokerValue("errors.deadletterqueue.topic.name.prefix")
	switch {
	case name == "":
		return fmt.Errorf("Configured DLQ topic name in share group: %s is empty.", group)
	case strings.HasPrefix(name, "__"):
		return fmt.Errorf("Configured DLQ topic name in share group: %s cannot start with __, topic: %s.", group, name)
	case exists && !strings.EqualFold(strings.TrimSpace(topicConfigsOf(img, name)["errors.deadletterqueue.group.enable"]), "true"):
		return fmt.Errorf("DLQ is not enabled on configured DLQ topic for share group: %s, topic: %s.", group, name)
	case !exists && !strings.EqualFold(b.shareDLQBrokerValue("errors.deadletterqueue.auto.create.topics.enable"), "true"):
		return fmt.Errorf("DLQ topic does not exist and auto create is disabled on cluster for share group: %s, topic: %s.", group, name)
	case prefix != "" && !strings.HasPrefix(name, prefix):
		return fmt.Errorf("Configured DLQ topic name does not comply with the DLQ topic prefix in share group: %s, topic: %s, prefix: %s.", group, name, prefix)
	}
	return nil
}

// shareDLQBrokerValue is a dynamic broker config: this node's, the
// cluster default, server.properties, Kafka's default.
func (b *services) shareDLQBrokerValue(key string) string {
	src := b.brokerConfigSources()
	for _, m := range []map[string]string{src.node, src.clusterDefault, src.static} {
		if v, ok := m[key]; ok {
			return strings.TrimSpace(v)
		}
	}
	v, _ := b.groupBrokerValue(key)
	return v
}

// create is createTopicBuilder and handleCreateTopicsResponse: the topic
// with the broker's partitions and replication factor; one that exists
// meanwhile is fine.
func (d *shareDLQ) create(name string) error {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, -1, -1
	for k, v := range map[string]string{"errors.deadletterqueue.group.enable": "true", "message.timestamp.type": "CreateTime"} {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		t.Configs = append(t.Configs, c)
	}
	res := d.b.createTopic(t, false, &mutationQuota{})
	if res.ErrorCode != 0 && res.ErrorCode != kerr.TopicAlreadyExists.Code {
		return fmt.Errorf("create DLQ topic %s: %w", name, kerr.ErrorForCode(res.ErrorCode))
	}
	d.b.logger.Info("created DLQ topic", zap.String("topic", name))
	return nil
}

// deadLetters are the dead records of dl, with the original key and value
// when copy is set.
func (d *shareDLQ) deadLetters(sp *sharePart, dl share.DeadLetter, dlqTopic string, copyRecord bool) ([]kmsg.Record, error) {
	topic := base64.RawURLEncoding.EncodeToString(sp.key.tp.topicID[:])
	if ti := d.b.meta.Image().Topics.ByID(sp.key.tp.topicID); ti != nil {
		topic = ti.Name
	}
	originals := map[int64][2][]byte{}
	if copyRecord {
		var err error
		if originals, err = readOriginals(sp, dl); err != nil {
			sp.m.logger.Warn("Unable to fetch original record data, DLQ records will be produced with headers only.",
				zap.String("group", sp.key.group), zap.String("topic", dlqTopic), zap.Error(err))
		}
	}
	var out []kmsg.Record
	for o := dl.First; o <= dl.Last; o++ {
		r := kmsg.NewRecord()
		kv := originals[o]
		r.Key, r.Value = kv[0], kv[1]
		h := func(k, v string) { r.Headers = append(r.Headers, kmsg.Header{Key: k, Value: []byte(v)}) }
		h("__dlq.errors.topic", topic)
		h("__dlq.errors.partition", strconv.Itoa(int(sp.key.tp.partition)))
		h("__dlq.errors.offset", strconv.FormatInt(o, 10))
		h("__dlq.errors.group", sp.key.group)
		h("__dlq.errors.delivery.count", strconv.Itoa(int(dl.DeliveryCount)))
		if msg := dl.Cause.Message(); msg != "" {
			h("__dlq.errors.message", msg)
		}
		out = append(out, r)
	}
	return out, nil
}

var errPastDeadLetters = errors.New("past the dead letters")

// readOriginals reads the keys and values of dl's offsets from the log.
func readOriginals(sp *sharePart, dl share.DeadLetter) (map[int64][2][]byte, error) {
	out := map[int64][2][]byte{}
	err := sp.log.Log.ForEachBatch(dl.First, func(raw []byte) error {
		h := batch.DecodeHeader(raw)
		if h.BaseOffset > dl.Last {
			return errPastDeadLetters
		}
		if h.Control() {
			return nil
		}
		recs, err := batch.Decompress(h.Compression(), raw[batch.HeaderSize:])
		if err != nil {
			return fmt.Errorf("decompress batch at offset %d: %w", h.BaseOffset, err)
		}
		it := batch.NewRecords(recs, h.RecordCount)
		var r batch.Record
		for it.Next(&r) {
			if o := h.BaseOffset + int64(r.OffsetDelta); o >= dl.First && o <= dl.Last {
				out[o] = [2][]byte{cloneBytes(r.Key), cloneBytes(r.Value)}
			}
		}
		return it.Err()
	})
	if errors.Is(err, errPastDeadLetters) {
		err = nil
	}
	return out, err
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// dlqBatches are recs as uncompressed batches of at most maxBytes each (a
// record alone over it loses its key and value), as topicProduceData
// sizes a round.
func dlqBatches(recs []kmsg.Record, maxBytes int, now time.Time) [][]byte {
	var out [][]byte
	var cur []kmsg.Record
	size := batch.HeaderSize
	for _, r := range recs {
		n := len(r.AppendTo(nil)) + 5
		if n+batch.HeaderSize > maxBytes {
			r.Key, r.Value = nil, nil
			n = len(r.AppendTo(nil)) + 5
		}
		if len(cur) > 0 && size+n > maxBytes {
			out = append(out, encodeDLQBatch(cur, now))
			cur, size = nil, batch.HeaderSize
		}
		cur = append(cur, r)
		size += n
	}
	if len(cur) > 0 {
		out = append(out, encodeDLQBatch(cur, now))
	}
	return out
}

// encodeDLQBatch is an uncompressed magic-2 batch of recs without a
// producer, timestamped now.
func encodeDLQBatch(recs []kmsg.Record, now time.Time) []byte {
	h := batch.Header{Magic: batch.Magic, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		LastOffsetDelta: int32(len(recs) - 1), BaseTimestamp: now.UnixMilli(), MaxTimestamp: now.UnixMilli(), RecordCount: int32(len(recs))}
	out := make([]byte, batch.HeaderSize)
	h.Put(out)
	for i := range recs {
		r := &recs[i]
		r.OffsetDelta = int32(i)
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		out = r.AppendTo(out)
	}
	batch.Seal(out)
	return out
}
