package dnsserver

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
)

// fastConfig has names whose answers do not depend on chance (one
// endpoint per family and client), so that two servings of one query can
// be compared byte for byte.
const fastConfig = `
zones:
  - apex: fast.test
    nameservers:
      - {name: ns1.fast.test, ipv4: [192.0.2.53], ipv6: ["2001:db8::53"]}
  - apex: sub.fast.test
    nameservers:
      - {name: ns1.fast.test}
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
services:
  - {name: one.fast.test, endpoints: [{address: 192.0.2.1, cluster: east}]}
  - {name: six.fast.test, ttl: 60, endpoints: [{address: "2001:db8::1", cluster: east}]}
  - {name: dual.fast.test, endpoints: [{address: 192.0.2.2, cluster: east}, {address: "2001:db8::2", cluster: west}]}
  - {name: alias.fast.test, endpoints: [{cname: one.fast.test, cluster: east}]}
  - {name: out.fast.test, endpoints: [{cname: www.example.org, cluster: east}]}
  - {name: down.fast.test, when_all_down: nodata, endpoints: [{address: 192.0.2.3, cluster: east, state: down}]}
  - {name: open.fast.test, endpoints: [{address: 192.0.2.4, cluster: east}]}
  - {name: _svc._tcp.fast.test, endpoints: [{address: 192.0.2.5, cluster: east}]}
  - {name: a-b.sub.fast.test, endpoints: [{address: 192.0.2.6, cluster: west}]}
  - name: many.fast.test
    max_answers: 16
    endpoints:
%s
`

func fastStore(t testing.TB) *engine.Store {
	t.Helper()
	var b strings.Builder
	for i := range 16 {
		fmt.Fprintf(&b, "      - {address: \"2001:db8::%x\", cluster: east}\n", 0x100+i)
	}
	f, err := config.Parse("fast.yaml", []byte(fmt.Sprintf(fastConfig, b.String())))
	require.NoError(t, err)
	st := &engine.Store{}
	_, err = st.Publish(&f.Desired, engine.Options{Health: probedDown{"open.fast.test.|192.0.2.4": true}})
	require.NoError(t, err)
	return st
}

// probedDown decides the endpoints it lists ("service|target") down by
// their probes: open.fast.test fails open (an endpoint forced down with
// state: down never would).
type probedDown map[string]bool

func (p probedDown) Endpoint(svc, target string) engine.State {
	if p[svc+"|"+target] {
		return engine.Down
	}
	return engine.Unknown
}

func (probedDown) Cluster(string) engine.State { return engine.Unknown }

// fastQuery is a query shape of the table below.
type fastQuery struct {
	name  string
	qtype uint16
	mod   func(m *dns.Msg)    // changes to the message before packing (nil: none)
	wire  func([]byte) []byte // changes to the packed query (nil: none)
	fast  bool                // parseFast must take it
}

func edns(size uint16, do bool) func(*dns.Msg) {
	return func(m *dns.Msg) { m.SetEdns0(size, do) }
}

