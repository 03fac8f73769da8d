package follow

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/ring"
	"github.com/meridian-gslb/meridian/internal/serving"
)

const sitesConfig = `
zones:
  - apex: gslb.example.com
    ring: {names: true, nameservers: true}
clusters:
  - {name: east, region: us-east}
services:
  - name: app.gslb.example.com
    endpoints:
      - {address: 192.0.2.1, cluster: east}
`

func nsNames(t *testing.T, p *serving.Pipeline) []string {
	t.Helper()
	var r engine.Result
	p.Store().Load().Lookup("gslb.example.com.", dns.TypeNS, engine.Client{}, &r)
	var out []string
	for _, rr := range r.Answer {
		out = append(out, rr.(*dns.NS).Ns)
	}
	slices.Sort(out)
	return out
}

func TestTheRingsSitesAreServed(t *testing.T) {
	p := newPipeline(t, load(t, sitesConfig), serving.Options{})
	assert.Empty(t, nsNames(t, p), "no site announced a DNS address yet")
	members := []ring.Member{
		{Name: "east-0", Role: ring.RoleProber, Trusted: true, Site: "east", Addr: "198.51.100.1:7946", DNSAddresses: []netip.Addr{netip.MustParseAddr("203.0.113.53")}},
		{Name: "east-1", Role: ring.RoleProber, Trusted: true, Site: "east", Addr: "198.51.100.2:7946", DNSAddresses: []netip.Addr{netip.MustParseAddr("203.0.113.53")}},
		{Name: "eu-west-0", Role: ring.RoleProber, Trusted: true, Site: "eu-west", Addr: "198.51.100.9:7946", DNSAddresses: []netip.Addr{netip.MustParseAddr("203.0.113.99")}},
		{Name: "ghost", Role: ring.RoleProber, Trusted: false, Site: "", Addr: "198.51.100.66:7946"},
		{Name: "agent-east", Role: ring.RoleAgent, Trusted: true, Site: "agent-east", Addr: "198.51.100.77:7946"},
	}
	f := &SitesFollower{Pipeline: p, Ring: fixedMembers(members), Logger: discard()}
	require.NoError(t, f.Update())
	assert.Equal(t, map[string]bool{"198.51.100.1": true, "198.51.100.2": true, "198.51.100.9": true}, answers(t, p, "ring.gslb.example.com."),
		"the seeds: every trusted prober, no untrusted node, no agent")
	assert.Equal(t, map[string]bool{"198.51.100.9": true}, answers(t, p, "eu-west.ring.gslb.example.com."))
	assert.Equal(t, []string{"ns-east.gslb.example.com.", "ns-eu-west.gslb.example.com."}, nsNames(t, p))
	assert.Equal(t, map[string]bool{"203.0.113.99": true}, answers(t, p, "ns-eu-west.gslb.example.com."))
	assert.Equal(t, map[string]bool{"192.0.2.1": true}, answers(t, p, "app.gslb.example.com."), "the services are as they were")

	gen := p.Store().Load().Generation()
	require.NoError(t, f.Update())
	assert.Equal(t, gen, p.Store().Load().Generation(), "the same sites publish nothing")

	f.Ring = fixedMembers(members[:2]) // eu-west is gone
	require.NoError(t, f.Update())
	assert.Equal(t, []string{"ns-east.gslb.example.com."}, nsNames(t, p), "a site that left leaves the NS set")
	assert.Empty(t, answers(t, p, "ns-eu-west.gslb.example.com."), "and its glue")
}

type fixedMembers []ring.Member

func (f fixedMembers) Members() []ring.Member { return f }

func TestKeepNameserverKeepsOnlyTheRingsNameserversOfUnseenSites(t *testing.T) {
	p := newPipeline(t, load(t, sitesConfig), serving.Options{})
	f := &SitesFollower{Pipeline: p, Ring: fixedMembers{{Name: "east-0", Role: ring.RoleProber, Trusted: true, Site: "east", Addr: "198.51.100.1:7946",
		DNSAddresses: []netip.Addr{netip.MustParseAddr("203.0.113.53")}}}, Logger: discard()}
	require.NoError(t, f.Update())
	keep := f.KeepNameserver(p.State().Served)
	assert.False(t, keep("ns-east.gslb.example.com."), "east was seen: its nameserver follows the state")
	assert.True(t, keep("ns-eu-west.gslb.example.com."), "eu-west was never seen here: its nameserver stays in the parent")
	assert.False(t, keep("ns1.gslb.example.com"), "not a ring nameserver name")
	assert.False(t, keep("ns-x.other.example.com."), "another zone")
	f.Ring = fixedMembers{}
	require.NoError(t, f.Update())
	assert.False(t, keep("ns-east.gslb.example.com."), "a site seen once stays seen: when it leaves, its nameserver goes")
}
