package main

import (
	"context"
	"net"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"
)

const pluginName = "fixed"

// Answer of every query: the question's name, class IN, TTL 30 (the TTL of
// the benchmark services), A 192.0.2.1 (one of the two weighted addresses of
// w.bench.meridian.test, so the answer is the size of Meridian's).
var (
	fixedAddr = net.IPv4(192, 0, 2, 1).To4()
	fixedTTL  = uint32(30)
)

// udpSize is the EDNS0 payload size advertised when the query has an OPT
// record; the same as Meridian's (engine.DefaultUDPPayloadSize).
const udpSize = 1232

func init() { plugin.Register(pluginName, setup) }

// setup parses `fixed` (no arguments, no block).
func setup(c *caddy.Controller) error {
	for c.Next() {
		if args := c.RemainingArgs(); len(args) != 0 {
			return plugin.Error(pluginName, c.ArgErr())
		}
		if c.NextBlock() {
			return plugin.Error(pluginName, c.Errf("fixed takes no block"))
		}
	}
	dnsserver.GetConfig(c).AddPlugin(func(plugin.Handler) plugin.Handler { return fixed{} })
	return nil
}

// fixed is the trivial answering plugin: no lookup, no metrics, no next
// plugin. It is written like a plain CoreDNS plugin (a new dns.Msg per query,
// as whoami does), which is the cost any real plugin pays at least.
type fixed struct{}

// ServeDNS answers r with one A record: authoritative, the question echoed,
// an OPT record when the query had one (payload size 1232, DO bit copied),
// like the meridian plugin does.
func (fixed) ServeDNS(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	m.Compress = true
	if len(r.Question) > 0 {
		m.Answer = []dns.RR{&dns.A{
			Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: fixedTTL},
			A:   fixedAddr,
		}}
	}
	if o := r.IsEdns0(); o != nil {
		opt := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
		opt.SetUDPSize(udpSize)
		if o.Do() {
			opt.SetDo()
		}
		m.Extra = append(m.Extra, opt)
	}
	if err := w.WriteMsg(m); err != nil {
		return dns.RcodeServerFailure, err
	}
	return dns.RcodeSuccess, nil
}

// Name implements plugin.Handler.
func (fixed) Name() string { return pluginName }