func fastQueries() map[string]fastQuery {
	ecs := func(m *dns.Msg) {
		m.SetEdns0(1232, false)
		o := m.IsEdns0()
		o.Option = append(o.Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: net.IPv4(198, 51, 100, 0).To4()})
	}
	return map[string]fastQuery{
		"an A query for a one-endpoint service":              {name: "one.fast.test.", qtype: dns.TypeA, fast: true},
		"an A query in mixed case (DNS 0x20)":                {name: "OnE.FaSt.TeSt.", qtype: dns.TypeA, fast: true},
		"an AAAA query":                                      {name: "six.fast.test.", qtype: dns.TypeAAAA, fast: true},
		"an A query for a dual-stack service":                {name: "dual.fast.test.", qtype: dns.TypeA, fast: true},
		"an AAAA query for a dual-stack service":             {name: "DUAL.fast.test.", qtype: dns.TypeAAAA, fast: true},
		"a query for a type the name does not have (NODATA)": {name: "one.fast.test.", qtype: dns.TypeTXT, fast: true},
		"a query for an unknown name (NXDOMAIN)":             {name: "nope.fast.test.", qtype: dns.TypeA, fast: true},
		"a query outside our zones (REFUSED)":                {name: "www.example.org.", qtype: dns.TypeA, fast: true},
		"a query for the apex SOA":                           {name: "fast.test.", qtype: dns.TypeSOA, fast: true},
		"a query for the apex NS with glue":                  {name: "Fast.Test.", qtype: dns.TypeNS, fast: true},
		"an ANY query":                                       {name: "one.fast.test.", qtype: dns.TypeANY, fast: true},
		"a query for a CNAME service chased in zone":         {name: "alias.fast.test.", qtype: dns.TypeA, fast: true},
		"a query for a CNAME out of our zones":               {name: "out.fast.test.", qtype: dns.TypeA, fast: true},
		"a query for a service whose endpoints are all down": {name: "down.fast.test.", qtype: dns.TypeA, fast: true},
		"a fail-open answer":                                 {name: "open.fast.test.", qtype: dns.TypeA, fast: true},
		"a fail-open answer with EDNS (its EDE)":             {name: "open.fast.test.", qtype: dns.TypeA, mod: edns(1232, false), fast: true},
		"a query outside our zones with EDNS (REFUSED, EDE)": {name: "www.example.org.", qtype: dns.TypeA, mod: edns(1232, true), fast: true},
		"a name with underscores":                            {name: "_svc._TCP.fast.test.", qtype: dns.TypeA, fast: true},
		"a name in a child zone, with a hyphen":              {name: "a-b.sub.fast.test.", qtype: dns.TypeA, fast: true},
		"a query with EDNS (1232, no options)":               {name: "one.fast.test.", qtype: dns.TypeA, mod: edns(1232, false), fast: true},
		"a query with EDNS and a payload size below 512":     {name: "one.fast.test.", qtype: dns.TypeA, mod: edns(100, false), fast: true},
		"a query with EDNS and a payload size above ours":    {name: "six.fast.test.", qtype: dns.TypeAAAA, mod: edns(65535, false), fast: true},
		"a query with the DO bit":                            {name: "one.fast.test.", qtype: dns.TypeA, mod: edns(4096, true), fast: true},
		"a query with EDNS version 1 (BADVERS)":              {name: "one.fast.test.", qtype: dns.TypeA, mod: func(m *dns.Msg) { m.SetEdns0(1232, false); m.IsEdns0().SetVersion(1) }, fast: true},
		"a query with an extended rcode in its OPT":          {name: "one.fast.test.", qtype: dns.TypeA, mod: edns(1232, false), wire: func(b []byte) []byte { b[len(b)-6] = 3; return b }, fast: true},
		"a query with RD, CD, AD and Z set": {name: "one.fast.test.", qtype: dns.TypeA, mod: func(m *dns.Msg) {
			m.RecursionDesired, m.CheckingDisabled, m.AuthenticatedData, m.Zero = true, true, true, true
		}, fast: true},
		"a query with AA, TC and RA set":                        {name: "one.fast.test.", qtype: dns.TypeA, mod: func(m *dns.Msg) { m.Authoritative, m.Truncated, m.RecursionAvailable = true, true, true }, fast: true},
		"a query with a non-zero rcode":                         {name: "one.fast.test.", qtype: dns.TypeA, mod: func(m *dns.Msg) { m.Rcode = dns.RcodeNameError }, fast: true},
		"an UPDATE (NOTIMP)":                                    {name: "fast.test.", qtype: dns.TypeSOA, mod: func(m *dns.Msg) { m.Opcode = dns.OpcodeUpdate }, fast: true},
		"a query of class CH (REFUSED)":                         {name: "one.fast.test.", qtype: dns.TypeA, mod: func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassCHAOS }, fast: true},
		"an AXFR (general path: internal/xfr's)":                {name: "fast.test.", qtype: dns.TypeAXFR},
		"an IXFR (general path: internal/xfr's)":                {name: "fast.test.", qtype: dns.TypeIXFR},
		"a query for type OPT (FORMERR)":                        {name: "one.fast.test.", qtype: dns.TypeOPT, fast: true},
		"a query for type TKEY (NOTIMP)":                        {name: "one.fast.test.", qtype: dns.TypeTKEY, fast: true},
		"sixteen AAAA records (order drawn: compared by shape)": {name: "many.fast.test.", qtype: dns.TypeAAAA, fast: true},
		"a query with an ECS option (general path)":             {name: "one.fast.test.", qtype: dns.TypeA, mod: ecs},
		"a query with an EDNS cookie (general path)": {name: "one.fast.test.", qtype: dns.TypeA, mod: func(m *dns.Msg) {
			m.SetEdns0(1232, false)
			o := m.IsEdns0()
			o.Option = append(o.Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: "0123456789abcdef"})
		}},
		"a name with an escaped dot (general path)": {name: `a\.b.fast.test.`, qtype: dns.TypeA},
		"a name with a space (general path)":        {name: `a\032b.fast.test.`, qtype: dns.TypeA},
		"a wildcard-looking name (general path)":    {name: `*.fast.test.`, qtype: dns.TypeA},
		"a query for the root name (general path)":  {name: ".", qtype: dns.TypeNS},
		"two questions (general path)":              {name: "one.fast.test.", qtype: dns.TypeA, mod: func(m *dns.Msg) { m.Question = append(m.Question, m.Question[0]) }},
		"no question (general path)":                {name: "one.fast.test.", qtype: dns.TypeA, mod: func(m *dns.Msg) { m.Question = nil }},
		"two OPT records (general path)":            {name: "one.fast.test.", qtype: dns.TypeA, mod: func(m *dns.Msg) { m.SetEdns0(1232, false); m.Extra = append(m.Extra, m.Extra[0]) }},
		"an answer record in the query (general path)": {name: "one.fast.test.", qtype: dns.TypeA, mod: func(m *dns.Msg) {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: "one.fast.test.", Rrtype: dns.TypeA, Class: dns.ClassINET}, A: net.IPv4(192, 0, 2, 9)})
		}},
		"a TXT record as additional (general path)": {name: "one.fast.test.", qtype: dns.TypeA, mod: func(m *dns.Msg) {
			m.Extra = append(m.Extra, &dns.TXT{Hdr: dns.RR_Header{Name: "x.", Rrtype: dns.TypeTXT, Class: dns.ClassINET}, Txt: []string{"x"}})
		}},
		"trailing bytes after the question (general path)": {name: "one.fast.test.", qtype: dns.TypeA, wire: func(b []byte) []byte { return append(b, 0, 0) }},
		"trailing bytes after the OPT (general path)":      {name: "one.fast.test.", qtype: dns.TypeA, mod: edns(1232, false), wire: func(b []byte) []byte { return append(b, 0) }},
		"a question cut short (general path: FORMERR)":     {name: "one.fast.test.", qtype: dns.TypeA, wire: func(b []byte) []byte { return b[:len(b)-3] }},
		"a label running past the end (general path)":      {name: "one.fast.test.", qtype: dns.TypeA, wire: func(b []byte) []byte { return b[:headerLen+2] }},
		"a compressed question name (general path)": {name: "one.fast.test.", qtype: dns.TypeA, wire: func(b []byte) []byte {
			// the name as a pointer to itself: a loop the parser must refuse
			b = append(b[:headerLen], 0xC0, headerLen, 0, 1, 0, 1)
			return b
		}},
		"a 63-octet label":     {name: strings.Repeat("x", 63) + ".fast.test.", qtype: dns.TypeA, fast: true},
		"a 253-character name": {name: strings.Repeat(strings.Repeat("y", 49)+".", 4) + "abcdefghijklmnopqrstuvwxyz12345678.fast.test.", qtype: dns.TypeA, fast: true},
	}
}

