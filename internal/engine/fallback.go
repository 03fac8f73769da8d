package engine

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/miekg/dns"
)

// Fallback answers (services[].fallback_answer, ADR 0020): a reply carries
// the weighted pick first, then one healthy address from another cluster,
// so that a client whose first address refuses connections moves to the
// second without asking DNS again. The first record is drawn exactly as
// without the option: clients that use the first address keep the shares.
// With auto (the default) a pool gets its fallback only when a resolver
// that shuffles the two records would leave every endpoint's share as set.

// fallback is what a pool of one record per reply adds a second record from.
type fallback struct {
	rrs   []dns.RR // candidates: the available endpoints, in tiers
	owner []string // each candidate's cluster
	// next[i] lists the candidates a reply whose first record is the
	// pool's record i may carry second, cum their cumulative weights
	// (empty: nothing to fall back on).
	next [][]int
	cum  [][]uint32
	// lowPool[i] and low[j]: the pool's record i and candidate j with the
	// lowest TTL of the two lists (a record in doubt has doubt_ttl), for
	// a reply whose other record has it; nil when the TTLs are one.
	lowPool, low []dns.RR
}

// fallbackMove is why an auto fallback was left out: behind a resolver that
// shuffles the two records, Target's share of first addresses would move
// from Set to Shuffled (fractions).
type fallbackMove struct {
	Target        string
	Set, Shuffled float64
}

// addFallback gives p (one record per reply, not failing open) its
// fallback, built from the family's candidates and the chain the pool was
// chosen from. With auto it is left out, and the reason kept for explain,
// when it would move a share.
func (p *pool) addFallback(cands []cand, chain []group, auto bool) {
	if _, cname := p.rrs[0].(*dns.CNAME); cname {
		return // a CNAME RRset is one record (RFC 2181 10.1)
	}
	if auto && len(p.rrs) == 1 {
		// The one record has every first address; a second would take
		// half of them behind a shuffling resolver.
		for _, c := range cands {
			if c.available && !sameTarget(c.rr, p.rrs[0]) && slices.ContainsFunc(chain, func(g group) bool { return g.has(c) }) {
				p.fbMoved = &fallbackMove{Target: rrTargetString(p.rrs[0]), Set: 1, Shuffled: 0.5}
				break
			}
		}
		return // (nothing to fall back on anyway otherwise)
	}
	fb := newFallback(p, cands, chain)
	if fb == nil {
		return
	}
	if auto {
		if m := fb.moves(p); m != nil {
			p.fbMoved = m
			return
		}
	}
	p.fb = fb
	fb.twins(p)
}

// newFallback lists the available endpoints, group by group of the chain,
// the weighted ones of a group before its weight-0 standbys (which count 1),
// and for each record of the pool the candidates of the first tier with an
// endpoint in another cluster than the record's, else of the first tier
// with another endpoint. nil when no record has anything to fall back on.
func newFallback(p *pool, cands []cand, chain []group) *fallback {
	n := len(cands)
	fb := &fallback{rrs: make([]dns.RR, 0, n), owner: make([]string, 0, n)}
	weights, tiers := make([]uint32, 0, n), make([]int, 0, n)
	seen := make([]string, 0, n) // the candidates' targets (few: a linear search)
	for gi, g := range chain {
		for _, zero := range []bool{false, true} {
			for _, c := range cands {
				if !g.has(c) || !c.available || (c.weight == 0) != zero || slices.Contains(seen, c.target) {
					continue
				}
				seen = append(seen, c.target)
				w, tier := c.weight, 2*gi
				if zero {
					w, tier = 1, tier+1
				}
				rr := c.rr
				if c.doubt {
					rr = c.rrDoubt
				}
				fb.rrs, fb.owner = append(fb.rrs, rr), append(fb.owner, c.cluster)
				weights, tiers = append(weights, w), append(tiers, tier)
			}
		}
	}
	if len(fb.rrs) < 2 {
		return nil
	}
	some := false
	fb.next, fb.cum = make([][]int, 0, len(p.rrs)), make([][]uint32, 0, len(p.rrs))
	clusters := make([]string, 0, len(p.rrs))
	for ri, first := range p.rrs {
		cluster := clusterOf(first, cands)
		clusters = append(clusters, cluster)
		if k := slices.Index(clusters[:ri], cluster); k >= 0 && len(fb.next[k]) > 0 && fb.owner[fb.next[k][0]] != cluster {
			// from another cluster: the same for every record of this one
			fb.next, fb.cum = append(fb.next, fb.next[k]), append(fb.cum, fb.cum[k])
			continue
		}
		var next []int
		var cum []uint32
		for _, otherCluster := range []bool{true, false} {
			tier, total := -1, uint32(0)
			for i, rr := range fb.rrs {
				if sameTarget(rr, first) || (otherCluster && fb.owner[i] == cluster) {
					continue
				}
				if tier >= 0 && tiers[i] != tier {
					break
				}
				tier, total = tiers[i], total+weights[i]
				next, cum = append(next, i), append(cum, total)
			}
			if total > 0 {
				break
			}
			next, cum = next[:0], cum[:0]
		}
		some = some || len(next) > 0
		fb.next, fb.cum = append(fb.next, next), append(fb.cum, cum)
	}
	if !some {
		return nil
	}
	return fb
}

