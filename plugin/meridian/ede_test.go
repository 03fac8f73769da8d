package meridian

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/serving/servingtest"
)

const failOpenConfig = `
zones:
  - apex: gslb.test
    nameservers: [{name: ns1.gslb.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
services:
  - name: open.gslb.test
    endpoints: [{address: 192.0.2.1, cluster: east}]
`

// TestPluginSendsTheSharedEDE checks that the plugin's replies carry the
// Extended DNS Errors engine.Respond decides, as `meridian serve`'s do.
func TestPluginSendsTheSharedEDE(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.yaml")
	require.NoError(t, os.WriteFile(p, []byte(failOpenConfig), 0o644))
	m := &Meridian{Zones: []string{"gslb.test.", "example.org."}, ConfigPath: p, Next: test.NextHandler(dns.RcodeNameError, nil)}
	require.NoError(t, m.Start())
	t.Cleanup(func() { m.Stop() })
	// Down by its probes (a decision), not by an operator (state: down):
	// fail-open never answers the latter.
	require.NoError(t, m.pipe.SetDecision(servingtest.DecisionDown(t, m.pipe, "192.0.2.1")))
	failOpen := extendedErrors.WithLabelValues("", "0", "fail_open")
	before := testutil.ToFloat64(failOpen)
	for _, tc := range []struct {
		name  string
		qname string
		edns  bool
		rcode int
		want  engine.ExtendedError
	}{
		{"a fail-open answer carries 0 Other", "open.gslb.test.", true, dns.RcodeSuccess, engine.EDEFailOpen},
		{"a fail-open answer to a query without EDNS carries none", "open.gslb.test.", false, dns.RcodeSuccess, engine.EDENone},
		{"a name of the plugin's zones outside the configuration is REFUSED with 20", "www.example.org.", true, dns.RcodeRefused, engine.EDENotAuthoritative},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := new(dns.Msg)
			q.SetQuestion(tc.qname, dns.TypeA)
			if tc.edns {
				q.SetEdns0(1232, false)
			}
			rec := dnstest.NewRecorder(&test.ResponseWriter{})
			_, err := m.ServeDNS(context.Background(), rec, q)
			require.NoError(t, err)
			assert.Equal(t, tc.rcode, rec.Msg.Rcode)
			var edes []*dns.EDNS0_EDE
			if opt := rec.Msg.IsEdns0(); opt != nil {
				for _, o := range opt.Option {
					if e, ok := o.(*dns.EDNS0_EDE); ok {
						edes = append(edes, e)
					}
				}
			}
			if tc.want == engine.EDENone {
				assert.Empty(t, edes)
				return
			}
			require.Len(t, edes, 1)
			assert.Equal(t, tc.want.Code(), edes[0].InfoCode)
			assert.Equal(t, tc.want.Text(), edes[0].ExtraText)
		})
	}
	assert.Equal(t, before+1, testutil.ToFloat64(failOpen), "counted in coredns_meridian_extended_errors_total")
}
