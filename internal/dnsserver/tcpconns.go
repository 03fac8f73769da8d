package dnsserver

import (
	"container/list"
	"net"
	"net/netip"
	"sync"
	"time"
)

// The TCP connection table, as RFC 7766 (section 6.2.2) asks of a server
// whose connections run out: a new connection is not refused while an
// idle one can be closed instead. Each connection counts in three groups:
// its listener (max_tcp_connections), its client prefix (/24 IPv4, /56
// IPv6: max_tcp_per_client) and, for IPv6, its site (/48:
// max_tcp_per_site), so that a /48 holding 256 /56s cannot take a listener
// either. A client prefix is one client: beyond its own cap its new
// connection is refused. A site and a listener are shared by many
// clients: when a new connection would exceed one of them, the group's
// oldest idle connection (waiting for the length of its next query) is
// closed to free a slot, and only when every connection of the group is
// busy is the new one refused. Above half of a listener's slots, a connection that goes
// idle is given tcp_pressure_idle_timeout instead of tcp_idle_timeout,
// and those already idle are cut to it.

// Reasons a TCP connection is refused or evicted (label values).
const (
	tcpReasonTotal  = "total"  // the listener's max_tcp_connections
	tcpReasonClient = "client" // the client prefix's max_tcp_per_client (refused only, never evicted for)
	tcpReasonSite   = "site"   // the IPv6 site's max_tcp_per_site
)

// tcpLimits are the caps of the table.
type tcpLimits struct {
	perListener, perClient, perSite int
	v4, v6, site                    int // prefix lengths: client IPv4, client IPv6, IPv6 site (0: no site group)
}

// connGroup is the set of connections one cap counts.
type connGroup struct {
	n        int
	idle     list.List // *tcpConn, oldest idle first
	pressure bool      // listener groups: above half full
}

// tcpConn is one open connection in the table.
type tcpConn struct {
	c            net.Conn
	client, site netip.Prefix
	groups       [3]*connGroup // listener, client, site (nil for IPv4)
	elems        [3]*list.Element
	idleSince    time.Time
	gone         bool // evicted or released: counted no more
}

// connTable counts the open TCP connections of a server. Its methods are
// safe for concurrent use; none blocks on I/O (closing an evicted
// connection is the caller's).
type connTable struct {
	lim tcpLimits
	// pressureIdle is the idle timeout above half of a listener's slots.
	pressureIdle time.Duration

	mu      sync.Mutex
	clients map[netip.Prefix]*connGroup
	sites   map[netip.Prefix]*connGroup
	all     map[*tcpConn]struct{}
}

func newConnTable(lim tcpLimits, pressureIdle time.Duration) *connTable {
	return &connTable{lim: lim, pressureIdle: pressureIdle, clients: map[netip.Prefix]*connGroup{},
		sites: map[netip.Prefix]*connGroup{}, all: map[*tcpConn]struct{}{}}
}

// newListener returns the group of one listener.
func (t *connTable) newListener() *connGroup { return &connGroup{} }

// sitePrefix is the IPv6 site of a client address, or the zero Prefix
// (IPv4, or a site no wider than the client prefix).
func (t *connTable) sitePrefix(a netip.Addr) netip.Prefix {
	a = a.Unmap().WithZone("")
	if !a.Is6() || t.lim.site <= 0 || t.lim.site >= t.lim.v6 {
		return netip.Prefix{}
	}
	p, _ := a.Prefix(t.lim.site)
	return p
}

