package engine

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/geo"
)

// compileSigned compiles the fixture with example.test signed (one ECDSA
// P-256 CSK); sub.example.test stays unsigned.
func compileSigned(t testing.TB) (*Snapshot, *dnssec.Signer) {
	t.Helper()
	k, err := dnssec.Generate("example.test.", dns.ECDSAP256SHA256, 3600)
	require.NoError(t, err)
	sg, err := dnssec.NewSigner("example.test.", []*dnssec.Key{k}, dnssec.Options{})
	require.NoError(t, err)
	d := desired(t, fixture)
	var nets []geo.Network
	for _, n := range d.Geo.Networks {
		nets = append(nets, geo.Network{Prefix: netip.MustParsePrefix(n.CIDR), Region: n.Region, Country: n.Country, Continent: n.Continent})
	}
	loc, err := geo.New(nets, "")
	require.NoError(t, err)
	s, err := Compile(d, Options{Locator: loc, Signers: map[string]ZoneSigner{"example.test.": sg}})
	require.NoError(t, err)
	return s, sg
}

func withDO(m *dns.Msg) { m.SetEdns0(1232, true) }

// verifySection checks that every RRset of a section except OPT has a
// valid RRSIG from key and returns the covered types.
func verifySection(t *testing.T, rrs []dns.RR, key *dns.DNSKEY) []uint16 {
	t.Helper()
	sets := map[string][]dns.RR{}
	var sigs []*dns.RRSIG
	for _, rr := range rrs {
		switch x := rr.(type) {
		case *dns.RRSIG:
			sigs = append(sigs, x)
		case *dns.OPT:
		default:
			k := fmt.Sprintf("%s/%d", rr.Header().Name, rr.Header().Rrtype)
			sets[k] = append(sets[k], rr)
		}
	}
	var covered []uint16
	for k, set := range sets {
		found := false
		for _, sig := range sigs {
			if sig.Hdr.Name == set[0].Header().Name && sig.TypeCovered == set[0].Header().Rrtype {
				require.NoError(t, sig.Verify(key, set), k)
				assert.True(t, sig.ValidityPeriod(time.Now()), k)
				assert.Equal(t, set[0].Header().Ttl, sig.Hdr.Ttl, k)
				found = true
			}
		}
		assert.True(t, found, "no RRSIG for %s", k)
		covered = append(covered, set[0].Header().Rrtype)
	}
	assert.Equal(t, len(sets), len(sigs), "one RRSIG per RRset")
	slices.Sort(covered)
	return covered
}

func respondFrom(s *Snapshot, req *dns.Msg, src string) *Reply {
	rep := &Reply{}
	s.Respond(req, netip.MustParseAddr(src), 0, rep)
	return rep
}

func nsecOf(t *testing.T, rrs []dns.RR) *dns.NSEC {
	t.Helper()
	for _, rr := range rrs {
		if n, ok := rr.(*dns.NSEC); ok {
			return n
		}
	}
	t.Fatal("no NSEC")
	return nil
}

