package engine

import (
	"strconv"

	"github.com/miekg/dns"
)

// ExtendedError is an Extended DNS Error (RFC 8914) that Meridian puts in
// a reply: an INFO-CODE and an EXTRA-TEXT, chosen once here for every
// front end (the embedded server and the CoreDNS plugin answer through
// Respond; the embedded server adds the ones of its own limits and of
// refused transfers with the same values). An EDE travels in the OPT
// record, so only a reply to a query that carried EDNS gets one.
//
// RFC 8914 has no code for a fail-open answer nor for rate limiting; why
// each code was chosen is in docs/dns.md (Extended DNS Errors).
type ExtendedError uint8

// The extended errors Meridian sends. EDENone is no EDE.
const (
	EDENone ExtendedError = iota
	// EDEFailOpen: every endpoint of the service is down and the answer
	// ignores health (fail-open). 0 Other: the data is current (not 3
	// Stale Answer, which is a resolver's expired cache).
	EDEFailOpen
	// EDENotAuthoritative: REFUSED, the name is in none of our zones.
	EDENotAuthoritative
	// EDEOtherClass: REFUSED, the class is not IN (every zone is IN).
	EDEOtherClass
	// EDETransferRefused: REFUSED AXFR/IXFR (address not allowed, no or
	// wrong TSIG, zone not transferable, AXFR over UDP, or no transfers).
	EDETransferRefused
	// EDEQueryRefused: REFUSED, a query other than a transfer that the
	// transfer side answers (into the catalog zone) from an address not
	// allowed.
	EDEQueryRefused
	// EDERateLimited: the empty truncated reply (TC=1) of a response rate
	// limited by RRL (a slip).
	EDERateLimited
	// EDESignLimited: the signing limit refused the fresh signature the
	// reply needed: TC=1 over UDP, SERVFAIL over TCP.
	EDESignLimited

	// EDECount is the number of ExtendedError values (EDENone included),
	// for arrays indexed by them.
	EDECount int = iota
)

// extendedErrors holds the code, text and metric reason of each value.
var extendedErrors = [EDECount]struct {
	code   uint16
	text   string
	reason string
}{
	EDENone:             {0, "", "none"},
	EDEFailOpen:         {dns.ExtendedErrorCodeOther, "meridian: fail-open, every endpoint is down", "fail_open"},
	EDENotAuthoritative: {dns.ExtendedErrorCodeNotAuthoritative, "meridian: not authoritative for this name", "not_authoritative"},
	EDEOtherClass:       {dns.ExtendedErrorCodeNotAuthoritative, "meridian: only class IN is served", "other_class"},
	EDETransferRefused:  {dns.ExtendedErrorCodeProhibited, "meridian: zone transfer not allowed", "transfer_refused"},
	EDEQueryRefused:     {dns.ExtendedErrorCodeProhibited, "meridian: query not allowed", "query_refused"},
	EDERateLimited:      {dns.ExtendedErrorCodeOther, "rate limited", "rate_limited"},
	EDESignLimited:      {dns.ExtendedErrorCodeNotReady, "signing limit reached: retry later or over TCP", "sign_limited"},
}

// Code is the INFO-CODE of e.
func (e ExtendedError) Code() uint16 { return extendedErrors[e].code }

// Text is the EXTRA-TEXT of e.
func (e ExtendedError) Text() string { return extendedErrors[e].text }

// Reason names e in metrics (the reason label): fail_open,
// not_authoritative, other_class, transfer_refused, query_refused, rate_limited,
// sign_limited ("none" for EDENone).
func (e ExtendedError) Reason() string { return extendedErrors[e].reason }

// CodeLabel is the INFO-CODE of e in decimal (the code label of metrics).
func (e ExtendedError) CodeLabel() string { return strconv.Itoa(int(e.Code())) }

// Option returns e as the EDNS0 option miekg/dns packs.
func (e ExtendedError) Option() dns.EDNS0_EDE {
	return dns.EDNS0_EDE{InfoCode: e.Code(), ExtraText: e.Text()}
}

// RefusalOf is the EDE of a REFUSED answer from the transfer side
// (internal/xfr): EDETransferRefused to an AXFR or IXFR, EDEQueryRefused to
// any other query (the catalog zone's).
func RefusalOf(qtype uint16) ExtendedError {
	if qtype == dns.TypeAXFR || qtype == dns.TypeIXFR {
		return EDETransferRefused
	}
	return EDEQueryRefused
}

// ExtendedErrorOf decides the EDE of a reply from what Respond found:
// the rcode, the zone that answered ("" = none of ours), the question, and
// whether the answer failed open or the signing limit refused it. It is
// pure; Respond adds the result to the reply when the query had EDNS.
func ExtendedErrorOf(rcode int, zone string, q *dns.Question, failOpen, signLimited bool) ExtendedError {
	switch {
	case signLimited:
		return EDESignLimited
	case rcode == dns.RcodeRefused && q != nil && (q.Qtype == dns.TypeAXFR || q.Qtype == dns.TypeIXFR):
		return EDETransferRefused
	case rcode == dns.RcodeRefused && q != nil && q.Qclass != dns.ClassINET:
		return EDEOtherClass
	case rcode == dns.RcodeRefused && zone == "":
		return EDENotAuthoritative
	case failOpen && rcode == dns.RcodeSuccess:
		return EDEFailOpen
	}
	return EDENone
}

// setEDE adds e to the reply's OPT record (there must be one) and
// records it in out.
func (rep *Reply) setEDE(e ExtendedError, out *Outcome) {
	if e == EDENone {
		return
	}
	rep.ede = e.Option()
	rep.opt.Option = append(rep.opt.Option, &rep.ede)
	out.EDE = e
}

// ExplainEDE is the Extended DNS Error part of an Explanation.
type ExplainEDE struct {
	Code uint16 `json:"code"` // INFO-CODE
	Name string `json:"name"` // the code's name in the IANA registry, as dig prints it
	Text string `json:"text"` // EXTRA-TEXT
}

// setExplainEDE sets the EDE of e, and of each step of its CNAME chain,
// as Respond decides it for a query of class IN and type qtype.
func setExplainEDE(e *Explanation, qtype uint16) {
	q := dns.Question{Name: e.Name, Qtype: qtype, Qclass: dns.ClassINET}
	ede := ExtendedErrorOf(dns.StringToRcode[e.Rcode], e.Zone, &q, e.FailOpen, false)
	e.EDE = nil
	if ede != EDENone {
		e.EDE = &ExplainEDE{Code: ede.Code(), Name: dns.ExtendedErrorCodeToString[ede.Code()], Text: ede.Text()}
	}
	for i := range e.Chain {
		setExplainEDE(&e.Chain[i], qtype)
	}
}
