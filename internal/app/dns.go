package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/dnsserver"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/serving"
)

// startDNS serves the pipeline's store on server.dns.listen.
func (a *App) startDNS(l *serving.Loaded) error {
	c := l.File.Server.DNS
	exempt, err := rrlExempt(c.RRL.Exempt)
	if err != nil {
		return err
	}
	warnECSTrust(a.log, &l.File.Desired)
	srv := dnsserver.New(a.dnsConfig(c, exempt), a.pipe.Store())
	if err := srv.Start(); err != nil {
		return err
	}
	a.defer_(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	a.dnsUp.Store(true)
	for _, ap := range srv.Addrs() {
		a.dnsAddrs = append(a.dnsAddrs, ap.String())
	}
	return nil
}

// dnsConfig is the DNS server's configuration from server.dns, with the
// RRL exemptions parsed.
func (a *App) dnsConfig(c config.DNS, exempt *geo.PrefixSet) dnsserver.Config {
	return dnsserver.Config{
		Listen:            c.Listen,
		UDPSockets:        c.UDPSockets,
		MaxTCPConnections: c.MaxTCPConnections,
		TCPIdleTimeout:    c.TCPIdleTimeout,
		UDPPayloadSize:    c.UDPPayloadSize,
		MaxTCPPerClient:   c.MaxTCPPerClient,
		MaxTCPPerSite:     c.MaxTCPPerSite,

		TCPSiteIPv6Prefix:      c.TCPSiteIPv6Prefix,
		TCPPressureIdleTimeout: c.TCPPressureIdleTimeout,

		// Per client prefix: the TCP cap above and the signing limit.
		TCPClientIPv4Prefix: c.TCPClientIPv4Prefix,
		TCPClientIPv6Prefix: c.TCPClientIPv6Prefix,
		SignLimit: dnsserver.SignLimit{
			Enabled:          c.SignLimit.Enabled == nil || *c.SignLimit.Enabled,
			SignaturesPerSec: c.SignLimit.SignaturesPerSec,
			Window:           c.SignLimit.Window,
			IPv4Prefix:       c.SignLimit.IPv4Prefix,
			IPv6Prefix:       c.SignLimit.IPv6Prefix,
		},
		RRL: dnsserver.RRL{
			Enabled:         c.RRL.Enabled == nil || *c.RRL.Enabled,
			ResponsesPerSec: c.RRL.ResponsesPerSec,
			BytesPerSec:     c.RRL.BytesPerSec,
			Window:          c.RRL.Window,
			Slip: func() int { // set by the config's defaults; the fallback is for a File built by hand
				if p := c.RRL.Slip; p != nil {
					return *p
				}
				return config.DefaultRRLSlip
			}(),
			IPv4Prefix: c.RRL.IPv4Prefix,
			IPv6Prefix: c.RRL.IPv6Prefix,
			Exempt:     exempt,
		},
		Logger:    a.log,
		Metrics:   dnsserver.NewMetrics(a.reg),
		Transfers: transferServer(a.pipe),
	}
}

// warnECSTrust warns at start when answers depend on the client's place
// or network (strategy geo or latency, sticky: subnet) and geo.ecs_trusted
// is absent: the EDNS Client Subnet option is then believed from every
// source, so anyone can ask for another place's answer by naming its
// subnet. Kept as the default for compatibility (docs/dns.md), but not
// silently.
func warnECSTrust(log *slog.Logger, d *model.Desired) {
	deps := d.ECSDependents()
	if len(deps) == 0 || !d.ECSTrustedFromEverySource() {
		return
	}
	log.Warn("geo.ecs_trusted is not set: the EDNS Client Subnet option is trusted from every source, so any client can get "+
		"another place's answer by naming its subnet; list your resolvers in geo.ecs_trusted (or [] to trust none)",
		"services", len(deps), "first", deps[0])
}

// rrlExempt builds the set of server.dns.rrl.exempt (validated by the
// config; an error here names the entry all the same). nil: none.
func rrlExempt(list []string) (*geo.PrefixSet, error) {
	if len(list) == 0 {
		return nil, nil
	}
	prefixes := make([]netip.Prefix, 0, len(list))
	for i, s := range list {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("server.dns.rrl.exempt[%d]: %w", i, err)
		}
		prefixes = append(prefixes, p)
	}
	set, err := geo.NewPrefixSet(prefixes)
	if err != nil {
		return nil, fmt.Errorf("server.dns.rrl.exempt: %w", err)
	}
	return set, nil
}
