package main

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// target is one DNS server the poller queries.
type target struct {
	name string // pdns, meridian, ring-a, ring-b
	addr string // host:port
}

// poller queries every target for the service name every interval, each
// from its own goroutine (a slow answer delays only its own next query),
// and keeps every sample.
type poller struct {
	qname    string
	backends []netip.Addr // bit i of an answer set = backends[i]
	interval time.Duration

	mu      sync.Mutex
	series  map[string][]sample
	foreign map[string]int // answers holding an address that is no backend
}

func newPoller(qname string, backends []netip.Addr, interval time.Duration) *poller {
	return &poller{qname: dns.Fqdn(qname), backends: backends, interval: interval,
		series: map[string][]sample{}, foreign: map[string]int{}}
}

// run polls every target until ctx is done.
func (p *poller) run(ctx context.Context, targets []target) {
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Go(func() { p.loop(ctx, t) })
	}
	wg.Wait()
}

func (p *poller) loop(ctx context.Context, t target) {
	c := &dns.Client{Net: "udp", Timeout: time.Second}
	tick := time.NewTicker(p.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s := p.query(ctx, c, t.addr)
		p.mu.Lock()
		p.series[t.name] = append(p.series[t.name], s)
		p.mu.Unlock()
	}
}

func (p *poller) query(ctx context.Context, c *dns.Client, addr string) sample {
	m := new(dns.Msg)
	m.SetQuestion(p.qname, dns.TypeA)
	m.RecursionDesired = false
	s := sample{At: time.Now()}
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	r, _, err := c.ExchangeContext(qctx, m, addr)
	if err != nil || r.Rcode != dns.RcodeSuccess || r.Truncated {
		return s
	}
	for _, rr := range r.Answer {
		a, ok := rr.(*dns.A)
		if !ok {
			continue
		}
		ip, _ := netip.AddrFromSlice(a.A.To4())
		i := slices.Index(p.backends, ip)
		if i < 0 {
			p.mu.Lock()
			p.foreign[addr]++
			p.mu.Unlock()
			continue
		}
		s.Set |= 1 << i
	}
	s.OK = s.Set != 0
	return s
}

// since returns a copy of a target's samples sent at or after from.
func (p *poller) since(name string, from time.Time) []sample {
	p.mu.Lock()
	defer p.mu.Unlock()
	ss := p.series[name]
	i, _ := slices.BinarySearchFunc(ss, from, func(s sample, t time.Time) int { return s.At.Compare(t) })
	return slices.Clone(ss[i:])
}