func TestSignedAnswers(t *testing.T) {
	s, sg := compileSigned(t)
	key := sg.DNSKEY()[0].(*dns.DNSKEY)
	for _, name := range []string{"w.example.test.", "three.example.test.", "geo.example.test.", "rr.example.test.", "W.Example.TEST."} {
		for range 20 { // draws vary: every set must be signed
			rep := respondFrom(s, query(name, dns.TypeA, withDO, withECS("10.5.0.0/24", 0)), "127.0.0.1")
			m := &rep.Msg
			require.Equal(t, dns.RcodeSuccess, m.Rcode, name)
			assert.Equal(t, []uint16{dns.TypeA}, verifySection(t, m.Answer, key), name)
			assert.Empty(t, m.Ns)
			assert.True(t, m.IsEdns0().Do(), "DO is echoed")
		}
	}
	hits, misses := sg.Stats()
	assert.Greater(t, hits, misses, "few distinct sets: mostly cache hits")

	// CNAME chain inside the zone.
	m := &respondFrom(s, query("alias.example.test.", dns.TypeA, withDO), "127.0.0.1").Msg
	assert.Equal(t, []uint16{dns.TypeA, dns.TypeCNAME}, verifySection(t, m.Answer, key))

	// Apex: SOA, NS with signed glue, DNSKEY.
	m = &respondFrom(s, query("example.test.", dns.TypeNS, withDO), "127.0.0.1").Msg
	assert.Equal(t, []uint16{dns.TypeNS}, verifySection(t, m.Answer, key))
	assert.Equal(t, []uint16{dns.TypeA, dns.TypeAAAA}, verifySection(t, m.Extra, key))
	m = &respondFrom(s, query("example.test.", dns.TypeSOA, withDO), "127.0.0.1").Msg
	assert.Equal(t, []uint16{dns.TypeSOA}, verifySection(t, m.Answer, key))
	m = &respondFrom(s, query("example.test.", dns.TypeDNSKEY, withDO), "127.0.0.1").Msg
	assert.Equal(t, []uint16{dns.TypeDNSKEY}, verifySection(t, m.Answer, key))
	assert.Equal(t, key.String(), m.Answer[0].String())
}

func TestTheApexPublishesCDSAndCDNSKEYOfTheKeysTheDSNames(t *testing.T) {
	s, sg := compileSigned(t)
	key := sg.DNSKEY()[0].(*dns.DNSKEY)
	ds := dnssec.DSSet(sg.DNSKEY(), 0)
	require.Len(t, ds, 1)
	for _, tc := range []struct {
		name  string
		qname string
		qtype uint16
		edit  func(*dns.Msg)
		want  string // the answer's record in presentation form, "" = none
	}{
		{name: "CDS at the apex is the DS the parent gets, as a child record", qname: "example.test.", qtype: dns.TypeCDS, edit: withDO,
			want: fmt.Sprintf("example.test.\t3600\tIN\tCDS\t%d 13 2 %s", ds[0].KeyTag, strings.ToUpper(ds[0].Digest))},
		{name: "CDNSKEY at the apex is the key the DS names", qname: "Example.TEST.", qtype: dns.TypeCDNSKEY, edit: withDO,
			want: "example.test.\t3600\tIN\tCDNSKEY\t257 3 13 " + key.PublicKey},
		{name: "CDS is zone data: answered without DO too, unsigned", qname: "example.test.", qtype: dns.TypeCDS, edit: func(*dns.Msg) {},
			want: fmt.Sprintf("example.test.\t3600\tIN\tCDS\t%d 13 2 %s", ds[0].KeyTag, strings.ToUpper(ds[0].Digest))},
		{name: "below the apex there is no CDS", qname: "w.example.test.", qtype: dns.TypeCDS, edit: withDO},
		{name: "an unsigned zone has no CDS", qname: "sub.example.test.", qtype: dns.TypeCDS, edit: withDO},
		{name: "an unsigned zone has no CDNSKEY", qname: "sub.example.test.", qtype: dns.TypeCDNSKEY, edit: withDO},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &respondFrom(s, query(tc.qname, tc.qtype, tc.edit), "127.0.0.1").Msg
			require.Equal(t, dns.RcodeSuccess, m.Rcode)
			var got []string
			sigs := 0
			for _, rr := range m.Answer {
				if rr.Header().Rrtype == dns.TypeRRSIG {
					sigs++
					continue
				}
				got = append(got, rr.String())
			}
			if tc.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, []string{tc.want}, got)
			if m.IsEdns0() != nil && m.IsEdns0().Do() {
				assert.Equal(t, []uint16{tc.qtype}, verifySection(t, m.Answer, key), "signed with DO")
			} else {
				assert.Zero(t, sigs, "no signature without DO")
			}
		})
	}
}

