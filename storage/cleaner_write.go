package storage

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"sort"

	"github.com/strata-io/strata/internal/batch"
	"go.uber.org/zap"

	"github.com/strata-io/strata/storage/vfs"
)

// cleanOutput is the segment being written as <base>.log.cleaned with its
// .index.cleaned and .timeindex.cleaned, indexed as appends index, and
// .txnindex.cleaned holding the aborted-transaction entries of the abort
// markers it keeps.
type cleanOutput struct {
	seg     *segment
	f       vfs.File
	buf     []byte
	written int64 // bytes of seg.size already in the file
	aborted []abortedTxn
}

// cleanedExts are the files of a cleaned segment, in the order they are
// renamed: the .log last, as its rename commits the swap.
var cleanedExts = []string{indexExt, timeIndexExt, txnIndexExt, logExt}

// outMark is the state of an output before a source segment was added.
type outMark struct {
	size, next, maxTs, maxTsOffset, firstTs, bytesSinceIndex int64
	idx, tidx, aborted                                       int
}

func cleanedPath(dir string, base int64, ext string) string {
	return segmentPath(dir, base, ext) + cleanedExt
}

func swapPath(dir string, base int64, ext string) string {
	return segmentPath(dir, base, ext) + swapExt
}

func (l *Log) newCleanOutput(base int64) (*cleanOutput, error) {
	var stale []string
	for _, ext := range cleanedExts {
		stale = append(stale, cleanedPath(l.dir, base, ext), swapPath(l.dir, base, ext))
	}
	if err := l.removeFiles(stale...); err != nil {
		return nil, fmt.Errorf("remove stale cleaner files of %d: %w", base, err)
	}
	f, err := l.fsys.OpenFile(cleanedPath(l.dir, base, logExt), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create cleaned segment %d: %w", base, err)
	}
	// The output shares the log's config (s.cfg), read here without l.mu:
	// safe because SetConfig also takes cleanMu, which a cleaning holds.
	s := &segment{fsys: l.fsys, dir: l.dir, base: base, cfg: &l.cfg, next: base, maxTs: -1, maxTsOffset: -1, firstTs: -1, created: l.now()}
	o := &cleanOutput{seg: s, f: f}
	maxIndex := l.cfgView.Load().MaxIndexSize
	s.idx, err = openOffsetIndex(l.fsys, cleanedPath(l.dir, base, indexExt), base, maxIndex, true)
	if err == nil {
		s.tidx, err = openTimeIndex(l.fsys, cleanedPath(l.dir, base, timeIndexExt), base, maxIndex, true)
	}
	if err != nil {
		o.discard(l)
		return nil, fmt.Errorf("cleaned segment %d: %w", base, err)
	}
	return o, nil
}

func (o *cleanOutput) mark() outMark {
	s := o.seg
	return outMark{size: s.size, next: s.next, maxTs: s.maxTs, maxTsOffset: s.maxTsOffset, firstTs: s.firstTs,
		bytesSinceIndex: s.bytesSinceIndex, idx: s.idx.entries, tidx: s.tidx.entries, aborted: len(o.aborted)}
}

// reset returns the output to m, dropping what a source segment added.
func (o *cleanOutput) reset(m outMark) error {
	s := o.seg
	if m.size >= o.written {
		o.buf = o.buf[:m.size-o.written]
	} else {
		if err := o.f.Truncate(m.size); err != nil {
			return fmt.Errorf("cleaned segment %d: truncate: %w", s.base, err)
		}
		o.written, o.buf = m.size, o.buf[:0]
	}
	clear(s.idx.data[m.idx*offsetEntrySize : s.idx.entries*offsetEntrySize])
	clear(s.tidx.data[m.tidx*timeEntrySize : s.tidx.entries*timeEntrySize])
	s.idx.entries, s.tidx.entries = m.idx, m.tidx
	o.aborted = o.aborted[:m.aborted]
	s.size, s.next, s.maxTs, s.maxTsOffset, s.firstTs, s.bytesSinceIndex = m.size, m.next, m.maxTs, m.maxTsOffset, m.firstTs, m.bytesSinceIndex
	return nil
}

// fits reports whether batch b (header h) can join the output without
// exceeding segment.bytes, the index capacity or the 32-bit relative offset.
func (o *cleanOutput) fits(h *batch.Header) bool {
	s := o.seg
	return s.size+h.Size() <= s.cfg.SegmentBytes && !s.idx.full() && !s.tidx.roomFull() &&
		h.LastOffset()-s.base <= math.MaxInt32
}

