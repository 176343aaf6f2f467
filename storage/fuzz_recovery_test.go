package storage

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand"
	"os"
	"testing"

	"github.com/strata-io/strata/internal/batch"
	"github.com/strata-io/strata/storage/vfs/memfs"
)

// FuzzRecovery feeds arbitrary bytes as segment files to OpenLog. The log
// bytes are split at split into two segments (the second named by the base
// offset found at the split, when plausible) and index and timeIndex become
// the first segment's indexes. mode picks what OpenLog is told:
//
//	0  unclean, RecoveryPoint -1: every batch is checked
//	1  clean shutdown: indexes trusted after their sanity check
//	2  unclean, recovery point at the second segment: the first is trusted
//
// Properties: OpenLog and reads never panic; in mode 0 the log is a prefix
// of the input made of whole batches with valid CRC32C and contiguous
// offsets from the first segment's base; in every mode, reopening (unclean,
// everything rechecked) gives a log that is stable under a further reopen.
func FuzzRecovery(f *testing.F) {
	for _, seed := range fuzzRecoverySeeds(f) {
		for mode := uint8(0); mode < 3; mode++ {
			f.Add(seed.log, seed.index, seed.timeIndex, seed.split, mode)
		}
		f.Add(seed.log[:len(seed.log)*2/3], seed.index, seed.timeIndex, seed.split, uint8(0))
	}
	f.Add([]byte{}, []byte{}, []byte{}, uint16(0), uint8(1))
	f.Add(bytes.Repeat([]byte{0xff}, 200), bytes.Repeat([]byte{0xff}, 16), []byte{1, 2, 3}, uint16(61), uint8(2))

	f.Fuzz(func(t *testing.T, logBytes, index, timeIndex []byte, split uint16, mode uint8) {
		if len(logBytes) > 1<<20 || len(index) > 1<<16 || len(timeIndex) > 1<<16 {
			return
		}
		fsys, err := memfs.New("")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = fsys.Release() }()
		if err := fsys.MkdirAll(sweepDir, 0o755); err != nil {
			t.Fatal(err)
		}
		first := logBytes
		var second []byte
		secondBase := int64(-1)
		if s := int(split); s > 0 && s < len(logBytes) {
			first, second = logBytes[:s], logBytes[s:]
			secondBase = 1000
			if len(second) >= 8 {
				if b := int64(binary.BigEndian.Uint64(second)); b >= 0 && b < 1<<40 {
					secondBase = b
				}
			}
		}
		write := func(base int64, ext string, data []byte) {
			f, err := fsys.OpenFile(segmentPath(sweepDir, base, ext), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(data); err != nil {
				t.Fatal(err)
			}
			_ = f.Close()
		}
		write(0, logExt, first)
		write(0, indexExt, index)
		write(0, timeIndexExt, timeIndex)
		if secondBase > 0 {
			write(secondBase, logExt, second)
		}
		cfg := DefaultConfig()
		cfg.IndexIntervalBytes = 64
		cfg.MaxIndexSize = 4096
		opts := OpenOptions{RecoveryPoint: -1}
		switch mode % 3 {
		case 1:
			opts = OpenOptions{CleanShutdown: true}
		case 2:
			opts = OpenOptions{RecoveryPoint: max(secondBase, 1)}
		}
		l, err := sweepOpen(fsys, cfg, opts)
		if err != nil {
			return // an I/O-level refusal is fine; a panic is not
		}
		got, rerr := fuzzReadRaw(l)
		_ = l.Close()
		if mode%3 == 0 {
			if rerr != nil {
				t.Fatalf("read after recovery: %v", rerr)
			}
			checkRecoveredPrefix(t, got, logBytes)
		}

		// Reopen unclean: everything is checked now, whatever mode trusted.
		l2, err := sweepOpen(fsys, cfg, OpenOptions{RecoveryPoint: -1})
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		got2, err := fuzzReadRaw(l2)
		leo2 := l2.LogEndOffset()
		_ = l2.Close()
		if err != nil {
			t.Fatalf("read after reopen: %v", err)
		}
		if mode%3 == 0 && !bytes.Equal(got2, got) {
			t.Fatalf("reopen changed the log: %d bytes, then %d", len(got), len(got2))
		}
		l3, err := sweepOpen(fsys, cfg, OpenOptions{RecoveryPoint: -1})
		if err != nil {
			t.Fatalf("second reopen: %v", err)
		}
		got3, err := fuzzReadRaw(l3)
		leo3 := l3.LogEndOffset()
		_ = l3.Close()
		if err != nil || !bytes.Equal(got3, got2) || leo3 != leo2 {
			t.Fatalf("second reopen: %d bytes LEO %d (%v), before %d bytes LEO %d", len(got3), leo3, err, len(got2), leo2)
		}
	})
}

