package dnsserver

import "net/netip"

// Default client prefix lengths of the per-client limits: the TCP
// connection cap, RRL and the signing limit count a client as its /24
// (IPv4) or /56 (IPv6), because one host or site easily holds a whole
// IPv6 /64 (or more) and often several IPv4 addresses of one /24.
const (
	DefaultIPv4Prefix = 24
	DefaultIPv6Prefix = 56
)

// clientPrefix is the network a client address counts in for per-client
// limits: its first v4 bits (IPv4, and IPv4-mapped IPv6 unmapped) or its
// first v6 bits (IPv6). Zones are dropped. Lengths out of range (v4 not in
// 1..32, v6 not in 1..128) fall back to the defaults. An invalid address
// gives the zero Prefix (all such clients count as one).
func clientPrefix(a netip.Addr, v4, v6 int) netip.Prefix {
	a = a.Unmap().WithZone("")
	bits := v6
	if bits <= 0 || bits > 128 {
		bits = DefaultIPv6Prefix
	}
	if a.Is4() {
		bits = v4
		if bits <= 0 || bits > 32 {
			bits = DefaultIPv4Prefix
		}
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return netip.Prefix{}
	}
	return p
}
