package coordinator

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/strata-io/strata/storage/vfs"
)

// producerIDsFile records how far producer id allocation has reached.
const producerIDsFile = "producer-ids"

// producerIDBlockSize is how many ids are reserved per write of the file.
// Like Kafka's ProducerIdManager blocks (1000 ids), it trades ids skipped on
// a crash for fewer synchronous writes.
const producerIDBlockSize = 1000

// producerIDsVersion is the first line of the producer-ids file.
const producerIDsVersion = 1

// ProducerIDs hands out producer ids that are never reused, even across
// restarts and crashes: before any id of a block is returned, the end of the
// block is durably written to <dir>/producer-ids, and a restart continues
// from that end. Ids of a block not fully used before a restart are skipped.
//
// File format (text): "1\n<end>\n", where 1 is the format version and <end>
// is the exclusive upper bound of every id handed out so far.
type ProducerIDs struct {
	fsys vfs.FS
	path string

	mu       sync.Mutex
	next     int64 // next id to hand out
	blockEnd int64 // exclusive end of the persisted block
	onBlock  func(end int64)
	allocate func() (start, end int64, err error) // nil: blocks come from the file
}

// OpenProducerIDs reads <dir>/producer-ids (absent means nothing was ever
// allocated) and returns an allocator continuing after it.
func OpenProducerIDs(fsys vfs.FS, dir string) (*ProducerIDs, error) {
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("producer ids: create %s: %w", dir, err)
	}
	p := &ProducerIDs{fsys: fsys, path: filepath.Join(dir, producerIDsFile)}
	end, err := p.readEnd()
	if err != nil {
		return nil, err
	}
	p.next, p.blockEnd = end, end
	return p, nil
}

func (p *ProducerIDs) readEnd() (int64, error) {
	f, err := p.fsys.OpenFile(p.path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("producer ids: open %s: %w", p.path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return 0, fmt.Errorf("producer ids: read %s: %w", p.path, err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 || lines[0] != strconv.Itoa(producerIDsVersion) {
		return 0, fmt.Errorf("producer ids: %s: malformed content %q", p.path, data)
	}
	end, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || end < 0 {
		return 0, fmt.Errorf("producer ids: %s: malformed block end %q", p.path, lines[1])
	}
	return end, nil
}

// Next returns a producer id never returned before by any ProducerIDs on this
// directory. It blocks on a file write and fsync once per block.
func (p *ProducerIDs) Next() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next == p.blockEnd && p.allocate != nil {
		start, end, err := p.allocate()
		if err != nil {
			return 0, err
		}
		p.next, p.blockEnd = start, end
	}
	if p.next == p.blockEnd {
		end := p.blockEnd + producerIDBlockSize
		if err := p.persist(end); err != nil {
			return 0, err
		}
		p.blockEnd = end
		if p.onBlock != nil {
			p.onBlock(end)
		}
	}
	id := p.next
	p.next++
	return id, nil
}

// AllocateFrom makes every block come from allocate instead of the file: a
// cluster's brokers share one id space, whose blocks the active controller
// hands out (AllocateProducerIds) from the metadata image, which records
// each. allocate returns the block [start, end).
func (p *ProducerIDs) AllocateFrom(allocate func() (start, end int64, err error)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.allocate = allocate
	p.blockEnd = p.next // the file's block is this node's alone
}

// OnBlock makes fn be told the end of the ids reserved so far: at once, and
// after each new block (or reservation) is durable. The metadata image
// records it, as Kafka's ProducerIdsRecord. fn runs under the allocator's
// lock and must not call it.
func (p *ProducerIDs) OnBlock(fn func(end int64)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onBlock = fn
	fn(p.blockEnd)
}

// Reserve makes sure no id below end is ever handed out (ids another
// broker, Apache Kafka, used on this log dir), durably before it returns.
func (p *ProducerIDs) Reserve(end int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if end <= p.next {
		return nil
	}
	if end > p.blockEnd {
		if err := p.persist(end); err != nil {
			return err
		}
		p.blockEnd = end
		if p.onBlock != nil {
			p.onBlock(end)
		}
	}
	p.next = end
	return nil
}

// persist atomically replaces the file (tmp, fsync, rename, dir fsync) so a
// crash leaves either the old or the new block end, never a torn one.
func (p *ProducerIDs) persist(end int64) error {
	tmp := p.path + ".tmp"
	f, err := p.fsys.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("producer ids: create %s: %w", tmp, err)
	}
	if _, err := fmt.Fprintf(f, "%d\n%d\n", producerIDsVersion, end); err != nil {
		f.Close()
		return fmt.Errorf("producer ids: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("producer ids: fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("producer ids: close %s: %w", tmp, err)
	}
	if err := p.fsys.Rename(tmp, p.path); err != nil {
		return fmt.Errorf("producer ids: rename %s: %w", tmp, err)
	}
	if err := p.fsys.SyncDir(filepath.Dir(p.path)); err != nil {
		return fmt.Errorf("producer ids: fsync dir %s: %w", filepath.Dir(p.path), err)
	}
	return nil
}
