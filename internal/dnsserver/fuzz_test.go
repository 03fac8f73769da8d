package dnsserver

import (
	"bytes"
	"net/netip"
	"sort"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// FuzzServe feeds arbitrary packets to the request path. It is seeded with
// queries captured from dig and kdig (testdata/fuzz/FuzzServe) plus packed
// edge cases. A response, when there is one, must parse, carry QR and the
// query's ID, and no panic may have been recovered. `make fuzz` runs it for
// a bounded time.
func FuzzServe(f *testing.F) {
	seed := func(m *dns.Msg) {
		b, err := m.Pack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	q := new(dns.Msg)
	q.SetQuestion("app.example.test.", dns.TypeA)
	seed(q)
	q = new(dns.Msg)
	q.SetQuestion("example.test.", dns.TypeNS)
	q.SetEdns0(512, true)
	q.IsEdns0().SetVersion(1)
	seed(q)
	q = new(dns.Msg)
	q.SetQuestion("nope.example.test.", dns.TypeANY)
	q.Opcode = dns.OpcodeUpdate
	seed(q)

	q = new(dns.Msg)
	q.SetQuestion("DUAL.fast.test.", dns.TypeAAAA)
	q.SetEdns0(1232, false)
	seed(q)
	q = new(dns.Msg)
	q.SetQuestion("many.fast.test.", dns.TypeAAAA)
	seed(q)

	// The fast path and the general path (worker.general) must give the
	// same bytes; fastStore's answers do not depend on chance, except the
	// order of many.fast.test's records.
	fst := fastStore(f)
	fs := New(Config{Listen: []string{"127.0.0.1:0"}}, fst)
	fastW, generalW := fs.newWorker(), fs.newWorker()
	generalW.general = true

	st := newStore(f, 40)
	s := New(Config{Listen: []string{"127.0.0.1:0"}}, st)
	w := s.newWorker()
	src := netip.MustParseAddr("192.0.2.200")
	// A server whose rate limit slips (TC=1) nearly every UDP reply.
	limited := New(Config{Listen: []string{"127.0.0.1:0"}, RRL: RRL{Enabled: true, ResponsesPerSec: 1, Window: 1, Slip: 1}}, st)
	lw := limited.newWorker()
	f.Fuzz(func(t *testing.T, pkt []byte) {
		if resp := lw.serveUDP(pkt, src, time.Now()); resp != nil {
			m := new(dns.Msg)
			if err := m.Unpack(resp); err != nil && len(resp) > headerLen {
				t.Fatalf("rate-limited response does not parse: %v\nquery %x\nresponse %x", err, pkt, resp)
			}
			if !m.Response || m.Id != uint16(pkt[0])<<8|uint16(pkt[1]) || len(resp) > 1232 {
				t.Fatalf("rate-limited response without QR, with another ID or too long: %x", resp)
			}
		}
		for _, tcp := range []bool{false, true} {
			a := append([]byte(nil), fastW.serve(pkt, src, tcp)...)
			b := generalW.serve(pkt, src, tcp)
			if !bytes.Equal(a, b) && !sameUpToOrder(a, b) {
				t.Fatalf("tcp=%v: the fast and the general path differ\nquery % x\nfast    % x\ngeneral % x", tcp, pkt, a, b)
			}
			if n := testutil.ToFloat64(fs.m.Panics); n != 0 {
				t.Fatalf("a panic was recovered while answering %x", pkt)
			}
			resp := w.serve(pkt, src, tcp)
			if n := testutil.ToFloat64(s.m.Panics); n != 0 {
				t.Fatalf("a panic was recovered while answering %x", pkt)
			}
			if resp == nil {
				continue
			}
			m := new(dns.Msg)
			if err := m.Unpack(resp); err != nil && len(resp) > headerLen {
				t.Fatalf("response does not parse: %v\nquery %x\nresponse %x", err, pkt, resp)
			}
			if !m.Response || m.Id != uint16(pkt[0])<<8|uint16(pkt[1]) {
				t.Fatalf("response without QR or with another ID: %x", resp)
			}
			if !tcp && len(resp) > 1232 {
				t.Fatalf("UDP response of %d bytes exceeds our payload size", len(resp))
			}
		}
	})
}

// sameUpToOrder reports whether two responses are the same message but for
// the order of their answer records (a draw of several records).
func sameUpToOrder(a, b []byte) bool {
	if len(a) != len(b) || len(a) < headerLen || !bytes.Equal(a[:headerLen], b[:headerLen]) {
		return false
	}
	var ma, mb dns.Msg
	if ma.Unpack(a) != nil || mb.Unpack(b) != nil {
		return false
	}
	for _, m := range []*dns.Msg{&ma, &mb} {
		sort.Slice(m.Answer, func(i, j int) bool { return m.Answer[i].String() < m.Answer[j].String() })
	}
	return ma.String() == mb.String()
}
