package xfr_test

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
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
	"github.com/meridian-gslb/meridian/internal/logthrottle"
	"github.com/meridian-gslb/meridian/internal/xfr"
)

const (
	keyName   = "xfr-key."
	keySecret = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ=" // 32 bytes
)

func TestParseKey(t *testing.T) {
	bind := `# made by tsig-keygen
key "XFR-Key" {
	algorithm hmac-sha256;
	secret "` + keySecret + `";
};
`
	k, err := xfr.ParseKey(bind)
	require.NoError(t, err)
	assert.Equal(t, xfr.Key{Name: keyName, Secret: keySecret, Algorithm: dns.HmacSHA256}, k)

	k, err = xfr.ParseKey("hmac-sha256:xfr-key:" + keySecret + "\n")
	require.NoError(t, err)
	assert.Equal(t, keyName, k.Name)
	k, err = xfr.ParseKey("xfr-key:" + keySecret)
	require.NoError(t, err)
	assert.Equal(t, keyName, k.Name)

	for name, bad := range map[string]string{
		"empty":     "",
		"md5":       `key "k" { algorithm hmac-md5; secret "` + keySecret + `"; };`,
		"short":     "hmac-sha256:k:c2hvcnQ=",
		"notbase64": "hmac-sha256:k:!!!",
		"two keys":  `key "a" { algorithm hmac-sha256; secret "` + keySecret + `"; }; key "b" { algorithm hmac-sha256; secret "` + keySecret + `"; };`,
		"no secret": `key "a" { algorithm hmac-sha256; };`,
		"unknown":   `key "a" { algorithm hmac-sha256; secret "` + keySecret + `"; color blue; };`,
	} {
		_, err := xfr.ParseKey(bad)
		assert.Error(t, err, name)
	}

	// A key of another SHA-2 HMAC where the caller allows it (dynamic
	// updates), never for transfers.
	sha512 := `key "upd" { algorithm hmac-sha512; secret "` + keySecret + `"; };`
	_, err = xfr.ParseKey(sha512)
	assert.ErrorContains(t, err, `algorithm "hmac-sha512" is not supported (allowed: hmac-sha256)`)
	k, err = xfr.ParseKeyWith(sha512, "hmac-sha256", "hmac-sha384", "hmac-sha512")
	require.NoError(t, err)
	assert.Equal(t, dns.HmacSHA512, k.Algorithm)
	_, err = xfr.ParseKeyWith(`key "a" { algorithm hmac-md5; secret "`+keySecret+`"; };`, "hmac-sha256", "hmac-md5")
	assert.Error(t, err, "md5 is never allowed")
}

