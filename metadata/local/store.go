// Package local is the metadata store of Strata's single node. It keeps
// the image in memory only: on one node what is durable is the log dir's
// files (strata-topics.json, strata-broker-configs.json, producer-ids),
// written by storage and the coordinator as before, so a data dir upgrades
// unchanged; the broker proposes each change they record once it is
// (broker/image.go), and a proposal is applied at once, there being no
// quorum to agree with.
package local

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/strata-io/strata/metadata"
)

// Store is a metadata.Store on one node.
type Store struct {
	img atomic.Pointer[metadata.Image]

	mu   sync.Mutex // serializes changes and the subscribers' calls
	subs map[int]func(old, new *metadata.Image)
	next int
}

var _ metadata.Store = (*Store)(nil)

// New returns a store whose current image is initial.
func New(initial *metadata.Image) *Store {
	s := &Store{subs: map[int]func(old, new *metadata.Image){}}
	s.img.Store(initial)
	return s
}

// Image is the current image; it takes no lock.
func (s *Store) Image() *metadata.Image { return s.img.Load() }

// Propose applies records as one change and tells the subscribers.
func (s *Store) Propose(records ...metadata.Record) (*metadata.Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.img.Load()
	d := metadata.NewDelta(old)
	for i, r := range records {
		if err := d.Replay(r); err != nil {
			return old, fmt.Errorf("metadata change, record %d of %d: %w", i+1, len(records), err)
		}
	}
	img := d.Apply()
	s.img.Store(img)
	for id := 0; id < s.next; id++ {
		if fn := s.subs[id]; fn != nil {
			fn(old, img)
		}
	}
	return img, nil
}

// Subscribe calls fn after each change, in subscription order.
func (s *Store) Subscribe(fn func(old, new *metadata.Image)) (cancel func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.next
	s.next++
	s.subs[id] = fn
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.subs, id)
	}
}
