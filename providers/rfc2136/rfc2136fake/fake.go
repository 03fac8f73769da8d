// Package rfc2136fake is an in-process primary name server of one zone for
// tests: it serves the zone by AXFR and changes it by DNS UPDATE (RFC 2136),
// both only when signed with its TSIG key, and enforces what a real primary
// (BIND) does:
//   - a request that is not signed, or signed with another key or a bad
//     MAC, is answered NOTAUTH and changes nothing;
//   - an UPDATE is all or nothing: its prerequisites (RFC 2136 section
//     3.2: name in use, name not in use, RRset exists, RRset exists with
//     these values, RRset does not exist) are checked first (NXDOMAIN,
//     YXDOMAIN, NXRRSET, YXRRSET), then every update record (names inside
//     the zone: NOTZONE; inside the granted subtree, as BIND's update-policy
//     "grant KEY subdomain NAME ANY": REFUSED), and only then applied,
//     bumping the SOA serial;
//   - the apex SOA and NS cannot be deleted by RRset (section 3.4.2.3);
//   - every message of an answer, transfers included, is signed.
//
// Faults: FailUpdates answers the next UPDATEs with an rcode (SERVFAIL,
// REFUSED...) without applying them.
package rfc2136fake

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Options of a Server.
type Options struct {
	Zone      string // the zone, e.g. example.com (required)
	KeyName   string // the TSIG key's name (required)
	Secret    string // its secret, base64 (required)
	Algorithm string // its algorithm (default dns.HmacSHA256)
	// Grant limits updates to names at or below it (BIND's update-policy
	// "grant KEY subdomain Grant ANY"); "" allows the whole zone.
	Grant string
	// PerMessage is the number of records per AXFR message (default 100),
	// so that transfers of more span several signed messages.
	PerMessage int
}

// Server is the fake primary. Its methods are safe for concurrent use.
type Server struct {
	Addr string // 127.0.0.1:port, TCP

	opts Options
	zone string
	srv  *dns.Server
	ln   net.Listener

	mu       sync.Mutex
	rrs      []dns.RR // the zone without its SOA, in insertion order
	soa      *dns.SOA
	updates  int      // UPDATE messages applied
	refusals []string // why requests were refused, in order
	failures []int    // rcodes to answer the next UPDATEs with
	unsigned bool     // UnsignedAnswers
}

// New starts a fake primary of opts.Zone on a loopback TCP port, with an
// SOA and one NS at the apex. Close it when done.
func New(opts Options) (*Server, error) {
	if opts.Algorithm == "" {
		opts.Algorithm = dns.HmacSHA256
	}
	if opts.PerMessage <= 0 {
		opts.PerMessage = 100
	}
	zone := dns.CanonicalName(opts.Zone)
	s := &Server{opts: opts, zone: zone}
	s.soa = &dns.SOA{Hdr: dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 300},
		Ns: "ns1." + zone, Mbox: "hostmaster." + zone, Serial: 1, Refresh: 3600, Retry: 600, Expire: 86400, Minttl: 300}
	s.rrs = []dns.RR{&dns.NS{Hdr: dns.RR_Header{Name: zone, Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: 300}, Ns: "ns1." + zone}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.ln, s.Addr = ln, ln.Addr().String()
	s.srv = &dns.Server{Listener: ln, Handler: dns.HandlerFunc(s.serve),
		TsigSecret: map[string]string{dns.CanonicalName(opts.KeyName): opts.Secret},
		// miekg/dns refuses UPDATE by default (NOTIMP); a primary takes it.
		MsgAcceptFunc: func(h dns.Header) dns.MsgAcceptAction {
			if h.Bits&(1<<15) != 0 { // a response
				return dns.MsgIgnore
			}
			return dns.MsgAccept
		}}
	started := make(chan struct{})
	s.srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = s.srv.ActivateAndServe() }()
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		ln.Close()
		return nil, fmt.Errorf("rfc2136fake: server did not start")
	}
	return s, nil
}

// Close stops the server.
func (s *Server) Close() { _ = s.srv.Shutdown() }

// Put adds records to the zone (names relative to nothing: give FQDNs).
func (s *Server) Put(rrs ...string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range rrs {
		rr, err := dns.NewRR(t)
		if err != nil {
			return err
		}
		rr.Header().Name = dns.CanonicalName(rr.Header().Name)
		s.rrs = add(s.rrs, rr)
	}
	return nil
}

// Lookup returns the values of the RRset name/typ ("A", "DS", ...), the
// rdata in presentation form, sorted ("" values: none).
func (s *Server) Lookup(name, typ string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	t := dns.StringToType[typ]
	for _, rr := range s.rrs {
		if rr.Header().Rrtype == t && rr.Header().Name == dns.CanonicalName(name) {
			out = append(out, rdata(rr))
		}
	}
	slices.Sort(out)
	return out
}

