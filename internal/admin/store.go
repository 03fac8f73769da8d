package admin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
)

// ErrNotFound is returned for an unknown or already removed override id.
var ErrNotFound = errors.New("no such override")

// ErrTooMany is returned by Add when the state holds MaxEntries entries.
var ErrTooMany = errors.New("too many overrides")

// Store is this node's admin state, persisted in a file.
type Store struct {
	mu      sync.Mutex
	path    string // "" = memory only
	node    string
	st      State
	now     func() time.Time
	skipped []EntryError
}

// keepTombstones is how long removals (and expired entries) are remembered.
const keepTombstones = 7 * 24 * time.Hour

// MaxEntries bounds the state (overrides in force, expired and removed
// ones kept for keepTombstones): beyond it Add refuses, so the state always
// fits one ring message.
const MaxEntries = 2000

// Open loads the state file (a missing file is an empty state; a file that
// is not JSON is an error naming it: dropping a drain silently would be
// worse). Entries that fail CheckEntry (the shape only: the config may
// have changed) are skipped, never a reason not to start; Skipped says
// which and why. skew bounds future stamps (0: the default 10s).
func Open(path, node string, skew time.Duration) (*Store, error) {
	if skew <= 0 {
		skew = model.DefaultMaxClockSkew
	}
	s := &Store{path: path, node: node, st: State{Entries: map[string]Entry{}}, now: time.Now}
	if path == "" {
		return s, nil
	}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("admin state %s: %w", path, err)
	}
	st, err := Unmarshal(b)
	if err != nil {
		return nil, fmt.Errorf("admin state %s is not valid JSON (%v): fix or move it away; it holds the drains and forces in force", path, err)
	}
	s.st, s.skipped = st.Sanitize(nil, s.now(), skew)
	return s, nil
}

// Skipped lists the entries of the state file that Open left out, and why.
func (s *Store) Skipped() []EntryError { return s.skipped }

// Path is the state file ("" = memory only).
func (s *Store) Path() string { return s.path }

// Add records a new override from who and returns it with its id.
func (s *Store) Add(o Override, who string) (Override, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if len(s.st.Entries) >= MaxEntries {
		return Override{}, fmt.Errorf("%w: %d overrides are kept (in force, expired or removed within a week); remove some first", ErrTooMany, len(s.st.Entries))
	}
	o.ID, o.Who, o.At = NewID(), who, now.UTC()
	next := s.st.Clone()
	next.Entries[o.ID] = Entry{Override: o, Stamp: Stamp{At: now.UnixNano(), Node: s.node}}
	if err := s.saveLocked(next); err != nil {
		return Override{}, err
	}
	return o, nil
}

// Remove ends an override (a tombstone, so other nodes learn it too).
func (s *Store) Remove(id string) (Override, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.st.Entries[id]
	if !ok || e.Deleted {
		return Override{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	now := s.now()
	next := s.st.Clone()
	e.Deleted, e.Stamp = true, Stamp{At: max(now.UnixNano(), e.Stamp.At+1), Node: s.node}
	next.Entries[id] = e
	if err := s.saveLocked(next); err != nil {
		return Override{}, err
	}
	return e.Override, nil
}

// Active returns the overrides in force now.
func (s *Store) Active() []Override {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Active(s.now())
}

// State returns a copy of the whole state (for the ring).
func (s *Store) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Clone()
}

// Merge takes another node's state and reports whether ours changed.
func (s *Store) Merge(other State) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.st.Clone()
	if !next.Merge(other) {
		return false, nil
	}
	return true, s.saveLocked(next)
}

// saveLocked writes next atomically (temp file, fsync, rename) and only
// then makes it current: a failed write changes nothing.
func (s *Store) saveLocked(next State) error {
	next.Prune(s.now(), keepTombstones)
	if s.path != "" {
		dir := filepath.Dir(s.path)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("admin state %s: %w", s.path, err)
		}
		f, err := os.CreateTemp(dir, ".meridian-admin-*")
		if err != nil {
			return fmt.Errorf("admin state %s: %w", s.path, err)
		}
		tmp := f.Name()
		_, werr := f.Write(next.Marshal())
		serr := f.Sync()
		cerr := f.Close()
		if err := errors.Join(werr, serr, cerr); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("admin state %s: %w", s.path, err)
		}
		if err := os.Rename(tmp, s.path); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("admin state %s: %w", s.path, err)
		}
		if d, err := os.Open(dir); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	s.st = next
	return nil
}

// Update writes a new version of the override id in force: f gets the
// current one and returns the next (a shift's progress; id, kind, author
// and time are kept). The new version wins over the old on every node.
func (s *Store) Update(id string, f func(Override) (Override, error)) (Override, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.st.Entries[id]
	now := s.now()
	if !ok || e.Deleted || !e.Override.Active(now) {
		return Override{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	o, err := f(e.Override)
	if err != nil {
		return Override{}, err
	}
	o.ID, o.Kind, o.Who, o.At = e.Override.ID, e.Override.Kind, e.Override.Who, e.Override.At
	if err := o.validate(nil); err != nil {
		return Override{}, err
	}
	next := s.st.Clone()
	next.Entries[id] = Entry{Override: o, Stamp: Stamp{At: max(now.UnixNano(), e.Stamp.At+1), Node: s.node}}
	if err := s.saveLocked(next); err != nil {
		return Override{}, err
	}
	return o, nil
}
