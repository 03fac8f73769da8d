package sites

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
)

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

func zone(r *model.ZoneRing, ns ...model.Nameserver) model.Zone {
	return model.Zone{Apex: "gslb.example.com.", TTL: 30, Ring: r, Nameservers: ns, SOA: model.SOA{MName: "ns.gslb.example.com."}}
}

func TestApply(t *testing.T) {
	two := FromMembers([]Member{
		{Site: "east", Gossip: ip("198.51.100.1"), DNS: []netip.Addr{ip("203.0.113.53")}},
		{Site: "east", Gossip: ip("198.51.100.2"), DNS: []netip.Addr{ip("203.0.113.53")}},
		{Site: "eu-west", Gossip: ip("198.51.100.9"), DNS: []netip.Addr{ip("2001:db8::53")}},
	})
	static := model.Nameserver{Name: "ns1.gslb.example.com.", IPv4: []string{"192.0.2.1"}}
	for _, tc := range []struct {
		name   string
		zone   model.Zone
		view   *View
		hosts  []model.Host
		ns     []model.Nameserver
		mname  string
		shared bool // d is returned as it is
	}{
		{"a zone without a ring section is left alone", zone(nil, static), two, nil, []model.Nameserver{static}, "ns.gslb.example.com.", true},
		{"ring names list every site's gossip addresses, and each site's", zone(&model.ZoneRing{Names: true}, static), two,
			[]model.Host{
				{Name: "east.ring.gslb.example.com.", IPv4: []string{"198.51.100.1", "198.51.100.2"}},
				{Name: "eu-west.ring.gslb.example.com.", IPv4: []string{"198.51.100.9"}},
				{Name: "ring.gslb.example.com.", IPv4: []string{"198.51.100.1", "198.51.100.2", "198.51.100.9"}},
			}, []model.Nameserver{static}, "ns.gslb.example.com.", false},
		{"every live site announcing DNS addresses gets a nameserver with glue", zone(&model.ZoneRing{Nameservers: true}, static), two, nil,
			[]model.Nameserver{static,
				{Name: "ns-east.gslb.example.com.", IPv4: []string{"203.0.113.53"}},
				{Name: "ns-eu-west.gslb.example.com.", IPv6: []string{"2001:db8::53"}}}, "ns.gslb.example.com.", false},
		{"a zone with the ring's nameservers only takes the first as its SOA primary", zone(&model.ZoneRing{Nameservers: true}), two, nil,
			[]model.Nameserver{
				{Name: "ns-east.gslb.example.com.", IPv4: []string{"203.0.113.53"}},
				{Name: "ns-eu-west.gslb.example.com.", IPv6: []string{"2001:db8::53"}}}, "ns-east.gslb.example.com.", false},
		{"a site that left leaves the NS set and its glue", zone(&model.ZoneRing{Nameservers: true}), FromMembers([]Member{{Site: "eu-west", Gossip: ip("198.51.100.9"), DNS: []netip.Addr{ip("2001:db8::53")}}}), nil,
			[]model.Nameserver{{Name: "ns-eu-west.gslb.example.com.", IPv6: []string{"2001:db8::53"}}}, "ns-eu-west.gslb.example.com.", false},
		{"a site that announces no DNS address has no nameserver", zone(&model.ZoneRing{Nameservers: true}, static), FromMembers([]Member{{Site: "east", Gossip: ip("198.51.100.1")}}), nil,
			[]model.Nameserver{static}, "ns.gslb.example.com.", false},
		{"a site name that is no DNS label is left out", zone(&model.ZoneRing{Names: true}, static), FromMembers([]Member{{Site: "east_1", Gossip: ip("198.51.100.1")}}), nil,
			[]model.Nameserver{static}, "ns.gslb.example.com.", false},
		{"a static nameserver of the same name wins", zone(&model.ZoneRing{Nameservers: true}, model.Nameserver{Name: "ns-east.gslb.example.com.", IPv4: []string{"192.0.2.7"}}), two, nil,
			[]model.Nameserver{{Name: "ns-east.gslb.example.com.", IPv4: []string{"192.0.2.7"}}, {Name: "ns-eu-west.gslb.example.com.", IPv6: []string{"2001:db8::53"}}}, "ns.gslb.example.com.", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &model.Desired{Zones: []model.Zone{tc.zone}}
			before := d.Zones[0]
			out := Apply(d, tc.view)
			require.Len(t, out.Zones, 1)
			assert.Equal(t, tc.hosts, out.Zones[0].Hosts)
			assert.Equal(t, tc.ns, out.Zones[0].Nameservers)
			assert.Equal(t, tc.mname, out.Zones[0].SOA.MName)
			assert.Equal(t, tc.shared, out == d)
			assert.Equal(t, before, d.Zones[0], "the input is not changed")
		})
	}
}

func TestAServiceOfTheSameNameWins(t *testing.T) {
	d := &model.Desired{Zones: []model.Zone{zone(&model.ZoneRing{Names: true})}, Services: []model.Service{{Name: "ring.gslb.example.com"}}}
	out := Apply(d, FromMembers([]Member{{Site: "east", Gossip: ip("198.51.100.1")}}))
	assert.Equal(t, []model.Host{{Name: "east.ring.gslb.example.com.", IPv4: []string{"198.51.100.1"}}}, out.Zones[0].Hosts)
}

func TestViewsCompare(t *testing.T) {
	a := FromMembers([]Member{{Site: "East", Gossip: ip("198.51.100.2")}, {Site: "east", Gossip: ip("198.51.100.1")}})
	b := FromMembers([]Member{{Site: "east", Gossip: ip("198.51.100.1")}, {Site: "east", Gossip: ip("198.51.100.2")}})
	assert.True(t, a.Equal(b), "order and case do not matter")
	assert.False(t, a.Equal(FromMembers(nil)))
	assert.False(t, a.Equal(nil))
	assert.True(t, (*View)(nil).Equal(nil))
}

func TestASiteClaimedByTwoScopesIsNotServed(t *testing.T) {
	v := FromMembers([]Member{
		{Site: "east", Scope: "spiffe://r/prober/us-east/east-*/max-nodes/2", Gossip: ip("198.51.100.1"), DNS: []netip.Addr{ip("203.0.113.53")}},
		{Site: "east", Scope: "spiffe://r/prober/eu-west/east", Gossip: ip("198.51.100.66"), DNS: []netip.Addr{ip("203.0.113.66")}},
		{Site: "eu-west", Scope: "spiffe://r/prober/eu-west/eu-west-*/max-nodes/1", Gossip: ip("198.51.100.9")},
		{Site: strings.Repeat("a", 61), Gossip: ip("198.51.100.10")},
	})
	assert.Equal(t, []string{"east"}, v.Conflicts)
	assert.Equal(t, []string{"eu-west"}, slices.Sorted(maps.Keys(v.Sites)), "neither east (two scopes) nor a site too long for ns-<site>")
}
