package dnsserver

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"testing"
	"time"

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

// BenchmarkServeManyNames is BenchmarkServe over 10 000 distinct names
// (each query a different name, in a shuffled order), without RRL and with
// it (its decision per response identity included), through the UDP path;
// path=general is the same without the fast path.
func BenchmarkServeManyNames(b *testing.B) {
	const n = 10_000
	st := manyNamesStore(b, n)
	pkts := make([][]byte, n)
	for i, j := range rand.New(rand.NewPCG(1, 2)).Perm(n) {
		q := new(dns.Msg)
		q.SetQuestion(fmt.Sprintf("n%d.many.test.", j), dns.TypeA)
		p, err := q.Pack()
		if err != nil {
			b.Fatal(err)
		}
		pkts[i] = p
	}
	src := netip.MustParseAddr("127.0.0.1")
	for _, bc := range []struct {
		name    string
		rrl     RRL
		general bool
	}{
		{"rrl=off", RRL{}, false},
		{"rrl=on", RRL{Enabled: true, ResponsesPerSec: 1_000_000}, false},
		// The same without the fast path (fastpath.go): dns.Msg Unpack and
		// PackBuffer, for a ratio in one run.
		{"rrl=off/path=general", RRL{}, true},
		{"rrl=on/path=general", RRL{Enabled: true, ResponsesPerSec: 1_000_000}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := New(Config{Listen: []string{"127.0.0.1:0"}, RRL: bc.rrl}, st)
			w := s.newWorker()
			w.general = bc.general
			now := time.Now()
			runtime.GC() // the garbage of loading 10 000 services is not the query's cost
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if w.serveUDP(pkts[i%n], src, now) == nil {
					b.Fatal("no response")
				}
				i++
			}
		})
	}
}
