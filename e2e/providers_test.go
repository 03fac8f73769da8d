//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/providers/cloudflare/cffake"
	"github.com/meridian-gslb/meridian/providers/route53/route53fake"
)

const providersConfig = `
zones:
  - apex: gslb.example.com
    nameservers: [{name: ns1.gslb.example.com, ipv4: [127.0.0.1]}]
  - apex: gslb.example.net
    nameservers: [{name: ns1.gslb.example.net, ipv4: [127.0.0.1]}]
health: {interval: 1s, timeout: 500ms, fall: 3, rise: 2}
ring: {enabled: true, node_name: solo, region: r1, bind: "127.0.0.1:%[1]d"}
decision: {hold_down: 2s}
clusters:
  - {name: east, region: r1}
  - {name: west, region: r1}
services:
  - name: app.gslb.example.com
    health_check: {kind: http, port: %[2]d, path: /healthz}
    endpoints:
      - {address: 127.0.0.71, cluster: east, weight: 600}
      - {address: 127.0.0.72, cluster: west, weight: 400}
  - name: app.gslb.example.net
    health_check: {kind: http, port: %[2]d, path: /healthz}
    endpoints:
      - {address: 127.0.0.71, cluster: east}
      - {address: 127.0.0.72, cluster: west}
providers:
  owner_id: e2e
  debounce: 200ms
  resync_interval: 1m
  route53:
    - {zone: example.com, endpoint: "%[3]s", requests_per_second: 20, sync_timeout: 5s}
  cloudflare:
    - {zone: example.net, endpoint: "%[4]s", ttl: 60}
`

// backend is an HTTP health endpoint on a loopback address that can be stopped.
type backend struct {
	srv *http.Server
}

func startBackend(t *testing.T, addr string) *backend {
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	b := &backend{srv: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })}}
	go b.srv.Serve(ln)
	t.Cleanup(func() { b.srv.Close() })
	return b
}

func r53Member(recs []route53fake.RecordSet, name, target string) (route53fake.RecordSet, bool) {
	for _, r := range recs {
		if r.Name == name && r.Type == "A" && slices.Contains(r.Values, target) {
			return r, true
		}
	}
	return route53fake.RecordSet{}, false
}

func cfValues(recs []cffake.Record, name string) []string {
	var out []string
	for _, r := range recs {
		if strings.TrimSuffix(r.Name, ".") == strings.TrimSuffix(name, ".") && r.Type == "A" {
			out = append(out, r.Content)
		}
	}
	slices.Sort(out)
	return out
}

