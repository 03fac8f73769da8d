package xfr_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/dnsserver"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/xfr"
)

func TestCatalogZone(t *testing.T) {
	zd := xfr.CatalogZone("Catalog.Invalid", []string{"b.test", "A.test.", "b.test."}, 42)
	id := func(z string) string { return xfr.CatalogMemberID(z) }
	t.Run("the catalog holds the RFC 9432 version 2 records and one PTR per member", func(t *testing.T) {
		assert.Equal(t, "catalog.invalid.", zd.Apex)
		assert.Equal(t, "catalog.invalid. 0 IN SOA invalid. invalid. 42 300 60 1209600 0", strings.Join(strings.Fields(zd.SOA.String()), " "))
		want := []string{
			"catalog.invalid. 0 IN NS invalid.",
			`version.catalog.invalid. 0 IN TXT "2"`,
		}
		ptrs := []string{
			id("a.test") + ".zones.catalog.invalid. 0 IN PTR a.test.",
			id("b.test") + ".zones.catalog.invalid. 0 IN PTR b.test.",
		}
		slices.Sort(ptrs)
		assert.Equal(t, append(want, ptrs...), names(zd.Records))
	})
	t.Run("a member's id is a label that depends on its name alone", func(t *testing.T) {
		assert.Equal(t, id("a.test."), id("A.TEST"))
		assert.NotEqual(t, id("a.test."), id("b.test."))
		assert.Len(t, id("a.test."), 32)
		_, ok := dns.IsDomainName(id("a.test.") + ".zones.catalog.invalid.")
		assert.True(t, ok)
	})
	t.Run("the content hash ignores the serial and follows the member list", func(t *testing.T) {
		assert.Equal(t, xfr.ContentHash(zd), xfr.ContentHash(xfr.CatalogZone("catalog.invalid.", []string{"a.test", "b.test"}, 43)))
		assert.NotEqual(t, xfr.ContentHash(zd), xfr.ContentHash(xfr.CatalogZone("catalog.invalid.", []string{"a.test"}, 42)))
	})
}

const catalogConfig = `
zones:
  - apex: a.test
    nameservers: [{name: ns.example.net}]
    transfer: {allow: [127.0.0.1], tsig_key_file: xfr.key}
  - apex: b.test
    nameservers: [{name: ns.example.net}]
    transfer: {allow: [127.0.0.1], tsig_key_file: xfr.key}
  - apex: c.test
    nameservers: [{name: ns.example.net}]
catalog:
  zone: Catalog.Invalid
  transfer: {allow: [%s], tsig_key_file: %s, notify: [%s]}
`

// catalogFixture is a publisher with a catalog, its transfer server behind
// a DNS server, and a secondary that records the catalog's NOTIFYs.
type catalogFixture struct {
	x        *xfr.Publisher
	addr     string
	target   string
	mu       sync.Mutex
	notified []uint32 // serials of the catalog NOTIFYs received
}

func newCatalogFixture(t *testing.T) *catalogFixture {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
	fx := &catalogFixture{}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	fx.target = pc.LocalAddr().String()
	sec := &dns.Server{PacketConn: pc, TsigSecret: map[string]string{keyName: keySecret},
		Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
			m := new(dns.Msg)
			m.SetReply(r)
			if r.Opcode == dns.OpcodeNotify && r.IsTsig() != nil && w.TsigStatus() == nil && len(r.Answer) == 1 && r.Question[0].Name == "catalog.invalid." {
				fx.mu.Lock()
				fx.notified = append(fx.notified, r.Answer[0].(*dns.SOA).Serial)
				fx.mu.Unlock()
				m.SetTsig(keyName, dns.HmacSHA256, 300, time.Now().Unix())
			}
			w.WriteMsg(m)
		})}
	started := make(chan struct{})
	sec.NotifyStartedFunc = func() { close(started) }
	go sec.ActivateAndServe()
	<-started

	st := &engine.Store{}
	keys := keySource{"xfr.key": {Name: keyName, Secret: keySecret, Algorithm: xfr.Algorithm}}
	fx.x = xfr.NewPublisher(st, keys, nil, xfr.Options{Registerer: prometheus.NewRegistry(), NotifyBackoff: []time.Duration{0, 50 * time.Millisecond}, NotifyTimeout: 300 * time.Millisecond})
	fx.publish(t, "127.0.0.1", "xfr.key", nil)
	dnss := dnsserver.New(dnsserver.Config{Listen: []string{"127.0.0.1:0"}, UDPSockets: 1, Transfers: fx.x.Server()}, st)
	require.NoError(t, dnss.Start())
	fx.addr = dnss.Addrs()[0].String()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		dnss.Shutdown(ctx)
		fx.x.Server().Close()
		sec.Shutdown()
	})
	return fx
}

