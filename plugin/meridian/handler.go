package meridian

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/engine"
)

var replies = sync.Pool{New: func() any { return new(engine.Reply) }}

// ServeDNS answers from the current snapshot through engine.Respond.
func (m *Meridian) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if len(r.Question) != 1 || !m.inZones(r.Question[0].Name) {
		return plugin.NextOrFailure(m.Name(), m.Next, ctx, w, r)
	}
	qname := r.Question[0].Name
	var snap *engine.Snapshot
	if m.pipe != nil {
		snap = m.pipe.Store().Load()
	}
	if snap == nil {
		return dns.RcodeServerFailure, nil
	}
	rep := replies.Get().(*engine.Reply)
	defer replies.Put(rep)
	out := snap.Respond(r, clientAddr(w), 0, rep)
	if out.Zone == "" || out.Rcode == dns.RcodeNameError {
		// Not ours (REFUSED) or not here: let the next plugin try when
		// fallthrough covers the name.
		if m.Fall.Through(strings.ToLower(qname)) {
			return plugin.NextOrFailure(m.Name(), m.Next, ctx, w, r)
		}
	}
	msg := &rep.Msg
	if len(msg.Question) > 0 {
		msg.Question[0].Name = rep.QName // the client's spelling
	}
	if isUDP(w) && mayExceed(msg, out.MaxSize) {
		msg.Truncate(out.MaxSize)
	}
	server := metrics.WithServer(ctx)
	m.queries.get(queryKey{server, out.Zone, r.Question[0].Qtype, out.Rcode, out.Strategy}).Inc()
	if out.FailOpen {
		failOpen.WithLabelValues(server, out.Zone).Inc()
	}
	if out.EDE != engine.EDENone {
		countEDE(server, out.EDE)
	}
	if err := w.WriteMsg(msg); err != nil {
		return dns.RcodeServerFailure, err
	}
	return dns.RcodeSuccess, nil
}

// Name implements plugin.Handler.
func (m *Meridian) Name() string { return pluginName }

// inZones reports whether name is at or below one of the plugin's zones,
// comparing case-insensitively without allocating.
func (m *Meridian) inZones(name string) bool {
	for _, z := range m.Zones {
		if z == "." {
			return true
		}
		if len(name) < len(z) || !strings.EqualFold(name[len(name)-len(z):], z) {
			continue
		}
		if len(name) == len(z) || name[len(name)-len(z)-1] == '.' {
			return true
		}
	}
	return false
}

// isUDP reports whether the reply goes over UDP (and may need truncating).
func isUDP(w dns.ResponseWriter) bool {
	_, tcp := w.RemoteAddr().(*net.TCPAddr)
	return !tcp
}

// mayExceed reports whether msg can be longer than size once packed. It
// measures without compression first, which is cheap (no compression map)
// and an upper bound; only a message that large is measured exactly.
func mayExceed(msg *dns.Msg, size int) bool {
	c := msg.Compress
	msg.Compress = false
	n := msg.Len()
	msg.Compress = c
	return n > size && msg.Len() > size
}

func clientAddr(w dns.ResponseWriter) netip.Addr {
	switch a := w.RemoteAddr().(type) {
	case *net.UDPAddr:
		return a.AddrPort().Addr()
	case *net.TCPAddr:
		return a.AddrPort().Addr()
	}
	return netip.Addr{}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
