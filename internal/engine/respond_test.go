package engine

import (
	"net"
	"net/netip"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func query(name string, qtype uint16, edit ...func(*dns.Msg)) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	for _, e := range edit {
		e(m)
	}
	return m
}

func withEDNS(size uint16) func(*dns.Msg) {
	return func(m *dns.Msg) { m.SetEdns0(size, false) }
}

func withECS(cidr string, scope uint8) func(*dns.Msg) {
	return func(m *dns.Msg) {
		p := netip.MustParsePrefix(cidr)
		fam := uint16(1)
		if p.Addr().Is6() {
			fam = 2
		}
		opt := m.IsEdns0()
		if opt == nil {
			m.SetEdns0(1232, false)
			opt = m.IsEdns0()
		}
		opt.Option = append(opt.Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: fam, SourceNetmask: uint8(p.Bits()), SourceScope: scope, Address: net.IP(p.Addr().AsSlice())})
	}
}

func respond(s *Snapshot, req *dns.Msg) (*dns.Msg, Outcome) {
	rep := &Reply{}
	out := s.Respond(req, netip.MustParseAddr("127.0.0.1"), 0, rep)
	return &rep.Msg, out
}

func ecsOf(m *dns.Msg) *dns.EDNS0_SUBNET {
	if opt := m.IsEdns0(); opt != nil {
		for _, o := range opt.Option {
			if e, ok := o.(*dns.EDNS0_SUBNET); ok {
				return e
			}
		}
	}
	return nil
}

