package engine

import (
	"net/netip"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/geo"
)

// Client is what the engine knows about who asks.
type Client struct {
	Addr   netip.Addr // address used for location: the ECS address if present, else the source address
	Bits   int        // significant bits of Addr (ECS source prefix length, or full length)
	HasECS bool       // Addr came from an EDNS Client Subnet option
}

// Result is the outcome of a lookup. It is reused across queries: Reset keeps
// the slices' capacity, so a pooled Result makes lookups allocation-free.
type Result struct {
	Rcode    int
	Zone     string // apex of the zone that answered; "" when the name is not ours
	Service  string // service name when the query hit a global service
	Strategy string // its strategy
	FailOpen bool   // the answer ignored health because every endpoint was down
	Scope    int    // ECS scope prefix length for the reply (0 for non-geo, non-sticky names)
	Located  bool   // Location is valid
	Location geo.Location
	Answer   []dns.RR
	Ns       []dns.RR
	Extra    []dns.RR
}

// Reset clears r for reuse.
func (r *Result) Reset() {
	clear(r.Answer)
	clear(r.Ns)
	clear(r.Extra)
	*r = Result{Answer: r.Answer[:0], Ns: r.Ns[:0], Extra: r.Extra[:0]}
}

const maxCNAMEChain = 8

// maxNameLen bounds the presentation form of a name we look up; longer names
// cannot be ours.
const maxNameLen = 1024

// Lookup answers qname/qtype (class IN) for client into r. qname is in
// presentation form with a trailing dot, in any case. Lookup never blocks and
// does not allocate when r's slices have the capacity.
func (s *Snapshot) Lookup(qname string, qtype uint16, client Client, r *Result) {
	z, n := s.find(qname)
	if z == nil {
		r.Rcode = dns.RcodeRefused
		return
	}
	r.Zone = z.apex
	s.answer(z, n, qtype, client, r, 0)
}

// find returns the zone of qname and its node (nil: no such name). It is
// not inlined on purpose: its name buffer then leaves the stack before
// answering starts. Inside CoreDNS, where every query runs on a fresh
// goroutine, the deeper stack cost a stack copy per query (18% of the
// plugin's CPU in a profile of `make bench`).
//
//go:noinline
func (s *Snapshot) find(qname string) (*zone, *node) {
	var buf [maxNameLen]byte
	if len(qname) > len(buf) {
		return nil, nil
	}
	name := lower(buf[:len(qname)], qname)
	z := s.zoneForBytes(name)
	if z == nil {
		return nil, nil
	}
	return z, z.names.getBytes(name)
}

// lower writes the ASCII lower case of s into dst (len(dst) == len(s)).
func lower(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst[i] = c
	}
	return dst
}

// zoneForBytes returns the most specific zone containing name (lower case),
// walking label boundaries from the left. Escaped dots are not boundaries.
func (s *Snapshot) zoneForBytes(name []byte) *zone {
	off := 0
	for {
		if z, ok := s.zones[string(name[off:])]; ok {
			return z
		}
		next := -1
		for i := off; i < len(name); i++ {
			if name[i] == '\\' {
				i++
				continue
			}
			if name[i] == '.' {
				next = i + 1
				break
			}
		}
		if next < 0 || next >= len(name) {
			return nil
		}
		off = next
	}
}

// answer appends to r the answer of qtype at node n of z (nil: the name
// does not exist); depth is the number of CNAMEs followed to get there.
func (s *Snapshot) answer(z *zone, n *node, qtype uint16, client Client, r *Result, depth int) {
	if n == nil {
		r.Rcode = dns.RcodeNameError
		r.Ns = append(r.Ns, z.negSOA)
		return
	}
	if qtype == dns.TypeANY {
		if n.hasData() {
			r.Answer = append(r.Answer, n.hinfo)
		} else {
			r.Ns = append(r.Ns, z.negSOA)
		}
		return
	}
	if svc := n.svc; svc != nil && svc.cname {
		s.answerCNAME(z, svc, qtype, client, r, depth)
		return
	}
	before := len(r.Answer)
	switch qtype {
	case dns.TypeA:
		if n.svc != nil {
			r.Answer = s.draw(n.svc, n.svc.v4, client, r)
		}
		r.Answer = append(r.Answer, n.a...)
	case dns.TypeAAAA:
		if n.svc != nil {
			r.Answer = s.draw(n.svc, n.svc.v6, client, r)
		}
		r.Answer = append(r.Answer, n.aaaa...)
	default:
		if n.apex {
			z.answerApex(qtype, r)
		}
	}
	if n.svc != nil && depth == 0 {
		r.Service, r.Strategy = n.svc.name, n.svc.strategy
	}
	if len(r.Answer) == before {
		r.Ns = append(r.Ns, z.negSOA)
	}
}

