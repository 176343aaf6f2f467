package quorum

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/strata-io/strata/metadata"
)

// fsm is the state machine of the metadata log (raft.FSM): the image, each
// committed batch replayed onto it. Raft calls Apply, Snapshot and Restore
// from one goroutine, in log order, the same on every node.
type fsm struct {
	img atomic.Pointer[metadata.Image]

	mu   sync.Mutex // serializes the subscribers' calls with Subscribe
	subs map[int]func(old, new *metadata.Image)
	next int
}

var _ raft.FSM = (*fsm)(nil)

func newFSM() *fsm {
	f := &fsm{subs: map[int]func(old, new *metadata.Image){}}
	f.img.Store(metadata.Empty)
	return f
}

// applied is what Apply returns to the proposer (ApplyFuture.Response).
type applied struct {
	img *metadata.Image
	err error
}

// Apply replays one batch as one change: every record or, if one does not
// fit or the batch does not decode, none. A refused batch changes nothing
// on any node, as every node refuses it alike.
func (f *fsm) Apply(l *raft.Log) any {
	old := f.img.Load()
	records, err := metadata.DecodeBatch(l.Data)
	if err != nil {
		return applied{img: old, err: fmt.Errorf("metadata log entry %d: %w", l.Index, err)}
	}
	d := metadata.NewDelta(old)
	for i, r := range records {
		if err := d.Replay(r); err != nil {
			return applied{img: old, err: fmt.Errorf("metadata change, record %d of %d: %w", i+1, len(records), err)}
		}
	}
	img := d.Apply()
	f.publish(old, img)
	return applied{img: img}
}

func (f *fsm) publish(old, img *metadata.Image) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.img.Store(img)
	for id := 0; id < f.next; id++ {
		if fn := f.subs[id]; fn != nil {
			fn(old, img)
		}
	}
}

func (f *fsm) subscribe(fn func(old, new *metadata.Image)) (cancel func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.next
	f.next++
	f.subs[id] = fn
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs, id)
	}
}

// Snapshot captures the current image; Persist writes it as one batch.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return snapshot{img: f.img.Load()}, nil
}

// Restore replaces the image with a snapshot's and tells the subscribers.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("read metadata snapshot: %w", err)
	}
	records, err := metadata.DecodeBatch(data)
	if err != nil {
		return fmt.Errorf("metadata snapshot: %w", err)
	}
	d := metadata.NewDelta(metadata.Empty)
	for i, r := range records {
		if err := d.Replay(r); err != nil {
			return fmt.Errorf("metadata snapshot, record %d of %d: %w", i+1, len(records), err)
		}
	}
	f.publish(f.img.Load(), d.Apply())
	return nil
}

type snapshot struct{ img *metadata.Image }

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	data, err := metadata.EncodeBatch(metadata.ImageRecords(s.img))
	if err == nil {
		_, err = sink.Write(data)
	}
	if err != nil {
		sink.Cancel()
		return fmt.Errorf("write metadata snapshot: %w", err)
	}
	return sink.Close()
}

func (snapshot) Release() {}