func packQuery(t *testing.T, q fastQuery) []byte {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(q.name, q.qtype)
	m.Id = 0xBEEF
	m.RecursionDesired = false
	if q.mod != nil {
		q.mod(m)
	}
	b, err := m.Pack()
	require.NoError(t, err)
	if q.wire != nil {
		b = q.wire(b)
	}
	return b
}

// TestFastPathAgreesWithGeneralPath serves every query shape twice, once
// with the fast path and once the general way (dns.Msg Unpack and
// PackBuffer), over UDP and TCP, and requires the same bytes; where the
// fast parser takes a query, the message it builds must equal Unpack's.
func TestFastPathAgreesWithGeneralPath(t *testing.T) {
	st := fastStore(t)
	s := New(Config{Listen: []string{"127.0.0.1:0"}}, st)
	fast, general := s.newWorker(), s.newWorker()
	general.general = true
	src := netip.MustParseAddr("192.0.2.200")
	for name, q := range fastQueries() {
		t.Run(name, func(t *testing.T) {
			pkt := packQuery(t, q)
			probe := s.newWorker()
			require.Equal(t, q.fast, probe.parseFast(pkt), "parseFast's verdict")
			if q.fast {
				var want dns.Msg
				require.NoError(t, want.Unpack(pkt))
				assert.Equal(t, want, probe.req, "the message parseFast built")
			}
			for _, tcp := range []bool{false, true} {
				a := fast.serve(pkt, src, tcp)
				a = append([]byte(nil), a...)
				b := general.serve(pkt, src, tcp)
				if q.name == "many.fast.test." {
					// The order of the drawn records differs between two
					// servings: compare the sorted records instead.
					assert.Equal(t, len(b), len(a), "tcp=%v", tcp)
					assert.Equal(t, sortedAnswer(t, b), sortedAnswer(t, a), "tcp=%v", tcp)
					continue
				}
				assert.Equal(t, b, a, "tcp=%v: fast path\n% x\ngeneral path\n% x", tcp, a, b)
			}
		})
	}
}

