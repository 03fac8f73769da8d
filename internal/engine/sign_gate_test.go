package engine

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// budgetGate allows a fixed number of fresh signatures and records who asked.
type budgetGate struct {
	left  int
	asked []netip.Addr
}

func (g *budgetGate) AllowSign(src netip.Addr) bool {
	g.asked = append(g.asked, src)
	if g.left > 0 {
		g.left--
		return true
	}
	return false
}

func TestSignGate(t *testing.T) {
	src := netip.MustParseAddr("198.51.100.7")
	for _, tc := range []struct {
		name    string
		budget  int
		warm    []*dns.Msg // answered first without a gate (fills the signature cache)
		req     *dns.Msg
		rcode   int
		limited bool
		asked   int
	}{
		{"a denial of a new name is signed while the gate allows it", 1, nil,
			query("new1.example.test.", dns.TypeA, withDO), dns.RcodeSuccess, false, 1},
		{"a denial of a new name beyond the gate's budget is SERVFAIL", 0, nil,
			query("new2.example.test.", dns.TypeA, withDO), dns.RcodeServerFailure, true, 1},
		{"a denial already signed comes from the cache without asking the gate", 0,
			[]*dns.Msg{query("seen.example.test.", dns.TypeA, withDO)},
			query("seen.example.test.", dns.TypeA, withDO), dns.RcodeSuccess, false, 0},
		{"NODATA for a type not asked before at an existing name asks the gate", 0, nil,
			query("w.example.test.", dns.TypeMX, withDO), dns.RcodeServerFailure, true, 1},
		{"a denial reached through a CNAME asks the gate", 0, nil,
			query("dangling.example.test.", dns.TypeA, withDO), dns.RcodeServerFailure, true, 1},
		{"a positive answer signed before comes from the cache without asking the gate", 0,
			[]*dns.Msg{query("fo.example.test.", dns.TypeA, withDO)}, // failover: always the same answer
			query("fo.example.test.", dns.TypeA, withDO), dns.RcodeSuccess, false, 0},
		{"a positive answer that needs a fresh signature asks the gate once", 1, nil,
			query("w.example.test.", dns.TypeA, withDO), dns.RcodeSuccess, false, 1},
		{"a positive answer that needs a fresh signature beyond the budget is SERVFAIL (a new draw from a large pool costs what a new name does)", 0, nil,
			query("w.example.test.", dns.TypeA, withDO), dns.RcodeServerFailure, true, 1},
		{"a denial without DO is unsigned and never asks the gate", 0, nil,
			query("new3.example.test.", dns.TypeA, withEDNS(1232)), dns.RcodeNameError, false, 0},
		{"a denial in an unsigned zone never asks the gate", 0, nil,
			query("new.sub.example.test.", dns.TypeA, withDO), dns.RcodeNameError, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, sg := compileSigned(t)
			for _, w := range tc.warm {
				s.Respond(w, src, 0, &Reply{})
			}
			g := &budgetGate{left: tc.budget}
			rep := &Reply{}
			out := s.RespondGated(tc.req, src, 0, g, rep)
			m := &rep.Msg
			assert.Equal(t, tc.rcode, m.Rcode)
			assert.Equal(t, tc.rcode, out.Rcode)
			assert.Equal(t, tc.limited, out.SignLimited)
			require.Len(t, g.asked, tc.asked)
			for _, a := range g.asked {
				assert.Equal(t, src, a, "the gate is asked on behalf of the source address")
			}
			if tc.limited {
				assert.Empty(t, m.Answer)
				assert.Empty(t, m.Ns)
				require.Len(t, m.Extra, 1, "only the OPT record is kept")
				assert.True(t, m.IsEdns0().Do(), "DO is echoed")
				assert.False(t, m.Authoritative)
				wire, err := m.Pack()
				require.NoError(t, err)
				require.NoError(t, new(dns.Msg).Unpack(wire))
				return
			}
			if tc.rcode == dns.RcodeSuccess && tc.req.IsEdns0().Do() && len(m.Answer) == 0 {
				key := sg.DNSKEY()[0].(*dns.DNSKEY)
				assert.Equal(t, []uint16{dns.TypeSOA, dns.TypeNSEC}, verifySection(t, m.Ns, key), "a signed denial")
			}
		})
	}
}

func TestNilSignGateNeverLimits(t *testing.T) {
	s, sg := compileSigned(t)
	src := netip.MustParseAddr("198.51.100.7")
	for i := range 50 {
		out := s.RespondGated(query(fmt.Sprintf("n%d.example.test.", i), dns.TypeA, withDO), src, 0, nil, &Reply{})
		require.False(t, out.SignLimited)
		require.Equal(t, dns.RcodeSuccess, out.Rcode)
	}
	_, misses := sg.Stats()
	assert.GreaterOrEqual(t, misses, uint64(50), "every new name was signed")
}

func TestALimitedReplyLeavesNothingBehindInTheReusedReply(t *testing.T) {
	s, _ := compileSigned(t)
	src := netip.MustParseAddr("198.51.100.7")
	rep := &Reply{}
	out := s.RespondGated(query("gone.example.test.", dns.TypeA, withDO), src, 0, &budgetGate{}, rep)
	require.True(t, out.SignLimited)
	out = s.RespondGated(query("w.example.test.", dns.TypeA, withDO), src, 0, &budgetGate{left: 1}, rep)
	assert.False(t, out.SignLimited)
	assert.Equal(t, dns.RcodeSuccess, rep.Msg.Rcode)
	assert.True(t, rep.Msg.Authoritative)
	assert.Len(t, rep.Msg.Answer, 2, "the A record and its RRSIG")
}