func TestLoadKeyFileRefusesAFileOthersMayRead(t *testing.T) {
	p := filepath.Join(t.TempDir(), "xfr.key")
	require.NoError(t, os.WriteFile(p, []byte("hmac-sha256:xfr-key:"+keySecret+"\n"), 0o600))
	k, err := xfr.LoadKeyFile(p)
	require.NoError(t, err)
	assert.Equal(t, "xfr-key.", k.Name)
	require.NoError(t, os.Chmod(p, 0o644))
	_, err = xfr.LoadKeyFile(p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mode 0644")
	assert.Contains(t, err.Error(), "chmod 600 "+p)
}

func TestSerials(t *testing.T) {
	assert.True(t, xfr.SerialLess(1, 2))
	assert.True(t, xfr.SerialLess(0xFFFFFFFF, 1))
	assert.False(t, xfr.SerialLess(1, 0xFFFFFFFF))
	assert.False(t, xfr.SerialLess(5, 5))
	assert.Equal(t, uint32(1), xfr.NextSerial(0xFFFFFFFF))

	path := filepath.Join(t.TempDir(), "serials.json")
	s, err := xfr.OpenSerials(path)
	require.NoError(t, err)
	now := time.Unix(1_700_000_000, 0)
	serial, ch := s.Next("a.test.", "h1", 0, now)
	assert.True(t, ch)
	assert.Equal(t, uint32(1_700_000_000), serial)
	serial, ch = s.Next("a.test.", "h1", 0, now)
	assert.False(t, ch)
	assert.Equal(t, uint32(1_700_000_000), serial)
	serial, ch = s.Next("a.test.", "h2", 0, now)
	assert.True(t, ch)
	assert.Equal(t, uint32(1_700_000_001), serial)
	require.NoError(t, s.Save())

	// A restart: unchanged content keeps the serial, changed content bumps it.
	s, err = xfr.OpenSerials(path)
	require.NoError(t, err)
	serial, ch = s.Next("a.test.", "h2", 0, now.Add(time.Hour))
	assert.False(t, ch)
	assert.Equal(t, uint32(1_700_000_001), serial)
	serial, ch = s.Next("a.test.", "h3", 0, now.Add(time.Hour))
	assert.True(t, ch)
	assert.Equal(t, uint32(1_700_000_002), serial)
	// A configured serial above the remembered one wins; below it is ignored.
	serial, _ = s.Next("a.test.", "h3", 1_800_000_000, now)
	assert.Equal(t, uint32(1_800_000_000), serial)
	serial, _ = s.Next("a.test.", "h4", 5, now)
	assert.Equal(t, uint32(1_800_000_001), serial)
	// Wrap-around skips 0.
	serial, _ = s.Next("b.test.", "x", 0xFFFFFFFF, now)
	assert.Equal(t, uint32(0xFFFFFFFF), serial)
	serial, _ = s.Next("b.test.", "y", 0, now)
	assert.Equal(t, uint32(1), serial)

	// A corrupt file: an error and a usable empty state.
	require.NoError(t, os.WriteFile(path, []byte("{"), 0o644))
	s, err = xfr.OpenSerials(path)
	assert.Error(t, err)
	_, ch = s.Next("a.test.", "h", 0, now)
	assert.True(t, ch)
}

const zoneConfig = `
zones:
  - apex: xfr.test
    nameservers: [{name: ns1.xfr.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
services:
  - name: app.xfr.test
    endpoints:
      - {address: 192.0.2.1, cluster: east}
      - {address: 192.0.2.2, cluster: west}
  - name: web.xfr.test
    strategy: failover
    failover: {order: [east, west]}
    endpoints:
      - {address: 192.0.2.11, cluster: east}
      - {address: 192.0.2.12, cluster: west}
  - name: alias.xfr.test
    endpoints:
      - {cname: a.example.net, cluster: east, weight: 10}
      - {cname: b.example.net, cluster: west, weight: 90}
`

type downHealth map[string]bool

func (h downHealth) Endpoint(_, target string) engine.State {
	if h[target] {
		return engine.Down
	}
	return engine.Up
}
func (h downHealth) Cluster(string) engine.State { return engine.Unknown }

type fixture struct {
	st   *engine.Store
	f    *config.File
	srv  *xfr.Server
	dns  *dnsserver.Server
	addr string
	reg  *prometheus.Registry
	zone xfr.Zone
}

func newFixture(t *testing.T, allow string, notify []netip.AddrPort) *fixture {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
	f, err := config.Parse("test.yaml", []byte(zoneConfig))
	require.NoError(t, err)
	fx := &fixture{st: &engine.Store{}, f: f, reg: prometheus.NewRegistry()}
	fx.srv = xfr.New(fx.st, xfr.Options{Registerer: fx.reg, NotifyBackoff: []time.Duration{0, 50 * time.Millisecond, 100 * time.Millisecond}, NotifyTimeout: 300 * time.Millisecond})
	fx.zone = xfr.Zone{Apex: "xfr.test.", Allow: []netip.Prefix{netip.MustParsePrefix(allow)}, Key: xfr.Key{Name: keyName, Secret: keySecret}, Notify: notify}
	fx.srv.Configure([]xfr.Zone{fx.zone})
	fx.publish(t, 100, nil)
	fx.dns = dnsserver.New(dnsserver.Config{Listen: []string{"127.0.0.1:0"}, UDPSockets: 1, Transfers: fx.srv}, fx.st)
	require.NoError(t, fx.dns.Start())
	fx.addr = fx.dns.Addrs()[0].String()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		fx.dns.Shutdown(ctx)
		fx.srv.Close()
	})
	return fx
}

func (fx *fixture) publish(t *testing.T, serial uint32, down downHealth) engine.ZoneData {
	t.Helper()
	d := fx.f.Desired
	d.Zones = slices.Clone(d.Zones)
	d.Zones[0].SOA.Serial = serial
	snap, err := fx.st.Publish(&d, engine.Options{Health: down})
	require.NoError(t, err)
	zd, ok := snap.ZoneData("xfr.test.")
	require.True(t, ok)
	fx.srv.Record(zd)
	return zd
}