// fuzzReadRaw returns the concatenated batches below the high watermark.
func fuzzReadRaw(l *Log) ([]byte, error) {
	batches, err := sweepReadBatches(l)
	return bytes.Join(batches, nil), err
}

// checkRecoveredPrefix checks that got is whole, CRC-valid batches with
// contiguous offsets and, since recovery of segment 0 starts at its
// beginning, the same bytes as the start of the input (the second segment's
// bytes follow the first's in the input too).
func checkRecoveredPrefix(t *testing.T, got, input []byte) {
	t.Helper()
	if !bytes.HasPrefix(input, got) {
		t.Fatalf("recovered %d bytes that are not a prefix of the input", len(got))
	}
	next := int64(-1)
	for b := got; len(b) > 0; {
		if len(b) < batch.HeaderSize {
			t.Fatalf("%d trailing bytes", len(b))
		}
		size := int(binary.BigEndian.Uint32(b[8:])) + batch.LogOverhead
		base := int64(binary.BigEndian.Uint64(b))
		if next >= 0 && base != next {
			t.Fatalf("batch at offset %d after one ending at %d", base, next)
		}
		if crc32.Checksum(b[batch.OffAttributes:size], crc32.MakeTable(crc32.Castagnoli)) != binary.BigEndian.Uint32(b[batch.OffCRC:]) {
			t.Fatalf("batch at offset %d has a bad CRC", base)
		}
		next = base + int64(binary.BigEndian.Uint32(b[23:])) + 1
		b = b[size:]
	}
}

type fuzzRecoverySeed struct {
	log, index, timeIndex []byte
	split                 uint16
}

// fuzzRecoverySeeds writes real logs (one and two segments) with the
// storage code and returns their files.
func fuzzRecoverySeeds(f *testing.F) []fuzzRecoverySeed {
	var seeds []fuzzRecoverySeed
	for _, segBytes := range []int64{1 << 20, 2000} {
		fsys, err := memfs.New("")
		if err != nil {
			f.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.IndexIntervalBytes = 64
		cfg.MaxIndexSize = 4096
		cfg.SegmentBytes = segBytes
		l, err := sweepOpen(fsys, cfg, OpenOptions{RecoveryPoint: -1})
		if err != nil {
			f.Fatal(err)
		}
		rng := rand.New(rand.NewSource(segBytes))
		for i := 0; i < 12; i++ {
			if _, err := leaderAppend(l, sweepBatch(rng, int64(1000+i)), 0); err != nil {
				f.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			f.Fatal(err)
		}
		bases, err := listSegments(fsys, sweepDir)
		if err != nil {
			f.Fatal(err)
		}
		var s fuzzRecoverySeed
		for i, base := range bases[:min(len(bases), 2)] {
			b, err := fsys.ReadFile(segmentPath(sweepDir, base, logExt))
			if err != nil {
				f.Fatal(err)
			}
			if i == 1 {
				s.split = uint16(len(s.log))
			}
			s.log = append(s.log, b...)
		}
		s.index, _ = fsys.ReadFile(segmentPath(sweepDir, 0, indexExt))
		s.timeIndex, _ = fsys.ReadFile(segmentPath(sweepDir, 0, timeIndexExt))
		seeds = append(seeds, s)
		_ = fsys.Release()
	}
	return seeds
}
