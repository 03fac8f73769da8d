package geo

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrefixSet(t *testing.T) {
	set := []netip.Prefix{pfx("192.0.2.0/24"), pfx("10.0.0.0/8"), pfx("2001:db8:1::/48"), pfx("::ffff:198.51.100.0/120"), pfx("10.0.0.0/8")}
	for _, tc := range []struct {
		name string
		set  []netip.Prefix
		addr netip.Addr
		want bool
	}{
		{"an address inside a listed IPv4 network is in the set", set, addr("192.0.2.77"), true},
		{"the first address of a network is in the set", set, addr("10.0.0.0"), true},
		{"an address next to a listed network is not", set, addr("192.0.3.1"), false},
		{"an IPv6 address inside a listed /48 is in the set", set, addr("2001:db8:1:ffff::53"), true},
		{"an IPv6 address in the next /48 is not", set, addr("2001:db8:2::53"), false},
		{"an IPv4-mapped address counts as its IPv4 address", set, addr("::ffff:192.0.2.1"), true},
		{"a network written IPv4-mapped matches plain IPv4 addresses", set, addr("198.51.100.9"), true},
		{"an IPv4 network never matches IPv6 addresses with the same bits", set, addr("c000:200::1"), false},
		{"an invalid address is in no set", set, netip.Addr{}, false},
		{"an empty set contains nothing", nil, addr("192.0.2.1"), false},
		{"0.0.0.0/0 holds every IPv4 address but no IPv6 one", []netip.Prefix{pfx("0.0.0.0/0")}, addr("2001:db8::1"), false},
		{"::/0 holds every IPv6 address", []netip.Prefix{pfx("::/0")}, addr("2001:db8::1"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewPrefixSet(tc.set)
			require.NoError(t, err)
			assert.Equal(t, tc.want, s.Contains(tc.addr))
		})
	}
}

func TestPrefixSetRefusesBadPrefixes(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    netip.Prefix
		want string
	}{
		{"a prefix with host bits set is refused with the masked form", netip.PrefixFrom(addr("192.0.2.1"), 24), "did you mean 192.0.2.0/24"},
		{"an invalid prefix is refused", netip.Prefix{}, "not a valid network"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewPrefixSet([]netip.Prefix{pfx("10.0.0.0/8"), tc.p})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "prefix 1: ")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestPrefixSetCountsDuplicatesOnce(t *testing.T) {
	s, err := NewPrefixSet([]netip.Prefix{pfx("10.0.0.0/8"), pfx("10.0.0.0/8"), pfx("::ffff:10.0.0.0/104")})
	require.NoError(t, err)
	assert.Equal(t, 1, s.Len())
	var nilSet *PrefixSet
	assert.Zero(t, nilSet.Len())
	assert.False(t, nilSet.Contains(addr("10.0.0.1")), "a nil set contains nothing")
}

func TestPrefixSetContainsAllocatesNothing(t *testing.T) {
	s, err := NewPrefixSet([]netip.Prefix{pfx("192.0.2.0/24"), pfx("2001:db8::/32")})
	require.NoError(t, err)
	for _, a := range []netip.Addr{addr("192.0.2.1"), addr("2001:db8::1"), addr("::ffff:192.0.2.1"), addr("203.0.113.1")} {
		assert.Zero(t, testing.AllocsPerRun(1000, func() { s.Contains(a) }), a.String())
	}
}