func TestRespondProtocolRules(t *testing.T) {
	s := compile(t, nil)
	tests := []struct {
		name  string
		req   *dns.Msg
		rcode int
		aa    bool
		check func(t *testing.T, m *dns.Msg)
	}{
		{"an answer from our zone is authoritative", query("w.example.test.", dns.TypeA), dns.RcodeSuccess, true, func(t *testing.T, m *dns.Msg) {
			assert.Len(t, m.Answer, 1)
			assert.False(t, m.RecursionAvailable)
		}},
		{"RD is echoed but ignored", query("example.org.", dns.TypeA, func(m *dns.Msg) { m.RecursionDesired = true }), dns.RcodeRefused, false, func(t *testing.T, m *dns.Msg) {
			assert.True(t, m.RecursionDesired)
			assert.False(t, m.RecursionAvailable)
			assert.Empty(t, m.Answer)
		}},
		{"an unknown opcode gets NOTIMP", query("w.example.test.", dns.TypeA, func(m *dns.Msg) { m.Opcode = dns.OpcodeStatus }), dns.RcodeNotImplemented, false, nil},
		{"two questions get FORMERR", query("w.example.test.", dns.TypeA, func(m *dns.Msg) { m.Question = append(m.Question, m.Question[0]) }), dns.RcodeFormatError, false, nil},
		{"no question gets FORMERR", query("w.example.test.", dns.TypeA, func(m *dns.Msg) { m.Question = nil }), dns.RcodeFormatError, false, nil},
		{"class CHAOS is refused", query("version.bind.", dns.TypeTXT, func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassCHAOS }), dns.RcodeRefused, false, nil},
		{"AXFR is refused", query("example.test.", dns.TypeAXFR), dns.RcodeRefused, false, nil},
		{"EDNS version 1 gets BADVERS with an OPT", query("w.example.test.", dns.TypeA, withEDNS(4096), func(m *dns.Msg) { m.IsEdns0().SetVersion(1) }), dns.RcodeBadVers, false, func(t *testing.T, m *dns.Msg) {
			opt := m.IsEdns0()
			require.NotNil(t, opt)
			assert.Equal(t, uint8(0), opt.Version())
		}},
		{"EDNS is echoed with our payload size", query("w.example.test.", dns.TypeA, withEDNS(4096)), dns.RcodeSuccess, true, func(t *testing.T, m *dns.Msg) {
			opt := m.IsEdns0()
			require.NotNil(t, opt)
			assert.Equal(t, uint16(1232), opt.UDPSize())
			assert.Nil(t, ecsOf(m))
		}},
		{"unknown EDNS options are ignored", query("w.example.test.", dns.TypeA, withEDNS(1232), func(m *dns.Msg) {
			m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_LOCAL{Code: 65001, Data: []byte{1, 2}})
		}), dns.RcodeSuccess, true, func(t *testing.T, m *dns.Msg) {
			assert.Empty(t, m.IsEdns0().Option)
		}},
		{"ECS on a geo name gets the matched scope", query("geo.example.test.", dns.TypeA, withECS("10.3.1.0/24", 0)), dns.RcodeSuccess, true, func(t *testing.T, m *dns.Msg) {
			e := ecsOf(m)
			require.NotNil(t, e)
			assert.Equal(t, uint8(24), e.SourceNetmask)
			assert.Equal(t, uint8(16), e.SourceScope)
			assert.Equal(t, "10.3.1.0", e.Address.String())
			assert.Equal(t, "192.0.2.43", m.Answer[0].(*dns.A).A.String())
		}},
		{"ECS on a non-geo name gets scope 0", query("w.example.test.", dns.TypeA, withECS("10.3.1.0/24", 0)), dns.RcodeSuccess, true, func(t *testing.T, m *dns.Msg) {
			e := ecsOf(m)
			require.NotNil(t, e)
			assert.Equal(t, uint8(0), e.SourceScope)
		}},
		{"ECS over IPv6 is honoured", query("geo.example.test.", dns.TypeA, withECS("2001:db8:1::/48", 0)), dns.RcodeSuccess, true, func(t *testing.T, m *dns.Msg) {
			require.NotNil(t, ecsOf(m))
			assert.Equal(t, uint8(0), ecsOf(m).SourceScope, "no IPv6 network is placed: the default answer holds for all of IPv6")
		}},
		{"ECS with a non-zero scope in the query is FORMERR", query("geo.example.test.", dns.TypeA, withECS("10.3.1.0/24", 8)), dns.RcodeFormatError, false, nil},
		{"ECS with address bits beyond the prefix is FORMERR", query("geo.example.test.", dns.TypeA, withECS("10.3.1.0/24", 0), func(m *dns.Msg) {
			ecsOf(m).Address = net.IPv4(10, 3, 1, 9).To4()
		}), dns.RcodeFormatError, false, nil},
		{"ANY gets a single HINFO (RFC 8482)", query("w.example.test.", dns.TypeANY), dns.RcodeSuccess, true, func(t *testing.T, m *dns.Msg) {
			require.Len(t, m.Answer, 1)
			assert.Equal(t, dns.TypeHINFO, m.Answer[0].Header().Rrtype)
		}},
		{"a mixed-case query is answered with the question echoed", query("W.EXAMPLE.test.", dns.TypeA), dns.RcodeSuccess, true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, out := respond(s, tc.req)
			assert.Equal(t, tc.rcode, m.Rcode)
			assert.Equal(t, tc.rcode, out.Rcode)
			assert.Equal(t, tc.aa, m.Authoritative)
			assert.True(t, m.Response)
			assert.Equal(t, tc.req.Id, m.Id)
			// Packing must work for every reply, extended rcodes included.
			wire, err := m.Pack()
			require.NoError(t, err)
			back := new(dns.Msg)
			require.NoError(t, back.Unpack(wire))
			assert.Equal(t, tc.rcode, back.Rcode)
			if tc.check != nil {
				tc.check(t, back)
			}
		})
	}
}

func TestRespondReusesTheReply(t *testing.T) {
	s := compile(t, nil)
	rep := &Reply{}
	src := netip.MustParseAddr("127.0.0.1")
	s.Respond(query("geo.example.test.", dns.TypeA, withECS("10.3.1.0/24", 0)), src, 0, rep)
	require.NotNil(t, ecsOf(&rep.Msg))
	s.Respond(query("nope.example.test.", dns.TypeA), src, 0, rep)
	assert.Nil(t, rep.Msg.IsEdns0(), "no OPT left over from the previous reply")
	assert.Empty(t, rep.Msg.Answer)
	assert.Len(t, rep.Msg.Ns, 1)
	assert.Equal(t, dns.RcodeNameError, rep.Msg.Rcode)
}

func BenchmarkRespondWeightedA(b *testing.B) {
	s := compile(b, nil)
	rep := &Reply{}
	req := query("w.example.test.", dns.TypeA)
	src := netip.MustParseAddr("127.0.0.1")
	b.ReportAllocs()
	for b.Loop() {
		s.Respond(req, src, 0, rep)
	}
}
