package engine

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/dnssec"
)

// ZoneSigner signs the RRsets of one zone online (DNSSEC).
// *dnssec.Signer implements it.
type ZoneSigner interface {
	// DNSKEY returns the zone's DNSKEY RRset, served at the apex.
	DNSKEY() []dns.RR
	// Sign returns the RRSIGs covering rrset (records of one owner name,
	// type and class). It must be safe for concurrent use; the result is
	// shared and not modified by the engine.
	Sign(rrset []dns.RR) ([]dns.RR, error)
	// SignGated is Sign, except that before making a fresh signature (a
	// cache miss) it asks allow, and when allow says no it signs nothing
	// and reports refused.
	SignGated(rrset []dns.RR, allow func() bool) (sigs []dns.RR, refused bool, err error)
}

// attachSigner makes z a signed zone when signers has an entry for it.
func (s *Snapshot) attachSigner(z *zone, signers map[string]ZoneSigner) {
	zs := signers[z.apex]
	if zs == nil {
		return
	}
	z.signer = zs
	z.dnskey = zs.DNSKEY()
	ttl := z.soa.Hdr.Ttl
	if len(z.dnskey) > 0 {
		ttl = z.dnskey[0].Header().Ttl
	}
	z.cds = dnssec.CDS(z.dnskey, ttl)
	z.cdnskey = dnssec.CDNSKEY(z.dnskey, ttl)
	s.signed = true
}

// signReply adds DNSSEC records to a reply whose query had DO=1: compact
// denial of existence for negative answers (RFC 9824) and an RRSIG for
// every RRset of a signed zone in every section. Only this path allocates;
// answers without DO are untouched.
//
// A reply that needs a fresh signature — any RRset not in the signer's
// cache: the NSEC of a denial of a new name, or a positive RRset such as a
// new draw of max_answers records from a large pool — costs one token of
// gate (when not nil) on behalf of src, whatever the number of fresh
// signatures in it; when gate refuses, the reply becomes SERVFAIL with no
// records (out.SignLimited). Cached signatures cost nothing.
func (s *Snapshot) signReply(m *dns.Msg, qname string, qtype uint16, out *Outcome, gate SignGate, src netip.Addr) {
	if len(m.Ns) > 0 && m.Ns[0].Header().Rrtype == dns.TypeSOA {
		s.deny(m, qname, qtype, out)
	}
	var allow func() bool
	if gate != nil {
		asked, ok := false, false
		allow = func() bool {
			if !asked {
				asked, ok = true, gate.AllowSign(src)
			}
			return ok
		}
	}
	var refused [3]bool
	m.Answer, refused[0] = s.signSection(m.Answer, allow)
	m.Ns, refused[1] = s.signSection(m.Ns, allow)
	m.Extra, refused[2] = s.signSection(m.Extra, allow)
	if refused[0] || refused[1] || refused[2] {
		signLimited(m, out)
	}
}

// signLimited turns m into the SERVFAIL of a denial whose signature the
// SignGate refused: no records, only the OPT record kept (DO echoed).
func signLimited(m *dns.Msg, out *Outcome) {
	clear(m.Answer)
	clear(m.Ns)
	m.Answer, m.Ns = m.Answer[:0], m.Ns[:0]
	extra := m.Extra[:0]
	for _, rr := range m.Extra {
		if rr.Header().Rrtype == dns.TypeOPT {
			extra = append(extra, rr)
		}
	}
	clear(m.Extra[len(extra):])
	m.Extra = extra
	m.Rcode = dns.RcodeServerFailure
	m.Authoritative = false
	out.Rcode = dns.RcodeServerFailure
	out.SignLimited = true
}