func xfrQuery(qtype uint16, serial uint32, key string) *dns.Msg {
	m := new(dns.Msg)
	if qtype == dns.TypeIXFR {
		m.SetIxfr("xfr.test.", serial, "ns1.xfr.test.", "hostmaster.xfr.test.")
	} else {
		m.SetAxfr("xfr.test.")
	}
	if key != "" {
		m.SetTsig(key, dns.HmacSHA256, 300, time.Now().Unix())
	}
	return m
}

// transfer runs a transfer and returns its records, or the error.
func (fx *fixture) transfer(q *dns.Msg, secret string) ([]dns.RR, error) {
	tr := &dns.Transfer{}
	if q.IsTsig() != nil {
		tr.TsigSecret = map[string]string{q.IsTsig().Hdr.Name: secret}
	}
	ch, err := tr.In(q, fx.addr)
	if err != nil {
		return nil, err
	}
	var out []dns.RR
	for env := range ch {
		if env.Error != nil {
			return out, env.Error
		}
		out = append(out, env.RR...)
	}
	return out, nil
}

func names(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		s := rr.String()
		s = strings.Join(strings.Fields(s), " ")
		out = append(out, s)
	}
	return out
}

func TestAXFRAndIXFR(t *testing.T) {
	fx := newFixture(t, "127.0.0.0/8", nil)

	rrs, err := fx.transfer(xfrQuery(dns.TypeAXFR, 0, keyName), keySecret)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(rrs), 2)
	assert.Equal(t, uint32(100), rrs[0].(*dns.SOA).Serial)
	assert.Equal(t, uint32(100), rrs[len(rrs)-1].(*dns.SOA).Serial)
	got := strings.Join(names(rrs), "\n")
	for _, want := range []string{
		"app.xfr.test. 30 IN A 192.0.2.1", "app.xfr.test. 30 IN A 192.0.2.2",
		"web.xfr.test. 30 IN A 192.0.2.11", // failover: the active group only
		"alias.xfr.test. 30 IN CNAME b.example.net.",
		"xfr.test. 3600 IN NS ns1.xfr.test.", "ns1.xfr.test. 3600 IN A 192.0.2.53",
	} {
		assert.Contains(t, got, want)
	}
	assert.NotContains(t, got, "192.0.2.12")
	assert.NotContains(t, got, "a.example.net")
	assert.Len(t, rrs, 8) // SOA, NS, glue, 2 + 1 + 1 services, SOA

	// A failover: the east endpoints go down.
	fx.publish(t, 101, downHealth{"192.0.2.1": true, "192.0.2.11": true})
	rrs, err = fx.transfer(xfrQuery(dns.TypeIXFR, 100, keyName), keySecret)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"xfr.test. 3600 IN SOA ns1.xfr.test. hostmaster.xfr.test. 101 3600 600 1209600 30",
		"xfr.test. 3600 IN SOA ns1.xfr.test. hostmaster.xfr.test. 100 3600 600 1209600 30",
		"app.xfr.test. 30 IN A 192.0.2.1",
		"web.xfr.test. 30 IN A 192.0.2.11",
		"xfr.test. 3600 IN SOA ns1.xfr.test. hostmaster.xfr.test. 101 3600 600 1209600 30",
		"web.xfr.test. 30 IN A 192.0.2.12",
		"xfr.test. 3600 IN SOA ns1.xfr.test. hostmaster.xfr.test. 101 3600 600 1209600 30",
	}, names(rrs))

	// Up to date: the SOA alone.
	rrs, err = fx.transfer(xfrQuery(dns.TypeIXFR, 101, keyName), keySecret)
	require.NoError(t, err)
	require.Len(t, rrs, 1)
	assert.Equal(t, uint32(101), rrs[0].(*dns.SOA).Serial)

	// An unknown serial: the whole zone in AXFR form.
	rrs, err = fx.transfer(xfrQuery(dns.TypeIXFR, 7, keyName), keySecret)
	require.NoError(t, err)
	assert.Len(t, rrs, 7)
	assert.Equal(t, uint32(101), rrs[0].(*dns.SOA).Serial)

	// IXFR over UDP when behind: the current SOA alone, signed.
	c := &dns.Client{Net: "udp", TsigSecret: map[string]string{keyName: keySecret}}
	r, _, err := c.Exchange(xfrQuery(dns.TypeIXFR, 100, keyName), fx.addr)
	require.NoError(t, err)
	require.Len(t, r.Answer, 1)
	assert.NotNil(t, r.IsTsig())

	// A signed SOA query (a secondary's refresh) gets a signed answer with
	// the serial the transfer carries.
	for _, net := range []string{"udp", "tcp"} {
		q := new(dns.Msg)
		q.SetQuestion("xfr.test.", dns.TypeSOA)
		q.SetTsig(keyName, dns.HmacSHA256, 300, time.Now().Unix())
		c := &dns.Client{Net: net, TsigSecret: map[string]string{keyName: keySecret}}
		r, _, err := c.Exchange(q, fx.addr)
		require.NoError(t, err, net)
		require.Len(t, r.Answer, 1)
		assert.Equal(t, uint32(101), r.Answer[0].(*dns.SOA).Serial)
		assert.True(t, r.Authoritative)
		require.NotNil(t, r.IsTsig())
	}
	// An unsigned SOA query is answered as before.
	q := new(dns.Msg)
	q.SetQuestion("xfr.test.", dns.TypeSOA)
	r, _, err = (&dns.Client{}).Exchange(q, fx.addr)
	require.NoError(t, err)
	assert.Equal(t, uint32(101), r.Answer[0].(*dns.SOA).Serial)

	assert.Equal(t, 1.0, fx.requests("axfr", "full"))
	assert.Equal(t, 1.0, fx.requests("ixfr", "incremental"))
}

