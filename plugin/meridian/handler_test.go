package meridian

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/pkg/fall"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testConfig = `
zones:
  - apex: gslb.test
    soa: {serial: 2026112901, minimum: 20}
    nameservers: [{name: ns1.gslb.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
  - {name: eu, region: eu-west}
geo:
  networks:
    - {cidr: 10.3.0.0/16, region: eu-west}
services:
  - name: one.gslb.test
    endpoints: [{address: 192.0.2.1, cluster: east}]
  - name: www.gslb.test
    strategy: geo
    geo: {default: [east]}
    endpoints:
      - {address: 203.0.113.1, cluster: east}
      - {address: 203.0.113.3, cluster: eu}
  - name: docs.gslb.test
    endpoints: [{cname: one.gslb.test, cluster: east}]
`

func newPlugin(t *testing.T, next ...func(*Meridian)) *Meridian {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.yaml")
	require.NoError(t, os.WriteFile(p, []byte(testConfig), 0o644))
	m := &Meridian{Zones: []string{"gslb.test.", "example.org."}, ConfigPath: p, Next: test.NextHandler(dns.RcodeNameError, nil)}
	for _, f := range next {
		f(m)
	}
	require.NoError(t, m.Start())
	t.Cleanup(func() { m.Stop() })
	return m
}

var soa = test.SOA("gslb.test. 20 IN SOA ns1.gslb.test. hostmaster.gslb.test. 2026112901 3600 600 1209600 20")

func TestServeDNS(t *testing.T) {
	m := newPlugin(t)
	cases := []test.Case{
		{Qname: "one.gslb.test.", Qtype: dns.TypeA, Answer: []dns.RR{test.A("one.gslb.test. 30 IN A 192.0.2.1")}},
		{Qname: "docs.gslb.test.", Qtype: dns.TypeA, Answer: []dns.RR{
			test.CNAME("docs.gslb.test. 30 IN CNAME one.gslb.test."), test.A("one.gslb.test. 30 IN A 192.0.2.1")}},
		{Qname: "nope.gslb.test.", Qtype: dns.TypeA, Rcode: dns.RcodeNameError, Ns: []dns.RR{soa}},
		{Qname: "one.gslb.test.", Qtype: dns.TypeMX, Ns: []dns.RR{soa}},
		{Qname: "gslb.test.", Qtype: dns.TypeNS, Answer: []dns.RR{test.NS("gslb.test. 3600 IN NS ns1.gslb.test.")},
			Extra: []dns.RR{test.A("ns1.gslb.test. 3600 IN A 192.0.2.53")}},
		{Qname: "www.example.org.", Qtype: dns.TypeA, Rcode: dns.RcodeRefused},
	}
	for _, tc := range cases {
		t.Run(tc.Qname+" "+dns.TypeToString[tc.Qtype], func(t *testing.T) {
			rec := dnstest.NewRecorder(&test.ResponseWriter{})
			_, err := m.ServeDNS(context.Background(), rec, tc.Msg())
			require.NoError(t, err)
			require.NoError(t, test.SortAndCheck(rec.Msg, tc))
			if tc.Rcode != dns.RcodeRefused {
				assert.True(t, rec.Msg.Authoritative)
			}
		})
	}
}

func TestServeDNSGeoWithECS(t *testing.T) {
	m := newPlugin(t)
	req := new(dns.Msg)
	req.SetQuestion("www.gslb.test.", dns.TypeA)
	req.SetEdns0(1232, false)
	req.IsEdns0().Option = append(req.IsEdns0().Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: net.ParseIP("10.3.1.0").To4()})
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	_, err := m.ServeDNS(context.Background(), rec, req)
	require.NoError(t, err)
	require.Len(t, rec.Msg.Answer, 1)
	assert.Equal(t, "203.0.113.3", rec.Msg.Answer[0].(*dns.A).A.String())
	var ecs *dns.EDNS0_SUBNET
	for _, o := range rec.Msg.IsEdns0().Option {
		ecs, _ = o.(*dns.EDNS0_SUBNET)
	}
	require.NotNil(t, ecs)
	assert.Equal(t, uint8(16), ecs.SourceScope)
}

func TestServeDNSEchoesTheQuestionCase(t *testing.T) {
	m := newPlugin(t)
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	req := new(dns.Msg)
	req.SetQuestion("OnE.GsLb.TeSt.", dns.TypeA)
	_, err := m.ServeDNS(context.Background(), rec, req)
	require.NoError(t, err)
	assert.Equal(t, "OnE.GsLb.TeSt.", rec.Msg.Question[0].Name)
	require.Len(t, rec.Msg.Answer, 1)
}

func TestFallthroughHandsMissesToTheNextPlugin(t *testing.T) {
	m := newPlugin(t, func(m *Meridian) { m.Fall = fall.Root })
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	req := new(dns.Msg)
	req.SetQuestion("nope.gslb.test.", dns.TypeA)
	code, err := m.ServeDNS(context.Background(), rec, req)
	require.NoError(t, err)
	assert.Equal(t, dns.RcodeNameError, code, "the next plugin (test.NextHandler) answered")
	assert.Nil(t, rec.Msg, "meridian wrote nothing")
	// Existing names are still answered.
	rec = dnstest.NewRecorder(&test.ResponseWriter{})
	req.SetQuestion("one.gslb.test.", dns.TypeA)
	_, err = m.ServeDNS(context.Background(), rec, req)
	require.NoError(t, err)
	require.Len(t, rec.Msg.Answer, 1)
}

func TestABadConfigStopsStartupWithItsLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(p, []byte("zones: []\nbogus: 1\n"), 0o644))
	m := &Meridian{Zones: []string{"."}, ConfigPath: p}
	err := m.Start()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad.yaml:2:1")
	assert.Contains(t, err.Error(), `unknown field "bogus"`)
}

func TestThePluginIsReadyWhileItServesItsConfig(t *testing.T) {
	assert.False(t, (&Meridian{}).Ready(), "not ready before Start")
	p := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(p, []byte("zones: []\nbogus: 1\n"), 0o644))
	bad := &Meridian{Zones: []string{"."}, ConfigPath: p}
	require.Error(t, bad.Start())
	assert.False(t, bad.Ready(), "not ready after a failed Start")
	m := newPlugin(t)
	assert.True(t, m.Ready(), "ready once the config serves (without ring)")
	require.NoError(t, m.Stop())
	assert.False(t, m.Ready(), "not ready after Stop")
}

func TestAnInvalidReloadKeepsServing(t *testing.T) {
	m := newPlugin(t)
	require.NoError(t, os.WriteFile(m.ConfigPath, []byte("zones: [ broken"), 0o644))
	m.reload()
	assertAnswersOne(t, m)
}

// assertAnswersOne checks that m answers one.gslb.test of testConfig.
func assertAnswersOne(t *testing.T, m *Meridian) {
	t.Helper()
	rec := dnstest.NewRecorder(&test.ResponseWriter{})
	req := new(dns.Msg)
	req.SetQuestion("one.gslb.test.", dns.TypeA)
	_, err := m.ServeDNS(context.Background(), rec, req)
	require.NoError(t, err)
	require.Len(t, rec.Msg.Answer, 1)
}

func TestInZones(t *testing.T) {
	m := &Meridian{Zones: []string{"gslb.test.", "example.org."}}
	for name, want := range map[string]bool{
		"gslb.test.":         true,
		"APP.GSLB.Test.":     true,
		"a.b.example.org.":   true,
		"xgslb.test.":        false,
		"gslb.test.example.": false,
		"test.":              false,
	} {
		assert.Equal(t, want, m.inZones(name), name)
	}
	assert.True(t, (&Meridian{Zones: []string{"."}}).inZones("anything.at.all."), "the root zone covers every name")
}

func TestALargeUDPAnswerIsMeasuredExactly(t *testing.T) {
	msg := new(dns.Msg)
	msg.SetQuestion("many.gslb.test.", dns.TypeA)
	msg.Compress = true
	for i := range 40 {
		msg.Answer = append(msg.Answer, test.A(fmt.Sprintf("many.gslb.test. 30 IN A 192.0.2.%d", i)))
	}
	assert.False(t, mayExceed(msg, 1232), "compressed it fits in 1232 bytes")
	assert.True(t, mayExceed(msg, 512))
	assert.True(t, msg.Compress, "compression is left as it was")
}
