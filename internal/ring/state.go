package ring

import (
	"slices"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/health"
)

type voteKey struct {
	prober  string
	subject health.Subject
}

// store holds every vote and summary this node knows, its own included.
// All methods are safe for concurrent use.
type store struct {
	mu        sync.Mutex
	votes     map[voteKey]health.Vote
	summaries map[string]summary
}

func newStore() *store {
	return &store{votes: map[voteKey]health.Vote{}, summaries: map[string]summary{}}
}

// put stores v if it is newer than what we have; it reports whether it was.
func (s *store) put(v health.Vote) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := voteKey{v.Prober, v.Subject}
	if old, ok := s.votes[k]; ok && !v.Newer(old) {
		return false
	}
	s.votes[k] = v
	return true
}

// putSummary stores sm if it is newer. A summary from a new incarnation of
// the prober (it restarted) drops the votes of the old one.
func (s *store) putSummary(sm summary) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.summaries[sm.Prober]; ok && old.At >= sm.At {
		return false
	}
	s.summaries[sm.Prober] = sm
	for k, v := range s.votes {
		if k.prober == sm.Prober && v.Seq < sm.Inc {
			delete(s.votes, k)
		}
	}
	return true
}

// matches reports whether the votes we hold for sm's prober are exactly the
// ones its summary describes.
func (s *store) matches(sm summary) bool {
	n, sum := s.digest(sm.Prober)
	return n == sm.Count && sum == sm.SeqSum
}

// digest describes the votes of one prober: how many and the sum of their sequences.
func (s *store) digest(prober string) (int, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.digestLocked(prober)
}

func (s *store) digestLocked(prober string) (n int, sum uint64) {
	for k, v := range s.votes {
		if k.prober == prober {
			n++
			sum += v.Seq
		}
	}
	return n, sum
}

// effective returns every vote with its ObservedAt moved forward to the
// prober's latest summary when that summary describes exactly the votes we
// hold for it.
func (s *store) effective() []health.Vote {
	s.mu.Lock()
	defer s.mu.Unlock()
	type dg struct {
		n   int
		sum uint64
	}
	digests := map[string]dg{}
	for k, v := range s.votes {
		d := digests[k.prober]
		d.n++
		d.sum += v.Seq
		digests[k.prober] = d
	}
	out := make([]health.Vote, 0, len(s.votes))
	for k, v := range s.votes {
		if sm, ok := s.summaries[k.prober]; ok {
			d := digests[k.prober]
			at := time.UnixMilli(sm.At)
			if sm.Count == d.n && sm.SeqSum == d.sum && at.After(v.ObservedAt) {
				v.ObservedAt = at
			}
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b health.Vote) int {
		if c := compareSubject(a.Subject, b.Subject); c != 0 {
			return c
		}
		return cmpString(a.Prober, b.Prober)
	})
	return out
}

func (s *store) full() fullState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := fullState{Votes: make([]wireVote, 0, len(s.votes)), Summaries: make([]summary, 0, len(s.summaries))}
	for _, v := range s.votes {
		st.Votes = append(st.Votes, toWire(v))
	}
	for _, sm := range s.summaries {
		st.Summaries = append(st.Summaries, sm)
	}
	return st
}

// prune drops votes of subjects keep rejects, and votes and summaries of
// probers whose latest word is older than maxAge.
func (s *store) prune(keep func(health.Subject) bool, now time.Time, maxAge time.Duration) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, v := range s.votes {
		last := v.ObservedAt
		if sm, ok := s.summaries[k.prober]; ok && time.UnixMilli(sm.At).After(last) {
			last = time.UnixMilli(sm.At)
		}
		if (keep != nil && !keep(k.subject)) || now.Sub(last) > maxAge {
			delete(s.votes, k)
			n++
		}
	}
	for p, sm := range s.summaries {
		if now.Sub(time.UnixMilli(sm.At)) > maxAge {
			delete(s.summaries, p)
		}
	}
	return n
}

func compareSubject(a, b health.Subject) int {
	if c := cmpString(a.Service, b.Service); c != 0 {
		return c
	}
	return cmpString(a.Target, b.Target)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