// Names returns every owner name of the zone, sorted.
func (s *Server) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, rr := range s.rrs {
		if !slices.Contains(out, rr.Header().Name) {
			out = append(out, rr.Header().Name)
		}
	}
	slices.Sort(out)
	return out
}

// Serial is the zone's SOA serial: 1, plus one per applied UPDATE.
func (s *Server) Serial() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.soa.Serial
}

// Updates counts the UPDATE messages applied.
func (s *Server) Updates() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updates
}

// Refusals lists why requests were refused, oldest first.
func (s *Server) Refusals() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.refusals)
}

// FailUpdates answers the next UPDATE messages with the given rcodes, one
// each, without applying them.
func (s *Server) FailUpdates(rcodes ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, rcodes...)
}

// UnsignedAnswers makes every later answer unsigned (a server that lost
// the key, or someone else answering).
func (s *Server) UnsignedAnswers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unsigned = true
}

func (s *Server) serve(w dns.ResponseWriter, req *dns.Msg) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := new(dns.Msg)
	r.SetReply(req)
	t := req.IsTsig()
	switch {
	case t == nil:
		s.refusals = append(s.refusals, "unsigned request")
		r.Rcode = dns.RcodeNotAuth
		_ = w.WriteMsg(r)
		return
	case w.TsigStatus() != nil:
		// As RFC 8945 section 5.3.2 and BIND: NOTAUTH with a TSIG record
		// naming the error, without a MAC (the key is unknown or the MAC
		// bad, so the answer cannot be signed).
		st := w.TsigStatus()
		s.refusals = append(s.refusals, "TSIG: "+st.Error())
		r.Rcode = dns.RcodeNotAuth
		terr := uint16(dns.RcodeBadSig)
		switch st {
		case dns.ErrSecret:
			terr = dns.RcodeBadKey
		case dns.ErrTime:
			terr = dns.RcodeBadTime
		}
		r.Extra = append(r.Extra, &dns.TSIG{Hdr: dns.RR_Header{Name: t.Hdr.Name, Rrtype: dns.TypeTSIG, Class: dns.ClassANY},
			Algorithm: t.Algorithm, TimeSigned: uint64(time.Now().Unix()), Fudge: 300, OrigId: req.Id, Error: terr})
		if b, err := r.Pack(); err == nil {
			_, _ = w.Write(b)
		}
		return
	}
	sign := func(m *dns.Msg) {
		if !s.unsigned {
			m.SetTsig(t.Hdr.Name, t.Algorithm, 300, time.Now().Unix())
		}
	}
	switch {
	case req.Opcode == dns.OpcodeUpdate:
		r.Rcode = s.update(req)
	case len(req.Question) == 1 && req.Question[0].Qtype == dns.TypeAXFR && dns.CanonicalName(req.Question[0].Name) == s.zone:
		s.axfr(w, req, sign)
		return
	default:
		r.Rcode = dns.RcodeRefused
	}
	sign(r)
	_ = w.WriteMsg(r)
}

func (s *Server) axfr(w dns.ResponseWriter, req *dns.Msg, sign func(*dns.Msg)) {
	all := append([]dns.RR{s.soa}, s.rrs...)
	all = append(all, s.soa)
	first := true
	for len(all) > 0 {
		n := min(len(all), s.opts.PerMessage)
		m := new(dns.Msg)
		m.SetReply(req)
		m.Authoritative = true
		m.Answer = all[:n]
		all = all[n:]
		sign(m)
		if err := w.WriteMsg(m); err != nil {
			return
		}
		if first {
			w.TsigTimersOnly(true)
			first = false
		}
	}
}

