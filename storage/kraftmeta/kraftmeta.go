// Package kraftmeta reads the cluster metadata Apache Kafka (KRaft) keeps in
// its __cluster_metadata-0 directory, so that Strata can adopt a log dir
// Kafka wrote. It only reads; nothing in that directory is ever modified.
//
// The directory holds log segments (<base offset %020d>.log) and snapshots
// (<end offset %020d>-<epoch %010d>.checkpoint), both plain record batches
// v2, never compressed. A snapshot starts with a SnapshotHeader control
// record and ends with a SnapshotFooter; its records' offsets count from 0,
// and it holds the state of every record below its end offset. Load reads
// the newest snapshot that is whole (falling back to older ones), then the
// log's records from the snapshot's end offset, skipping control batches,
// and stops at the first invalid batch as Kafka's log recovery would
// truncate there. Each record value is a metadata record (records.go);
// records between BeginTransactionRecord and EndTransactionRecord apply at
// the end, an AbortTransactionRecord (or the end of the log) discards them,
// as Kafka's MetadataLoader does.
//
// Single node only: every record in the local log is taken as committed,
// which holds for a KRaft quorum of one voter.
package kraftmeta

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"

	"github.com/strata-io/strata/storage/vfs"
)

// DirName is the metadata log's directory in Kafka's metadata.log.dir.
const DirName = "__cluster_metadata-0"

var (
	segmentName  = regexp.MustCompile(`^([0-9]{20})\.log$`)
	snapshotName = regexp.MustCompile(`^([0-9]{20})-([0-9]{10})\.checkpoint$`)
)

// Image is the metadata Strata serves from, as of the end of the log.
type Image struct {
	Topics []Topic // by name
	// BrokerConfigs holds the broker ConfigRecords by resource name: "" is
	// the cluster-wide default, "<node id>" one broker.
	BrokerConfigs map[string]map[string]string
	// NextProducerID is the end of the producer id blocks the controller
	// handed out (ProducerIdsRecord): no id at or above it was ever used.
	NextProducerID int64

	Snapshot    string   // the snapshot file read, "" if none
	BadSnapshot []string // newer snapshots that were not whole, and why
	EndOffset   int64    // the offset after the last record read
	Records     int      // metadata records read (snapshot and log)
	Skipped     int      // records of an unknown type or newer version
	// InvalidTail says where and why reading the log stopped early ("" if
	// it read to the end).
	InvalidTail string
}

// Topic is one topic of the image.
type Topic struct {
	Name       string
	ID         [16]byte
	Partitions []Partition // index = partition id
	Configs    map[string]string
}

// Partition is one partition's leadership.
type Partition struct {
	Leader      int32 // -1: none (Kafka fences its broker on shutdown)
	LeaderEpoch int32
}

// Load reads the metadata in dir (a __cluster_metadata-0 directory).
func Load(fsys vfs.FS, dir string) (*Image, error) {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("metadata log %s: %w", dir, err)
	}
	type snap struct {
		name   string
		offset int64
		epoch  int64
	}
	var segments []int64
	var snaps []snap
	for _, de := range ents {
		if m := segmentName.FindStringSubmatch(de.Name()); m != nil {
			off, _ := strconv.ParseInt(m[1], 10, 64)
			segments = append(segments, off)
		} else if m := snapshotName.FindStringSubmatch(de.Name()); m != nil {
			off, _ := strconv.ParseInt(m[1], 10, 64)
			ep, _ := strconv.ParseInt(m[2], 10, 64)
			snaps = append(snaps, snap{name: de.Name(), offset: off, epoch: ep})
		}
	}
	sort.Slice(segments, func(i, j int) bool { return segments[i] < segments[j] })
	sort.Slice(snaps, func(i, j int) bool {
		if snaps[i].offset != snaps[j].offset {
			return snaps[i].offset > snaps[j].offset
		}
		return snaps[i].epoch > snaps[j].epoch
	})

	img := &Image{}
	st := newState()
	for _, s := range snaps {
		cand := newState()
		if err := readSnapshot(fsys, filepath.Join(dir, s.name), cand); err != nil {
			img.BadSnapshot = append(img.BadSnapshot, err.Error())
			continue
		}
		st, img.Snapshot, img.EndOffset = cand, s.name, s.offset
		break
	}
	if err := readLog(fsys, dir, segments, st, img); err != nil {
		return nil, err
	}
	if err := st.image(img); err != nil {
		return nil, fmt.Errorf("metadata log %s: %w", dir, err)
	}
	return img, nil
}

// readSnapshot replays a snapshot file into st; the snapshot must be whole:
// a SnapshotHeader first, a SnapshotFooter last, every batch valid.
func readSnapshot(fsys vfs.FS, path string, st *state) error {
	header, footer := false, false
	err := readBatches(fsys, path, func(b *batch) error {
		if footer {
			return corruptionf("snapshot %s: batch after the footer", path)
		}
		return b.forEachRecord(func(_ int64, key, value []byte) error {
			if b.control {
				switch t := controlType(key); {
				case t == controlSnapshotHeader && !header:
					header = true
				case t == controlSnapshotFooter && header:
					footer = true
				case !header:
					return corruptionf("snapshot %s: control record %d before the header", path, t)
				}
				return nil
			}
			if !header {
				return corruptionf("snapshot %s: record before the header", path)
			}
			return st.apply(value)
		})
	})
	if err != nil {
		return err
	}
	if !footer {
		return corruptionf("snapshot %s: no footer", path)
	}
	st.discardTransaction()
	return nil
}

// readLog replays the log's records at or after img.EndOffset into st.
func readLog(fsys vfs.FS, dir string, segments []int64, st *state, img *Image) error {
	next := int64(-1) // offset the next batch must start at
	for _, base := range segments {
		if next >= 0 && base != next {
			img.InvalidTail = fmt.Sprintf("segment %020d.log does not continue from offset %d", base, next)
			break
		}
		if next < 0 {
			if base > img.EndOffset {
				return corruptionf("metadata log %s starts at offset %d, after the snapshot's end %d: records are missing", dir, base, img.EndOffset)
			}
			next = base
		}
		path := filepath.Join(dir, fmt.Sprintf("%020d.log", base))
		err := readBatches(fsys, path, func(b *batch) error {
			if b.baseOffset != next {
				return corruptionf("%s: batch at offset %d, want %d: %w", path, b.baseOffset, next, errInvalidBatch)
			}
			next = b.lastOffset() + 1
			if b.control || next <= img.EndOffset {
				return nil
			}
			return b.forEachRecord(func(offset int64, _, value []byte) error {
				if offset < img.EndOffset {
					return nil
				}
				return st.apply(value)
			})
		})
		if errors.Is(err, errInvalidBatch) {
			img.InvalidTail = err.Error()
			break
		}
		if err != nil {
			return fmt.Errorf("metadata log %s: %w", dir, err)
		}
	}
	if next > img.EndOffset {
		img.EndOffset = next
	}
	st.discardTransaction()
	img.Records, img.Skipped = st.records, st.skipped
	return nil
}
