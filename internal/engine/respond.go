package engine

import (
	"cmp"
	"net"
	"net/netip"

	"github.com/miekg/dns"
)

// DefaultUDPPayloadSize is the EDNS0 UDP payload size we advertise (the DNS
// flag day 2020 value).
const DefaultUDPPayloadSize = 1232

// Reply is a reusable response: the message plus the records Respond fills
// in. Keep Replies in a sync.Pool; Respond resets them.
type Reply struct {
	Msg    dns.Msg
	Result Result
	// QName is the question name exactly as received. When Respond answers
	// from our data it puts the canonical (lower-case) owner name in
	// Msg.Question so that answer names compress against it; a transport
	// restores the received spelling (see RestoreQuestionCase).
	QName string

	opt   dns.OPT
	ecs   dns.EDNS0_SUBNET
	ede   dns.EDNS0_EDE
	opts  [2]dns.EDNS0 // ECS, EDE
	ecsIP [16]byte
}

// Outcome summarises a response for metrics and logs.
type Outcome struct {
	Rcode    int
	Zone     string
	Strategy string
	FailOpen bool
	HasECS   bool
	// ECSIgnored: the query's ECS option came from a source outside
	// geo.ecs_trusted, so it was answered by its source address and the
	// reply's ECS scope is 0.
	ECSIgnored bool
	// SignLimited: the answer was a denial that needed a fresh signature
	// and the SignGate refused it; the reply is SERVFAIL with no records
	// (see RespondGated).
	SignLimited bool
	// MaxSize is the largest UDP response the client accepts (512 without
	// EDNS0, else its advertised size bounded by ours).
	MaxSize int
	// EDE is the Extended DNS Error the reply carries (EDENone: none;
	// only replies to queries with EDNS carry one).
	EDE ExtendedError
}

// SignGate meters the signing work clients can cause. Positive answers
// are signed once per RRset and served from the signer's cache, but every
// denial of a name (or type) not asked before needs a fresh signature (tens
// of microseconds); a gate decides, per source address, whether one more
// may be made. Implementations must be safe for concurrent use, must not
// block, and should not allocate.
type SignGate interface {
	// AllowSign reports whether a fresh denial signature may be made for
	// a query from src, and charges src for it if so.
	AllowSign(src netip.Addr) bool
}

// Respond answers req, received from src, into rep.Msg. It implements the
// protocol rules of an authoritative server (opcode, class, EDNS0, ECS,
// NXDOMAIN/NODATA, REFUSED outside our zones). udpSize is our advertised
// payload size (0 = DefaultUDPPayloadSize). Signing work is not limited:
// see RespondGated.
func (s *Snapshot) Respond(req *dns.Msg, src netip.Addr, udpSize int, rep *Reply) Outcome {
	return s.RespondGated(req, src, udpSize, nil, rep)
}

