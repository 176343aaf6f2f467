package main

import (
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
		StateLogPartitions:   int32(defaultInt("transaction.state.log.num.partitions")),
		MaxTimeoutMs:         defaultInt("transaction.max.timeout.ms"),
		AbortCheckIntervalMs: defaultInt("transaction.abort.timed.out.transaction.cleanup.interval.ms"),
		IDExpirationMs:       defaultInt("transactional.id.expiration.ms"),
		IDExpirationCheckMs:  defaultInt("transaction.remove.expired.transaction.cleanup.interval.ms"),
	}
}

func loadTxnSettings(p *propReader, s *settings) {
	t := &s.Txn
	p.setInt32(&t.StateLogPartitions, "transaction.state.log.num.partitions")
	p.setInt64(&t.MaxTimeoutMs, "transaction.max.timeout.ms")
	p.setInt64(&t.AbortCheckIntervalMs, "transaction.abort.timed.out.transaction.cleanup.interval.ms")
	p.setInt64(&t.IDExpirationMs, "transactional.id.expiration.ms")
	p.setInt64(&t.IDExpirationCheckMs, "transaction.remove.expired.transaction.cleanup.interval.ms")
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