func TestUnsignedWithoutDO(t *testing.T) {
	s, _ := compileSigned(t)
	for _, edit := range []func(*dns.Msg){withEDNS(1232), func(*dns.Msg) {}} {
		for _, q := range []struct {
			name  string
			qtype uint16
		}{{"w.example.test.", dns.TypeA}, {"nosuch.example.test.", dns.TypeA}, {"fo.example.test.", dns.TypeAAAA}, {"example.test.", dns.TypeNS}} {
			m := &respondFrom(s, query(q.name, q.qtype, edit), "127.0.0.1").Msg
			for _, rr := range append(append(slices.Clone(m.Answer), m.Ns...), m.Extra...) {
				assert.NotContains(t, []uint16{dns.TypeRRSIG, dns.TypeNSEC}, rr.Header().Rrtype, q.name)
			}
			if q.name == "nosuch.example.test." {
				assert.Equal(t, dns.RcodeNameError, m.Rcode)
			}
		}
	}
	// The DNSKEY RRset is zone data: served without DO too.
	m := &respondFrom(s, query("example.test.", dns.TypeDNSKEY), "127.0.0.1").Msg
	require.Len(t, m.Answer, 1)
	assert.Equal(t, dns.TypeDNSKEY, m.Answer[0].Header().Rrtype)
}

func TestCompactDenial(t *testing.T) {
	s, sg := compileSigned(t)
	key := sg.DNSKEY()[0].(*dns.DNSKEY)
	for _, c := range []struct {
		qname, owner string
		qtype        uint16
		types        []uint16
		answer       []uint16
	}{
		// NXDOMAIN becomes NOERROR with NXNAME.
		{"nosuch.example.test.", "nosuch.example.test.", dns.TypeA, []uint16{dns.TypeRRSIG, dns.TypeNSEC, dns.TypeNXNAME}, nil},
		{"No.Such.Example.TEST.", "no.such.example.test.", dns.TypeAAAA, []uint16{dns.TypeRRSIG, dns.TypeNSEC, dns.TypeNXNAME}, nil},
		// NODATA lists what exists.
		{"fo.example.test.", "fo.example.test.", dns.TypeAAAA, []uint16{dns.TypeA, dns.TypeRRSIG, dns.TypeNSEC}, nil},
		{"w.example.test.", "w.example.test.", dns.TypeTXT, []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeRRSIG, dns.TypeNSEC}, nil},
		{"example.test.", "example.test.", dns.TypeTXT, []uint16{dns.TypeA, dns.TypeNS, dns.TypeSOA, dns.TypeRRSIG, dns.TypeNSEC, dns.TypeDNSKEY, dns.TypeCDS, dns.TypeCDNSKEY}, nil},
		{"ns1.example.test.", "ns1.example.test.", dns.TypeMX, []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeRRSIG, dns.TypeNSEC}, nil},
		{"a.b.example.test.", "a.b.example.test.", dns.TypeA, []uint16{dns.TypeRRSIG, dns.TypeNSEC}, nil}, // empty non-terminal
		// Every endpoint down with when_all_down: nodata: A is configured but absent.
		{"nod.example.test.", "nod.example.test.", dns.TypeA, []uint16{dns.TypeRRSIG, dns.TypeNSEC}, nil},
		// A CNAME to a missing name of ours: the denial is for the target.
		{"dangling.example.test.", "nothere.example.test.", dns.TypeA, []uint16{dns.TypeRRSIG, dns.TypeNSEC, dns.TypeNXNAME}, []uint16{dns.TypeCNAME}},
	} {
		rep := &Reply{}
		out := s.Respond(query(c.qname, c.qtype, withDO), netip.MustParseAddr("127.0.0.1"), 0, rep)
		m := &rep.Msg
		assert.Equal(t, dns.RcodeSuccess, m.Rcode, c.qname)
		assert.Equal(t, dns.RcodeSuccess, out.Rcode, c.qname)
		assert.Equal(t, []uint16{dns.TypeSOA, dns.TypeNSEC}, verifySection(t, m.Ns, key), c.qname)
		assert.Equal(t, c.answer, nilIfEmpty(verifySection(t, m.Answer, key)), c.qname)
		n := nsecOf(t, m.Ns)
		assert.Equal(t, c.owner, n.Hdr.Name, c.qname)
		assert.Equal(t, "\\000."+c.owner, n.NextDomain, c.qname)
		assert.Equal(t, c.types, n.TypeBitMap, c.qname)
		assert.Equal(t, uint32(30), n.Hdr.Ttl, "negative TTL")
		// The wire form packs and parses.
		wire, err := m.Pack()
		require.NoError(t, err)
		back := new(dns.Msg)
		require.NoError(t, back.Unpack(wire))
		assert.Equal(t, c.types, nsecOf(t, back.Ns).TypeBitMap)
	}
}

