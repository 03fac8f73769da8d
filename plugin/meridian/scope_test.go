package meridian

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meridian-gslb/meridian/internal/dnssec"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestThePluginRefusesWhatItDoesNotServe(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "xfr.key")
	require.NoError(t, os.WriteFile(keyFile, []byte("hmac-sha256:xfr-key:"+strings.Repeat("QUJD", 11)+"\n"), 0o600))
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600))
	cases := []struct {
		name    string
		from    string // replaced in testConfig
		to      string
		message []string
	}{
		{"a zone with a transfer section is refused naming the zone and CoreDNS's transfer plugin instead", "    soa: {serial: 2026112901, minimum: 20}",
			"    soa: {serial: 2026112901, minimum: 20}\n    transfer: {allow: [127.0.0.1], tsig_key_file: " + keyFile + "}",
			[]string{"zones[0].transfer (zone gslb.test.)", "CoreDNS's transfer plugin (`transfer { to ADDRESS... }`", "tsig plugin", "meridian serve"}},
		{"a Kubernetes member is refused naming the cluster", "  - {name: east, region: us-east}",
			"  - {name: east, region: us-east, kubernetes: {kubeconfig: " + kubeconfig + "}}",
			[]string{"clusters[0].kubernetes (cluster east)", "does not watch member clusters"}},
		{"a capacity-aware service is refused naming the service", "    endpoints:",
			"    capacity: {source: prometheus, prometheus: {url: \"http://prometheus.test:9090\", query: ready}}\n    endpoints:",
			[]string{"services[0].capacity (service one.gslb.test.)", "does not read ready fractions"}},
		{"a catalog zone is refused naming the section", "clusters:\n",
			"catalog: {zone: catalog.invalid, transfer: {allow: [127.0.0.1], tsig_key_file: " + keyFile + "}}\nclusters:\n",
			[]string{"catalog: the CoreDNS plugin does not serve a catalog zone", "meridian serve"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "m.yaml")
			text := strings.Replace(testConfig, tc.from, tc.to, 1)
			require.NotEqual(t, testConfig, text)
			require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
			m := &Meridian{Zones: []string{"."}, ConfigPath: p}
			err := m.Start()
			require.Error(t, err)
			for _, s := range tc.message {
				assert.Contains(t, err.Error(), s)
			}
			assert.Contains(t, err.Error(), "not served by the CoreDNS plugin")
		})
		t.Run(tc.name+", also at a reload, and the previous config keeps serving", func(t *testing.T) {
			m := newPlugin(t)
			require.NoError(t, os.WriteFile(m.ConfigPath, []byte(strings.Replace(testConfig, tc.from, tc.to, 1)), 0o644))
			m.reload()
			assert.Contains(t, m.pipe.State().ReloadErr, tc.message[0])
			assertAnswersOne(t, m)
		})
	}
}

func TestASignedZoneIsSignedByThePlugin(t *testing.T) {
	dir := t.TempDir()
	k, err := dnssec.Generate("gslb.test.", dns.ED25519, 3600)
	require.NoError(t, err)
	_, priv, err := k.Write(dir)
	require.NoError(t, err)
	m := newPlugin(t, func(m *Meridian) {
		text := strings.Replace(testConfig, "    soa: {serial: 2026112901, minimum: 20}", "    soa: {serial: 2026112901, minimum: 20}\n    dnssec: {key_files: ["+priv+"]}", 1)
		require.NoError(t, os.WriteFile(m.ConfigPath, []byte(text), 0o644))
	})
	for _, q := range []struct {
		name  string
		qtype uint16
	}{{"one.gslb.test.", dns.TypeA}, {"gslb.test.", dns.TypeDNSKEY}, {"nothere.gslb.test.", dns.TypeA}} {
		rec := dnstest.NewRecorder(&test.ResponseWriter{})
		req := new(dns.Msg)
		req.SetQuestion(q.name, q.qtype)
		req.SetEdns0(1232, true)
		_, err := m.ServeDNS(context.Background(), rec, req)
		require.NoError(t, err)
		sigs := 0
		for _, rr := range append(rec.Msg.Answer, rec.Msg.Ns...) {
			if _, ok := rr.(*dns.RRSIG); ok {
				sigs++
			}
		}
		assert.Positive(t, sigs, "%s %s carries RRSIGs", q.name, dns.TypeToString[q.qtype])
	}
}
