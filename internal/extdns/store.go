package extdns

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"sync"
)

// ChangeError is a POST /records that is refused whole: the record (its
// list, index, name and type), the field and why; Conflict marks a change
// that contradicts what is stored (409) rather than a bad record (400).
type ChangeError struct {
	Record   string // e.g. create[2] app.gslb.example.com A
	Err      error
	Conflict bool
}

func (e *ChangeError) Error() string { return e.Record + ": " + e.Err.Error() }
func (e *ChangeError) Unwrap() error { return e.Err }

// Store holds the records of every cluster in memory, and in a state file
// when it has one. Safe for concurrent use.
type Store struct {
	path string // "" keeps the records in memory only

	mu   sync.Mutex
	recs map[string]map[Key]*Endpoint // cluster → key → normalized record
	gen  uint64                       // counts applied changes
}

// stateFile is the JSON of the state file: cluster → records.
type stateFile struct {
	Clusters map[string][]*Endpoint `json:"clusters"`
}

// OpenStore opens the store persisted at path ("": in memory only). A
// missing file is an empty store; an unreadable one gives an empty store
// and the error, for the caller to log: ExternalDNS writes every record
// again at its next sync.
func OpenStore(path string) (*Store, error) {
	s := &Store{path: path, recs: map[string]map[Key]*Endpoint{}}
	if path == "" {
		return s, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("externaldns state %s: %w", path, err)
	}
	var st stateFile
	if err := json.Unmarshal(data, &st); err != nil {
		return s, fmt.Errorf("externaldns state %s: %w (starting empty)", path, err)
	}
	for cluster, eps := range st.Clusters {
		m := make(map[Key]*Endpoint, len(eps))
		for _, e := range eps {
			if e != nil {
				m[e.Key()] = e
			}
		}
		s.recs[cluster] = m
	}
	return s, nil
}

// Records are cluster's records, sorted by key (copies).
func (s *Store) Records(cluster string) []*Endpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Endpoint, 0, len(s.recs[cluster]))
	for _, e := range s.recs[cluster] {
		out = append(out, e.clone())
	}
	sortEndpoints(out)
	return out
}

// All is every cluster's records, each list sorted by key. The records
// are shared: the caller must not modify them (Apply replaces, never edits).
func (s *Store) All() map[string][]*Endpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]*Endpoint, len(s.recs))
	for c, m := range s.recs {
		out[c] = slices.Collect(maps.Values(m))
		sortEndpoints(out[c])
	}
	return out
}

// Counts is the number of records of each cluster.
func (s *Store) Counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.recs))
	for c, m := range s.recs {
		out[c] = len(m)
	}
	return out
}

