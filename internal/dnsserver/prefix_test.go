package dnsserver

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestClientPrefix(t *testing.T) {
	for _, tc := range []struct {
		name   string
		addr   netip.Addr
		v4, v6 int
		want   string
	}{
		{"an IPv4 client counts as its /24 by default", netip.MustParseAddr("192.0.2.77"), 24, 56, "192.0.2.0/24"},
		{"an IPv6 client counts as its /56 by default", netip.MustParseAddr("2001:db8:1:2ff:aaaa::1"), 24, 56, "2001:db8:1:200::/56"},
		{"every address of one IPv6 /64 counts as the same client", netip.MustParseAddr("2001:db8:1:2ff:ffff:ffff:ffff:ffff"), 24, 56, "2001:db8:1:200::/56"},
		{"an IPv4-mapped IPv6 client counts as its IPv4 /24", netip.MustParseAddr("::ffff:198.51.100.9"), 24, 56, "198.51.100.0/24"},
		{"a /32 separates IPv4 neighbours", netip.MustParseAddr("192.0.2.77"), 32, 56, "192.0.2.77/32"},
		{"a /64 keeps the interface bits out of IPv6", netip.MustParseAddr("2001:db8:0:1:2:3:4:5"), 24, 64, "2001:db8:0:1::/64"},
		{"a zone on a link-local address is dropped", netip.MustParseAddr("fe80::1%eth0"), 24, 64, "fe80::/64"},
		{"an IPv4 length out of range falls back to /24", netip.MustParseAddr("192.0.2.77"), 0, 56, "192.0.2.0/24"},
		{"an IPv6 length out of range falls back to /56", netip.MustParseAddr("2001:db8:1:2ff::1"), 24, 200, "2001:db8:1:200::/56"},
		{"an invalid address counts as the zero prefix", netip.Addr{}, 24, 56, "invalid Prefix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, clientPrefix(tc.addr, tc.v4, tc.v6).String())
		})
	}
}
