package engine

import (
	"net/netip"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExtendedErrorOf(t *testing.T) {
	inA := &dns.Question{Name: "x.example.test.", Qtype: dns.TypeA, Qclass: dns.ClassINET}
	axfr := &dns.Question{Name: "example.test.", Qtype: dns.TypeAXFR, Qclass: dns.ClassINET}
	ixfr := &dns.Question{Name: "example.test.", Qtype: dns.TypeIXFR, Qclass: dns.ClassINET}
	chaos := &dns.Question{Name: "version.bind.", Qtype: dns.TypeTXT, Qclass: dns.ClassCHAOS}
	for _, tc := range []struct {
		name        string
		rcode       int
		zone        string
		q           *dns.Question
		failOpen    bool
		signLimited bool
		want        ExtendedError
	}{
		{"a plain answer carries no EDE", dns.RcodeSuccess, "example.test.", inA, false, false, EDENone},
		{"NXDOMAIN in our zone carries no EDE", dns.RcodeNameError, "example.test.", inA, false, false, EDENone},
		{"a fail-open answer is 0 Other", dns.RcodeSuccess, "example.test.", inA, true, false, EDEFailOpen},
		{"a name outside our zones is REFUSED with 20 Not Authoritative", dns.RcodeRefused, "", inA, false, false, EDENotAuthoritative},
		{"a class other than IN is REFUSED with 20 Not Authoritative", dns.RcodeRefused, "", chaos, false, false, EDEOtherClass},
		{"a refused AXFR is 18 Prohibited", dns.RcodeRefused, "", axfr, false, false, EDETransferRefused},
		{"a refused IXFR is 18 Prohibited", dns.RcodeRefused, "", ixfr, false, false, EDETransferRefused},
		{"a reply the signing limit refused is 14 Not Ready", dns.RcodeServerFailure, "example.test.", inA, false, true, EDESignLimited},
		{"the signing limit wins over fail-open (the answer was not sent)", dns.RcodeServerFailure, "example.test.", inA, true, true, EDESignLimited},
		{"a FORMERR carries no EDE", dns.RcodeFormatError, "", inA, false, false, EDENone},
		{"a NOTIMP carries no EDE", dns.RcodeNotImplemented, "", nil, false, false, EDENone},
		{"a REFUSED without a question is Not Authoritative", dns.RcodeRefused, "", nil, false, false, EDENotAuthoritative},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ExtendedErrorOf(tc.rcode, tc.zone, tc.q, tc.failOpen, tc.signLimited))
		})
	}
}

func TestExtendedErrorValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    ExtendedError
		code uint16
	}{
		{"fail-open is 0 Other, not 3 Stale Answer", EDEFailOpen, 0},
		{"outside our zones is 20 Not Authoritative", EDENotAuthoritative, 20},
		{"another class is 20 Not Authoritative", EDEOtherClass, 20},
		{"a refused transfer is 18 Prohibited", EDETransferRefused, 18},
		{"a refused query into the catalog is 18 Prohibited", EDEQueryRefused, 18},
		{"an RRL slip is 0 Other", EDERateLimited, 0},
		{"the signing limit is 14 Not Ready", EDESignLimited, 14},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.code, tc.e.Code())
			assert.NotEmpty(t, tc.e.Text(), "every EDE says what happened in its EXTRA-TEXT")
			assert.LessOrEqual(t, len(tc.e.Text()), 64, "texts are short: they travel in every such reply")
			assert.NotEqual(t, "none", tc.e.Reason())
		})
	}
}

func TestRefusalOf(t *testing.T) {
	for _, tc := range []struct {
		name  string
		qtype uint16
		want  ExtendedError
	}{
		{"an AXFR refused says the transfer is not allowed", dns.TypeAXFR, EDETransferRefused},
		{"an IXFR refused says the transfer is not allowed", dns.TypeIXFR, EDETransferRefused},
		{"an SOA query into the catalog refused says the query is not allowed", dns.TypeSOA, EDEQueryRefused},
		{"a PTR query into the catalog refused says the query is not allowed", dns.TypePTR, EDEQueryRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, RefusalOf(tc.qtype))
		})
	}
}

// edeOf returns the EDE options of m's OPT record.
func edeOf(m *dns.Msg) []*dns.EDNS0_EDE {
	var out []*dns.EDNS0_EDE
	if opt := m.IsEdns0(); opt != nil {
		for _, o := range opt.Option {
			if e, ok := o.(*dns.EDNS0_EDE); ok {
				out = append(out, e)
			}
		}
	}
	return out
}

