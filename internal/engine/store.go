package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
)

// Store publishes snapshots. Readers call Load on every query (an atomic
// pointer read, no lock); writers compile and Swap. Compiles are serialized
// by the Store so generations increase by one per published snapshot.
type Store struct {
	cur  atomic.Pointer[Snapshot]
	mu   sync.Mutex // serializes Publish
	gen  uint64
	subs []func(*Snapshot)
}

// Subscribe registers f to be called after every publish (under the
// writer's lock, so calls are ordered). f must not block.
func (st *Store) Subscribe(f func(*Snapshot)) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.subs = append(st.subs, f)
}

// Load returns the current snapshot, or nil before the first Publish.
func (st *Store) Load() *Snapshot { return st.cur.Load() }

// Publish compiles d with opts and, on success, makes it current. On error
// the previous snapshot keeps serving.
func (st *Store) Publish(d *model.Desired, opts Options) (*Snapshot, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	opts.Generation = st.gen + 1
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	s, err := Compile(d, opts)
	if err != nil {
		return nil, err
	}
	st.gen++
	st.cur.Store(s)
	for _, f := range st.subs {
		f(s)
	}
	return s, nil
}
