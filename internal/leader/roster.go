package leader

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// DefaultForget is how long a Roster keeps a candidate that is out of
// sight (and whose credential neither expired nor was revoked).
const DefaultForget = 24 * time.Hour

// Member is a prober the ring lists by its credential, as the Roster sees it.
type Member struct {
	Name    string
	Expires time.Time // its credential's NotAfter
	Serial  string    // its credential's serial ("serial:HEX"), for revocation
	Key     string    // its key's fingerprint ("sha256:HEX"), for revocation
	Scope   string    // its credential's scope (the URI): the group max_nodes bounds
	Max     int       // how many of the scope's nodes may be candidates (max_nodes; 0: 1)
}

// Roster remembers the writer candidates a ring without providers.writers
// has shown: every prober it listed by its credential (ADR 0016), until
// that credential expires, is revoked, or the prober has been out of sight
// for Forget. The election's safety needs every node to count the same
// candidates (a node writes only with fresh votes from a strict majority of
// them), so a candidate that goes away is not forgotten at once: a node in
// a partition's minority keeps counting the majority's candidates and
// writes nothing. The roster is saved in the state directory so a
// restarted node remembers it too. Not safe for concurrent use.
type Roster struct {
	Forget  time.Duration // default DefaultForget
	entries map[string]rosterEntry
}

type rosterEntry struct {
	Seen    time.Time `json:"seen"`
	Expires time.Time `json:"expires"`
	Serial  string    `json:"serial,omitempty"`
	Key     string    `json:"key,omitempty"`
	Scope   string    `json:"scope,omitempty"`
	Max     int       `json:"max,omitempty"`
}

// Observe records the probers listed by credential now; it reports
// whether the candidate set changed (a new one, or a renewed credential).
func (r *Roster) Observe(now time.Time, live []Member) bool {
	if r.entries == nil {
		r.entries = map[string]rosterEntry{}
	}
	changed := false
	for _, m := range live {
		old, ok := r.entries[m.Name]
		e := rosterEntry{Seen: now, Expires: m.Expires, Serial: m.Serial, Key: m.Key, Scope: m.Scope, Max: m.Max}
		if !ok || old.Expires != e.Expires || old.Serial != e.Serial || old.Key != e.Key {
			changed = true
		}
		r.entries[m.Name] = e
	}
	if r.cap() {
		changed = true
	}
	return changed
}

// cap keeps, of every credential scope, the max_nodes candidates seen
// last: a leaked credential of a site's prefix cannot grow the candidates
// (and the majority a writer needs) by inventing names. It reports whether
// it dropped any.
func (r *Roster) cap() bool {
	byScope := map[string][]string{}
	for n, e := range r.entries {
		if e.Scope != "" {
			byScope[e.Scope] = append(byScope[e.Scope], n)
		}
	}
	dropped := false
	for _, names := range byScope {
		limit := max(1, r.entries[names[0]].Max)
		if len(names) <= limit {
			continue
		}
		slices.SortFunc(names, func(a, b string) int {
			if c := r.entries[b].Seen.Compare(r.entries[a].Seen); c != 0 {
				return c // the latest seen first
			}
			return strings.Compare(a, b)
		})
		for _, n := range names[limit:] {
			delete(r.entries, n)
			dropped = true
		}
	}
	return dropped
}

// Prune forgets candidates whose credential expired or is revoked, or
// that have been out of sight for Forget; it returns the names forgotten.
func (r *Roster) Prune(now time.Time, revoked func(serial, key string) bool) []string {
	forget := r.Forget
	if forget <= 0 {
		forget = DefaultForget
	}
	var out []string
	for n, e := range r.entries {
		if !now.Before(e.Expires) || now.Sub(e.Seen) > forget || (revoked != nil && revoked(e.Serial, e.Key)) {
			delete(r.entries, n)
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Names are the remembered candidates, sorted.
func (r *Roster) Names() []string { return slices.Sorted(maps.Keys(r.entries)) }

// MarshalJSON saves the roster (the state file's content).
func (r *Roster) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Candidates map[string]rosterEntry `json:"candidates"`
	}{r.entries})
}

// Load reads a saved roster; an entry that makes no sense (no name, no
// expiry) is skipped and reported, the others are kept.
func (r *Roster) Load(b []byte) ([]string, error) {
	var st struct {
		Candidates map[string]rosterEntry `json:"candidates"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("writer candidates: %w", err)
	}
	r.entries = map[string]rosterEntry{}
	var skipped []string
	for n, e := range st.Candidates {
		if n == "" || len(n) > 128 || e.Expires.IsZero() || e.Seen.IsZero() {
			skipped = append(skipped, fmt.Sprintf("%q: no name, expiry or time seen", n))
			continue
		}
		r.entries[n] = e
	}
	slices.Sort(skipped)
	return skipped, nil
}
