package admin

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Limits bound the admin state a node keeps, per writer (an entry's
// Stamp.Node) and in all. A node's own share is kept apart: entries merged
// from the ring never take the capacity kept for the overrides its operators set, and
// the whole state (sent over the ring as one message) stays under the 1 MiB
// that peers accept.
type Limits struct {
	Entries     int // all entries, in force, expired and removed (default MaxEntries)
	PerOrigin   int // entries written by one node (default MaxPerOrigin)
	Bytes       int // the state's encoded size (default MaxStateBytes)
	OriginBytes int // the encoded size of one node's entries (default MaxOriginBytes)

	// Origin names the identity behind a writer (nil: the writer's name).
	// The per-writer caps hold per origin: names that sign with one key
	// (a prefix entry's replicas, a shared credential) share one share.
	Origin func(writer string) string
}

func (l Limits) origin(w string) string {
	if l.Origin == nil {
		return w
	}
	return l.Origin(w)
}

// Defaults of Limits. MaxStateBytes is what the ring may carry: base64 in
// a signed envelope makes it 4/3 larger, still under the 1 MiB a peer
// accepts (internal/ring maxShared).
const (
	MaxPerOrigin   = 500
	MaxStateBytes  = 640 << 10
	MaxOriginBytes = 160 << 10
)

// DefaultLimits are the limits of a Store.
var DefaultLimits = Limits{Entries: MaxEntries, PerOrigin: MaxPerOrigin, Bytes: MaxStateBytes, OriginBytes: MaxOriginBytes}

// minTombstoneAge is how long a removal is kept even under pressure: by
// then every node has learned it (push/pull syncs run every minute), so an
// old add arriving late cannot bring the override back.
const minTombstoneAge = time.Hour

// entrySize is what one entry adds to the encoded state.
func entrySize(id string, e Entry) int {
	b, _ := json.Marshal(e)
	return len(b) + len(id) + 4 // "id":…,
}

// usage is what a set of entries takes.
type usage struct{ n, bytes int }

// ledger tracks the entries of a state by writer while it is trimmed: the
// size of every entry is computed once.
type ledger struct {
	s      *State
	origin func(string) string        // writer -> the origin its caps are kept for
	size   map[string]int             // id -> encoded size of the version in s
	by     map[string]map[string]bool // origin -> ids
	usage  map[string]usage           // origin -> what its entries take
}

func newLedger(s *State, lim Limits) *ledger {
	l := &ledger{s: s, origin: lim.origin, size: make(map[string]int, len(s.Entries)), by: map[string]map[string]bool{}, usage: map[string]usage{}}
	for id, e := range s.Entries {
		l.add(id, e)
	}
	return l
}

func (l *ledger) add(id string, e Entry) {
	n := entrySize(id, e)
	l.s.Entries[id], l.size[id] = e, n
	w := l.origin(e.Stamp.Node)
	if l.by[w] == nil {
		l.by[w] = map[string]bool{}
	}
	l.by[w][id] = true
	u := l.usage[w]
	l.usage[w] = usage{u.n + 1, u.bytes + n}
}

func (l *ledger) drop(id string) {
	e, ok := l.s.Entries[id]
	if !ok {
		return
	}
	w := l.origin(e.Stamp.Node)
	u := l.usage[w]
	l.usage[w] = usage{u.n - 1, u.bytes - l.size[id]}
	delete(l.by[w], id)
	delete(l.size, id)
	delete(l.s.Entries, id)
}

// sum is what the writers of ws take together.
func (l *ledger) sum(ws []string) usage {
	var t usage
	for _, w := range ws {
		t.n += l.usage[w].n
		t.bytes += l.usage[w].bytes
	}
	return t
}

// collectable lists the entries of writers ws that may go before their
// week is over when space is needed: expired overrides first, then removals
// at least minTombstoneAge old, oldest first.
func (l *ledger) collectable(now time.Time, ws []string) []string {
	type cand struct {
		id   string
		rank int // 0 expired, 1 tombstone
		at   int64
	}
	var cs []cand
	for _, w := range ws {
		for id := range l.by[w] {
			e := l.s.Entries[id]
			switch {
			case !e.Deleted && !e.Override.Active(now):
				cs = append(cs, cand{id, 0, e.Stamp.At})
			case e.Deleted && now.Sub(time.Unix(0, e.Stamp.At)) >= minTombstoneAge:
				cs = append(cs, cand{id, 1, e.Stamp.At})
			}
		}
	}
	slices.SortFunc(cs, func(a, b cand) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.at, b.at), cmp.Compare(a.id, b.id))
	})
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.id
	}
	return out
}

