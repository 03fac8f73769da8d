package xfr

import (
	"strings"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/engine"
)

// The catalog zone is not in the engine's snapshot: the server keeps its
// content (SetCatalog) and answers everything about it — AXFR and IXFR
// like any transfer zone (it is configured with Configure as one), and
// ordinary queries into it (catalogQuery).
//
// Ordinary queries: RFC 9432 section 5.1 lets operators "limit the
// systems able to query" a catalog, which is meant for the management of
// name servers, not for resolution. Only the addresses of the catalog's
// transfer allow list get an answer (authoritative, from the catalog's
// records: a secondary checks the SOA before it transfers); everyone else
// gets REFUSED, as for a zone Meridian does not serve.

// SetCatalog sets the catalog zone's content (nil: no catalog). Configure
// the catalog as a transfer zone first, so that a query Wants takes
// always finds its configuration.
func (s *Server) SetCatalog(zd *engine.ZoneData) {
	s.cat.Store(zd)
}

// inCatalog reports whether name lies in the catalog zone (no allocation:
// Wants calls it for every query).
func (s *Server) inCatalog(name string) bool {
	cat := s.cat.Load()
	return cat != nil && inZone(name, cat.Apex)
}

// inZone reports whether name is apex or below it, ignoring case.
func inZone(name, apex string) bool {
	n, a := len(name), len(apex)
	if n < a || !strings.EqualFold(name[n-a:], apex) {
		return false
	}
	return n == a || name[n-a-1] == '.'
}

// catalogOf is the catalog's content when r is for the catalog zone (nil
// when it is not).
func (s *Server) catalogOf(r *request) *engine.ZoneData {
	if cat := s.cat.Load(); cat != nil && r.found && r.cfg.Apex == cat.Apex {
		return cat
	}
	return nil
}

// zoneData is the content of a transfer zone: the catalog's, or the
// zone's in the current snapshot.
func (s *Server) zoneData(apex string) (engine.ZoneData, bool) {
	if cat := s.cat.Load(); cat != nil && cat.Apex == apex {
		return *cat, true
	}
	if snap := s.src.Load(); snap != nil {
		return snap.ZoneData(apex)
	}
	return engine.ZoneData{}, false
}

// catalogQuery answers an ordinary query into the catalog zone: REFUSED
// unless its source may transfer the catalog, else authoritatively from
// the catalog's records (NODATA or NXDOMAIN with the SOA).
func (s *Server) catalogQuery(r *request, a *answer, cat *engine.ZoneData) *answer {
	if !allowed(r.src, r.cfg.Allow) {
		return s.refuse(r, a, "refused_acl")
	}
	m := new(dns.Msg)
	m.SetReply(r.msg)
	m.Authoritative = true
	exists := r.name == cat.Apex
	if exists && (r.qtype == dns.TypeSOA || r.qtype == dns.TypeANY) {
		m.Answer = append(m.Answer, cat.SOA)
	}
	for _, rr := range cat.Records {
		owner := rr.Header().Name
		if owner == r.name && (rr.Header().Rrtype == r.qtype || r.qtype == dns.TypeANY) {
			m.Answer = append(m.Answer, rr)
		}
		exists = exists || dns.IsSubDomain(r.name, owner) // the name, or an empty non-terminal above a record
	}
	if len(m.Answer) == 0 {
		m.Ns = []dns.RR{cat.SOA}
		if !exists {
			m.Rcode = dns.RcodeNameError
		}
	}
	if opt := r.msg.IsEdns0(); opt != nil {
		m.SetEdns0(uint16(s.opts.UDPPayloadSize), false)
	}
	if !r.tcp {
		const tsigRoom = 100 // as signedQuery
		m.Truncate(min(udpSize(r.msg), s.opts.UDPPayloadSize) - tsigRoom)
	}
	s.count(a.zone, a.kind, "ok")
	a.msgs = []*dns.Msg{m}
	return a
}

// udpSize is the largest UDP response req's sender takes (RFC 6891).
func udpSize(req *dns.Msg) int {
	if opt := req.IsEdns0(); opt != nil {
		return max(int(opt.UDPSize()), dns.MinMsgSize)
	}
	return dns.MinMsgSize
}