func sortedAnswer(t *testing.T, wire []byte) []string {
	t.Helper()
	var m dns.Msg
	require.NoError(t, m.Unpack(wire))
	var out []string
	for _, rr := range m.Answer {
		out = append(out, rr.String())
	}
	sort.Strings(out)
	return out
}

// TestPackFastAgreesWithPackBuffer packs replies the engine built (weighted
// draws included, which two servings would draw differently) with packFast
// and with dns.Msg.PackBuffer, and requires the same bytes wherever
// packFast takes the message, and that it takes the common answers.
func TestPackFastAgreesWithPackBuffer(t *testing.T) {
	snap := newStore(t, 1).Load()
	fsnap := fastStore(t).Load()
	src := netip.MustParseAddr("192.0.2.200")
	cases := []struct {
		name  string
		snap  *engine.Snapshot
		q     fastQuery
		limit int
		taken bool
	}{
		{"a weighted answer is packed fast", snap, fastQuery{name: "app.example.test.", qtype: dns.TypeA}, 512, true},
		{"a weighted answer with EDNS is packed fast", snap, fastQuery{name: "APP.example.test.", qtype: dns.TypeA, mod: edns(1232, true)}, 1232, true},
		{"sixteen AAAA records are packed fast", fsnap, fastQuery{name: "many.fast.test.", qtype: dns.TypeAAAA}, 512, true},
		{"a reply longer than the limit is left to Truncate", fsnap, fastQuery{name: "many.fast.test.", qtype: dns.TypeAAAA}, 200, false},
		{"a REFUSED reply is packed fast", snap, fastQuery{name: "www.example.org.", qtype: dns.TypeA}, 512, true},
		{"a REFUSED reply with its EDE is packed fast", snap, fastQuery{name: "www.example.org.", qtype: dns.TypeA, mod: edns(1232, false)}, 512, true},
		{"a fail-open answer with its EDE is packed fast", fsnap, fastQuery{name: "open.fast.test.", qtype: dns.TypeA, mod: edns(1232, true)}, 512, true},
		{"a fail-open answer whose EDE does not fit the limit is left to Truncate", fsnap, fastQuery{name: "open.fast.test.", qtype: dns.TypeA, mod: edns(1232, true)}, 80, false},
		{"a FORMERR reply to two questions (the first echoed) is packed fast", snap, fastQuery{name: "app.example.test.", qtype: dns.TypeA, mod: func(m *dns.Msg) { m.Question = append(m.Question, m.Question[0]) }}, 512, true},
		{"a BADVERS reply (extended rcode) is left to PackBuffer", snap, fastQuery{name: "app.example.test.", qtype: dns.TypeA, mod: func(m *dns.Msg) { m.SetEdns0(1232, false); m.IsEdns0().SetVersion(1) }}, 512, false},
		{"an NXDOMAIN reply (SOA in authority) is left to PackBuffer", snap, fastQuery{name: "nope.example.test.", qtype: dns.TypeA}, 512, false},
		{"a CNAME chain is left to PackBuffer", fsnap, fastQuery{name: "alias.fast.test.", qtype: dns.TypeA}, 512, false},
		{"an ECS reply is left to PackBuffer", fsnap, fastQuery{name: "one.fast.test.", qtype: dns.TypeA, mod: func(m *dns.Msg) {
			m.SetEdns0(1232, false)
			o := m.IsEdns0()
			o.Option = append(o.Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: net.IPv4(198, 51, 100, 0).To4()})
		}}, 1232, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var req dns.Msg
			require.NoError(t, req.Unpack(packQuery(t, c.q)))
			for range 20 { // several draws
				var rep engine.Reply
				c.snap.Respond(&req, src, 1232, &rep)
				got, ok := packFast(make([]byte, dns.MaxMsgSize), &rep.Msg, c.limit)
				require.Equal(t, c.taken, ok, "packFast's verdict")
				if !ok {
					return
				}
				want, err := rep.Msg.PackBuffer(make([]byte, dns.MaxMsgSize))
				require.NoError(t, err)
				require.Equal(t, want, got, "packFast\n% x\nPackBuffer\n% x", got, want)
			}
		})
	}
}