// fit makes the entries of writers ws fit n entries and b bytes:
// collectable ones go first; then the versions just taken (taken: id ->
// the version held before, nil for none) are given back, newest first,
// each one refused with reason. Entries held before are never dropped but
// for collectable ones. It reports whether it collected any.
func (l *ledger) fit(now time.Time, ws []string, n, b int, taken map[string]*Entry, reason string) (bool, []EntryError) {
	over := func() bool { u := l.sum(ws); return u.n > n || u.bytes > b }
	if !over() {
		return false, nil
	}
	collected := false
	for _, id := range l.collectable(now, ws) {
		if _, fresh := taken[id]; fresh {
			continue // a version just taken is refused below, not collected
		}
		l.drop(id)
		collected = true
		if !over() {
			return true, nil
		}
	}
	in := map[string]bool{}
	for _, w := range ws {
		in[w] = true
	}
	var ids []string
	for id := range taken {
		if e, ok := l.s.Entries[id]; ok && in[l.origin(e.Stamp.Node)] {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int {
		return cmp.Or(-cmp.Compare(l.s.Entries[a].Stamp.At, l.s.Entries[b].Stamp.At), cmp.Compare(a, b))
	})
	var refused []EntryError
	for _, id := range ids {
		if !over() {
			break
		}
		e := l.s.Entries[id]
		l.drop(id)
		if prev := taken[id]; prev != nil {
			l.add(id, *prev)
		}
		delete(taken, id)
		refused = append(refused, EntryError{ID: id, Reason: reason, Err: fmt.Errorf("written by %q: %s", e.Stamp.Node, capText(reason, n, b))})
	}
	return collected, refused
}

func capText(reason string, n, b int) string {
	if reason == RejectCapOrigin {
		return fmt.Sprintf("that node's entries are at the cap (%d entries, %d bytes per node)", n, b)
	}
	return fmt.Sprintf("the other nodes' entries are at the cap (%d entries, %d bytes; this node keeps the rest for its own operators)", n, b)
}

// MergeCapped takes the entries of other that are newer than ours, within
// lim: per writer (PerOrigin, OriginBytes; self's own entries included),
// and for every writer but self together (Entries - PerOrigin, Bytes -
// OriginBytes). Expired entries and old removals are collected first; what
// still does not fit is refused and returned. It reports whether s changed.
func (s *State) MergeCapped(other State, self string, now time.Time, lim Limits) (bool, []EntryError) {
	if s.Entries == nil {
		s.Entries = map[string]Entry{}
	}
	l := newLedger(s, lim)
	taken := map[string]*Entry{}
	writers := map[string]bool{}
	for id, e := range other.Entries {
		cur, ok := s.Entries[id]
		if ok && !e.Newer(cur) {
			continue
		}
		if ok {
			taken[id] = &cur
			l.drop(id)
		} else {
			taken[id] = nil
		}
		writers[l.origin(e.Stamp.Node)] = true
		l.add(id, e)
	}
	if len(taken) == 0 {
		return false, nil
	}
	var refused []EntryError
	collected := false
	for _, w := range slices.Sorted(maps.Keys(writers)) {
		c, r := l.fit(now, []string{w}, lim.PerOrigin, lim.OriginBytes, taken, RejectCapOrigin)
		collected, refused = collected || c, append(refused, r...)
	}
	var others []string
	mine := l.origin(self)
	for w := range l.by {
		if w != mine {
			others = append(others, w)
		}
	}
	c, r := l.fit(now, others, lim.Entries-lim.PerOrigin, lim.Bytes-lim.OriginBytes, taken, RejectCapTotal)
	collected, refused = collected || c, append(refused, r...)
	return collected || len(taken) > 0, refused
}

// fitOwn makes space for one more entry of size extra written by self,
// collecting self's expired entries and old removals first; false: no space left.
func (s *State) fitOwn(self string, now time.Time, lim Limits, extra int) bool {
	l := newLedger(s, lim)
	ws := []string{l.origin(self)}
	fits := func() bool { u := l.sum(ws); return u.n+1 <= lim.PerOrigin && u.bytes+extra <= lim.OriginBytes }
	if fits() {
		return true
	}
	for _, id := range l.collectable(now, ws) {
		l.drop(id)
		if fits() {
			return true
		}
	}
	return false
}

// Size is the encoded size of s (what the ring carries).
func (s State) Size() int { return len(s.Marshal()) }