// TestProvidersFollowAFailover runs `meridian serve` with a Route53 and a
// Cloudflare zone pointed at the stateful fakes, kills an endpoint and
// measures the time from the decision to the provider's write.
func TestProvidersFollowAFailover(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDE2E")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "e2e-secret-not-logged")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	const token = "e2e-cloudflare-token"
	t.Setenv("CLOUDFLARE_API_TOKEN", token)
	r53 := route53fake.New(route53fake.Options{})
	defer r53.Close()
	zid := r53.AddZone("example.com")
	cf := cffake.New(token)
	defer cf.Close()
	cfz := cf.AddZone("example.net")
	port := freePort(t)
	backends := map[string]*backend{}
	for _, a := range []string{"127.0.0.71", "127.0.0.72"} {
		backends[a] = startBackend(t, fmt.Sprintf("%s:%d", a, port))
	}
	m := startMeridian(t, fmt.Sprintf(providersConfig, freePort(t), port, r53.URL(), cf.URL))

	require.Eventually(t, func() bool {
		east, ok1 := r53Member(r53.Records(zid), "app.gslb.example.com.", "127.0.0.71")
		_, ok2 := r53Member(r53.Records(zid), "app.gslb.example.com.", "127.0.0.72")
		return ok1 && ok2 && east.Weight != nil && *east.Weight > 0 &&
			slices.Equal(cfValues(cf.Records(cfz), "app.gslb.example.net"), []string{"127.0.0.71", "127.0.0.72"})
	}, 30*time.Second, 100*time.Millisecond, "both providers publish both endpoints:\n%s", m.log())
	east, _ := r53Member(r53.Records(zid), "app.gslb.example.com.", "127.0.0.71")
	west, _ := r53Member(r53.Records(zid), "app.gslb.example.com.", "127.0.0.72")
	t.Logf("route53 weighted members: east weight %d, west weight %d (600:400 scaled to 0..255)", *east.Weight, *west.Weight)
	assert.InDelta(t, 1.5, float64(*east.Weight)/float64(*west.Weight), 0.02)

	// A dry run shows an empty plan and writes nothing.
	writesBefore := len(r53.Batches()) + cf.WriteCalls()
	out, err := exec.Command(meridianBin, "push", "--config", m.config, "--dry-run").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "route53 example.com.: 0 create, 0 update, 0 delete, 0 conflict (dry run: nothing written)")
	assert.Contains(t, string(out), "cloudflare example.net.: 0 create, 0 update, 0 delete, 0 conflict (dry run: nothing written)")

	require.NoError(t, backends["127.0.0.71"].srv.Close())
	killed := time.Now()
	decided := waitDecidedDown(t, m, "app.gslb.example.com. 127.0.0.71")
	var r53Applied, cfApplied time.Time
	require.Eventually(t, func() bool {
		e, _ := r53Member(r53.Records(zid), "app.gslb.example.com.", "127.0.0.71")
		return e.Weight != nil && *e.Weight == 0 && slices.Equal(cfValues(cf.Records(cfz), "app.gslb.example.net"), []string{"127.0.0.72"})
	}, 20*time.Second, 50*time.Millisecond, "providers follow the decision:\n%s", m.log())
	for _, b := range r53.Batches() {
		if b.ChangeID != "" && b.End.After(r53Applied) {
			r53Applied = b.End
		}
	}
	for _, ct := range cf.CallTimes() {
		if ct.After(cfApplied) {
			cfApplied = ct
		}
	}
	t.Logf("FIGURE providers e2e: endpoint killed → decided down %s; decision → Route53 applied %s; decision → Cloudflare applied %s (debounce 200ms)",
		decided.Sub(killed).Round(10*time.Millisecond), r53Applied.Sub(decided).Round(10*time.Millisecond), cfApplied.Sub(decided).Round(10*time.Millisecond))
	assert.Less(t, r53Applied.Sub(decided), 5*time.Second)
	assert.Equal(t, 1, r53.MaxConcurrentWrites())
	writesAfterDryRun := len(r53.Batches()) + cf.WriteCalls()
	assert.Greater(t, writesAfterDryRun, writesBefore, "the failover was written")

	// The process never logs the credentials.
	assert.NotContains(t, m.log(), "e2e-secret-not-logged")
	assert.NotContains(t, m.log(), token)
	metrics := m.metrics(t)
	assert.Contains(t, metrics, `meridian_provider_writer 1`)
	assert.Contains(t, metrics, `meridian_provider_syncs_total{provider="route53",result="success",zone="example.com."}`)

	// The status page lists both zones with their last sync.
	ov := providersOf(t, m)
	require.Len(t, ov.Providers, 2, "both provider zones are on the status page")
	for _, z := range ov.Providers {
		assert.NotNil(t, z.LastSync, "%s %s has synced", z.Provider, z.Zone)
		assert.Empty(t, z.Error)
	}
}

// waitDecidedDown waits until m has decided subject ("SERVICE TARGET") down
// and returns when the decision was made.
func waitDecidedDown(t *testing.T, m *instance, subject string) time.Time {
	t.Helper()
	var decided time.Time
	require.Eventually(t, func() bool {
		rep, err := healthOf(m)
		if err != nil {
			return false
		}
		for _, c := range rep.Changes {
			if c.Subject == subject && c.To == "down" && c.From != c.To {
				decided = c.At
				return true
			}
		}
		return false
	}, 20*time.Second, 50*time.Millisecond)
	return decided
}

func healthOf(m *instance) (rep apiHealth, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", m.http+"/v1/health", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return rep, err
	}
	defer resp.Body.Close()
	return rep, decodeJSON(resp, &rep)
}