// RespondGated is Respond with the fresh signatures of denials metered by
// gate (nil: not metered). When gate refuses one, the reply is SERVFAIL
// with no records and Outcome.SignLimited is set, so that the transport
// can answer otherwise (the embedded server sends TC=1 over UDP).
func (s *Snapshot) RespondGated(req *dns.Msg, src netip.Addr, udpSize int, gate SignGate, rep *Reply) Outcome {
	udpSize = cmp.Or(udpSize, DefaultUDPPayloadSize)
	rep.begin(req)
	out := Outcome{MaxSize: dns.MinMsgSize}
	opt := req.IsEdns0()
	if opt != nil {
		out.MaxSize = max(dns.MinMsgSize, min(int(opt.UDPSize()), udpSize))
		rep.addOPT(udpSize, opt.Do())
	}
	fail := func(rcode int) Outcome {
		rep.Msg.Rcode = rcode
		out.Rcode = rcode
		if opt != nil && len(req.Question) == 1 {
			rep.setEDE(ExtendedErrorOf(rcode, "", &req.Question[0], false, false), &out)
		}
		return out
	}
	if rcode, bad := requestError(req, opt); bad {
		return fail(rcode)
	}
	client := Client{Addr: src.Unmap(), Bits: src.Unmap().BitLen()}
	if opt != nil {
		ecs := s.readECS(opt, src, rep)
		out.HasECS, out.ECSIgnored = ecs.found, ecs.ignored
		if !ecs.ok {
			return fail(dns.RcodeFormatError)
		}
		if ecs.use {
			client = ecs.client
		}
	}
	q := &req.Question[0]
	if rcode, bad := questionError(q); bad {
		return fail(rcode)
	}
	// Not split out: a call costs on the per-query path.
	m, r := &rep.Msg, &rep.Result
	s.Lookup(q.Name, q.Qtype, client, r)
	out.Rcode, out.Zone, out.Strategy, out.FailOpen = r.Rcode, r.Zone, r.Strategy, r.FailOpen
	m.Rcode = r.Rcode
	if r.Zone == "" {
		if opt != nil {
			rep.setEDE(ExtendedErrorOf(r.Rcode, "", q, false, false), &out)
		}
		return out
	}
	m.Authoritative, m.Compress = true, true
	if len(r.Answer) > 0 && sameName(r.Answer[0].Header().Name, q.Name) {
		m.Question[0].Name = r.Answer[0].Header().Name
	}
	m.Answer = append(m.Answer, r.Answer...)
	m.Ns = append(m.Ns, r.Ns...)
	m.Extra = append(m.Extra, r.Extra...)
	if s.signed && rep.opt.Do() {
		s.signReply(m, q.Name, q.Qtype, &out, gate, src)
	}
	if out.HasECS {
		if !out.ECSIgnored {
			rep.ecs.SourceScope = uint8(r.Scope)
		}
		rep.opt.Option = append(rep.opt.Option, &rep.ecs)
	}
	if opt != nil {
		rep.setEDE(ExtendedErrorOf(out.Rcode, out.Zone, q, out.FailOpen, out.SignLimited), &out)
	}
	return out
}

// begin resets rep and starts the response to req: its id, opcode and
// flags, and its question.
func (rep *Reply) begin(req *dns.Msg) {
	rep.reset()
	m := &rep.Msg
	m.Id = req.Id
	m.Response = true
	m.Opcode = req.Opcode
	m.RecursionDesired = req.RecursionDesired
	m.CheckingDisabled = req.CheckingDisabled
	if len(req.Question) > 0 {
		m.Question = append(m.Question, req.Question[0])
		rep.QName = req.Question[0].Name
	}
}

// addOPT adds the reply's OPT record, advertising udpSize and echoing the
// DO bit.
func (rep *Reply) addOPT(udpSize int, do bool) {
	rep.opt.Hdr = dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}
	rep.opt.SetUDPSize(uint16(udpSize))
	rep.opt.SetDo(do)
	rep.opt.Option = rep.opts[:0]
	rep.Msg.Extra = append(rep.Msg.Extra, &rep.opt)
}

// requestError checks the parts of req that come before its question's
// content: opcode, question count, EDNS version and OPT count. It returns
// the rcode to answer with when one is wrong.
func requestError(req *dns.Msg, opt *dns.OPT) (rcode int, bad bool) {
	switch {
	case req.Opcode != dns.OpcodeQuery:
		return dns.RcodeNotImplemented, true
	case len(req.Question) != 1:
		return dns.RcodeFormatError, true
	case opt != nil && opt.Version() != 0:
		return dns.RcodeBadVers, true
	case countOPT(req) > 1:
		return dns.RcodeFormatError, true
	}
	return 0, false
}

// queryECS is what a query's ECS option says (readECS).
type queryECS struct {
	client  Client // the subnet of the option, used when use is set
	use     bool   // the source is trusted and the option has a prefix (not /0)
	found   bool   // the query has an ECS option
	ignored bool   // its source is not trusted: answered by the source address, scope 0
	ok      bool   // false: FORMERR (more than one ECS option, or an invalid one; found and ignored then describe the first)
}

