// Package local is the metadata store of Strata's single node. A change
// is made durable by the store's commit function before the image moves
// on: on one node that is storage writing the log dir's files
// (strata-topics.json, strata-broker-configs.json) and opening or removing
// the logs, as before, so a data dir upgrades unchanged and a restart reads
// back every change a client was answered for. There being no quorum to
// agree with, a change is applied as soon as it is durable.
package local

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/strata-io/strata/metadata"
)

// Commit makes a change durable: records take old to new. An error refuses
// the change, unless it is Durable (the change was made, then a step after
// it failed).
type Commit func(old, new *metadata.Image, records []metadata.Record) error

// Durable marks err as one that came after the change was made durable:
// the store publishes the new image and Propose returns err (unwrapped).
func Durable(err error) error { return durableError{err} }

type durableError struct{ err error }

func (e durableError) Error() string { return e.err.Error() }
func (e durableError) Unwrap() error { return e.err }

// Store is a metadata.Store on one node.
type Store struct {
	img    atomic.Pointer[metadata.Image]
	commit Commit

	mu   sync.Mutex // serializes changes and the subscribers' calls
	subs map[int]func(old, new *metadata.Image)
	next int
}

var _ metadata.Store = (*Store)(nil)

// New returns a store whose current image is initial; commit, when not
// nil, makes each change durable before it is applied.
func New(initial *metadata.Image, commit Commit) *Store {
	s := &Store{commit: commit, subs: map[int]func(old, new *metadata.Image){}}
	s.img.Store(initial)
	return s
}

// Image is the current image; it takes no lock.
func (s *Store) Image() *metadata.Image { return s.img.Load() }

// Propose applies records as one change and tells the subscribers.
func (s *Store) Propose(records ...metadata.Record) (*metadata.Image, error) {
	return s.Update(func(*metadata.Image) ([]metadata.Record, error) { return records, nil })
}

// Update proposes the records decide returns on the current image.
func (s *Store) Update(decide func(img *metadata.Image) ([]metadata.Record, error)) (*metadata.Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.img.Load()
	records, err := decide(old)
	if err != nil || len(records) == 0 {
		return old, err
	}
	d := metadata.NewDelta(old)
	for i, r := range records {
		if err := d.Replay(r); err != nil {
			return old, fmt.Errorf("metadata change, record %d of %d: %w", i+1, len(records), err)
		}
	}
	img := d.Apply()
	var after error
	if s.commit != nil {
		if err := s.commit(old, img, records); err != nil {
			var durable durableError
			if !errors.As(err, &durable) {
				return old, err
			}
			after = durable.err
		}
	}
	s.img.Store(img)
	for id := 0; id < s.next; id++ {
		if fn := s.subs[id]; fn != nil {
			fn(old, img)
		}
	}
	return img, after
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