// value returns the counter of name whose labels include want (0 if none).
func value(reg *prometheus.Registry, name string, want map[string]string) float64 {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.Metric {
			l := map[string]string{}
			for _, lp := range m.Label {
				l[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if l[k] != v {
					continue next
				}
			}
			return m.Counter.GetValue()
		}
	}
	return 0
}

func (fx *fixture) requests(kind, result string) float64 {
	return value(fx.reg, "meridian_xfr_requests_total", map[string]string{"zone": "xfr.test", "type": kind, "result": result})
}

func rcodeOf(t *testing.T, addr string, q *dns.Msg, secret string) (int, uint16) {
	t.Helper()
	c := &dns.Client{Net: "tcp"}
	if q.IsTsig() != nil {
		c.TsigSecret = map[string]string{q.IsTsig().Hdr.Name: secret}
	}
	r, _, err := c.Exchange(q, addr)
	if r == nil {
		require.NoError(t, err)
	}
	var tsigErr uint16
	if tr := r.IsTsig(); tr != nil {
		tsigErr = tr.Error
	}
	return r.Rcode, tsigErr
}

func TestRefusals(t *testing.T) {
	fx := newFixture(t, "127.0.0.1/32", nil)
	// No TSIG.
	rc, _ := rcodeOf(t, fx.addr, xfrQuery(dns.TypeAXFR, 0, ""), "")
	assert.Equal(t, dns.RcodeRefused, rc)
	// Wrong secret: NOTAUTH, BADSIG.
	rc, te := rcodeOf(t, fx.addr, xfrQuery(dns.TypeAXFR, 0, keyName), "d3Jvbmctd3Jvbmctd3Jvbmctd3Jvbmctd3Jvbmc=")
	assert.Equal(t, dns.RcodeNotAuth, rc)
	assert.Equal(t, uint16(dns.RcodeBadSig), te)
	// Unknown key: NOTAUTH, BADKEY.
	rc, te = rcodeOf(t, fx.addr, xfrQuery(dns.TypeIXFR, 1, "other-key."), keySecret)
	assert.Equal(t, dns.RcodeNotAuth, rc)
	assert.Equal(t, uint16(dns.RcodeBadKey), te)
	// AXFR over UDP: refused.
	r, _, err := (&dns.Client{Net: "udp", TsigSecret: map[string]string{keyName: keySecret}}).Exchange(xfrQuery(dns.TypeAXFR, 0, keyName), fx.addr)
	require.NoError(t, err)
	assert.Equal(t, dns.RcodeRefused, r.Rcode)
	// A zone without transfers.
	q := new(dns.Msg)
	q.SetAxfr("other.test.")
	q.SetTsig(keyName, dns.HmacSHA256, 300, time.Now().Unix())
	rc, _ = rcodeOf(t, fx.addr, q, keySecret)
	assert.Equal(t, dns.RcodeRefused, rc)

	// An address not allowed, with the right key.
	fx.zone.Allow = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
	fx.srv.Configure([]xfr.Zone{fx.zone})
	rc, _ = rcodeOf(t, fx.addr, xfrQuery(dns.TypeAXFR, 0, keyName), keySecret)
	assert.Equal(t, dns.RcodeRefused, rc)

	for result, want := range map[string]float64{"refused_no_tsig": 1, "badsig": 1, "refused_acl": 1, "refused_udp": 1} {
		assert.Equal(t, want, fx.requests("axfr", result), result)
	}
}