// answerCNAME appends the answer of the CNAME service svc at a name of z,
// and for a type other than CNAME the answer at its target when that is
// ours (see chase).
func (s *Snapshot) answerCNAME(z *zone, svc *service, qtype uint16, client Client, r *Result, depth int) {
	before := len(r.Answer)
	r.Answer = s.draw(svc, svc.cn, client, r)
	if len(r.Answer) == before {
		r.Ns = append(r.Ns, z.negSOA) // every target down and when_all_down: nodata
		return
	}
	if qtype != dns.TypeCNAME {
		s.chase(r.Answer[len(r.Answer)-1].(*dns.CNAME).Target, qtype, client, r, depth+1)
	}
}

// answerApex appends z's records of qtype that only the apex holds: SOA,
// DNSKEY, CDS, CDNSKEY, and NS (with its glue). Other types add nothing.
func (z *zone) answerApex(qtype uint16, r *Result) {
	switch qtype {
	case dns.TypeSOA:
		r.Answer = append(r.Answer, z.soa)
	case dns.TypeDNSKEY:
		r.Answer = append(r.Answer, z.dnskey...)
	case dns.TypeCDS:
		r.Answer = append(r.Answer, z.cds...)
	case dns.TypeCDNSKEY:
		r.Answer = append(r.Answer, z.cdnskey...)
	case dns.TypeNS:
		r.Answer = append(r.Answer, z.ns...)
		r.Extra = append(r.Extra, z.glue...)
	}
}

// chase follows a CNAME target that lies in one of our zones.
func (s *Snapshot) chase(target string, qtype uint16, client Client, r *Result, depth int) {
	if depth > maxCNAMEChain {
		return
	}
	z := s.zoneFor(target)
	if z == nil {
		return
	}
	s.answer(z, z.names.get(target), qtype, client, r, depth)
}

// locate finds the client's geo (or latency) bucket of svc and sets the ECS scope. Not
// inlined, so that its locals are off the stack while the answer is drawn.
//
//go:noinline
func (s *Snapshot) locate(svc *service, client Client, r *Result) int {
	if !r.Located && client.Addr.IsValid() && s.locator != nil {
		r.Location, r.Located = s.locator.Lookup(client.Addr)
	}
	var b int
	if svc.geo != nil {
		b = svc.geo.bucket(r.Location, r.Located)
	} else {
		b = svc.lat.bucket(r.Location, r.Located)
	}
	// The scope is the block around the client in which every address
	// gets this answer: the matched network, or the unplaced block
	// around it (geo.Locator computes both).
	scope := client.Bits
	if r.Location.Prefix.IsValid() {
		scope = r.Location.Prefix.Bits()
	}
	r.Scope = max(r.Scope, scope) // a CNAME chain's answer depends on every step
	return b
}

// draw appends the answer of svc from the family's pools.
func (s *Snapshot) draw(svc *service, pools []*pool, client Client, r *Result) []dns.RR {
	if r.Service == "" {
		r.Service, r.Strategy = svc.name, svc.strategy
	}
	if len(pools) == 0 {
		return r.Answer
	}
	b := 0
	if svc.geo != nil || svc.lat != nil {
		b = s.locate(svc, client, r)
	}
	p := pools[b]
	if p == nil {
		return r.Answer
	}
	if p.failOpen {
		r.FailOpen = true
	}
	if p.sticky {
		return s.stick(p, client, r)
	}
	return p.draw(r.Answer)
}

// stick appends the sticky answer of p for the client's network and raises
// the ECS scope to that network when the answer depends on it (more than
// one record) and the network came from the query's ECS option. (Without
// ECS the scope is not sent; with an ignored or /0 ECS option the key is
// the resolver's own address, the same for all its clients: scope 0 holds.)
func (s *Snapshot) stick(p *pool, client Client, r *Result) []dns.RR {
	k, bits := stickyKey(client.Addr)
	if client.HasECS && len(p.rrs) > 1 {
		r.Scope = max(r.Scope, bits)
	}
	return p.stick(r.Answer, k)
}
