package model

import (
	"fmt"
	"net/netip"
)

// TenantTargets limits the addresses that tenants write as targets: the
// targets of DNSEndpoints and of ExternalDNS webhook records, which anyone
// who may create such an object chooses freely, and which Meridian's
// probers then connect to. Addresses from the config file, and the
// load-balancer addresses controllers write on Services, are not limited.
type TenantTargets struct {
	// AllowLoopback lets tenant targets be loopback addresses (127.0.0.0/8,
	// ::1): for a single machine (demos, tests). Off by default, so that a
	// tenant cannot point the probers at ports of the Meridian nodes
	// themselves.
	AllowLoopback bool `yaml:"allow_loopback"`
}

// CheckTenantTarget reports why a may not be a tenant-written target (nil:
// it may): unspecified, link-local (the clouds' metadata service
// 169.254.169.254 is in it), multicast, broadcast or reserved addresses
// never; loopback only with t.AllowLoopback. The error says what is allowed.
func (t TenantTargets) CheckTenantTarget(a netip.Addr) error {
	a = a.Unmap()
	var what string
	switch {
	case a.IsUnspecified() || (a.Is4() && a.As4()[0] == 0):
		what = "an unspecified address"
	case a.IsMulticast():
		what = "a multicast address"
	case a.IsLinkLocalUnicast():
		what = "a link-local address (the clouds' metadata service is one)"
	case a.Is4() && a.As4()[0] >= 240:
		what = "a reserved or broadcast address"
	case a.IsLoopback() && !t.AllowLoopback:
		what = "a loopback address (allowed only with tenant_targets.allow_loopback)"
	default:
		return nil
	}
	return fmt.Errorf("%s is %s: the probers would connect to it (allowed: unicast addresses outside 0.0.0.0/8, 169.254.0.0/16, fe80::/10, 224.0.0.0/4, ff00::/8 and 240.0.0.0/4)", a, what)
}
