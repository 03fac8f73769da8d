package meridian

import (
	"path/filepath"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/edns"
	"github.com/coredns/coredns/plugin/transfer"
	"github.com/miekg/dns"
)

const pluginName = "meridian"

func init() { plugin.Register(pluginName, setup) }

func setup(c *caddy.Controller) error {
	m, err := parse(c)
	if err != nil {
		return plugin.Error(pluginName, err)
	}
	// CoreDNS copies only registered EDNS0 options from a request to a
	// reply; the ECS reply (with our scope) must survive.
	edns.SetSupportedOption(dns.EDNS0SUBNET)
	c.OnStartup(func() error {
		// CoreDNS's transfer plugin of this server block (if any) sends the
		// NOTIFYs; it finds the plugin's Transfer method on its own.
		if t, ok := dnsserver.GetConfig(c).Handler("transfer").(*transfer.Transfer); ok {
			m.notify.to = t
		}
		return m.Start()
	})
	c.OnShutdown(m.Stop)
	dnsserver.GetConfig(c).AddPlugin(func(next plugin.Handler) plugin.Handler {
		m.Next = next
		return m
	})
	return nil
}

// parse reads:
//
//	meridian [ZONES...] {
//	    config FILE
//	    ring
//	    geoip FILE
//	    fallthrough [ZONES...]
//	}
func parse(c *caddy.Controller) (*Meridian, error) {
	m := &Meridian{}
	i := 0
	for c.Next() {
		if i > 0 {
			return nil, plugin.ErrOnce
		}
		i++
		m.Zones = plugin.OriginsFromArgsOrServerBlock(c.RemainingArgs(), c.ServerBlockKeys)
		for c.NextBlock() {
			switch c.Val() {
			case "config":
				args := c.RemainingArgs()
				if len(args) != 1 {
					return nil, c.Errf("config needs exactly one argument: the Meridian YAML file (got %d)", len(args))
				}
				m.ConfigPath = absolute(c, args[0])
			case "ring":
				if args := c.RemainingArgs(); len(args) != 0 {
					return nil, c.Errf("ring takes no arguments (the ring section of the config file configures it), got %v", args)
				}
				m.Ring = true
			case "geoip":
				args := c.RemainingArgs()
				if len(args) != 1 {
					return nil, c.Errf("geoip needs exactly one argument: a MaxMind-format .mmdb file (got %d)", len(args))
				}
				m.GeoIP = absolute(c, args[0])
			case "fallthrough":
				m.Fall.SetZonesFromArgs(c.RemainingArgs())
			default:
				return nil, c.Errf("unknown property %q (allowed: config, ring, geoip, fallthrough)", c.Val())
			}
		}
	}
	if m.ConfigPath == "" {
		return nil, c.Errf("the config property is required: config FILE (the same YAML as `meridian serve`)")
	}
	return m, nil
}

// absolute resolves a path relative to the Corefile's directory.
func absolute(c *caddy.Controller, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	if cfg := dnsserver.GetConfig(c); cfg != nil && cfg.Root != "" {
		return filepath.Join(cfg.Root, p)
	}
	return p
}