func nilIfEmpty(t []uint16) []uint16 {
	if len(t) == 0 {
		return nil
	}
	return t
}

func TestUnsignedZoneStaysUnsignedWithDO(t *testing.T) {
	s, _ := compileSigned(t)
	for _, q := range []string{"sub.example.test.", "nosuch.sub.example.test."} {
		m := &respondFrom(s, query(q, dns.TypeSOA, withDO), "127.0.0.1").Msg
		for _, rr := range append(slices.Clone(m.Answer), m.Ns...) {
			assert.NotContains(t, []uint16{dns.TypeRRSIG, dns.TypeNSEC}, rr.Header().Rrtype, q)
		}
	}
	m := &respondFrom(s, query("nosuch.sub.example.test.", dns.TypeA, withDO), "127.0.0.1").Msg
	assert.Equal(t, dns.RcodeNameError, m.Rcode)
	m = &respondFrom(s, query("sub.example.test.", dns.TypeDNSKEY), "127.0.0.1").Msg
	assert.Empty(t, m.Answer)
}

func TestRespondSignedZoneWithoutDODoesNotAllocate(t *testing.T) {
	s, _ := compileSigned(t)
	rep := &Reply{}
	req := query("w.example.test.", dns.TypeA, withEDNS(1232))
	src := netip.MustParseAddr("127.0.0.1")
	allocs := testing.AllocsPerRun(1000, func() { s.Respond(req, src, 0, rep) })
	assert.Zero(t, allocs)
}

func BenchmarkRespondSigned(b *testing.B) {
	s, _ := compileSigned(b)
	src := netip.MustParseAddr("127.0.0.1")
	for _, c := range []struct {
		name string
		req  *dns.Msg
	}{
		{"WeightedA/DO=0", query("w.example.test.", dns.TypeA, withEDNS(1232))},
		{"WeightedA/DO=1", query("w.example.test.", dns.TypeA, withDO)},
		{"GeoA/DO=1", query("geo.example.test.", dns.TypeA, withDO, withECS("10.5.0.0/24", 0))},
		{"NODATA/DO=1", query("fo.example.test.", dns.TypeAAAA, withDO)},
	} {
		b.Run(c.name, func(b *testing.B) {
			rep := &Reply{}
			b.ReportAllocs()
			for b.Loop() {
				s.Respond(c.req, src, 0, rep)
			}
		})
	}
	// A new name per query: every NSEC is signed afresh (cache misses).
	b.Run("NXDOMAIN-random/DO=1", func(b *testing.B) {
		rep := &Reply{}
		reqs := make([]*dns.Msg, 4096)
		for i := range reqs {
			reqs[i] = query(fmt.Sprintf("r%d.example.test.", i), dns.TypeA, withDO)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			reqs[i%len(reqs)].Question[0].Name = fmt.Sprintf("r%d.example.test.", i)
			s.Respond(reqs[i%len(reqs)], src, 0, rep)
			i++
		}
	})
}