// admit counts c, from client address from, on listener ln. To free a slot it
// may evict idle connections: they are returned, already uncounted, with
// the reason of each, for the caller to close. When a group is full and
// none of its connections is idle, c is refused: tc is nil and refused
// names the group.
func (t *connTable) admit(ln *connGroup, c net.Conn, from netip.Addr, now time.Time) (tc *tcpConn, evicted []*tcpConn, reasons []string, refused string) {
	client := clientPrefix(from, t.lim.v4, t.lim.v6)
	site := t.sitePrefix(from)
	t.mu.Lock()
	defer t.mu.Unlock()
	cg := t.clients[client]
	if cg == nil {
		cg = &connGroup{}
	}
	var sg *connGroup
	if site.IsValid() {
		if sg = t.sites[site]; sg == nil {
			sg = &connGroup{}
		}
	}
	if cg.n >= t.lim.perClient {
		return nil, nil, nil, tcpReasonClient // one client over its own cap: nobody else's connection goes for it
	}
	for _, g := range []struct {
		g      *connGroup
		max    int
		reason string
	}{{sg, t.lim.perSite, tcpReasonSite}, {ln, t.lim.perListener, tcpReasonTotal}} {
		if g.g == nil {
			continue
		}
		for g.g.n >= g.max {
			front := g.g.idle.Front()
			if front == nil {
				return nil, evicted, reasons, g.reason
			}
			victim := front.Value.(*tcpConn)
			t.forget(victim)
			evicted = append(evicted, victim)
			reasons = append(reasons, g.reason)
		}
	}
	tc = &tcpConn{c: c, client: client, site: site, groups: [3]*connGroup{ln, cg, sg}}
	for _, g := range tc.groups {
		if g != nil {
			g.n++
		}
	}
	t.clients[client] = cg
	if sg != nil {
		t.sites[site] = sg
	}
	t.all[tc] = struct{}{}
	t.markIdle(tc, now)
	t.updatePressure(ln)
	return tc, evicted, reasons, ""
}

// idleTimeout is how long tc may wait for its next query: the pressure
// timeout while its listener is above half full.
func (t *connTable) idleTimeout(tc *tcpConn, normal time.Duration) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tc.groups[0].pressure && t.pressureIdle < normal {
		return t.pressureIdle
	}
	return normal
}

// idle marks tc as waiting for its next query (it may be evicted now).
func (t *connTable) idle(tc *tcpConn, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !tc.gone {
		t.markIdle(tc, now)
	}
}

// busy marks tc as reading or answering a query; false means tc was
// evicted meanwhile and must end.
func (t *connTable) busy(tc *tcpConn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tc.gone {
		return false
	}
	t.unmarkIdle(tc)
	return true
}

// release uncounts tc when its connection ends (a no-op once evicted).
func (t *connTable) release(tc *tcpConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !tc.gone {
		t.forget(tc)
	}
}

// each calls fn on every counted connection, under the table's lock.
func (t *connTable) each(fn func(net.Conn)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for tc := range t.all {
		fn(tc.c)
	}
}

func (t *connTable) markIdle(tc *tcpConn, now time.Time) {
	if tc.elems[0] != nil {
		return
	}
	tc.idleSince = now
	for i, g := range tc.groups {
		if g != nil {
			tc.elems[i] = g.idle.PushBack(tc)
		}
	}
}

func (t *connTable) unmarkIdle(tc *tcpConn) {
	for i, g := range tc.groups {
		if g != nil && tc.elems[i] != nil {
			g.idle.Remove(tc.elems[i])
		}
		tc.elems[i] = nil
	}
}

// forget uncounts tc from its groups (the caller holds t.mu).
func (t *connTable) forget(tc *tcpConn) {
	t.unmarkIdle(tc)
	tc.gone = true
	delete(t.all, tc)
	for i, g := range tc.groups {
		if g == nil {
			continue
		}
		g.n--
		if g.n > 0 {
			continue
		}
		switch i {
		case 1:
			delete(t.clients, tc.client)
		case 2:
			delete(t.sites, tc.site)
		}
	}
	t.updatePressure(tc.groups[0])
}

// updatePressure switches a listener in or out of pressure (above half of
// its slots); on the way in, every idle connection's deadline is cut to
// the pressure timeout counted from when it went idle.
func (t *connTable) updatePressure(ln *connGroup) {
	on := 2*ln.n > t.lim.perListener
	if on == ln.pressure {
		return
	}
	ln.pressure = on
	if !on || t.pressureIdle <= 0 {
		return
	}
	for e := ln.idle.Front(); e != nil; e = e.Next() {
		tc := e.Value.(*tcpConn)
		tc.c.SetReadDeadline(tc.idleSince.Add(t.pressureIdle))
	}
}