// publish publishes the catalog config with the catalog's allow list and
// key file; edit changes the desired state first.
func (fx *catalogFixture) publish(t *testing.T, allow, keyFile string, edit func(*model.Desired)) error {
	t.Helper()
	f, err := config.Parse("test.yaml", []byte(fmt.Sprintf(catalogConfig, allow, keyFile, fx.target)))
	require.NoError(t, err)
	if edit != nil {
		edit(&f.Desired)
	}
	_, err = fx.x.Publish(&f.Desired, engine.Options{})
	return err
}

// ask sends an unsigned query over UDP.
func (fx *catalogFixture) ask(t *testing.T, name string, qtype uint16) *dns.Msg {
	t.Helper()
	q := new(dns.Msg)
	q.SetQuestion(name, qtype)
	q.SetEdns0(1232, false)
	r, _, err := (&dns.Client{Net: "udp"}).Exchange(q, fx.addr)
	require.NoError(t, err)
	return r
}

func (fx *catalogFixture) axfr(t *testing.T) []dns.RR {
	t.Helper()
	q := new(dns.Msg)
	q.SetAxfr("catalog.invalid.")
	q.SetTsig(keyName, dns.HmacSHA256, 300, time.Now().Unix())
	tr := &dns.Transfer{TsigSecret: map[string]string{keyName: keySecret}}
	ch, err := tr.In(q, fx.addr)
	require.NoError(t, err)
	var out []dns.RR
	for env := range ch {
		require.NoError(t, env.Error)
		out = append(out, env.RR...)
	}
	return out
}

func (fx *catalogFixture) serial(t *testing.T) uint32 {
	t.Helper()
	r := fx.ask(t, "catalog.invalid.", dns.TypeSOA)
	require.Len(t, r.Answer, 1, r)
	return r.Answer[0].(*dns.SOA).Serial
}

