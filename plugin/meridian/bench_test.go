package meridian

import (
	"context"
	"net"
	"testing"

	"github.com/miekg/dns"
)

// packWriter is a ResponseWriter that packs every reply, as the real UDP
// writer does, and throws the bytes away.
type packWriter struct {
	buf  []byte
	addr net.Addr
}

func (w *packWriter) LocalAddr() net.Addr  { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53} }
func (w *packWriter) RemoteAddr() net.Addr { return w.addr }
func (w *packWriter) WriteMsg(m *dns.Msg) error {
	b, err := m.PackBuffer(w.buf)
	w.buf = b[:0]
	return err
}
func (w *packWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *packWriter) Close() error                { return nil }
func (w *packWriter) TsigStatus() error           { return nil }
func (w *packWriter) TsigTimersOnly(bool)         {}
func (w *packWriter) Hijack()                     {}

// BenchmarkServeDNS is the plugin's cost per weighted A query, reply packed;
// `go test -bench ServeDNS -cpuprofile` shows where it goes.
func BenchmarkServeDNS(b *testing.B) {
	m := newPlugin(&testing.T{})
	defer m.Stop()
	q := new(dns.Msg)
	q.SetQuestion("one.gslb.test.", dns.TypeA)
	q.SetEdns0(1232, false)
	w := &packWriter{buf: make([]byte, 0, 512), addr: &net.UDPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 4000}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.ServeDNS(ctx, w, q); err != nil {
			b.Fatal(err)
		}
	}
}

// fixedReply is what bench/corednsfixed's trivial plugin does per query (a
// new dns.Msg with one A record, OPT echoed); BenchmarkFixedReference is the
// floor BenchmarkServeDNS is compared with.
func fixedReply(w dns.ResponseWriter, r *dns.Msg) error {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	m.Compress = true
	m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30},
		A: net.IPv4(192, 0, 2, 1).To4()}}
	if o := r.IsEdns0(); o != nil {
		opt := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
		opt.SetUDPSize(1232)
		m.Extra = append(m.Extra, opt)
	}
	return w.WriteMsg(m)
}

func BenchmarkFixedReference(b *testing.B) {
	q := new(dns.Msg)
	q.SetQuestion("one.gslb.test.", dns.TypeA)
	q.SetEdns0(1232, false)
	w := &packWriter{buf: make([]byte, 0, 512), addr: &net.UDPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 4000}}
	b.ReportAllocs()
	for b.Loop() {
		if err := fixedReply(w, q); err != nil {
			b.Fatal(err)
		}
	}
}
