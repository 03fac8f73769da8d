package dnsserver

import (
	"net/netip"
	"testing"

	"github.com/miekg/dns"
)

// BenchmarkServe measures the user-space cost of one UDP query: unpack,
// Respond, pack, metrics (no syscalls).
func BenchmarkServe(b *testing.B) {
	s := New(Config{Listen: []string{"127.0.0.1:0"}}, newStore(b, 1))
	w := s.newWorker()
	q := new(dns.Msg)
	q.SetQuestion("app.example.test.", dns.TypeA)
	pkt, err := q.Pack()
	if err != nil {
		b.Fatal(err)
	}
	src := netip.MustParseAddr("127.0.0.1")
	b.ReportAllocs()
	for b.Loop() {
		if w.serve(pkt, src, false) == nil {
			b.Fatal("no response")
		}
	}
}
