package geo

import (
	"net/netip"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOriginString(t *testing.T) {
	assert.Equal(t, "none", OriginNone.String())
	assert.Equal(t, "networks", OriginNetworks.String())
	assert.Equal(t, "mmdb", OriginMMDB.String())
	assert.Equal(t, "Origin(7)", Origin(7).String())
}

var testNetworks = []Network{
	{Prefix: pfx("10.0.0.0/8"), Region: "eu-west", Country: "DE", Continent: "EU"},
	{Prefix: pfx("10.1.0.0/16"), Region: "us-east", Country: "US", Continent: "NA"},
	{Prefix: pfx("10.1.2.3/32"), Region: "office"},
	{Prefix: pfx("::ffff:192.0.2.0/120"), Region: "mapped"},
	{Prefix: pfx("2001:db8::/32"), Region: "v6-wide", Continent: "EU"},
	{Prefix: pfx("2001:db8:1::/48"), Region: "v6-narrow", Country: "JP", Continent: "AS"},
	{Prefix: pfx("fe80::/10"), Region: "link-local"},
}

func TestLookupNetworks(t *testing.T) {
	l := newLocator(t, testNetworks, "")
	tests := []struct {
		name   string
		addr   netip.Addr
		want   Location
		wantOK bool
	}{
		{
			name:   "the longest matching prefix wins and its scope avoids the host route inside it",
			addr:   addr("10.1.9.9"),
			want:   Location{Region: "us-east", Country: "US", Continent: "NA", Prefix: pfx("10.1.8.0/21"), Origin: OriginNetworks},
			wantOK: true,
		},
		{
			name:   "a host route wins over the networks around it",
			addr:   addr("10.1.2.3"),
			want:   Location{Region: "office", Prefix: pfx("10.1.2.3/32"), Origin: OriginNetworks},
			wantOK: true,
		},
		{
			name:   "an address next to a host route is scoped to the block beside it",
			addr:   addr("10.1.2.4"),
			want:   Location{Region: "us-east", Country: "US", Continent: "NA", Prefix: pfx("10.1.2.4/30"), Origin: OriginNetworks},
			wantOK: true,
		},
		{
			name:   "the scope of a wide network is narrowed to avoid a more specific one",
			addr:   addr("10.200.0.1"),
			want:   Location{Region: "eu-west", Country: "DE", Continent: "EU", Prefix: pfx("10.128.0.0/9"), Origin: OriginNetworks},
			wantOK: true,
		},
		{
			name:   "the narrowed scope stops one bit below where the paths part",
			addr:   addr("10.2.3.4"),
			want:   Location{Region: "eu-west", Country: "DE", Continent: "EU", Prefix: pfx("10.2.0.0/15"), Origin: OriginNetworks},
			wantOK: true,
		},
		{
			name:   "an IPv4-mapped address matches the IPv4 network and gets an IPv4 scope",
			addr:   addr("::ffff:10.1.9.9"),
			want:   Location{Region: "us-east", Country: "US", Continent: "NA", Prefix: pfx("10.1.8.0/21"), Origin: OriginNetworks},
			wantOK: true,
		},
		{
			name:   "an IPv4-mapped network is taken as the IPv4 network and is its own scope",
			addr:   addr("192.0.2.77"),
			want:   Location{Region: "mapped", Prefix: pfx("192.0.2.0/24"), Origin: OriginNetworks},
			wantOK: true,
		},
		{
			name:   "an IPv6 address gets the longest IPv6 network, which is its own scope",
			addr:   addr("2001:db8:1::53"),
			want:   Location{Region: "v6-narrow", Country: "JP", Continent: "AS", Prefix: pfx("2001:db8:1::/48"), Origin: OriginNetworks},
			wantOK: true,
		},
		{
			name:   "an IPv6 address outside the narrow network gets the wide one",
			addr:   addr("2001:db8:ffff::1"),
			want:   Location{Region: "v6-wide", Continent: "EU", Prefix: pfx("2001:db8:8000::/33"), Origin: OriginNetworks},
			wantOK: true,
		},
		{
			name:   "an IPv6 address whose low bits equal an IPv4 network does not match it",
			addr:   addr("::10.1.9.9"),
			want:   Location{Prefix: pfx("::/3")},
			wantOK: false,
		},
		{
			name:   "an address with a zone matches without it",
			addr:   addr("fe80::1%eth0"),
			want:   Location{Region: "link-local", Prefix: pfx("fe80::/10"), Origin: OriginNetworks},
			wantOK: true,
		},
		{
			name:   "a miss carries the block in which every address misses",
			addr:   addr("11.0.0.1"),
			want:   Location{Prefix: pfx("11.0.0.0/8")},
			wantOK: false,
		},
		{
			name:   "an invalid address matches nothing",
			addr:   netip.Addr{},
			want:   Location{},
			wantOK: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := l.Lookup(tt.addr)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestLookupKeepsFamiliesApart(t *testing.T) {
	tests := []struct {
		name     string
		networks []Network
		addr     netip.Addr
		want     Location
		wantOK   bool
	}{
		{
			name:     "an IPv4 default does not match IPv6 addresses",
			networks: []Network{{Prefix: pfx("0.0.0.0/0"), Region: "v4"}},
			addr:     addr("2001:db8::1"),
			want:     Location{Prefix: pfx("::/0")},
		},
		{
			name:     "an IPv6 default does not match IPv4 addresses",
			networks: []Network{{Prefix: pfx("::/0"), Region: "v6"}},
			addr:     addr("192.0.2.1"),
			want:     Location{Prefix: pfx("0.0.0.0/0")},
		},
		{
			name:     "an IPv6 default does not match IPv4-mapped addresses",
			networks: []Network{{Prefix: pfx("::/0"), Region: "v6"}},
			addr:     addr("::ffff:192.0.2.1"),
			want:     Location{Prefix: pfx("0.0.0.0/0")},
		},
		{
			name:     "an IPv4 default matches every IPv4 address with scope 0",
			networks: []Network{{Prefix: pfx("0.0.0.0/0"), Region: "v4"}},
			addr:     addr("192.0.2.1"),
			want:     Location{Region: "v4", Prefix: pfx("0.0.0.0/0"), Origin: OriginNetworks},
			wantOK:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLocator(t, tt.networks, "")
			got, ok := l.Lookup(tt.addr)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestNewRejectsBadNetworks(t *testing.T) {
	tests := []struct {
		name     string
		networks []Network
		wantErr  string
	}{
		{
			name:     "a zero prefix is refused",
			networks: []Network{{Region: "x"}},
			wantErr:  `networks[0]: "invalid Prefix" is not a valid network`,
		},
		{
			name:     "host bits are refused with the network meant",
			networks: []Network{{Prefix: pfx("10.1.2.3/8"), Region: "x"}},
			wantErr:  `networks[0]: 10.1.2.3/8 has host bits set (did you mean 10.0.0.0/8?)`,
		},
		{
			name:     "a network listed twice is refused",
			networks: []Network{{Prefix: pfx("10.0.0.0/8"), Region: "a"}, {Prefix: pfx("10.0.0.0/8"), Region: "b"}},
			wantErr:  `networks[1]: 10.0.0.0/8 is already networks[0]`,
		},
		{
			name:     "an IPv4-mapped network equal to an IPv4 one is a duplicate",
			networks: []Network{{Prefix: pfx("10.0.0.0/8"), Region: "a"}, {Prefix: pfx("::ffff:10.0.0.0/104"), Region: "b"}},
			wantErr:  `networks[1]: 10.0.0.0/8 is already networks[0]`,
		},
		{
			name:     "a network that places nothing is refused",
			networks: []Network{{Prefix: pfx("10.0.0.0/8")}},
			wantErr:  `networks[0]: 10.0.0.0/8: needs at least one of region, country, continent`,
		},
		{
			name:     "a lower-case country is refused",
			networks: []Network{{Prefix: pfx("10.0.0.0/8"), Country: "de"}},
			wantErr:  `networks[0]: 10.0.0.0/8: country "de" is not allowed (allowed: two upper-case letters, an ISO 3166-1 alpha-2 code such as DE)`,
		},
		{
			name:     "an unknown continent is refused with the allowed codes",
			networks: []Network{{Prefix: pfx("2001:db8::/32"), Continent: "XX"}},
			wantErr:  `networks[0]: 2001:db8::/32: continent "XX" is not allowed (allowed: AF, AN, AS, EU, NA, OC, SA)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := New(tt.networks, "")
			require.EqualError(t, err, tt.wantErr)
			assert.Nil(t, l)
		})
	}
}

func TestNilAndEmptyLocatorsMatchNothing(t *testing.T) {
	var nilLocator *Locator
	_, ok := nilLocator.Lookup(addr("192.0.2.1"))
	assert.False(t, ok)
	assert.NoError(t, nilLocator.Close())

	empty := newLocator(t, nil, "")
	loc, ok := empty.Lookup(addr("192.0.2.1"))
	assert.False(t, ok)
	assert.Equal(t, Location{Prefix: pfx("0.0.0.0/0")}, loc)
}

func TestLookupIsSafeForConcurrentUse(t *testing.T) {
	path := buildDB(t, "198.51.100.0/24,FR,EU,eu-south\n")
	l := newLocator(t, testNetworks, path)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				loc, ok := l.Lookup(addr("10.1.9.9"))
				assert.True(t, ok)
				assert.Equal(t, "us-east", loc.Region)
				loc, ok = l.Lookup(addr("198.51.100.7"))
				assert.True(t, ok)
				assert.Equal(t, "eu-south", loc.Region)
			}
		})
	}
	wg.Wait()
}
