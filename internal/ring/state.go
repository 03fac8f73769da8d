package ring

import (
	"slices"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/vote"
)

type voteKey struct {
	prober  string
	subject vote.Subject
}

// store holds every vote and summary this node knows, its own included,
// each with the signed envelope it arrived in (passed on unchanged in
// push/pull syncs, so receivers check the originator's signature).
// All methods are safe for concurrent use.
type store struct {
	mu        sync.Mutex
	votes     map[voteKey]vote.Vote
	raw       map[voteKey][]byte
	summaries map[string]summary
	rawSum    map[string][]byte
}

func newStore() *store {
	return &store{votes: map[voteKey]vote.Vote{}, raw: map[voteKey][]byte{}, summaries: map[string]summary{}, rawSum: map[string][]byte{}}
}

// newer reports whether v would replace what we hold (a cheap check made
// before a signature is verified).
func (s *store) newer(v vote.Vote) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.votes[voteKey{v.Prober, v.Subject}]
	return !ok || v.Newer(old)
}

// put stores v (and its envelope raw) if it is newer than what we have; it
// reports whether it was.
func (s *store) put(v vote.Vote, raw []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := voteKey{v.Prober, v.Subject}
	if old, ok := s.votes[k]; ok && !v.Newer(old) {
		return false
	}
	s.votes[k] = v
	s.raw[k] = raw
	return true
}

// newerSummary reports whether sm would replace the summary we hold.
func (s *store) newerSummary(sm summary) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.summaries[sm.Prober]
	return !ok || sm.At > old.At
}

// putSummary stores sm if it is newer. A summary from a new incarnation of
// the prober (it restarted) drops the votes of the old one.
func (s *store) putSummary(sm summary, raw []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.summaries[sm.Prober]; ok && old.At >= sm.At {
		return false
	}
	s.summaries[sm.Prober] = sm
	s.rawSum[sm.Prober] = raw
	for k, v := range s.votes {
		if k.prober == sm.Prober && v.Seq < sm.Inc {
			delete(s.votes, k)
			delete(s.raw, k)
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
func (s *store) effective() []vote.Vote {
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
	out := make([]vote.Vote, 0, len(s.votes))
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
	slices.SortFunc(out, func(a, b vote.Vote) int {
		if c := compareSubject(a.Subject, b.Subject); c != 0 {
			return c
		}
		return cmpString(a.Prober, b.Prober)
	})
	return out
}

// full returns the envelopes of every vote and summary, for a push/pull sync.
func (s *store) full() fullState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := fullState{Votes: make([][]byte, 0, len(s.raw)), Summaries: make([][]byte, 0, len(s.rawSum))}
	for _, b := range s.raw {
		st.Votes = append(st.Votes, b)
	}
	for _, b := range s.rawSum {
		st.Summaries = append(st.Summaries, b)
	}
	return st
}

// prune drops votes of subjects keep rejects, and votes and summaries of
// probers whose latest word is older than maxAge.
func (s *store) prune(keep func(vote.Subject) bool, now time.Time, maxAge time.Duration) int {
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
			delete(s.raw, k)
			n++
		}
	}
	for p, sm := range s.summaries {
		if now.Sub(time.UnixMilli(sm.At)) > maxAge {
			delete(s.summaries, p)
			delete(s.rawSum, p)
		}
	}
	return n
}

// own returns the envelopes of prober's votes and summary.
func (s *store) own(prober string) [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]byte
	for k, b := range s.raw {
		if k.prober == prober {
			out = append(out, b)
		}
	}
	if b, ok := s.rawSum[prober]; ok {
		out = append(out, b)
	}
	return out
}

// summaryOf returns prober's latest summary.
func (s *store) summaryOf(prober string) (summary, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sm, ok := s.summaries[prober]
	return sm, ok
}

// forgetSilent forgets the votes and summary of every prober gone reports
// true for whose latest word (summary or vote) is older than idle.
func (s *store) forgetSilent(now time.Time, idle time.Duration, gone func(string) bool) {
	s.mu.Lock()
	last := map[string]time.Time{}
	for k, v := range s.votes {
		if v.ObservedAt.After(last[k.prober]) {
			last[k.prober] = v.ObservedAt
		}
	}
	for p, sm := range s.summaries {
		if at := time.UnixMilli(sm.At); at.After(last[p]) {
			last[p] = at
		}
	}
	s.mu.Unlock()
	s.dropProbers(func(name string) bool {
		at, ok := last[name]
		return ok && now.Sub(at) > idle && gone(name)
	})
}

// dropProbers forgets the votes and summary of every prober gone reports true for.
func (s *store) dropProbers(gone func(string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.votes {
		if gone(k.prober) {
			delete(s.votes, k)
			delete(s.raw, k)
		}
	}
	for p := range s.summaries {
		if gone(p) {
			delete(s.summaries, p)
			delete(s.rawSum, p)
		}
	}
}

func compareSubject(a, b vote.Subject) int {
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
