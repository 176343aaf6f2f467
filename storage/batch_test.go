package storage

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/strata-io/strata/internal/batch"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestValidateBatches(t *testing.T) {
	one := makeBatch(batchOpts{records: 4, valueSize: 10})
	two := append(append([]byte{}, one...), makeBatch(batchOpts{records: 2})...)
	hdrs, err := validateBatches(two, 1<<20)
	if err != nil || len(hdrs) != 2 || hdrs[0].RecordCount != 4 || hdrs[1].RecordCount != 2 {
		t.Fatalf("two batches: %v %+v", err, hdrs)
	}
	withMagic := func(m byte) []byte {
		b := makeBatch(batchOpts{})
		b[batch.OffMagic] = m
		return b
	}
	negDelta := makeBatch(batchOpts{})
	binary.BigEndian.PutUint32(negDelta[batch.OffLastOffsetDelta:], 0xffffffff)
	binary.BigEndian.PutUint32(negDelta[batch.OffCRC:], batch.CRC(negDelta))
	hugeLen := makeBatch(batchOpts{})
	binary.BigEndian.PutUint32(hugeLen[batch.OffBatchLength:], 0x7fffffff)
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, kerr.InvalidRecord},
		{"short header", one[:30], kerr.CorruptMessage},
		{"magic 1", withMagic(1), kerr.InvalidRecord},
		{"magic 3", withMagic(3), kerr.CorruptMessage},
		{"negative delta", negDelta, kerr.InvalidRecord},
		{"length beyond buffer", hugeLen, kerr.CorruptMessage},
		{"trailing bytes", append(append([]byte{}, one...), 1, 2, 3), kerr.CorruptMessage},
		{"idempotent without sequence", makeBatch(batchOpts{pid: 5, epoch: 0, seq: -1}), kerr.InvalidRecord},
	} {
		if _, err := validateBatches(c.b, 1<<20); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

// The CRC does not cover baseOffset and partitionLeaderEpoch, so stamping
// keeps the batch valid.
func TestStampKeepsCRC(t *testing.T) {
	b := makeBatch(batchOpts{records: 3})
	stampBatch(b, 1234, 7)
	hdrs, err := validateBatches(b, 1<<20)
	if err != nil || hdrs[0].BaseOffset != 1234 || hdrs[0].PartitionLeaderEpoch != 7 {
		t.Fatalf("%v %+v", err, hdrs)
	}
}

func FuzzValidateBatch(f *testing.F) {
	f.Add(makeBatch(batchOpts{records: 3, valueSize: 5}))
	f.Add(makeBatch(batchOpts{records: 1, pid: 1, epoch: 0, seq: 0}))
	f.Add(append(makeBatch(batchOpts{}), makeBatch(batchOpts{records: 2})...))
	f.Add(make([]byte, batch.HeaderSize))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		hdrs, err := validateBatches(b, 1<<20)
		if err != nil {
			var ke *kerr.Error
			if !errors.As(err, &ke) {
				t.Fatalf("error without a Kafka code: %v", err)
			}
			return
		}
		total := int64(0)
		for _, h := range hdrs {
			total += h.Size()
		}
		if total != int64(len(b)) {
			t.Fatalf("accepted %d bytes of %d", total, len(b))
		}
	})
}
