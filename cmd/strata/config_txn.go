package main

import (
	"math"
	"time"

	"github.com/strata-io/strata/coordinator"
)

// txnSettings are the transaction coordinator's keys, with Kafka's names,
// defaults and ranges.
type txnSettings struct {
	StateLogPartitions   int32 // transaction.state.log.num.partitions
	MaxTimeoutMs         int64 // transaction.max.timeout.ms
	AbortCheckIntervalMs int64 // transaction.abort.timed.out.transaction.cleanup.interval.ms
	IDExpirationMs       int64 // transactional.id.expiration.ms
	IDExpirationCheckMs  int64 // transaction.remove.expired.transaction.cleanup.interval.ms
}

func defaultTxnSettings() txnSettings {
	return txnSettings{
		StateLogPartitions:   50,
		MaxTimeoutMs:         900000,
		AbortCheckIntervalMs: 10000,
		IDExpirationMs:       604800000,
		IDExpirationCheckMs:  3600000,
	}
}

func loadTxnSettings(p *propReader, s *settings) {
	t := &s.Txn
	p.int32Range(&t.StateLogPartitions, "transaction.state.log.num.partitions", 1, math.MaxInt32)
	p.int64Range(&t.MaxTimeoutMs, "transaction.max.timeout.ms", 1, math.MaxInt32)
	p.int64Range(&t.AbortCheckIntervalMs, "transaction.abort.timed.out.transaction.cleanup.interval.ms", 1, math.MaxInt32)
	p.int64Range(&t.IDExpirationMs, "transactional.id.expiration.ms", 1, math.MaxInt32)
	p.int64Range(&t.IDExpirationCheckMs, "transaction.remove.expired.transaction.cleanup.interval.ms", 1, math.MaxInt32)
}

func (t txnSettings) config() coordinator.TxnConfig {
	return coordinator.TxnConfig{
		StateLogPartitions:  t.StateLogPartitions,
		MaxTimeout:          time.Duration(t.MaxTimeoutMs) * time.Millisecond,
		AbortCheckInterval:  time.Duration(t.AbortCheckIntervalMs) * time.Millisecond,
		IDExpiration:        time.Duration(t.IDExpirationMs) * time.Millisecond,
		IDExpirationChecker: time.Duration(t.IDExpirationCheckMs) * time.Millisecond,
	}
}
