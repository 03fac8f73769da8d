package model

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckTenantTarget(t *testing.T) {
	for _, tc := range []struct {
		name     string
		addr     string
		loopback bool
		refused  string
	}{
		{"a public address is allowed", "198.51.100.7", false, ""},
		{"a private address is allowed", "10.1.2.3", false, ""},
		{"a public IPv6 address is allowed", "2001:db8::7", false, ""},
		{"the metadata service is refused", "169.254.169.254", false, "link-local"},
		{"an IPv6 link-local address is refused", "fe80::1", false, "link-local"},
		{"the unspecified address is refused", "0.0.0.0", false, "unspecified"},
		{"an address in 0.0.0.0/8 is refused", "0.1.2.3", false, "unspecified"},
		{"the IPv6 unspecified address is refused", "::", false, "unspecified"},
		{"a multicast address is refused", "239.1.1.1", false, "multicast"},
		{"an IPv6 multicast address is refused", "ff02::1", false, "multicast"},
		{"the broadcast address is refused", "255.255.255.255", false, "broadcast"},
		{"a loopback address is refused by default", "127.0.0.1", false, "tenant_targets.allow_loopback"},
		{"an IPv4-mapped loopback address is refused by default", "::ffff:127.0.0.1", false, "loopback"},
		{"a loopback address is allowed with allow_loopback", "127.0.0.81", true, ""},
		{"allow_loopback still refuses the metadata service", "169.254.169.254", true, "link-local"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := TenantTargets{AllowLoopback: tc.loopback}.CheckTenantTarget(netip.MustParseAddr(tc.addr))
			if tc.refused == "" {
				assert.NoError(t, err)
				return
			}
			if assert.Error(t, err) {
				assert.Contains(t, err.Error(), tc.refused)
			}
		})
	}
}