func TestNotify(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var got []uint32
	var seen int
	sec := &dns.Server{PacketConn: pc, TsigSecret: map[string]string{keyName: keySecret},
		Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
			mu.Lock()
			defer mu.Unlock()
			seen++
			if seen == 1 {
				return // lose the first one: it must be retried
			}
			m := new(dns.Msg)
			m.SetReply(r)
			if r.Opcode != dns.OpcodeNotify || r.IsTsig() == nil || w.TsigStatus() != nil {
				m.Rcode = dns.RcodeRefused
			} else if len(r.Answer) == 1 {
				got = append(got, r.Answer[0].(*dns.SOA).Serial)
				m.SetTsig(keyName, dns.HmacSHA256, 300, time.Now().Unix())
			}
			w.WriteMsg(m)
		})}
	started := make(chan struct{})
	sec.NotifyStartedFunc = func() { close(started) }
	go sec.ActivateAndServe()
	<-started
	defer sec.Shutdown()

	fx := newFixture(t, "127.0.0.0/8", []netip.AddrPort{pc.LocalAddr().(*net.UDPAddr).AddrPort()})
	fx.srv.Notify("xfr.test.", 100)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Equal(got, []uint32{100})
	}, 5*time.Second, 10*time.Millisecond)
	// The secondary has the NOTIFY before the sender counts its answer:
	// wait for the count rather than read it at once.
	require.Eventually(t, func() bool {
		return value(fx.reg, "meridian_xfr_notify_total", map[string]string{"result": "ok"}) == 1
	}, 5*time.Second, 10*time.Millisecond, "the answered NOTIFY is counted ok")
	retry := value(fx.reg, "meridian_xfr_notify_total", map[string]string{"result": "retry"})
	assert.Equal(t, 1.0, retry)
}

// TestRefusalAndTSIGLogsAreThrottled sends 1 000 spoofed AXFR queries
// without TSIG and 1 000 signed with an unknown key (issue 31: 1 000
// spoofed packets wrote 513 WARN lines): each kind writes its burst of
// lines, and every query is still counted.
func TestRefusalAndTSIGLogsAreThrottled(t *testing.T) {
	f, err := config.Parse("test.yaml", []byte(zoneConfig))
	require.NoError(t, err)
	st := &engine.Store{}
	_, err = st.Publish(&f.Desired, engine.Options{})
	require.NoError(t, err)
	var logs strings.Builder
	reg := prometheus.NewRegistry()
	srv := xfr.New(st, xfr.Options{Registerer: reg, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	defer srv.Close()
	srv.Configure([]xfr.Zone{{Apex: "xfr.test.", Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, Key: xfr.Key{Name: keyName, Secret: keySecret}}})

	const n = 1000
	for i := range n {
		src := netip.AddrFrom4([4]byte{192, 0, 2, byte(i)})
		signed := new(dns.Msg) // a refresh query signed with a key nobody configured
		signed.SetQuestion("xfr.test.", dns.TypeSOA)
		signed.SetTsig("other-key.", dns.HmacSHA256, 300, time.Now().Unix())
		for _, q := range []*dns.Msg{xfrQuery(dns.TypeAXFR, 0, ""), signed} {
			in, err := q.Pack()
			require.NoError(t, err)
			require.NoError(t, q.Unpack(in))
			require.NotNil(t, srv.Answer(q, in, src, true))
		}
	}
	refused := strings.Count(logs.String(), `msg="zone transfer refused"`)
	tsig := strings.Count(logs.String(), `msg="TSIG check failed`)
	t.Logf("%d refused AXFR and %d bad-TSIG queries: %d and %d WARN lines", n, n, refused, tsig)
	assert.Equal(t, logthrottle.DefaultBurst, refused, "refusals: the burst of lines, no more")
	assert.Equal(t, logthrottle.DefaultBurst, tsig, "failed TSIG checks: the burst of lines, no more")
	assert.Equal(t, float64(n), value(reg, "meridian_xfr_requests_total", map[string]string{"zone": "xfr.test", "type": "axfr", "result": "refused_acl"}), "every refusal is counted")
	assert.Equal(t, float64(n), value(reg, "meridian_xfr_requests_total", map[string]string{"zone": "xfr.test", "type": "query", "result": "badkey"}), "every failed TSIG check is counted")
}
