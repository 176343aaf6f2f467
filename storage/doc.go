// Package storage is Strata's partition log: Kafka's on-disk format, byte
// for byte, so Kafka's kafka-dump-log can read our segments.
//
// # Directory layout
//
// One directory per log.dir holds meta.properties, recovery-point-offset-
// checkpoint, log-start-offset-checkpoint, .kafka_cleanshutdown and
// strata-topics.json (written by the Manager), and one directory per
// partition, <topic>-<partition>, holding:
//
//	00000000000000000000.log        record batches, concatenated
//	00000000000000000000.index      offset index of that segment
//	00000000000000000000.timeindex  time index of that segment
//	00000000000000001234.log ...    next segment, named by its base offset (%020d)
//	leader-epoch-checkpoint         leader epoch -> first offset
//	partition.metadata              topic id (Manager)
//	00000000000000001234.snapshot   producer state at offset 1234 (see producerstate.go)
//
// A segment's base offset is the offset of its first batch; segments are
// contiguous: each starts at the offset after the previous one's last batch.
//
// # Record batch (magic 2), all integers big-endian
//
//	offset len field                  notes
//	0      8   baseOffset             assigned by the broker on append
//	8      4   batchLength            bytes after this field (total size - 12)
//	12     4   partitionLeaderEpoch   assigned by the broker on append
//	16     1   magic                  2
//	17     4   crc                    CRC32C (Castagnoli) of bytes [21, end)
//	21     2   attributes             bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd),
//	                                  3 timestamp type, 4 transactional, 5 control
//	23     4   lastOffsetDelta        recordCount - 1
//	27     8   baseTimestamp
//	35     8   maxTimestamp
//	43     8   producerId             -1 if not idempotent
//	51     2   producerEpoch
//	53     4   baseSequence
//	57     4   recordCount
//	61     ... records                (compressed as a whole if codec != 0)
//
// The CRC does not cover baseOffset or partitionLeaderEpoch, so stamping
// them on append leaves the client's checksum valid: a batch is written
// exactly as the producer sent it apart from those 12 bytes.
//
// Produce validation (Append) maps errors as Kafka does: short buffer,
// length below the header or past the buffer, unknown magic (<0 or >2) and
// bad CRC -> CORRUPT_MESSAGE; magic 0/1, recordCount != lastOffsetDelta+1 or
// <= 0, control batches, idempotent batches without a sequence and several
// idempotent batches in one payload -> INVALID_RECORD; batch size (length+12)
// above max.message.bytes -> MESSAGE_TOO_LARGE; codec 5-7 ->
// UNSUPPORTED_COMPRESSION_TYPE (Kafka fails CompressionType.forId with an
// IllegalArgumentException, i.e. UNKNOWN_SERVER_ERROR; we give the specific
// code). Unlike Kafka, trailing bytes that do not form a whole batch are
// rejected (CORRUPT_MESSAGE) rather than silently dropped.
//
// # Offset index (.index)
//
// An array of 8-byte entries: uint32 offset relative to the base, uint32
// byte position in the .log. An entry (lastOffset of a batch, position where
// that batch starts) is added before a batch once more than
// index.interval.bytes were appended since the last entry (Kafka's rule), so
// looking up the greatest entry <= the target and scanning batch headers
// from its position finds the batch holding the target. Entries strictly
// increase in both fields.
//
// # Time index (.timeindex)
//
// An array of 12-byte entries: int64 timestamp, uint32 relative offset. At
// each offset index entry the segment's max timestamp so far and the last
// offset of the batch that carried it are added if the timestamp grew; when
// a segment becomes inactive (roll) or the log is closed a final entry with
// the segment's max timestamp is written into a slot reserved for it (the
// index counts as full one entry early, as Kafka's TimeIndex.isFull).
//
// Both indexes of the active segment are pre-allocated to
// segment.index.bytes (rounded down to the entry size) and mmap'd
// read-write; on roll and clean close they are truncated to their used size
// and remapped read-only. When an index is opened its used size is the
// position of the last non-zero entry, which discards the zero tail of a
// pre-allocated file left by a crash. A segment rolls when its size would
// exceed segment.bytes, when the new batches' max timestamp is more than
// segment.ms past the segment's first batch timestamp (creation time if
// that is unknown), when an index has no room, or when the offset would not
// fit the 32-bit relative offset.
//
// # Checkpoints
//
// leader-epoch-checkpoint is Kafka's text format "0\n<n>\n<epoch> <offset>\n..."
// (epochcheckpoint.go); an entry is appended the first time a batch with a
// newer leader epoch is written. Offset checkpoints are
// "0\n<n>\n<topic> <partition> <offset>\n" (checkpoint.go). The producer
// snapshot format is defined in producerstate.go; a snapshot is written at
// the new base offset on every roll and at the log end offset on clean
// close. The Manager writes .kafka_cleanshutdown after all logs closed
// cleanly and passes CleanShutdown and the recovery point to OpenLog.
//
// # Recovery (OpenLog)
//
// After a clean shutdown the indexes are trusted, but each is checked (size
// a multiple of the entry size, entries ordered and inside the log, no
// entry missing where index.interval.bytes says one must be, a time index
// present for a non-empty segment); a missing or failing index is rebuilt
// from the .log. Otherwise every segment from the one containing the
// recovery point to the end is scanned batch by batch: the scan stops at the
// first short header, length past the end of the file, bad magic, batch
// whose base offset does not continue from the previous batch (or segment),
// inconsistent count, or CRC mismatch. The segment is truncated there, later
// segments are deleted, and the bytes, segments and batches dropped are
// logged; the scanned segments' indexes are rebuilt and the result fsynced.
// Then the newest producer snapshot at or below the log end offset is
// loaded (newer ones are deleted) and later batch headers replayed, and
// leader epoch entries starting at or past the log end offset are dropped.
//
// # Durability and fsync
//
// Every Append is one write(2) of all its batches into the page cache. An
// fsync happens when flush.messages messages were appended since the last
// one, when flush.ms elapsed (checked on append and by a ticker that only
// runs when flush.ms is set), after a roll (the rolled segment, which is what
// moves the recovery point past it), on Flush and on Close. Concurrent
// appenders share fsyncs: they queue on a flush mutex and whoever gets it
// syncs everything written so far; a caller whose data is already covered
// returns without syncing. With a required fsync the high watermark moves
// only after it succeeded. The defaults never fsync on append, like Kafka.
// RecoveryPoint is the offset below which everything is fsynced.
//
// What survives: a process crash loses nothing that was acknowledged (it is
// in the page cache). A power loss loses what was written after the last
// fsync, so only flush.messages=1 makes every acknowledged batch survive it.
//
// A failed write, fsync or truncate puts the log in a failed state: the
// reason is logged once, the active segment is cut back to the high
// watermark (or the last fsynced position if further) so that a torn write
// or an append whose fsync failed is not brought back by recovery, and every
// later Append returns KAFKA_STORAGE_ERROR until the log is reopened. A batch
// is never acknowledged if its write or its required fsync failed.
//
// # Reads
//
// Read finds the segment by binary search over base offsets, the start
// position through the offset index and a short header scan, and returns a
// Chunk of whole batches up to maxBytes below the high watermark (whose byte
// position is tracked, so no scan is needed to bound it). A Chunk holds a
// reference to a shared descriptor: closed segments open a read-only
// descriptor lazily; it is closed when the last Chunk is released, so
// rolling, closing or deleting never pulls a file from under a fetch.
// Chunk.WriteTo uses sendfile(2) with an explicit offset for descriptors
// (TCP connections), else pread into a pooled buffer.
//
// # CRC32C implementation
//
// Batches and producer snapshots are checksummed with
// github.com/klauspost/crc32, chosen over the standard library's Castagnoli
// table by BenchmarkCRC32C (batch_test.go) on the build machine (Intel Xeon,
// 2 cores, Go 1.26), median of three runs:
//
//	size     hash/crc32     klauspost/crc32
//	1 KiB    20.1 GB/s      21.6 GB/s
//	64 KiB   20.4 GB/s      21.8 GB/s
//	1 MiB    21.4 GB/s      21.6 GB/s
//
// The margin is small (both use SSE4.2 and carry-less multiplication); the
// benchmark stays so the choice can be revisited on other hardware.
package storage