// TestServeManyNamesDoesNotAllocate checks the point of the fast path: the
// common query and answer cost no allocation (the Go benchmark reports the
// same as allocs/op).
func TestServeManyNamesDoesNotAllocate(t *testing.T) {
	st := manyNamesStore(t, 100)
	s := New(Config{Listen: []string{"127.0.0.1:0"}, RRL: RRL{Enabled: true, ResponsesPerSec: 1_000_000}}, st)
	w := s.newWorker()
	var pkts [][]byte
	for i := range 100 {
		q := fastQuery{name: fmt.Sprintf("N%d.many.test.", i), qtype: dns.TypeA}
		if i%2 == 0 {
			q.mod = edns(1232, false)
		}
		pkts = append(pkts, packQuery(t, q))
	}
	src := netip.MustParseAddr("127.0.0.1")
	now := time.Now()
	i := 0
	serve := func() {
		resp := w.serveUDP(pkts[i%len(pkts)], src, now)
		if len(resp) <= headerLen || binary.BigEndian.Uint16(resp[6:]) != 1 {
			t.Fatalf("query %d: want one answer record, got % x", i, resp)
		}
		i++
	}
	for range len(pkts) { // warm: metric series, reply slices
		serve()
	}
	assert.Zero(t, testing.AllocsPerRun(500, serve))
}
