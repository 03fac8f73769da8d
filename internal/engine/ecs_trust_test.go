package engine

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/geo"
)

// compileTrusting compiles the fixture with geo.ecs_trusted set to list
// (the YAML of a list; "" leaves the field out).
func compileTrusting(t testing.TB, list string) *Snapshot {
	t.Helper()
	y := fixture
	if list != "" {
		y += "  ecs_trusted: " + list + "\n"
	}
	d := desired(t, y)
	var nets []geo.Network
	for _, n := range d.Geo.Networks {
		nets = append(nets, geo.Network{Prefix: netip.MustParsePrefix(n.CIDR), Region: n.Region, Country: n.Country, Continent: n.Continent})
	}
	loc, err := geo.New(nets, "")
	require.NoError(t, err)
	s, err := Compile(d, Options{Locator: loc})
	require.NoError(t, err)
	return s
}

func TestECSTrust(t *testing.T) {
	// The ECS subnet 10.5.1.0/24 is in France (rule: eu, 192.0.2.43); the
	// sources 10.1.0.9 (US) and 203.0.113.9 (unplaced) get the default
	// (east, 192.0.2.41).
	const (
		eu   = "192.0.2.43"
		east = "192.0.2.41"
	)
	for _, tc := range []struct {
		name    string
		list    string
		src     string
		ecs     string
		answer  string
		scope   uint8
		ignored bool
	}{
		{"without a trust list every source's ECS is used", "", "10.1.0.9", "10.5.1.0/24", eu, 16, false},
		{"ECS from a trusted source is used", "[10.1.0.0/16, 2001:db8:53::/48]", "10.1.0.9", "10.5.1.0/24", eu, 16, false},
		{"ECS from a trusted IPv6 source is used", "[10.1.0.0/16, 2001:db8:53::/48]", "2001:db8:53::1", "10.5.1.0/24", eu, 16, false},
		{"ECS from an IPv4-mapped trusted source is used", "[10.1.0.0/16]", "::ffff:10.1.0.9", "10.5.1.0/24", eu, 16, false},
		{"ECS from an untrusted source is ignored: the source address decides, scope 0", "[192.0.2.0/24]", "10.1.0.9", "10.5.1.0/24", east, 0, true},
		{"ECS from an untrusted unplaced source gets the default answer with scope 0", "[192.0.2.0/24]", "203.0.113.9", "10.5.1.0/24", east, 0, true},
		{"an empty trust list ignores everybody's ECS", "[]", "10.1.0.9", "10.5.1.0/24", east, 0, true},
		{"an untrusted source placed by its own address gets that place's answer", "[192.0.2.0/24]", "10.5.0.9", "10.1.1.0/24", eu, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := compileTrusting(t, tc.list)
			rep := &Reply{}
			out := s.Respond(query("geo.example.test.", dns.TypeA, withECS(tc.ecs, 0)), netip.MustParseAddr(tc.src), 0, rep)
			m := &rep.Msg
			require.Equal(t, dns.RcodeSuccess, m.Rcode)
			require.Len(t, m.Answer, 1)
			assert.Equal(t, tc.answer, m.Answer[0].(*dns.A).A.String())
			assert.Equal(t, tc.ignored, out.ECSIgnored)
			assert.True(t, out.HasECS)
			e := ecsOf(m)
			require.NotNil(t, e, "the ECS option is echoed either way")
			assert.Equal(t, tc.scope, e.SourceScope)
			p := netip.MustParsePrefix(tc.ecs)
			assert.Equal(t, uint8(p.Bits()), e.SourceNetmask, "source prefix echoed")
			assert.Equal(t, p.Addr().String(), e.Address.String(), "address echoed")
		})
	}
}

func TestMalformedECSIsFORMERREvenFromAnUntrustedSource(t *testing.T) {
	s := compileTrusting(t, "[]")
	rep := &Reply{}
	out := s.Respond(query("geo.example.test.", dns.TypeA, withECS("10.5.1.0/24", 8)), netip.MustParseAddr("10.1.0.9"), 0, rep)
	assert.Equal(t, dns.RcodeFormatError, out.Rcode)
}

func TestRespondWithECSAllocatesNothing(t *testing.T) {
	for _, tc := range []struct {
		name, list, src string
	}{
		{"a trusted source", "[10.1.0.0/16]", "10.1.0.9"},
		{"an untrusted source", "[192.0.2.0/24]", "10.1.0.9"},
		{"no trust list", "", "10.1.0.9"},
	} {
		t.Run("ECS from "+tc.name+" allocates nothing", func(t *testing.T) {
			s := compileTrusting(t, tc.list)
			rep := &Reply{}
			req := query("geo.example.test.", dns.TypeA, withECS("10.5.1.0/24", 0))
			src := netip.MustParseAddr(tc.src)
			s.Respond(req, src, 0, rep)
			assert.Zero(t, testing.AllocsPerRun(1000, func() { s.Respond(req, src, 0, rep) }))
		})
	}
}

func TestExplainSaysWhenECSIsHonouredOnlyFromTrustedSources(t *testing.T) {
	client := Client{Addr: netip.MustParseAddr("10.5.1.0"), Bits: 24, HasECS: true}
	for _, tc := range []struct {
		name, list string
		noted      bool
	}{
		{"with a trust list an ECS explanation names it", "[10.1.0.0/16, 192.0.2.0/24]", true},
		{"an empty trust list is named too", "[]", true},
		{"without a trust list nothing is added", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := compileTrusting(t, tc.list).Explain("geo.example.test.", dns.TypeA, client, true)
			found := false
			for _, n := range e.Notes {
				found = found || strings.HasPrefix(n, "geo.ecs_trusted lists ")
			}
			assert.Equal(t, tc.noted, found, "%q", e.Notes)
		})
	}
}