func (o *cleanOutput) add(b []byte) error {
	h := batch.DecodeHeader(b)
	o.seg.indexBatch(&h, o.seg.size)
	o.seg.size += h.Size()
	o.buf = append(o.buf, b...)
	if len(o.buf) >= cleanerWriteBuf {
		return o.flushBuf()
	}
	return nil
}

func (o *cleanOutput) flushBuf() error {
	if len(o.buf) == 0 {
		return nil
	}
	if _, err := o.f.WriteAt(o.buf, o.written); err != nil {
		return fmt.Errorf("cleaned segment %d: write: %w", o.seg.base, err)
	}
	o.written += int64(len(o.buf))
	o.buf = o.buf[:0]
	return nil
}

// finish writes and fsyncs the .cleaned files and makes the indexes
// read-only, as a roll does.
func (o *cleanOutput) finish() error {
	s := o.seg
	if err := o.flushBuf(); err != nil {
		return err
	}
	if err := o.f.Sync(); err != nil {
		return fmt.Errorf("cleaned segment %d: fsync: %w", s.base, err)
	}
	if err := o.f.Close(); err != nil {
		return fmt.Errorf("cleaned segment %d: close: %w", s.base, err)
	}
	o.f = nil
	if s.maxTs >= 0 {
		s.tidx.maybeAppend(s.maxTs, s.maxTsOffset)
	}
	if err := errors.Join(s.idx.seal(), s.tidx.seal()); err != nil {
		return fmt.Errorf("cleaned segment %d: %w", s.base, err)
	}
	return o.writeTxnIndex()
}

// writeTxnIndex writes and fsyncs <base>.txnindex.cleaned with the kept
// aborted-transaction entries; none means no file, like an append-built
// segment without aborts.
func (o *cleanOutput) writeTxnIndex() error {
	if len(o.aborted) == 0 {
		return nil
	}
	s := o.seg
	path := cleanedPath(s.dir, s.base, txnIndexExt)
	f, err := s.fsys.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("cleaned segment %d: %w", s.base, err)
	}
	buf := make([]byte, 0, len(o.aborted)*txnEntryLen)
	for _, a := range o.aborted {
		buf = append(buf, a.encode()...)
	}
	_, err = f.WriteAt(buf, 0)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("cleaned segment %d: transaction index: %w", s.base, err)
	}
	return nil
}

// discard closes and removes the output's files.
func (o *cleanOutput) discard(l *Log) {
	if o.f != nil {
		_ = o.f.Close()
	}
	o.seg.closeIndexes()
	var paths []string
	for _, ext := range cleanedExts {
		paths = append(paths, cleanedPath(l.dir, o.seg.base, ext), swapPath(l.dir, o.seg.base, ext))
	}
	if err := l.removeFiles(paths...); err != nil {
		l.logger.Warn("cannot remove cleaner leftovers", zap.Int64("segment", o.seg.base), zap.Error(err))
	}
}

// clean rewrites plan.srcs[:end] in groups: each group of consecutive
// source segments becomes one segment named after the first, as long as the
// cleaned data fits segment.bytes (a source whose cleaned batches do not fit
// is rolled back and starts the next group), and is swapped in at once.
func (c *cleaner) clean(end int) (CleanStats, error) {
	l := c.l
	srcs := c.plan.srcs[:end]
	c.stats.FirstDirty = c.plan.firstDirty
	c.stats.End = srcs[len(srcs)-1].seg.next
	if end < len(c.plan.srcs) {
		c.stats.End = c.plan.srcs[end].seg.base
	}
	var out *cleanOutput
	groupStart := 0
	defer func() {
		if out != nil {
			out.discard(l)
		}
	}()
	for i := 0; i < len(srcs); i++ {
		src := srcs[i]
		if out == nil {
			var err error
			if out, err = l.newCleanOutput(src.seg.base); err != nil {
				return c.stats, err
			}
			groupStart = i
		}
		m := out.mark()
		seen := maps.Clone(c.txns.seen) // the transaction state before this source, for a rollback
		first := i == groupStart
		overflow := false
		err := scanFile(src.file, src.size, func(h *batch.Header, b []byte) error {
			if l.closing.Load() {
				return errCleanAborted
			}
			nb, err := c.filterBatch(h, b, out)
			if err != nil || nb == nil {
				return err
			}
			nh := batch.DecodeHeader(nb)
			if !first && !out.fits(&nh) {
				overflow = true
				return errOverflow
			}
			return out.add(nb)
		})
		if overflow {
			if err := out.reset(m); err != nil {
				return c.stats, err
			}
			c.txns.seen = seen
			o := out
			out = nil
			if err := c.swapGroup(o, srcs[groupStart:i]); err != nil {
				return c.stats, err
			}
			i-- // clean this source again as the first of a new group
			continue
		}
		if err != nil {
			return c.stats, fmt.Errorf("segment %d: %w", src.seg.base, err)
		}
	}
	if out != nil {
		o := out
		out = nil
		if err := c.swapGroup(o, srcs[groupStart:]); err != nil {
			return c.stats, err
		}
	}
	l.mu.Lock()
	l.firstDirty = max(l.firstDirty, c.stats.End)
	l.tombstoneHorizon = c.horizon
	l.mu.Unlock()
	c.stats.Cleaned = true
	return c.stats, nil
}

