package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/strata-io/strata/internal/batch"
	"go.uber.org/zap"
)

// finishSwaps resolves what an interrupted cleaning left, as Kafka's
// LogLoader does: .cleaned files are deleted (the swap never committed);
// a <base>.log.swap is a complete cleaned segment whose swap committed, so
// every segment overlapping [base, its next offset) is deleted and the
// .swap files are renamed into place (a missing index swap leaves the index
// to be rebuilt, a missing .txnindex swap means the cleaned segment kept no
// abort entry); index .swap files without their .log.swap are deleted.
func (l *Log) finishSwaps() error {
	ents, err := l.fsys.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", l.dir, err)
	}
	var swaps []int64
	var orphans []string
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, deletedExt) && l.isDoomed(filepath.Join(l.dir, name)):
			// Renamed by this process, removed when file.delete.delay.ms is up.
		case strings.HasSuffix(name, cleanedExt) || strings.HasSuffix(name, deletedExt):
			orphans = append(orphans, name)
		case strings.HasSuffix(name, logExt+swapExt):
			base, err := strconv.ParseInt(strings.TrimSuffix(name, logExt+swapExt), 10, 64)
			if err != nil {
				orphans = append(orphans, name)
				continue
			}
			swaps = append(swaps, base)
		}
	}
	changed := len(orphans) > 0 || len(swaps) > 0
	for _, name := range orphans {
		if err := l.removeFiles(l.dir + "/" + name); err != nil {
			return fmt.Errorf("remove cleaner leftover: %w", err)
		}
	}
	for _, base := range swaps {
		if err := l.finishSwap(base); err != nil {
			return err
		}
	}
	// Index swaps whose .log.swap was never written.
	ents, err = l.fsys.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", l.dir, err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), swapExt) {
			changed = true
			if err := l.removeFiles(l.dir + "/" + e.Name()); err != nil {
				return fmt.Errorf("remove cleaner leftover: %w", err)
			}
		}
	}
	if changed {
		if err := l.fsys.SyncDir(l.dir); err != nil {
			return fmt.Errorf("finish cleaner swaps: %w", err)
		}
	}
	return nil
}

// finishSwap completes the swap of the cleaned segment at base.
func (l *Log) finishSwap(base int64) error {
	path := swapPath(l.dir, base, logExt)
	f, err := l.fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("stat %s: %w", path, err)
	}
	end := base
	var hb [batch.HeaderSize]byte
	for pos := int64(0); pos < fi.Size(); {
		h, err := readHeader(f, pos, fi.Size(), &hb)
		if err != nil {
			break // recovery of the segment cuts it here
		}
		end = h.NextOffset()
		pos += h.Size()
	}
	_ = f.Close()
	bases, err := listSegments(l.fsys, l.dir)
	if err != nil {
		return err
	}
	for _, b := range bases {
		if b >= base && (b < end || b == base) {
			s := &segment{fsys: l.fsys, dir: l.dir, base: b}
			if err := s.remove(); err != nil {
				return fmt.Errorf("finish swap of %d: %w", base, err)
			}
		}
	}
	for _, ext := range cleanedExts {
		err := l.fsys.Rename(swapPath(l.dir, base, ext), segmentPath(l.dir, base, ext))
		if err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("finish swap of %d: %w", base, err)
		}
	}
	l.logger.Warn("completed an interrupted cleaner swap", zap.Int64("segment", base), zap.Int64("end", end))
	return nil
}