func TestPublisherServesTheCatalog(t *testing.T) {
	fx := newCatalogFixture(t)
	idA, idB := xfr.CatalogMemberID("a.test"), xfr.CatalogMemberID("b.test")

	t.Run("the catalog lists the zones with a transfer section and transfers with TSIG", func(t *testing.T) {
		rrs := fx.axfr(t)
		require.Len(t, rrs, 6, names(rrs))
		got := strings.Join(names(rrs), "\n")
		assert.Contains(t, got, idA+".zones.catalog.invalid. 0 IN PTR a.test.")
		assert.Contains(t, got, idB+".zones.catalog.invalid. 0 IN PTR b.test.")
		assert.NotContains(t, got, "c.test", "a zone without transfers cannot be pulled, so it is not listed")
		assert.Equal(t, fx.serial(t), rrs[0].(*dns.SOA).Serial, "the SOA answered is the one transferred")
	})

	t.Run("an allowed address gets authoritative answers from the catalog", func(t *testing.T) {
		r := fx.ask(t, "CATALOG.invalid.", dns.TypeSOA)
		assert.Equal(t, dns.RcodeSuccess, r.Rcode)
		assert.True(t, r.Authoritative)
		require.Len(t, r.Answer, 1)
		r = fx.ask(t, idA+".zones.catalog.invalid.", dns.TypePTR)
		require.Len(t, r.Answer, 1)
		assert.Equal(t, "a.test.", r.Answer[0].(*dns.PTR).Ptr)
		r = fx.ask(t, "zones.catalog.invalid.", dns.TypeTXT)
		assert.Equal(t, dns.RcodeSuccess, r.Rcode, "an empty non-terminal: NODATA")
		assert.Empty(t, r.Answer)
		require.Len(t, r.Ns, 1)
		r = fx.ask(t, "nothere.catalog.invalid.", dns.TypeA)
		assert.Equal(t, dns.RcodeNameError, r.Rcode)
		require.Len(t, r.Ns, 1)
		assert.IsType(t, &dns.SOA{}, r.Ns[0])
	})

	t.Run("a query into the catalog of another class is refused as not ours, not answered from the IN catalog", func(t *testing.T) {
		q := new(dns.Msg)
		q.SetQuestion("catalog.invalid.", dns.TypeSOA)
		q.Question[0].Qclass = dns.ClassCHAOS
		q.SetEdns0(1232, false)
		r, _, err := (&dns.Client{Net: "udp"}).Exchange(q, fx.addr)
		require.NoError(t, err)
		assert.Equal(t, dns.RcodeRefused, r.Rcode)
		assert.Empty(t, r.Answer)
		require.NotNil(t, r.IsEdns0())
		require.NotEmpty(t, r.IsEdns0().Option)
		assert.Equal(t, "meridian: only class IN is served", r.IsEdns0().Option[0].(*dns.EDNS0_EDE).ExtraText)
	})

	t.Run("the same member list keeps the serial; a zone that loses its transfer section leaves the catalog with the next serial and a NOTIFY", func(t *testing.T) {
		s1 := fx.serial(t)
		require.NoError(t, fx.publish(t, "127.0.0.1", "xfr.key", nil))
		assert.Equal(t, s1, fx.serial(t))
		require.NoError(t, fx.publish(t, "127.0.0.1", "xfr.key", func(d *model.Desired) { d.Zones[1].Transfer = nil }))
		s2 := fx.serial(t)
		assert.Equal(t, xfr.NextSerial(s1), s2)
		got := strings.Join(names(fx.axfr(t)), "\n")
		assert.NotContains(t, got, "b.test")
		assert.Contains(t, got, "a.test")
		require.Eventually(t, func() bool {
			fx.mu.Lock()
			defer fx.mu.Unlock()
			return slices.Contains(fx.notified, s2)
		}, 5*time.Second, 10*time.Millisecond, "the catalog's notify target hears of the new serial")
		// IXFR from the previous version: the member's PTR deleted.
		q := new(dns.Msg)
		q.SetIxfr("catalog.invalid.", s1, "invalid.", "invalid.")
		q.SetTsig(keyName, dns.HmacSHA256, 300, time.Now().Unix())
		ch, err := (&dns.Transfer{TsigSecret: map[string]string{keyName: keySecret}}).In(q, fx.addr)
		require.NoError(t, err)
		var rrs []dns.RR
		for env := range ch {
			require.NoError(t, env.Error)
			rrs = append(rrs, env.RR...)
		}
		require.Len(t, rrs, 5, names(rrs)) // new SOA, old SOA, the deletion, new SOA, (no addition), new SOA
		assert.Equal(t, "b.test.", rrs[2].(*dns.PTR).Ptr)
	})

	t.Run("an address outside the catalog's allow list is refused", func(t *testing.T) {
		require.NoError(t, fx.publish(t, "192.0.2.0/24", "xfr.key", nil))
		assert.Equal(t, dns.RcodeRefused, fx.ask(t, "catalog.invalid.", dns.TypeSOA).Rcode)
		q := new(dns.Msg)
		q.SetAxfr("catalog.invalid.")
		q.SetTsig(keyName, dns.HmacSHA256, 300, time.Now().Unix())
		rc, _ := rcodeOf(t, fx.addr, q, keySecret)
		assert.Equal(t, dns.RcodeRefused, rc)
	})

	t.Run("a catalog key the source never read fails the publish naming the field", func(t *testing.T) {
		assert.ErrorContains(t, fx.publish(t, "127.0.0.1", "other.key", nil), "catalog.transfer.tsig_key_file: other.key: not read")
	})

	t.Run("without a catalog section the catalog's names are not answered", func(t *testing.T) {
		require.NoError(t, fx.publish(t, "127.0.0.1", "xfr.key", func(d *model.Desired) { d.Catalog = nil }))
		assert.Equal(t, dns.RcodeRefused, fx.ask(t, "catalog.invalid.", dns.TypeSOA).Rcode)
	})
}