// deny adds the NSEC of a negative answer (the SOA in the authority
// section marks one) and returns it with its zone (nil when the zone is
// not signed or the name is too long for compact denial). Compact denial
// ("black lies", RFC 9824): the NSEC is at the denied name itself and
// covers only it (next name \000.<name>). NXDOMAIN becomes NOERROR with
// the types RRSIG NSEC NXNAME; NODATA lists the types that exist at the
// name.
func (s *Snapshot) deny(m *dns.Msg, qname string, qtype uint16, out *Outcome) (*dns.NSEC, *zone) {
	name := strings.ToLower(qname)
	if n := len(m.Answer); n > 0 {
		if c, ok := m.Answer[n-1].(*dns.CNAME); ok {
			name = c.Target // the chain ends at a name of ours that denies
		}
	}
	z := s.zoneFor(name)
	if z == nil || z.signer == nil {
		return nil, nil
	}
	next := "\\000." + name
	if _, ok := dns.IsDomainName(next); !ok {
		return nil, nil // at the length limit: no compact denial possible
	}
	var types []uint16
	if n := z.names.get(name); n != nil {
		types = z.types(n, qtype)
	} else {
		types = []uint16{dns.TypeRRSIG, dns.TypeNSEC, dns.TypeNXNAME}
		if m.Rcode == dns.RcodeNameError {
			m.Rcode = dns.RcodeSuccess
			out.Rcode = dns.RcodeSuccess
		}
	}
	nsec := &dns.NSEC{
		Hdr:        hdr(name, dns.TypeNSEC, z.negSOA.Hdr.Ttl),
		NextDomain: next,
		TypeBitMap: types,
	}
	m.Ns = append(m.Ns, nsec)
	return nsec, z
}

// types returns the NSEC type bitmap of an existing name for a NODATA
// answer to qtype: the types it has, less qtype (which may exist in the
// configuration but had nothing to answer with, e.g. every endpoint down
// with when_all_down: nodata), plus RRSIG and NSEC.
func (z *zone) types(n *node, qtype uint16) []uint16 {
	t := make([]uint16, 0, 8)
	if n.apex {
		t = append(t, dns.TypeNS, dns.TypeSOA)
		if len(z.dnskey) > 0 {
			t = append(t, dns.TypeDNSKEY)
		}
		if len(z.cds) > 0 {
			t = append(t, dns.TypeCDS, dns.TypeCDNSKEY)
		}
	}
	if n.svc != nil && !n.svc.cname {
		// A CNAME service only answers NODATA when its CNAME is absent.
		if len(n.svc.v4) > 0 {
			t = append(t, dns.TypeA)
		}
		if len(n.svc.v6) > 0 {
			t = append(t, dns.TypeAAAA)
		}
	}
	if len(n.a) > 0 {
		t = append(t, dns.TypeA)
	}
	if len(n.aaaa) > 0 {
		t = append(t, dns.TypeAAAA)
	}
	t = append(t, dns.TypeRRSIG, dns.TypeNSEC)
	t = slices.DeleteFunc(t, func(x uint16) bool { return x == qtype })
	slices.Sort(t)
	return slices.Compact(t)
}

// signSection appends the RRSIGs of every RRset in rrs whose zone is
// signed. The records of an RRset need not be adjacent. With allow (not
// nil), a fresh signature is made only if allow says yes; refused reports
// that one was not.
func (s *Snapshot) signSection(rrs []dns.RR, allow func() bool) (_ []dns.RR, refused bool) {
	n := len(rrs)
	if n == 0 {
		return rrs, false
	}
	var doneBuf [64]bool
	var done []bool
	if n > len(doneBuf) {
		done = make([]bool, n)
	} else {
		done = doneBuf[:n]
	}
	for i := range n {
		h := rrs[i].Header()
		if done[i] || h.Rrtype == dns.TypeOPT || h.Rrtype == dns.TypeRRSIG {
			continue
		}
		end := i + 1
		for end < n && sameSet(rrs[end].Header(), h) {
			done[end] = true
			end++
		}
		set := rrs[i:end:end]
		for j := end; j < n; j++ {
			if !done[j] && sameSet(rrs[j].Header(), h) {
				set = append(set, rrs[j]) // copies: set has no spare capacity
				done[j] = true
			}
		}
		z := s.zoneFor(h.Name)
		if z == nil || z.signer == nil {
			continue
		}
		var sigs []dns.RR
		var err error
		if allow != nil {
			var no bool
			sigs, no, err = z.signer.SignGated(set, allow)
			if no {
				return rrs, true
			}
		} else {
			sigs, err = z.signer.Sign(set)
		}
		if err != nil {
			continue // served unsigned: a validator will treat it as bogus
		}
		rrs = append(rrs, sigs...)
	}
	return rrs, false
}

func sameSet(a, b *dns.RR_Header) bool {
	return a.Rrtype == b.Rrtype && a.Class == b.Class && sameName(a.Name, b.Name)
}
