package engine

import (
	"cmp"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// Sticky answers (services[].sticky: subnet).
//
// A sticky pool does not draw at random: it ranks its records by weighted
// rendezvous hashing (highest random weight) on the client's network, and
// answers the max_answers best, best first. For a network key k and a
// record with identity hash c and weight w, the score is
//
//	u = (mix64(k ^ c) >> 11 + 0.5) / 2^53   (uniform in (0, 1))
//	score = w / -ln(u)
//
// The best score is a draw by weight among the records (P = w / Σw), so
// shares across networks follow the weights; the ranking is the same
// weighted sampling without replacement as the random draw. A record's
// score depends only on the network and the record itself, never on the
// other records or their order, so:
//
//   - a network keeps its answer while the pool is unchanged;
//   - a record that leaves the pool (down, drained) moves only the networks
//     that had it, and one that comes back takes only what it gets by its
//     weight;
//   - lowering a weight only moves networks away from that record, raising
//     it only moves networks to it: the minimum fraction moves.
//
// The hash is fixed (no seed), so every node and the CoreDNS plugin give a
// network the same answer: the network key is mix64 of FNV-1a 64 over a
// family byte (4 or 6) and the network's bytes (3 of an IPv4 /24, 7 of an
// IPv6 /56); a record's identity hash is mix64 of FNV-1a 64 over its
// endpoint target as text (the canonical address, or the lower-case CNAME
// target with its trailing dot). mix64 is MurmurHash3's 64-bit finalizer.

// The network a sticky answer is keyed on.
const (
	StickyBits4 = 24 // IPv4 /24
	StickyBits6 = 56 // IPv6 /56
)

const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

func fnvByte(h uint64, b byte) uint64 { return (h ^ uint64(b)) * fnvPrime64 }

// mix64 is MurmurHash3's fmix64: every input bit affects every output bit.
func mix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

// StickyNetwork returns the network a sticky answer for addr is keyed on,
// and that network's key. An invalid addr (no client address) has no
// network (zero prefix) and a fixed key, so all such queries agree.
func StickyNetwork(addr netip.Addr) (netip.Prefix, uint64) {
	k, bits := stickyKey(addr)
	if bits == 0 {
		return netip.Prefix{}, k
	}
	return netip.PrefixFrom(addr.Unmap().WithZone(""), bits).Masked(), k
}

// stickyKey is the key of the network of addr and the network's prefix
// length (0: no address), for the query path.
func stickyKey(addr netip.Addr) (uint64, int) {
	addr = addr.Unmap()
	h := uint64(fnvOffset64)
	switch {
	case addr.Is4():
		b := addr.As4()
		h = fnvByte(h, 4)
		for _, x := range b[:StickyBits4/8] {
			h = fnvByte(h, x)
		}
		return mix64(h), StickyBits4
	case addr.Is6():
		b := addr.As16()
		h = fnvByte(h, 6)
		for _, x := range b[:StickyBits6/8] {
			h = fnvByte(h, x)
		}
		return mix64(h), StickyBits6
	}
	return mix64(h), 0
}

// identityHash is the identity hash of a compiled record: its target as
// text (see the package comment above).
func identityHash(rr dns.RR) uint64 {
	var target string
	switch r := rr.(type) {
	case *dns.A:
		a, _ := netip.AddrFromSlice(r.A.To4())
		target = a.String()
	case *dns.AAAA:
		a, _ := netip.AddrFromSlice(r.AAAA)
		target = a.String()
	case *dns.CNAME:
		target = strings.ToLower(r.Target)
	default:
		target = rr.String()
	}
	h := uint64(fnvOffset64)
	for i := 0; i < len(target); i++ {
		h = fnvByte(h, target[i])
	}
	return mix64(h)
}

// makeSticky turns p into a sticky pool.
func (p *pool) makeSticky() {
	p.sticky = true
	p.ids = make([]uint64, len(p.rrs))
	for i, rr := range p.rrs {
		p.ids[i] = identityHash(rr)
	}
}

// score is record i's weighted rendezvous score for network key k.
func (p *pool) score(i int, k uint64) float64 {
	u := (float64(mix64(k^p.ids[i])>>11) + 0.5) * 0x1p-53
	return float64(p.weights[i]) / -math.Log(u)
}

// rank writes into top the indexes of the min(max, n) best records for
// network key k, best first, and returns how many it wrote. Equal scores
// keep pool order.
func (p *pool) rank(k uint64, top *[maxPick]int) int {
	var best [maxPick]float64
	m := min(max(p.max, 1), maxPick)
	n := 0
	for i := range p.rrs {
		sc := p.score(i, k)
		if n == m && sc <= best[n-1] {
			continue
		}
		j := n
		if n < m {
			n++
		} else {
			j = n - 1
		}
		for j > 0 && best[j-1] < sc {
			top[j], best[j] = top[j-1], best[j-1]
			j--
		}
		top[j], best[j] = i, sc
	}
	return n
}

// stick appends the records a sticky pool answers network key k with,
// best first. It does not allocate when dst has spare capacity for max
// records.
func (p *pool) stick(dst []dns.RR, k uint64) []dns.RR {
	if len(p.rrs) == 1 {
		return append(dst, p.rrs[0])
	}
	var top [maxPick]int
	n := p.rank(k, &top)
	for _, i := range top[:n] {
		dst = append(dst, p.rrs[i])
	}
	return dst
}

// stickyRanking is how a sticky pool ranks its records for one network
// (explain).
type stickyRanking struct {
	network netip.Prefix
	scores  []float64 // by pool index
	rank    []int     // by pool index, 1 = best
	order   []int     // pool indexes, best first
}

// stickyRanking ranks every record of p for the explained client, with the
// same scores as the query path, and notes the ECS scope the answer needs.
func (x *explainer) stickyRanking(p *pool) stickyRanking {
	network, k := StickyNetwork(x.client.Addr)
	st := stickyRanking{network: network, scores: make([]float64, len(p.rrs)), rank: make([]int, len(p.rrs))}
	for i := range p.rrs {
		st.scores[i] = p.score(i, k)
		st.order = append(st.order, i)
	}
	slices.SortStableFunc(st.order, func(a, b int) int { return cmp.Compare(st.scores[b], st.scores[a]) })
	for r, i := range st.order {
		st.rank[i] = r + 1
	}
	if x.ecs && network.IsValid() && len(p.rrs) > 1 {
		x.stickyScope = max(x.stickyScope, network.Bits())
	}
	return st
}

// stickyNotes sets e.Sticky and says why the network gets its answer.
func (x *explainer) stickyNotes(e *Explanation, p *pool, st stickyRanking, ttl uint32) {
	var answer []dns.RR
	for _, i := range st.order[:min(max(p.max, 1), len(st.order))] {
		answer = append(answer, p.rrs[i])
	}
	e.Sticky = &ExplainSticky{Answer: presentAll(answer)}
	var from string
	switch {
	case !st.network.IsValid():
		from = "no client address is given (every query without one ranks like this; give --subnet or --client)"
	case x.ecs:
		e.Sticky.Network = st.network.String()
		from = "the client's network " + st.network.String() + " (of the ECS subnet)"
	default:
		e.Sticky.Network = st.network.String()
		from = "the client's network " + st.network.String() + " (of the source address)"
	}
	targets := make([]string, len(answer))
	for i, rr := range answer {
		targets[i] = rrTargetString(rr)
	}
	e.Notes = append(e.Notes, fmt.Sprintf("sticky: subnet: the answer is keyed on %s: it gets %s while health and weights are unchanged (TTL %d)",
		from, strings.Join(targets, ", "), ttl))
	if len(p.rrs) > 1 {
		e.Notes = append(e.Notes, fmt.Sprintf("each kept record scores weight / -ln(hash(network, target)) (weighted rendezvous hashing); "+
			"the %d highest scores answer, best first, so shares across networks follow the weights and a change of weight or health moves only the networks it must", min(max(p.max, 1), len(p.rrs))))
	}
	if x.ecs && st.network.IsValid() && len(p.rrs) > 1 {
		e.Notes = append(e.Notes, fmt.Sprintf("ECS scope at least /%d: resolvers cache the answer per network", st.network.Bits()))
	}
}

// rrTargetString is a compiled record's target: its address or CNAME target.
func rrTargetString(rr dns.RR) string {
	switch r := rr.(type) {
	case *dns.A:
		return r.A.String()
	case *dns.AAAA:
		return r.AAAA.String()
	case *dns.CNAME:
		return r.Target
	}
	return present(rr)
}