func TestRespondExtendedErrors(t *testing.T) {
	s := compile(t, nil)
	chaos := func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassCHAOS }
	for _, tc := range []struct {
		name  string
		req   *dns.Msg
		rcode int
		want  ExtendedError
	}{
		{"a fail-open answer to a query with EDNS carries 0 Other and says fail-open",
			query("open.example.test.", dns.TypeA, withEDNS(1232)), dns.RcodeSuccess, EDEFailOpen},
		{"a fail-open answer to a query without EDNS carries nothing (no OPT)",
			query("open.example.test.", dns.TypeA), dns.RcodeSuccess, EDENone},
		{"a fail-open answer to an ECS query carries both options",
			query("open.example.test.", dns.TypeA, withECS("10.3.1.0/24", 0)), dns.RcodeSuccess, EDEFailOpen},
		{"a healthy answer carries nothing",
			query("w.example.test.", dns.TypeA, withEDNS(1232)), dns.RcodeSuccess, EDENone},
		{"a name outside our zones is REFUSED with 20",
			query("www.example.org.", dns.TypeA, withEDNS(1232)), dns.RcodeRefused, EDENotAuthoritative},
		{"a class CH query is REFUSED with 20",
			query("w.example.test.", dns.TypeTXT, withEDNS(1232), chaos), dns.RcodeRefused, EDEOtherClass},
		{"an AXFR that reaches Respond (no transfers) is REFUSED with 18",
			query("example.test.", dns.TypeAXFR, withEDNS(1232)), dns.RcodeRefused, EDETransferRefused},
		{"an NXDOMAIN carries nothing",
			query("nope.example.test.", dns.TypeA, withEDNS(1232)), dns.RcodeNameError, EDENone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, out := respond(s, tc.req)
			assert.Equal(t, tc.rcode, m.Rcode)
			assert.Equal(t, tc.want, out.EDE)
			edes := edeOf(m)
			if tc.want == EDENone {
				assert.Empty(t, edes)
				return
			}
			require.Len(t, edes, 1)
			assert.Equal(t, tc.want.Code(), edes[0].InfoCode)
			assert.Equal(t, tc.want.Text(), edes[0].ExtraText)
			wire, err := m.Pack()
			require.NoError(t, err)
			var back dns.Msg
			require.NoError(t, back.Unpack(wire))
			assert.Equal(t, edes, edeOf(&back), "the EDE survives the wire")
			if ecsOf(tc.req) != nil {
				assert.NotNil(t, ecsOf(m), "the ECS option is kept beside the EDE")
			}
		})
	}
}

func TestRespondSignLimitedCarriesNotReady(t *testing.T) {
	s, _ := compileSigned(t)
	rep := &Reply{}
	out := s.RespondGated(query("gone.example.test.", dns.TypeA, withDO), netip.MustParseAddr("198.51.100.7"), 0, &budgetGate{}, rep)
	require.True(t, out.SignLimited)
	assert.Equal(t, EDESignLimited, out.EDE)
	edes := edeOf(&rep.Msg)
	require.Len(t, edes, 1)
	assert.Equal(t, uint16(dns.ExtendedErrorCodeNotReady), edes[0].InfoCode)
}

func TestAReusedReplyDropsTheEDE(t *testing.T) {
	s := compile(t, nil)
	rep := &Reply{}
	src := netip.MustParseAddr("127.0.0.1")
	out := s.Respond(query("open.example.test.", dns.TypeA, withEDNS(1232)), src, 0, rep)
	require.Equal(t, EDEFailOpen, out.EDE)
	out = s.Respond(query("w.example.test.", dns.TypeA, withEDNS(1232)), src, 0, rep)
	assert.Equal(t, EDENone, out.EDE)
	assert.Empty(t, edeOf(&rep.Msg))
}

func TestRespondFailOpenDoesNotAllocate(t *testing.T) {
	s := compile(t, nil)
	rep := &Reply{}
	req := query("open.example.test.", dns.TypeA, withEDNS(1232))
	src := netip.MustParseAddr("127.0.0.1")
	s.Respond(req, src, 0, rep) // warm the reply's slices
	assert.Zero(t, testing.AllocsPerRun(200, func() { s.Respond(req, src, 0, rep) }))
}

func TestExplainShowsTheExtendedError(t *testing.T) {
	s := compile(t, nil)
	e := s.Explain("open.example.test.", dns.TypeA, Client{}, false)
	require.True(t, e.FailOpen)
	require.NotNil(t, e.EDE)
	assert.Equal(t, ExplainEDE{Code: 0, Name: "Other", Text: EDEFailOpen.Text()}, *e.EDE)

	e = s.Explain("www.example.org.", dns.TypeA, Client{}, false)
	require.NotNil(t, e.EDE)
	assert.Equal(t, ExplainEDE{Code: 20, Name: "Not Authoritative", Text: EDENotAuthoritative.Text()}, *e.EDE)

	e = s.Explain("w.example.test.", dns.TypeA, Client{}, false)
	assert.Nil(t, e.EDE, "a healthy answer carries none")
}

func BenchmarkRespondFailOpenEDNS(b *testing.B) {
	s := compile(b, nil)
	rep := &Reply{}
	req := query("open.example.test.", dns.TypeA, withEDNS(1232))
	src := netip.MustParseAddr("127.0.0.1")
	b.ReportAllocs()
	for b.Loop() {
		s.Respond(req, src, 0, rep)
	}
}
