// Package storage is Strata's partition log: Kafka's on-disk format, byte
// for byte, so Kafka's kafka-dump-log can read our segments.
//
// # Directory layout
//
// One directory per log.dir holds .lock (held with an fcntl lock for the
// broker's lifetime, as Kafka's LogManager holds it, so neither a second
// Strata nor a Kafka can open the dir at the same time), meta.properties,
// recovery-point-offset-checkpoint, log-start-offset-checkpoint,
// cleaner-offset-checkpoint, replication-offset-checkpoint,
// .kafka_cleanshutdown, strata-topics.json and strata-broker-configs.json
// (written by the Manager), strata-access.json (a single node's SCRAM
// credentials, ACLs and quotas) and strata-features.json (its finalized
// features), both the metadata layer's bytes, which the Manager keeps
// unread (manager_access.go), and one directory per partition,
// <topic>-<partition>, holding:
//
//	00000000000000000000.log        record batches, concatenated
//	00000000000000000000.index      offset index of that segment
//	00000000000000000000.timeindex  time index of that segment
//	00000000000000001234.log ...    next segment, named by its base offset (%020d)
//	leader-epoch-checkpoint         leader epoch -> first offset
//	partition.metadata              topic id (Manager)
//	00000000000000001234.snapshot   producer state at offset 1234 (see producerstate.go)
//	00000000000000000000.txnindex   aborted transactions whose marker is in that segment
//	<segment file>.cleaned / .swap  a cleaned segment being swapped in (see Compaction)
//
// A segment's base offset is the offset of its first batch; segments are
// contiguous: each starts at the offset after the previous one's last batch.
// Compacted logs are the exception: cleaning removes batches, so batches and
// segments may leave gaps in the offsets (never overlap), a segment's first
// batch may start after its base offset, and a segment may be empty.
//
// # Record batch (magic 2), all integers big-endian
//
// internal/batch holds the code for this layout (header fields, CRC32C,
// record framing, codecs), shared with the coordinator, broker and bench.
//
//	offset len field                  notes
//	0      8   baseOffset             assigned by the broker on append
//	8      4   batchLength            bytes after this field (total size - 12)
//	12     4   partitionLeaderEpoch   assigned by the broker on append
//	16     1   magic                  2
//	17     4   crc                    CRC32C (Castagnoli) of bytes [21, end)
//	21     2   attributes             bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd),
//	                                  3 timestamp type, 4 transactional, 5 control,
//	                                  6 delete horizon (set by the cleaner, KIP-534)
//	23     4   lastOffsetDelta        recordCount - 1
//	27     8   baseTimestamp          the delete horizon (ms) when bit 6 is set
//	35     8   maxTimestamp
//	43     8   producerId             -1 if not idempotent
//	51     2   producerEpoch
//	53     4   baseSequence
//	57     4   recordCount
//	61     ... records                (compressed as a whole if codec != 0)
//
// The CRC does not cover baseOffset or partitionLeaderEpoch, so stamping
// them on append leaves the client's checksum valid: a batch is written
// exactly as the producer sent it apart from those 12 bytes. Cleaning is the
// one place the broker rebuilds batches and so computes a CRC32C itself.
// A cleaned batch keeps its lastOffsetDelta with fewer records, so
// recordCount <= lastOffsetDelta+1 (0 for a producer's retained empty batch).
// Records are (zigzag varints) length, attributes int8, timestampDelta,
// offsetDelta, keyLength, key, valueLength (-1: null value, a tombstone),
// value, header count, headers.
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
// rejected (CORRUPT_MESSAGE) rather than silently dropped. On a compacted log
// (cleanup.policy contains compact) every record must have a key: a batch
// with keyless records is refused whole with a RecordValidationError
// (INVALID_RECORD) listing each of them, as Kafka's LogValidator, so the
// cleaner never meets a keyless record appended under that policy (it drops
// those written before the policy changed, as Kafka's). Only compacted logs
// decode records for the check; compressed batches are decompressed
// (internal/batch: gzip, snappy raw or in snappy-java's xerial framing, lz4
// frames, zstd).
//
// Errors storage returns otherwise: every failed file operation carries
// KAFKA_STORAGE_ERROR and its cause (errors.Is(err, syscall.ENOSPC) holds);
// bytes on disk that are not what was written (a bad batch header or CRC,
// index, checkpoint, producer snapshot, partition.metadata, meta.properties,
// registry or KRaft metadata record) are ErrCorruption, as pebble's
// base.ErrCorruption. A read of a batch whose header is corrupt answers
// CORRUPT_MESSAGE, as Kafka's fetch does for its batch iterator's
// CorruptRecordException.
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
// "0\n<n>\n<topic> <partition> <offset>\n" (checkpoint.go). The Manager
// writes .kafka_cleanshutdown after all logs closed cleanly and passes
// CleanShutdown, the recovery point, the log start offset (the log starts at
// max(first segment base, checkpoint), clamped to the log end offset) and
// the cleaner's first dirty offset (cleaner-offset-checkpoint, written after
// each cleaning pass that cleaned something and on Close) to OpenLog.
// replication-offset-checkpoint (manager_hwckpt.go) holds every partition's
// high watermark, as Kafka's ReplicaManager writes it: every
// replica.high.watermark.checkpoint.interval.ms (5 s) when a high watermark
// moved, and on Close. At open a log's high watermark is its recovered log
// end offset, as before the file existed (the replica layer leads every
// partition alone); an entry above it is logged, since records a fetch may
// have seen are gone.
//
// # Producer snapshots (.snapshot)
//
// Kafka's ProducerStateManager snapshot, version 1, so kafka-dump-log reads
// ours (checked with Kafka 4.1.1's DumpLogSegments). Big-endian:
//
//	offset len field
//	0      2   version                  1 (int16)
//	2      4   crc                      CRC32C of bytes [6, end) (uint32)
//	6      4   producer entry count N   (int32)
//	10     46*N entries, by ascending producer id:
//	             8 producer_id  2 epoch  4 last_sequence  8 last_offset
//	             4 offset_delta (last_offset - first offset of the last batch)
//	             8 timestamp (max timestamp of the last batch)
//	             4 coordinator_epoch (of the last marker, -1 if none)
//	             8 current_txn_first_offset (first offset of the open transaction, -1)
//
// The snapshot's offset is only in the file name. A snapshot is written at
// the new base offset on every roll and at the log end offset on clean
// close; the newest two are kept. Like Kafka's, a snapshot holds only each
// producer's last batch: after a restart duplicate detection covers that
// batch and every batch replayed from the log after the snapshot offset,
// while a running log remembers each producer's last 5 batches.
//
// # Transactions (txn.go)
//
// A transactional batch (attributes bit 4) of a producer with no open
// transaction on the partition opens one at its base offset; the producer
// may then write only transactional batches until a marker. Markers are
// control batches (bits 4 and 5) the transaction coordinator appends with
// AppendControl: the producer's id and epoch, base sequence -1, one record
// whose key is Kafka's ControlRecordType (int16 version 0, int16 type:
// 0 abort, 1 commit) and whose value is the EndTransactionMarker (int16
// version 0, int32 coordinator epoch). A marker with an epoch older than the
// producer's is INVALID_PRODUCER_EPOCH, an older coordinator epoch
// TRANSACTION_COORDINATOR_FENCED. Coordinators append their own
// transactional batches (offset commits) with AppendCoordinator, which
// checks the epoch but not sequences (Kafka's AppendOrigin.COORDINATOR).
//
// The last stable offset is min(first offset of the open transactions, high
// watermark). ReadIsolated(..., readCommitted) returns no batch starting at
// or after it; the compaction cleaner also stops there. An abort marker of
// a transaction that wrote to the partition appends to the .txnindex of the
// segment it lands in Kafka's 34-byte AbortedTxn entry, big-endian:
//
//	0  2 version (0)        2  8 producer id
//	10 8 first offset       18 8 last offset (the marker's)
//	26 8 last stable offset once the transaction was aborted
//
// (kafka-dump-log reads these files). AbortedTransactions(from, to) lists
// (producer id, first offset) of the aborts with marker >= from and first
// offset < to, stopping at the first entry whose LSO reached to, as Kafka's
// collectAbortedTransactions; all entries are kept in memory. A .txnindex
// is fsynced when its segment is deactivated; compaction rewrites those of
// the segments it cleans (see Compaction). Recovery reads the .txnindex
// of trusted segments and rebuilds those of recovered ones: it loads the
// newest producer snapshot at or below the first recovered segment and
// replays every batch after it, markers included (their record is read to
// learn commit or abort).
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
// inconsistent count, or CRC mismatch (a compacted log accepts forward offset
// gaps and cleaned counts). The segment is truncated there, later
// segments are deleted, and the bytes, segments and batches dropped are
// logged; the scanned segments' indexes are rebuilt and the result fsynced.
// Then the newest producer snapshot at or below the log end offset (and
// the first recovered segment, see Transactions) is loaded (newer ones
// are deleted) and later batches replayed, and
// leader epoch entries starting at or past the log end offset are dropped.
//
// Before any of that, leftovers of an interrupted cleaning are resolved as
// Kafka's LogLoader does: *.cleaned files are deleted (that swap never
// committed); a <base>.log.swap is a complete, fsynced cleaned segment whose
// swap committed, so the segments overlapping [base, its next offset) are
// deleted and its .swap files renamed into place (a missing index swap
// means the index is rebuilt; a missing .txnindex swap means the cleaned
// segment kept no aborted-transaction entry); index .swap files without a
// .log.swap go.
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
// returns without syncing. Append does not move the high watermark; the
// replica layer (package replica) moves it with AdvanceHighWatermark once
// Append returned, so with a required fsync it moves only after the fsync
// succeeded; after the log failed it moves no more, and an offset fail may
// have cut is refused with KAFKA_STORAGE_ERROR (log_hw.go). The defaults never fsync on append, like Kafka.
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
// later Append returns KAFKA_STORAGE_ERROR. A batch is never acknowledged
// if its write or its required fsync failed. The failed log still serves
// reads, and retention and DeleteRecords still delete its closed segments
// (it cannot roll), so space can be freed. Every second the Manager writes,
// fsyncs and removes a probe file (.strata-write-probe, message.max.bytes
// long) in the log dir; once that succeeds it revives each failed log in
// place: closes its files and recovers it from its last fsynced offset, as
// a restart would, logging what recovery checked and dropped (never
// anything acknowledged). A log whose revival fails goes offline (reads fail
// too) until a later one succeeds. A Close with failed logs writes the
// checkpoints it can and no clean-shutdown marker, so the next start
// recovers from the checkpoints.
//
// # What the Manager may delete
//
// Nothing it cannot account for (manager_dirs.go). It removes directories
// named <topic>-<p>.<id>-delete (Kafka's name for a partition being
// deleted, which Kafka removes too), and partition directories of a topic
// listed under "deleted" in strata-topics.json whose partition.metadata
// holds that topic's id (a deletion interrupted by a crash). Any other
// non-empty partition directory that no registered topic owns is foreign:
// left alone with one warning at open, its entries kept in the offset
// checkpoint files, and a topic that would take its name is refused
// (INVALID_TOPIC_EXCEPTION naming the directory). Segment files renamed
// .deleted by retention or DeleteRecords are removed file.delete.delay.ms
// later, to the second: each deletion wakes the Manager's timer.
//
// # Reads
//
// Read finds the segment by binary search over base offsets, the start
// position through the offset index and a short header scan, and returns a
// Chunk of whole batches up to maxBytes below the high watermark (whose byte
// position is tracked, so no scan is needed to bound it). The chunk's end is
// found the same way: from the last indexed batch inside the byte budget, a
// short header scan finds the last batch that fits (unless read_committed
// stops below the high watermark, when every header from the start is
// read, to stop at the last stable offset). A Chunk holds a
// reference to a shared descriptor: closed segments open a read-only
// descriptor lazily; it is closed when the last Chunk is released, so
// rolling, closing or deleting never pulls a file from under a fetch.
// Chunk.WriteTo uses sendfile(2) with an explicit offset for descriptors
// (TCP connections), else pread into a pooled buffer. Where compaction left
// nothing at or after the offset in a segment, Read continues in the next.
//
// Log.ForEachBatch(from, fn) walks every whole batch from the one holding
// from up to the high watermark (as of the call), across segments and
// compaction gaps, without Read's byte limit; it reads through referenced
// descriptors without holding the log lock. It is how a compacted topic
// such as __consumer_offsets is replayed.
//
// # Follower writes (log_follower.go)
//
// For package replica, a log takes batches as a follower and truncates, as
// Kafka's UnifiedLog.appendAsFollower and truncateTo. AppendAsFollower
// writes batches with the offsets and partition leader epochs the leader
// gave them (the first at the log end offset, each where the one before
// ended); producer state, markers and leader epochs follow them unchecked.
// TruncateTo(offset) removes the segments above the batch boundary at
// offset, cuts the one holding it, fsyncs both, and loads the log again
// from that segment as recovery does, which drops indexes, producer
// snapshots, aborted transactions and leader epochs at or above it; the
// high watermark and recovery point come down to it. A single node never
// calls either.
//
// # Compaction (cleaner.go, cleaner_write.go, manager_cleaner.go)
//
// Logs whose cleanup.policy contains "compact" are cleaned as Kafka's log
// cleaner does. The Manager runs one cleaner goroutine (log.cleaner.enable,
// default true; every log.cleaner.backoff.ms, default 15000; CleanNow runs a
// pass synchronously). A log is cleaned when its dirty ratio (bytes of
// closed segments at or after the first dirty offset / bytes of all
// cleanable segments) reaches min.cleanable.dirty.ratio (0.5), or when a
// kept tombstone's or transaction marker's delete horizon has passed.
// Cleanable segments are closed (never the active one), entirely below the
// last stable offset and, with min.compaction.lag.ms, hold no record newer
// than now minus the lag.
//
// A cleaning maps every key of the dirty segments to the offset of its
// latest record (bounded like log.cleaner.dedupe.buffer.size: a map that
// fills stops the dirty range at a segment boundary), then rewrites the
// cleanable segments from the log start: a record stays if no later record
// has its key; keyless records go; a tombstone stays until its batch's
// delete horizon, which the first cleaning that keeps it sets to now +
// delete.retention.ms (KIP-534: attributes bit 6 and baseTimestamp = the
// horizon, record timestamp deltas rebased so record timestamps are
// unchanged). Transactions: see below. A batch whose records all stay and
// that needs no horizon is copied byte for byte; otherwise it is rebuilt
// with the same base offset, lastOffsetDelta, leader epoch, producer id,
// epoch and base sequence, the kept records, their max timestamp, the same
// codec (recompressed) and a new CRC. A batch left without records goes,
// unless it holds its producer's last offset: then it stays as an empty
// batch (count 0, no compression) so the producer's sequence and epoch
// survive (Kafka's RETAIN_EMPTY).
//
// Transactions in compaction, as Kafka's Cleaner (CleanedTransactionMetadata):
// the cleaner only reaches below the last stable offset, so every
// transaction it sees is decided. The aborted transactions whose first
// offset is below the end of the cleanable segments are taken from the
// aborted-transaction index (kept in memory, loaded from the .txnindex
// files); a transactional batch inside one of its producer's aborted ranges
// [first offset, abort marker] is aborted. The key map is built without
// aborted records and without markers, so an aborted record never shadows
// the committed value of its key, and the rewrite drops every aborted
// record (the batch goes, or stays empty if it is its producer's last, as
// above). A marker (commit or abort) whose producer had transactional
// batches since its previous marker in this pass (read, whether kept or
// dropped) stays unchanged: a marker is never removed while data of its
// transaction may remain. A marker with no such batch is stamped with a
// delete horizon (attributes bit 6, baseTimestamp = now +
// delete.retention.ms) and removed by the first cleaning after it, so an
// aborted transaction's marker outlives its records by one pass plus
// delete.retention.ms. The aborted-transaction entry of a kept abort marker
// whose transaction still had data goes to the .txnindex of the cleaned
// segment holding the marker, and the in-memory index is replaced for the
// cleaned range at the swap, so aborted ranges survive a restart. Entries
// of markers left without data are dropped: no record of theirs remains to
// filter (a full recovery's replay would not find them either). A source
// segment rolled back to start a new group rolls back this state too.
//
// Cleaned segments are grouped: consecutive source segments are written to
// one output named after the first while the output stays within
// segment.bytes, the index capacity and 32-bit relative offsets; a source
// whose cleaned batches do not fit is rolled back and starts the next
// group, so the segment count shrinks. Each group is swapped in on its own:
// <base>.log.cleaned, .index.cleaned, .timeindex.cleaned and (when it holds
// entries) .txnindex.cleaned are written (indexed exactly as appends index)
// and fsynced, renamed to .swap (the .log last: that rename commits the
// swap), the directory is fsynced, the old segments are deleted, the .swap
// files renamed into place and the directory fsynced again. A failure before the commit removes the
// cleaner's files; after it, it fails the log and recovery completes the
// swap. Readers holding Chunks of replaced segments keep reading them
// through their descriptors. Close aborts a running cleaning.
//
// # Adopting a log dir Apache Kafka wrote (manager_adopt.go, kraftmeta)
//
// Kafka in KRaft mode keeps the topic registry in __cluster_metadata-0, not
// strata-topics.json; everything else in the directory is the layout above.
// When OpenManager finds no registry but that directory, it reads Kafka's
// metadata (package kraftmeta: the newest whole snapshot, then the log's
// records after it) and writes the registry from it: topic names, ids,
// partition counts and topic configs; Kafka's dynamic broker configs that
// are log configs go to strata-broker-configs.json; the end of Kafka's
// producer id blocks is reserved (ManagerOptions.ReserveProducerIDs) before
// the registry is written, so an interrupted adoption is simply redone.
// Each partition then opens as any other (its partition.metadata must hold
// the topic id); its leader epoch becomes Kafka's plus one when Kafka's
// metadata left no leader (a clean shutdown fences the broker), recorded in
// leader-epoch-checkpoint at the log end offset as Kafka does on becoming
// leader, and every open leads at the checkpoint's latest epoch, so epochs
// never go backwards. __cluster_metadata-0 is never written or deleted and
// is not a topic. Only this direction works: Kafka started on a directory
// Strata wrote sees none of Strata's metadata changes (its own topics, with
// Strata's records, are served; Strata's new topics are renamed -stray) and
// reissues producer ids Strata used (see the README, "Moving from Apache
// Kafka").
//
// # CRC32C implementation
//
// Batches and producer snapshots are checksummed with
// github.com/klauspost/crc32, chosen over the standard library's Castagnoli
// table by BenchmarkCRC32C (internal/batch) on the build machine (Intel Xeon,
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