// update checks and applies an UPDATE (the caller holds s.mu) and returns
// the rcode.
func (s *Server) update(req *dns.Msg) int {
	if len(s.failures) > 0 {
		rc := s.failures[0]
		s.failures = s.failures[1:]
		s.refusals = append(s.refusals, "injected "+dns.RcodeToString[rc])
		return rc
	}
	if len(req.Question) != 1 || req.Question[0].Qtype != dns.TypeSOA {
		s.refusals = append(s.refusals, "zone section")
		return dns.RcodeFormatError
	}
	if dns.CanonicalName(req.Question[0].Name) != s.zone {
		s.refusals = append(s.refusals, "not our zone "+req.Question[0].Name)
		return dns.RcodeNotAuth
	}
	if rc, why := s.prerequisites(req.Answer); rc != dns.RcodeSuccess {
		s.refusals = append(s.refusals, "prerequisite: "+why)
		return rc
	}
	work := slices.Clone(s.rrs)
	for _, u := range req.Ns {
		h := u.Header()
		name := dns.CanonicalName(h.Name)
		if !dns.IsSubDomain(s.zone, name) {
			s.refusals = append(s.refusals, "not in zone: "+name)
			return dns.RcodeNotZone
		}
		if g := s.opts.Grant; g != "" && !dns.IsSubDomain(dns.CanonicalName(g), name) {
			s.refusals = append(s.refusals, "not granted: "+name)
			return dns.RcodeRefused
		}
		switch h.Class {
		case dns.ClassINET:
			c := dns.Copy(u)
			c.Header().Name = name
			work = add(work, c)
		case dns.ClassANY:
			if h.Ttl != 0 {
				return dns.RcodeFormatError
			}
			work = slices.DeleteFunc(work, func(rr dns.RR) bool {
				rh := rr.Header()
				apexCore := name == s.zone && (rh.Rrtype == dns.TypeNS || rh.Rrtype == dns.TypeSOA)
				return rh.Name == name && !apexCore && (h.Rrtype == dns.TypeANY || rh.Rrtype == h.Rrtype)
			})
		case dns.ClassNONE:
			work = slices.DeleteFunc(work, func(rr dns.RR) bool {
				return rr.Header().Name == name && rr.Header().Rrtype == h.Rrtype && rdata(rr) == rdata(u)
			})
		default:
			return dns.RcodeFormatError
		}
	}
	s.rrs = work
	s.soa.Serial++
	s.updates++
	return dns.RcodeSuccess
}

// prerequisites checks the prerequisite section (RFC 2136 section 3.2).
func (s *Server) prerequisites(pre []dns.RR) (int, string) {
	valueSets := map[[2]string][]string{} // name, type → values wanted
	for _, p := range pre {
		h := p.Header()
		name := dns.CanonicalName(h.Name)
		if h.Ttl != 0 {
			return dns.RcodeFormatError, "TTL not 0"
		}
		if !dns.IsSubDomain(s.zone, name) {
			return dns.RcodeNotZone, name
		}
		have := s.values(name, h.Rrtype)
		switch h.Class {
		case dns.ClassANY:
			if h.Rrtype == dns.TypeANY && !s.inUse(name) {
				return dns.RcodeNameError, name + " not in use"
			}
			if h.Rrtype != dns.TypeANY && len(have) == 0 {
				return dns.RcodeNXRrset, name + " " + dns.TypeToString[h.Rrtype] + " does not exist"
			}
		case dns.ClassNONE:
			if h.Rrtype == dns.TypeANY && s.inUse(name) {
				return dns.RcodeYXDomain, name + " in use"
			}
			if h.Rrtype != dns.TypeANY && len(have) > 0 {
				return dns.RcodeYXRrset, name + " " + dns.TypeToString[h.Rrtype] + " exists"
			}
		case dns.ClassINET:
			k := [2]string{name, dns.TypeToString[h.Rrtype]}
			valueSets[k] = append(valueSets[k], rdata(p))
		default:
			return dns.RcodeFormatError, "class"
		}
	}
	for k, want := range valueSets {
		have := s.values(k[0], dns.StringToType[k[1]])
		slices.Sort(want)
		if !slices.Equal(slices.Compact(want), have) {
			return dns.RcodeNXRrset, k[0] + " " + k[1] + " has other values"
		}
	}
	return dns.RcodeSuccess, ""
}

func (s *Server) values(name string, t uint16) []string {
	var out []string
	for _, rr := range s.rrs {
		if rr.Header().Name == name && rr.Header().Rrtype == t {
			out = append(out, rdata(rr))
		}
	}
	if t == dns.TypeSOA && name == s.zone {
		out = append(out, rdata(s.soa))
	}
	slices.Sort(out)
	return out
}

func (s *Server) inUse(name string) bool {
	for _, rr := range s.rrs {
		if rr.Header().Name == name {
			return true
		}
	}
	return name == s.zone
}

// add adds rr to rrs unless the same record is there; the RRset takes
// rr's TTL (a set has one TTL).
func add(rrs []dns.RR, rr dns.RR) []dns.RR {
	h := rr.Header()
	dup := false
	for _, o := range rrs {
		oh := o.Header()
		if oh.Name == h.Name && oh.Rrtype == h.Rrtype {
			oh.Ttl = h.Ttl
			dup = dup || rdata(o) == rdata(rr)
		}
	}
	if dup {
		return rrs
	}
	return append(rrs, rr)
}

// rdata is the presentation form of rr's data (what follows the header).
func rdata(rr dns.RR) string {
	return strings.TrimSpace(strings.TrimPrefix(rr.String(), rr.Header().String()))
}