// clusterOf is the cluster of a pool record.
func clusterOf(rr dns.RR, cands []cand) string {
	for _, x := range cands {
		if x.rr == rr || x.rrDoubt == rr {
			return x.cluster
		}
	}
	return ""
}

// moves reports the endpoint whose share of first addresses moves most when
// a resolver shuffles every reply of two records (each order equally
// likely), or nil when none moves: the share of t becomes
// ½·P(pick t) + ½·P(t second) over the replies of two records.
func (fb *fallback) moves(p *pool) *fallbackMove {
	// Shares by candidate index; a pool record is one of the candidates
	// (its slot found by target), or gets a slot of its own past them.
	n := len(fb.rrs)
	set, shuffled := make([]float64, n+len(p.rrs)), make([]float64, n+len(p.rrs))
	slot := func(i int) int {
		for j, rr := range fb.rrs {
			if sameTarget(rr, p.rrs[i]) {
				return j
			}
		}
		return n + i
	}
	total := float64(p.total())
	for i := range p.rrs {
		pick, k := float64(p.weights[i])/total, slot(i)
		set[k] += pick
		next, cum := fb.next[i], fb.cum[i]
		if len(next) == 0 {
			shuffled[k] += pick
			continue
		}
		shuffled[k] += pick / 2
		sum, prev := float64(cum[len(cum)-1]), uint32(0)
		for x, j := range next {
			shuffled[j] += pick / 2 * float64(cum[x]-prev) / sum
			prev = cum[x]
		}
	}
	worst, most := -1, 1e-9
	for k := range set {
		if d := math.Abs(shuffled[k] - set[k]); d > most+1e-9 || (worst < 0 && d > most) {
			worst, most = k, d
		}
	}
	if worst < 0 {
		return nil
	}
	rr := p.rrs[max(0, worst-n)]
	if worst < n {
		rr = fb.rrs[worst]
	}
	return &fallbackMove{Target: rrTargetString(rr), Set: set[worst], Shuffled: shuffled[worst]}
}

// pick returns the fallback for a reply whose first record is the pool's
// record first, drawn by weight; -1 when there is none.
func (fb *fallback) pick(first int) int {
	next, cum := fb.next[first], fb.cum[first]
	switch len(next) {
	case 0:
		return -1
	case 1:
		return next[0]
	}
	r := rand.Uint32N(cum[len(cum)-1])
	for k, c := range cum {
		if r < c {
			return next[k]
		}
	}
	return next[len(next)-1]
}

// sameTarget reports whether two records of a family carry the same data.
func sameTarget(a, b dns.RR) bool {
	switch x := a.(type) {
	case *dns.A:
		y, ok := b.(*dns.A)
		return ok && x.A.Equal(y.A)
	case *dns.AAAA:
		y, ok := b.(*dns.AAAA)
		return ok && x.AAAA.Equal(y.AAAA)
	case *dns.CNAME:
		y, ok := b.(*dns.CNAME)
		return ok && x.Target == y.Target
	}
	return false
}

// drawWithFallback appends the pick and its fallback.
func (p *pool) drawWithFallback(dst []dns.RR) []dns.RR {
	first := 0
	if n := len(p.rrs); n > 1 {
		first = p.search(rand.Uint32N(p.total()))
	}
	a := p.rrs[first]
	i := p.fb.pick(first)
	if i < 0 {
		return append(dst, a)
	}
	b := p.fb.rrs[i]
	switch ta, tb := a.Header().Ttl, b.Header().Ttl; {
	case ta > tb:
		a = p.fb.lowPool[first]
	case tb > ta:
		b = p.fb.low[i]
	}
	return append(dst, a, b)
}

// twins prepares, when the pool's and the candidates' TTLs differ (a
// record in doubt), each record's twin with the lowest TTL: a reply's two
// records are one RRset (RFC 2181 5.2), so both carry the lower of their
// two TTLs, and a reply without the record in doubt keeps the zone's.
func (fb *fallback) twins(p *pool) {
	low, high := ^uint32(0), uint32(0)
	for _, list := range [][]dns.RR{p.rrs, fb.rrs} {
		for _, rr := range list {
			low, high = min(low, rr.Header().Ttl), max(high, rr.Header().Ttl)
		}
	}
	if low == high {
		return
	}
	twin := func(list []dns.RR) []dns.RR {
		out := make([]dns.RR, len(list))
		for i, rr := range list {
			out[i] = rr
			if rr.Header().Ttl != low {
				out[i] = withTTL(rr, low)
			}
		}
		return out
	}
	fb.lowPool, fb.low = twin(p.rrs), twin(fb.rrs)
}

// sharePercent writes a fraction as a percentage to one decimal ("70%",
// "33.3%").
func sharePercent(f float64) string {
	return strconv.FormatFloat(math.Round(1000*f)/10, 'f', -1, 64) + "%"
}
