package broker

import (
	"hash/crc32"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// testBatch is a valid magic-2 batch of n uncompressed records, as a
// producer would send it (base offset 0, no producer id).
func testBatch(t testing.TB, n int) []byte {
	t.Helper()
	now := time.Now().UnixMilli()
	var records []byte
	for i := 0; i < n; i++ {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.Key = []byte("k" + strconv.Itoa(i))
		r.Value = []byte("value-" + strconv.Itoa(i))
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		records = r.AppendTo(records)
	}
	b := kmsg.NewRecordBatch()
	b.Magic = 2
	b.LastOffsetDelta = int32(n - 1)
	b.FirstTimestamp, b.MaxTimestamp = now, now
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = -1, -1, -1
	b.NumRecords = int32(n)
	b.Records = records
	raw := b.AppendTo(nil)
	b.Length = int32(len(raw) - 12)
	raw = b.AppendTo(nil)
	b.CRC = int32(crc32.Checksum(raw[21:], castagnoli))
	return b.AppendTo(nil)
}
