package model

import (
	"fmt"
	"net/netip"
	"strings"
)

// transfer checks zones[i].transfer (p is its path). The key file is read
// at load time by internal/app (model does no I/O).
func (v *validator) transfer(p string, t *Transfer) {
	if t == nil {
		return
	}
	if len(t.Allow) == 0 {
		v.add(p+".allow", "at least one address or prefix is required (e.g. 192.0.2.53 or 2001:db8::/64)")
	}
	for k, a := range t.Allow {
		if _, err := ParseAllow(a); err != nil {
			v.add(fmt.Sprintf("%s.allow[%d]", p, k), "%q is not an IP address or prefix (e.g. 192.0.2.53 or 10.0.0.0/8)", a)
		}
	}
	if strings.TrimSpace(t.TSIGKeyFile) == "" {
		v.add(p+".tsig_key_file", "is required: transfers are only served with TSIG (HMAC-SHA256)")
	}
	seen := map[string]bool{}
	for k, n := range t.Notify {
		np := fmt.Sprintf("%s.notify[%d]", p, k)
		ap, err := ParseNotifyTarget(n)
		if err != nil {
			v.add(np, "%q is not IP or IP:port (e.g. 192.0.2.53 or [2001:db8::53]:53)", n)
			continue
		}
		if seen[ap.String()] {
			v.add(np, "duplicate notify target %q", n)
		}
		seen[ap.String()] = true
	}
}

// ParseAllow parses an entry of transfer.allow: an IP address (one host) or
// a prefix.
func ParseAllow(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// ParseNotifyTarget parses an entry of transfer.notify: IP:port, or an IP
// alone for port 53.
func ParseNotifyTarget(s string) (netip.AddrPort, error) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.AddrPortFrom(a.Unmap(), 53), nil
	}
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if ap.Port() == 0 {
		return netip.AddrPort{}, fmt.Errorf("port 0")
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}
