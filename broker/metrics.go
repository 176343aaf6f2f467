package broker

// Metrics hooks. With metrics.listener set, New binds the HTTP listener,
// Serve starts it and marks the broker ready (/healthz 200), and Shutdown
// marks it not ready first and stops it last. Every hook goes through a
// *metrics.Metrics that is nil when metrics are off, and then does nothing.

import (
	"context"
	"encoding/binary"
	"net"
	"reflect"
	"sync"
	"time"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/strata-io/strata/coordinator"
	"github.com/strata-io/strata/metrics"
	"github.com/strata-io/strata/protocol"
)

// openMetrics creates the metrics and binds metrics.listener, if set.
func (b *Broker) openMetrics() error {
	if b.cfg.MetricsListener == "" {
		return nil
	}
	m := b.metrics // created by New, which hands its Fsync to storage
	if m == nil {
		m = metrics.New()
	}
	srv, err := metrics.Listen(b.cfg.MetricsListener, m, b.logger)
	if err != nil {
		return err
	}
	m.SetStorage(b.logs)
	m.SetBuildInfo(b.cfg.Build)
	m.SetClientQuotas(b.quotas)
	if b.fetchSessions != nil {
		m.SetFetchSessions(b.fetchSessions)
	}
	m.SetClientTelemetry(b.telemetry)
	if b.groups != nil {
		m.SetGroupOffsets(groupOffsets{b.groups})
	}
	b.metrics, b.metricsSrv = m, srv
	return nil
}

// groupOffsets feeds the group coordinator's committed offsets to the
// strata_group_lag metrics on scrape.
type groupOffsets struct{ g *coordinator.Groups }

func (o groupOffsets) CommittedOffsets(fn func(group, topic string, partition int32, offset int64)) {
	groups, err := o.g.ListGroups(nil, nil)
	if err != nil {
		return // still loading __consumer_offsets
	}
	for _, g := range groups {
		offsets, err := o.g.FetchOffsets(g.Group, nil)
		if err != nil {
			continue
		}
		for _, f := range offsets {
			if f.Offset >= 0 {
				fn(g.Group, f.Topic, f.Partition, f.Offset)
			}
		}
	}
}

// startMetrics serves /metrics and /healthz, and reports ready.
func (b *Broker) startMetrics() {
	if b.metricsSrv == nil {
		return
	}
	go func() {
		if err := b.metricsSrv.Serve(); err != nil {
			b.logger.Error("metrics listener failed", zap.Error(err))
		}
	}()
	b.metrics.SetReady(true)
}

// stopMetrics closes the metrics listener, letting scrapes in progress
// finish for a few seconds even when ctx (the connection drain deadline)
// has already ended.
func (b *Broker) stopMetrics(ctx context.Context) error {
	if b.metricsSrv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return b.metricsSrv.Shutdown(ctx)
}

// Metrics returns the broker's metrics, nil when metrics.listener is off.
// The group coordinator hands its committed offsets to SetGroupOffsets.
func (b *Broker) Metrics() *metrics.Metrics { return b.metrics }

// MetricsAddr is the address /metrics is served on, nil when off.
func (b *Broker) MetricsAddr() net.Addr {
	if b.metricsSrv == nil {
		return nil
	}
	return b.metricsSrv.Addr()
}

// observe records a request once it is answered (or has failed): top-level
// error code, latency and, for APIs without their own hook, the error codes
// of the response's partition or topic entries. Produce and Fetch count
// their partition errors where they set them (acks=0 has no response).
func (c *conn) observe(req *protocol.Request, start time.Time, resp kmsg.Response, err error) {
	m := c.b.metrics
	if m == nil {
		return
	}
	code := c.fetchErr
	c.fetchErr = 0
	if resp != nil {
		code = responseErrors(m, req.Key, resp)
	}
	if err != nil {
		code = metrics.Disconnected
	}
	m.Request(req.Key, req.Version, code, time.Since(start))
}

// observeFetch counts a fetch response's partition errors and record bytes
// per topic as it is written, and keeps its top-level code for observe.
func (c *conn) observeFetch(key, errorCode int16, topics []fetchTopic) {
	m := c.b.metrics
	if m == nil {
		return
	}
	c.fetchErr = errorCode
	for i := range topics {
		var n int64
		for j := range topics[i].partitions {
			p := &topics[i].partitions[j]
			m.PartitionError(key, p.errorCode)
			n += int64(p.chunk.Len())
		}
		topics[i].stats.Fetched(n)
	}
}

// responseErrors counts the entry-level error codes of resp and returns its
// top-level error code (0 when it has none).
func responseErrors(m *metrics.Metrics, key int16, resp kmsg.Response) int16 {
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		return 0 // counted in handleProduce
	case *kmsg.MetadataResponse:
		for i := range r.Topics {
			m.PartitionError(key, r.Topics[i].ErrorCode)
		}
	case *kmsg.ListOffsetsResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				m.PartitionError(key, r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.OffsetForLeaderEpochResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				m.PartitionError(key, r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.CreateTopicsResponse:
		for i := range r.Topics {
			m.PartitionError(key, r.Topics[i].ErrorCode)
		}
	case *kmsg.DeleteTopicsResponse:
		for i := range r.Topics {
			m.PartitionError(key, r.Topics[i].ErrorCode)
		}
	case *kmsg.CreatePartitionsResponse:
		for i := range r.Topics {
			m.PartitionError(key, r.Topics[i].ErrorCode)
		}
	case *kmsg.OffsetCommitResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				m.PartitionError(key, r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.OffsetFetchResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				m.PartitionError(key, r.Topics[i].Partitions[j].ErrorCode)
			}
		}
		for i := range r.Groups {
			m.PartitionError(key, r.Groups[i].ErrorCode)
		}
	}
	return topLevelErrorCode(resp)
}

// errorCodeField caches, per response type, the index of a top-level
// int16 ErrorCode field (-1 when there is none): most responses
// (ApiVersions, InitProducerID, the group APIs, Fetch) have one.
var errorCodeField sync.Map // reflect.Type -> int

func topLevelErrorCode(resp kmsg.Response) int16 {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return 0
	}
	v = v.Elem()
	idx, ok := errorCodeField.Load(v.Type())
	if !ok {
		i := -1
		if f, found := v.Type().FieldByName("ErrorCode"); found && f.Type.Kind() == reflect.Int16 && len(f.Index) == 1 {
			i = f.Index[0]
		}
		errorCodeField.Store(v.Type(), i)
		idx = i
	}
	if i := idx.(int); i >= 0 {
		return int16(v.Field(i).Int())
	}
	return 0
}

// batchRecordCount adds up the recordCount fields of the record batches in
// records, which storage has validated.
func batchRecordCount(records []byte) int64 {
	var n int64
	for b, rest, ok := batch.Next(records); ok; b, rest, ok = batch.Next(rest) {
		n += int64(int32(binary.BigEndian.Uint32(b[batch.OffRecordCount:])))
	}
	return n
}
