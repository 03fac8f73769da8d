package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestECSTrustedValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		list    []string
		path    string // "" = valid
		message string
	}{
		{"IPv4 and IPv6 networks are accepted", []string{"192.0.2.0/24", "2001:db8::/32", "198.51.100.53/32"}, "", ""},
		{"an empty list is accepted (nobody's ECS is honoured)", []string{}, "", ""},
		{"an address without a prefix length is refused with an example", []string{"192.0.2.0/24", "192.0.2.53"}, "geo.ecs_trusted[1]", `"192.0.2.53" is not a CIDR prefix (e.g. 192.0.2.0/24, 2001:db8::/32, or 192.0.2.53/32 for one address)`},
		{"a network with host bits set is refused with the masked form", []string{"192.0.2.1/24"}, "geo.ecs_trusted[0]", `"192.0.2.1/24" has host bits set (did you mean 192.0.2.0/24?)`},
		{"a network listed twice is refused naming the first", []string{"10.0.0.0/8", "2001:db8::/32", "10.0.0.0/8"}, "geo.ecs_trusted[2]", "duplicate network 10.0.0.0/8 (already geo.ecs_trusted[0])"},
		{"an IPv4-mapped network is the IPv4 network it covers", []string{"10.0.0.0/8", "::ffff:10.0.0.0/104"}, "geo.ecs_trusted[1]", "duplicate network 10.0.0.0/8"},
		{"a prefix longer than the family allows is refused", []string{"192.0.2.0/33"}, "geo.ecs_trusted[0]", "is not a CIDR prefix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := minimal()
			d.Geo.ECSTrusted = tc.list
			requireFieldError(t, Validate(d), tc.path, tc.message)
		})
	}
}

func TestNormalizeKeepsECSTrustedAbsentOrEmptyApart(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"absent stays absent: every source is trusted", nil, nil},
		{"empty stays empty: no source is trusted", []string{}, []string{}},
		{"networks are stored in canonical form", []string{" 2001:DB8::/32", "::ffff:192.0.2.0/120"}, []string{"2001:db8::/32", "192.0.2.0/24"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := minimal()
			d.Geo.ECSTrusted = tc.in
			out, err := Normalize(d)
			require.NoError(t, err)
			assert.Equal(t, tc.want, out.Geo.ECSTrusted)
			assert.Equal(t, tc.want == nil, out.Geo.ECSTrusted == nil)
		})
	}
}
