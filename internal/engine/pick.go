package engine

import (
	"math/rand/v2"

	"github.com/miekg/dns"
)

// pool is an immutable set of answer candidates with their weights. A draw
// picks up to max distinct records, each next one by weight among those not
// yet picked (weighted sampling without replacement). The first record's
// share therefore follows the weights exactly.
type pool struct {
	rrs      []dns.RR
	weights  []uint32
	cum      []uint32 // cum[i] = weights[0] + ... + weights[i]
	max      int
	failOpen bool // built because every candidate was down
	// sticky pools rank by network instead of drawing (sticky.go); ids
	// holds each record's identity hash.
	sticky bool
	ids    []uint64
	// fb: each reply also carries a fallback address (fallback.go); nil
	// with services[].fallback_answer off, or auto when it would move a
	// share (fbMoved says which).
	fb      *fallback
	fbMoved *fallbackMove
	// awaits: endpoints missing from the pool that may come back soon
	// (cand.returning): every record has the doubt TTL (choose).
	awaits []string
}

func newPool(rrs []dns.RR, weights []uint32, max int, failOpen bool) *pool {
	p := &pool{rrs: rrs, weights: weights, cum: make([]uint32, len(weights)), max: max, failOpen: failOpen}
	var sum uint32
	for i, w := range weights {
		sum += w
		p.cum[i] = sum
	}
	if p.max > len(rrs) {
		p.max = len(rrs)
	}
	return p
}

func (p *pool) total() uint32 {
	if len(p.cum) == 0 {
		return 0
	}
	return p.cum[len(p.cum)-1]
}

// draw appends the picked records to dst. It does not allocate when dst has
// spare capacity for max records.
func (p *pool) draw(dst []dns.RR) []dns.RR {
	if p.fb != nil {
		return p.drawWithFallback(dst)
	}
	n := len(p.rrs)
	switch {
	case n == 0:
		return dst
	case n == 1:
		return append(dst, p.rrs[0])
	}
	total := p.total()
	first := p.search(rand.Uint32N(total))
	if p.max == 1 {
		return append(dst, p.rrs[first])
	}
	var chosen [maxPick]int
	chosen[0] = first
	k := 1
	remaining := total - p.weights[first]
	dst = append(dst, p.rrs[first])
	for k < p.max && remaining > 0 {
		r := rand.Uint32N(remaining)
		next := -1
		for i := 0; i < n; i++ {
			if isChosen(chosen[:k], i) {
				continue
			}
			if r < p.weights[i] {
				next = i
				break
			}
			r -= p.weights[i]
		}
		if next < 0 {
			break
		}
		chosen[k] = next
		k++
		remaining -= p.weights[next]
		dst = append(dst, p.rrs[next])
	}
	return dst
}

// search returns the first index whose cumulative weight exceeds r.
func (p *pool) search(r uint32) int {
	lo, hi := 0, len(p.cum)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if p.cum[mid] > r {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// maxPick bounds max_answers (model.MaxMaxAnswers).
const maxPick = 16

func isChosen(chosen []int, i int) bool {
	for _, c := range chosen {
		if c == i {
			return true
		}
	}
	return false
}
