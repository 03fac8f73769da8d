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

// ErrTooMany is returned by Add when this node's own overrides are at
// their cap (Limits.PerOrigin, Limits.OriginBytes).
var ErrTooMany = errors.New("too many overrides")

// Store is this node's admin state, persisted in a file.
type Store struct {
	mu      sync.Mutex
	path    string // "" = memory only
	node    string
	st      State
	now     func() time.Time
	skipped []EntryError
	lim     Limits
	sign    func([]byte) []byte // this node's ring identity (nil: entries stay unsigned)
	keyID   string              // the identity the own entries are signed with
}

// keepTombstones is how long removals (and expired entries) are remembered.
const keepTombstones = 7 * 24 * time.Hour

// MaxEntries bounds the state (overrides in force, expired and removed
// ones kept for keepTombstones), with Limits: entries from the ring beyond
// the caps are refused, so the state always fits one ring message and
// this node's operators always have their own share.
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
	s := &Store{path: path, node: node, st: State{Entries: map[string]Entry{}}, now: time.Now, lim: DefaultLimits}
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

// Node is the name this store stamps its changes with.
func (s *Store) Node() string { return s.node }

// SetOrigin makes the caps per writer hold per origin (Limits.Origin): the
// ring's WriterOrigin, once the ring is known.
func (s *Store) SetOrigin(f func(writer string) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lim.Origin = f
}

// SetLimits replaces the caps (tests; DefaultLimits otherwise).
func (s *Store) SetLimits(l Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.Origin == nil {
		l.Origin = s.lim.Origin
	}
	s.lim = l
}

// Sign makes this node's changes signed with sign, this node's ring
// identity called keyID (a fingerprint): every entry this node wrote is
// signed again when keyID differs from the last one (a renewed credential
// rotates the key). Cheap when nothing changed; call it before the state
// goes out.
func (s *Store) Sign(sign func([]byte) []byte, keyID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sign == nil || keyID == s.keyID && s.sign != nil {
		return
	}
	s.sign, s.keyID = sign, keyID
	next := s.st.Clone()
	for id, e := range next.Entries {
		if e.Stamp.Node == s.node {
			next.Entries[id] = s.signed(id, e)
		}
	}
	s.st = next // the file keeps the old signatures until the next change: they are made again at start
}

func (s *Store) signed(id string, e Entry) Entry {
	if s.sign == nil {
		return e
	}
	e.Sig = s.sign(SigInput(id, e))
	return e
}

// Add records a new override from who, the name of the token that asked
// (kept as who@node, this node's name), and returns it with its id.
func (s *Store) Add(o Override, who string) (Override, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	o.ID, o.Who, o.At = NewID(), who+"@"+s.node, now.UTC()
	e := Entry{Override: o, Stamp: Stamp{At: now.UnixNano(), Node: s.node}}
	e = s.signed(o.ID, e)
	next := s.st.Clone()
	if !next.fitOwn(s.node, now, s.lim, entrySize(o.ID, e)) {
		return Override{}, fmt.Errorf("%w: this node keeps at most %d overrides (%d bytes) set on it, in force, expired or removed within a week; remove some first", ErrTooMany, s.lim.PerOrigin, s.lim.OriginBytes)
	}
	next.Entries[o.ID] = e
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
	next.Entries[id] = s.signed(id, e)
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

// Merge takes another node's state within the caps (State.MergeCapped)
// and reports whether ours changed and which entries it refused.
func (s *Store) Merge(other State) (bool, []EntryError, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.st.Clone()
	changed, refused := next.MergeCapped(other, s.node, s.now(), s.lim)
	if !changed {
		return false, refused, nil
	}
	return true, refused, s.saveLocked(next)
}

// Get returns the version held of entry id.
func (s *Store) Get(id string) (Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.st.Entries[id]
	return e, ok
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
	next.Entries[id] = s.signed(id, Entry{Override: o, Stamp: Stamp{At: max(now.UnixNano(), e.Stamp.At+1), Node: s.node}})
	if err := s.saveLocked(next); err != nil {
		return Override{}, err
	}
	return o, nil
}