var errOverflow = errors.New("cleaned group full")

// swapGroup replaces the group's source segments by the cleaned output,
// crash-safely as Kafka's replaceSegments: the .cleaned files are fsynced,
// renamed to .swap (the .log last: that rename commits the swap), the old
// segments are deleted and the .swap files renamed into place. Recovery
// deletes .cleaned files and completes .swap ones (recovery.go). It owns
// out: the files are removed on a failure before the commit point.
func (c *cleaner) swapGroup(out *cleanOutput, group []cleanSource) (err error) {
	l := c.l
	committed := false
	defer func() {
		if err != nil && !committed {
			out.discard(l)
		}
	}()
	if err := out.finish(); err != nil {
		return err
	}
	// Cleaning statistics count rolled-back sources once.
	c.stats.SegmentsBefore += len(group)
	c.stats.SegmentsAfter++
	for _, g := range group {
		c.stats.BytesBefore += g.size
	}
	c.stats.BytesAfter += out.seg.size
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.failed != nil || l.closing.Load() {
		return errCleanAborted
	}
	at := -1
	for i, s := range l.segs {
		if s == group[0].seg {
			at = i
			break
		}
	}
	if at < 0 || at+len(group) >= len(l.segs) {
		return fmt.Errorf("segments %d.. changed while cleaning", group[0].seg.base)
	}
	for j, g := range group {
		if l.segs[at+j] != g.seg {
			return fmt.Errorf("segment %d changed while cleaning", g.seg.base)
		}
	}
	base := out.seg.base
	for _, ext := range cleanedExts {
		if ext == txnIndexExt && len(out.aborted) == 0 {
			continue
		}
		if err := l.fsys.Rename(cleanedPath(l.dir, base, ext), swapPath(l.dir, base, ext)); err != nil {
			return fmt.Errorf("swap cleaned segment %d: %w", base, err)
		}
	}
	// Committed: from here a failure fails the log and recovery finishes it.
	committed = true
	if err := l.fsys.SyncDir(l.dir); err != nil {
		l.fail(fmt.Errorf("swap cleaned segment %d: %w", base, err))
		return l.storageError()
	}
	for j := len(group) - 1; j >= 0; j-- {
		if err := group[j].seg.remove(); err != nil {
			l.fail(fmt.Errorf("swap cleaned segment %d: %w", base, err))
			return l.storageError()
		}
	}
	for _, ext := range cleanedExts {
		if ext == txnIndexExt && len(out.aborted) == 0 {
			continue
		}
		if err := l.fsys.Rename(swapPath(l.dir, base, ext), segmentPath(l.dir, base, ext)); err != nil {
			l.fail(fmt.Errorf("swap cleaned segment %d: %w", base, err))
			return l.storageError()
		}
	}
	if err := l.fsys.SyncDir(l.dir); err != nil {
		l.fail(fmt.Errorf("swap cleaned segment %d: %w", base, err))
		return l.storageError()
	}
	ns := out.seg
	ns.idx.path, ns.tidx.path = segmentPath(l.dir, base, indexExt), segmentPath(l.dir, base, timeIndexExt)
	segs := make([]*segment, 0, len(l.segs)-len(group)+1)
	segs = append(segs, l.segs[:at]...)
	segs = append(segs, ns)
	segs = append(segs, l.segs[at+len(group):]...)
	l.segs = segs
	l.replaceAborted(base, group[len(group)-1].seg.next, out.aborted)
	return nil
}

// replaceAborted makes the in-memory aborted-transaction index match the
// swapped files: the entries whose marker is in [from, to) become kept, the
// ones the cleaned segment's .txnindex holds. Caller holds l.mu.
func (l *Log) replaceAborted(from, to int64, kept []abortedTxn) {
	i := sort.Search(len(l.aborted), func(i int) bool { return l.aborted[i].LastOffset >= from })
	j := sort.Search(len(l.aborted), func(i int) bool { return l.aborted[i].LastOffset >= to })
	l.aborted = slices.Concat(l.aborted[:i], kept, l.aborted[j:])
}