// readECS reads the query's ECS option, if any, from opt (RFC 7871), and
// keeps a copy of it in rep for the reply.
func (s *Snapshot) readECS(opt *dns.OPT, src netip.Addr, rep *Reply) queryECS {
	var q queryECS
	for _, o := range opt.Option {
		e, ok := o.(*dns.EDNS0_SUBNET)
		if !ok {
			continue // unknown options are ignored (RFC 6891 6.1.2)
		}
		if q.found {
			return q // more than one ECS option
		}
		c, ok := ecsClient(e)
		if !ok {
			return q
		}
		q.found = true
		switch {
		case !s.trustsECS(src):
			q.ignored = true
		case c.Bits > 0:
			q.client, q.use = c, true
		}
		rep.ecs = dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: e.Family, SourceNetmask: e.SourceNetmask}
		n := copy(rep.ecsIP[:], e.Address)
		rep.ecs.Address = net.IP(rep.ecsIP[:n])
	}
	q.ok = true
	return q
}

// questionError checks the class and type of q. It returns the rcode to
// answer with when we do not answer them here.
func questionError(q *dns.Question) (rcode int, bad bool) {
	switch {
	case q.Qclass != dns.ClassINET:
		return dns.RcodeRefused, true
	case q.Qtype == dns.TypeAXFR || q.Qtype == dns.TypeIXFR:
		return dns.RcodeRefused, true // transfers are served by internal/xfr (dnsserver hands them over before Respond); here: refused
	case q.Qtype == dns.TypeOPT:
		return dns.RcodeFormatError, true
	case q.Qtype == dns.TypeTKEY || q.Qtype == dns.TypeTSIG || q.Qtype == dns.TypeMAILA || q.Qtype == dns.TypeMAILB:
		return dns.RcodeNotImplemented, true
	}
	return 0, false
}

// ecsClient validates an ECS option of a query (RFC 7871 section 7.1.2)
// and returns the client it describes.
func ecsClient(e *dns.EDNS0_SUBNET) (Client, bool) {
	if e.SourceScope != 0 {
		return Client{}, false
	}
	var addr netip.Addr
	switch e.Family {
	case 0:
		return Client{}, e.SourceNetmask == 0
	case 1:
		ip4 := e.Address.To4()
		if ip4 == nil || e.SourceNetmask > 32 {
			return Client{}, false
		}
		addr = netip.AddrFrom4([4]byte(ip4))
	case 2:
		if len(e.Address) != 16 || e.SourceNetmask > 128 {
			return Client{}, false
		}
		addr = netip.AddrFrom16([16]byte(e.Address))
	default:
		return Client{}, false
	}
	bits := int(e.SourceNetmask)
	pfx, err := addr.Prefix(bits)
	if err != nil || pfx.Addr() != addr {
		return Client{}, false // address bits beyond the source prefix must be zero
	}
	return Client{Addr: addr, Bits: bits, HasECS: true}, true
}

func countOPT(m *dns.Msg) int {
	n := 0
	for _, rr := range m.Extra {
		if rr.Header().Rrtype == dns.TypeOPT {
			n++
		}
	}
	return n
}

// sameName reports whether two presentation names are equal ignoring ASCII case.
func sameName(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func (rep *Reply) reset() {
	rep.Result.Reset()
	m := &rep.Msg
	clear(m.Answer)
	clear(m.Ns)
	clear(m.Extra)
	*m = dns.Msg{Question: m.Question[:0], Answer: m.Answer[:0], Ns: m.Ns[:0], Extra: m.Extra[:0]}
	rep.QName = ""
	rep.opt = dns.OPT{}
	rep.ecs = dns.EDNS0_SUBNET{}
	rep.ede = dns.EDNS0_EDE{}
}
