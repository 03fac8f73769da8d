package meridian

import (
	"context"
	"net"
	"net/netip"
	"sync"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/engine"
)

var replies = sync.Pool{New: func() any { return new(engine.Reply) }}

// ServeDNS answers from the current snapshot through engine.Respond.
func (m *Meridian) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	state := request.Request{W: w, Req: r}
	qname := state.Name()
	zone := plugin.Zones(m.Zones).Matches(qname)
	if zone == "" {
		return plugin.NextOrFailure(m.Name(), m.Next, ctx, w, r)
	}
	snap := m.store.Load()
	if snap == nil {
		return dns.RcodeServerFailure, nil
	}
	rep := replies.Get().(*engine.Reply)
	defer replies.Put(rep)
	out := snap.Respond(r, clientAddr(w), 0, rep)
	if out.Zone == "" || out.Rcode == dns.RcodeNameError {
		// Not ours (REFUSED) or not here: let the next plugin try when
		// fallthrough covers the name.
		if m.Fall.Through(qname) {
			return plugin.NextOrFailure(m.Name(), m.Next, ctx, w, r)
		}
	}
	msg := &rep.Msg
	if len(msg.Question) > 0 {
		msg.Question[0].Name = rep.QName // the client's spelling
	}
	if state.Proto() == "udp" && msg.Len() > out.MaxSize {
		msg.Truncate(out.MaxSize)
	}
	server := metrics.WithServer(ctx)
	queryCount.WithLabelValues(server, orNone(out.Zone), dns.TypeToString[state.QType()], dns.RcodeToString[out.Rcode], orNone(out.Strategy)).Inc()
	if out.FailOpen {
		failOpen.WithLabelValues(server, out.Zone).Inc()
	}
	if err := w.WriteMsg(msg); err != nil {
		return dns.RcodeServerFailure, err
	}
	return dns.RcodeSuccess, nil
}

// Name implements plugin.Handler.
func (m *Meridian) Name() string { return pluginName }

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
