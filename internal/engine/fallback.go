package engine

import (
	"math/rand/v2"

	"github.com/miekg/dns"
)

// Fallback answers (services[].fallback_answer, ADR 0019): a reply carries
// the weighted pick first, then one healthy address from another cluster,
// so that a client whose first address refuses connections moves to the
// second without asking DNS again. The first record is drawn exactly as
// without the option: clients that use the first address keep the shares.

// fallback is what a pool of one record per reply adds a second record from.
type fallback struct {
	cluster []string // the cluster of each pool record
	rrs     []dns.RR // candidates: the available endpoints, in tiers
	weights []uint32 // their weights (weight-0 standbys count 1)
	owner   []string // each candidate's cluster
	tier    []int    // each candidate's tier: chain group, weighted before standbys
}

// newFallback builds the fallback of pool p (one record per reply, not
// failing open) from the family's candidates and the chain the pool was
// chosen from: the available endpoints, group by group, the weighted ones
// of a group before its weight-0 standbys. nil when there is nothing to
// fall back on.
func newFallback(p *pool, cands []cand, chain []group) *fallback {
	fb := &fallback{}
	for _, rr := range p.rrs {
		c := ""
		for _, x := range cands {
			if x.rr == rr || x.rrDoubt == rr {
				c = x.cluster
				break
			}
		}
		fb.cluster = append(fb.cluster, c)
	}
	seen := map[string]bool{}
	for gi, g := range chain {
		for _, zero := range []bool{false, true} {
			for _, c := range cands {
				if !g.has(c) || !c.available || (c.weight == 0) != zero || seen[c.target] {
					continue
				}
				seen[c.target] = true
				w := c.weight
				if zero {
					w = 1
				}
				rr := c.rr
				if c.rrDoubt != nil {
					rr = c.rrDoubt
				}
				fb.rrs, fb.weights, fb.owner = append(fb.rrs, rr), append(fb.weights, w), append(fb.owner, c.cluster)
				tier := 2 * gi
				if zero {
					tier++
				}
				fb.tier = append(fb.tier, tier)
			}
		}
	}
	if len(fb.rrs) < 2 {
		return nil
	}
	return fb
}

// pick returns the fallback for a reply whose first record is p.rrs[first]:
// drawn by weight from the first tier with an endpoint in another cluster,
// else from the first tier with another endpoint; -1 when there is none.
func (fb *fallback) pick(first dns.RR, firstCluster string) int {
	for _, otherCluster := range []bool{true, false} {
		tier, total := -1, uint32(0)
		for i, rr := range fb.rrs {
			if rr == first || sameTarget(rr, first) || (otherCluster && fb.owner[i] == firstCluster) {
				continue
			}
			if tier >= 0 && fb.tier[i] != tier {
				break
			}
			tier = fb.tier[i]
			total += fb.weights[i]
		}
		if tier < 0 || total == 0 {
			continue
		}
		r := rand.Uint32N(total)
		for i, rr := range fb.rrs {
			if fb.tier[i] != tier || rr == first || sameTarget(rr, first) || (otherCluster && fb.owner[i] == firstCluster) {
				continue
			}
			if r < fb.weights[i] {
				return i
			}
			r -= fb.weights[i]
		}
	}
	return -1
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
	dst = append(dst, p.rrs[first])
	if i := p.fb.pick(p.rrs[first], p.fb.cluster[first]); i >= 0 {
		dst = append(dst, p.fb.rrs[i])
	}
	return dst
}

// oneTTL makes the pool's and the fallback's records carry one TTL when
// they differ (a record in doubt): a reply's two records are one RRset
// (RFC 2181 5.2), so both get the shorter.
func (fb *fallback) oneTTL(p *pool) {
	low, high := ^uint32(0), uint32(0)
	for _, list := range [][]dns.RR{p.rrs, fb.rrs} {
		for _, rr := range list {
			low, high = min(low, rr.Header().Ttl), max(high, rr.Header().Ttl)
		}
	}
	if low == high {
		return
	}
	for _, list := range [][]dns.RR{p.rrs, fb.rrs} {
		for i, rr := range list {
			if rr.Header().Ttl != low {
				list[i] = withTTL(rr, low)
			}
		}
	}
}