// Generation counts the changes applied since the store opened.
func (s *Store) Generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// Apply applies ch to cluster's records atomically: every record is
// normalized, those it stores (updateNew, create) checked by r first, and
// either all of ch is applied or none (a *ChangeError says which record
// failed). Deletes, then updates, then creates; deleting a record that is
// not there is not an error (a retried request), creating one that is
// there with other content is a conflict. A delete (and an update's old
// record) is not checked against r: the cluster may always remove its own
// records, also those the current config would no longer accept (a zone
// removed, a name now claimed by another namespace). changed is false when
// ch leaves the records as they were.
func (s *Store) Apply(cluster string, ch *Changes, r *Rules) (changed bool, err error) {
	lists := []struct {
		name  string
		eps   []*Endpoint
		check bool
	}{{"delete", ch.Delete, false}, {"updateOld", ch.UpdateOld, false}, {"updateNew", ch.UpdateNew, true}, {"create", ch.Create, true}}
	norm := make([][]*Endpoint, len(lists))
	for i, l := range lists {
		for j, e := range l.eps {
			if e == nil {
				return false, &ChangeError{Record: l.name + "[" + strconv.Itoa(j) + "]", Err: errors.New("is null")}
			}
			n := r.Normalize(e)
			if l.check {
				if err := r.Check(n); err != nil {
					return false, &ChangeError{Record: fmt.Sprintf("%s[%d] %.80s %.16s", l.name, j, n.DNSName, n.RecordType), Err: err}
				}
			}
			norm[i] = append(norm[i], n)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.recs[cluster]
	next := maps.Clone(cur)
	if next == nil {
		next = map[Key]*Endpoint{}
	}
	for _, e := range norm[0] {
		delete(next, e.Key())
	}
	for _, e := range norm[2] {
		next[e.Key()] = e
	}
	for j, e := range norm[3] {
		if old, ok := next[e.Key()]; ok && !reflect.DeepEqual(old, e) {
			return false, &ChangeError{Record: fmt.Sprintf("create[%d] %s %s", j, e.DNSName, e.RecordType), Conflict: true,
				Err: errors.New("exists already with other targets or properties (GET /records shows it; update it instead)")}
		}
		next[e.Key()] = e
	}
	if n := len(next); n > r.limits.MaxRecords && n > len(cur) {
		return false, &ChangeError{Record: "records", Err: fmt.Errorf("the cluster would hold %d records (allowed at most %d)", n, r.limits.MaxRecords)}
	}
	if n, was := bytesOf(next), bytesOf(cur); n > r.limits.MaxBytes && n > was {
		return false, &ChangeError{Record: "records", Err: fmt.Errorf("the cluster's records would weigh %d bytes (allowed at most %d)", n, r.limits.MaxBytes)}
	}
	if maps.EqualFunc(cur, next, func(a, b *Endpoint) bool { return reflect.DeepEqual(a, b) }) {
		return false, nil
	}
	all := maps.Clone(s.recs)
	all[cluster] = next
	if err := s.save(all); err != nil {
		return false, err
	}
	s.recs = all
	s.gen++
	return true, nil
}

// Dropped is a stored record that Prune removed, and why.
type Dropped struct {
	Cluster string
	Record  *Endpoint
	Reason  string
}

// Prune brings the stored records (those of a state file, written under
// an earlier config) to the rules r: each is normalized, and one that r
// refuses, or of a cluster that keep does not keep (nil: every cluster),
// is dropped and returned, for the caller to log. The state file is
// written again when something changed; its error is returned with the
// records dropped from memory all the same.
func (s *Store) Prune(r *Rules, keep func(cluster string) bool) ([]Dropped, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var dropped []Dropped
	all := make(map[string]map[Key]*Endpoint, len(s.recs))
	for _, c := range slices.Sorted(maps.Keys(s.recs)) {
		eps := slices.Collect(maps.Values(s.recs[c]))
		sortEndpoints(eps)
		m := make(map[Key]*Endpoint, len(eps))
		for _, e := range eps {
			n := r.Normalize(e)
			switch err := r.Check(n); {
			case keep != nil && !keep(c):
				dropped = append(dropped, Dropped{c, n, fmt.Sprintf("cluster %q has no client in server.externaldns.clients", c)})
			case err != nil:
				dropped = append(dropped, Dropped{c, n, err.Error()})
			default:
				m[n.Key()] = n
			}
		}
		if len(m) > 0 {
			all[c] = m
		}
	}
	if reflect.DeepEqual(all, s.recs) {
		return nil, nil
	}
	s.recs = all
	s.gen++
	return dropped, s.save(all)
}

// save writes the state file with the records all (atomically: a temp
// file renamed into place; mode 600). Called with mu held, so that no
// other change writes between the snapshot and the rename.
func (s *Store) save(all map[string]map[Key]*Endpoint) error {
	if s.path == "" {
		return nil
	}
	st := stateFile{Clusters: make(map[string][]*Endpoint, len(all))}
	for c, m := range all {
		st.Clusters[c] = slices.Collect(maps.Values(m))
	}
	for _, eps := range st.Clusters {
		sortEndpoints(eps)
	}
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".externaldns-*.json")
	if err != nil {
		return fmt.Errorf("externaldns state %s: %w", s.path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("externaldns state %s: %w", s.path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("externaldns state %s: %w", s.path, err)
	}
	if err := os.Rename(tmp.Name(), s.path); err != nil {
		return fmt.Errorf("externaldns state %s: %w", s.path, err)
	}
	return nil
}

// bytesOf is the weight of records against Limits.MaxBytes.
func bytesOf(records map[Key]*Endpoint) int {
	n := 0
	for _, e := range records {
		n += e.size()
	}
	return n
}
