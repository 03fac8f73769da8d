package dnsserver

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/meridian-gslb/meridian/internal/engine"
)

// SignLimit configures the limit on signing work per client prefix. A
// signed zone answers every denial (NXDOMAIN, NODATA) of a name or type
// not asked before with a freshly signed NSEC (compact denial), which
// costs tens of microseconds of CPU; positive answers come from the
// signature cache and are never limited. Each client prefix has a token
// bucket of replies needing fresh signatures per transport (UDP and TCP apart, so
// that spoofed UDP cannot spend a real resolver's TCP budget).
//
// Beyond the limit a UDP query gets an empty truncated reply (TC=1) so
// that the resolver retries over TCP, which proves its address; a TCP
// query beyond its own limit gets SERVFAIL. See docs/dns.md (Signing
// limit) for why SERVFAIL and not REFUSED.
//
// The zero value is off; New sets the zero fields of an enabled SignLimit
// to 100/s, 10 s, /24 and /56.
type SignLimit struct {
	Enabled          bool
	SignaturesPerSec int // sustained replies needing fresh signatures per second per client prefix and transport (1..100000)
	Window           int // seconds of credit a quiet prefix saves up: a burst of SignaturesPerSec×Window
	IPv4Prefix       int // client prefix length for IPv4 (1..32)
	IPv6Prefix       int // client prefix length for IPv6 (1..64)
}

// Defaults of an enabled SignLimit.
const (
	DefaultSignaturesPerSec = 100
	DefaultSignWindow       = 10
)

func (c SignLimit) withDefaults() SignLimit {
	if c.SignaturesPerSec <= 0 {
		c.SignaturesPerSec = DefaultSignaturesPerSec
	}
	if c.Window <= 0 {
		c.Window = DefaultSignWindow
	}
	if c.IPv4Prefix <= 0 || c.IPv4Prefix > 32 {
		c.IPv4Prefix = DefaultIPv4Prefix
	}
	if c.IPv6Prefix <= 0 || c.IPv6Prefix > 64 {
		c.IPv6Prefix = DefaultIPv6Prefix
	}
	return c
}

// signGate is the engine.SignGate of one transport: a token bucket per
// client prefix (the same lock-free GCRA table as RRL).
type signGate struct {
	l   *limiter
	now func() time.Time
}

var _ engine.SignGate = (*signGate)(nil)

// AllowSign implements engine.SignGate. It is called only when a denial
// needs a fresh signature, never on the cached path.
// The bucket is the client prefix alone (identity 0).
func (g *signGate) AllowSign(src netip.Addr) bool { return g.l.allow(src, 0, g.now()) }

// newSignGates returns the gates of UDP and TCP for an enabled limit with
// defaults applied.
func newSignGates(c SignLimit, epoch time.Time) (udp, tcp engine.SignGate) {
	r := RRL{ResponsesPerSec: c.SignaturesPerSec, Window: c.Window, IPv4Prefix: c.IPv4Prefix, IPv6Prefix: c.IPv6Prefix}
	return &signGate{l: newLimiter(r, epoch), now: time.Now}, &signGate{l: newLimiter(r, epoch), now: time.Now}
}

// signLimitSummary describes the signing limit for the startup log.
func (s *Server) signLimitSummary() string {
	c := s.cfg.SignLimit
	if !c.Enabled {
		return "off"
	}
	return fmt.Sprintf("%d replies needing fresh signatures/s per /%d (IPv4) /%d (IPv6) and transport, window %ds", c.SignaturesPerSec, c.IPv4Prefix, c.IPv6Prefix, c.Window)
}
