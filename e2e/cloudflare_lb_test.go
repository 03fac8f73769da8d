//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/providers/cloudflare/cffake"
)

const cloudflareLBConfig = `
zones:
  - apex: gslb.example.net
    nameservers: [{name: ns1.gslb.example.net, ipv4: [127.0.0.1]}]
health: {interval: 1s, timeout: 500ms, fall: 3, rise: 2}
ring: {enabled: true, node_name: solo, region: r1, bind: "127.0.0.1:%[1]d"}
decision: {hold_down: 2s}
clusters:
  - {name: east, region: r1}
  - {name: west, region: r1}
services:
  - name: app.gslb.example.net
    health_check: {kind: http, port: %[2]d, path: /healthz}
    endpoints:
      - {address: 127.0.0.71, cluster: east, weight: 700}
      - {address: 127.0.0.72, cluster: west, weight: 300}
providers:
  owner_id: e2e
  debounce: 200ms
  resync_interval: 10s
  cloudflare:
    - {zone: example.net, endpoint: "%[3]s", load_balancing: preferred, health_checks: backstop}
`

type overviewProviders struct {
	Providers []struct {
		Provider, Zone, Error, Notice string
		LastSync                      *time.Time `json:"last_sync"`
	} `json:"providers"`
}

func providersOf(t *testing.T, m *instance) overviewProviders {
	t.Helper()
	resp, err := http.Get(m.http + "/v1/overview")
	require.NoError(t, err)
	defer resp.Body.Close()
	var ov overviewProviders
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&ov))
	return ov
}

// shares draws n answers as Cloudflare's steering would give them.
func cfShares(t *testing.T, cf *cffake.Server, name string, n int) map[string]float64 {
	t.Helper()
	rnd := rand.New(rand.NewPCG(14, 14))
	out := map[string]float64{}
	for range n {
		a, err := cf.Resolve(name, cffake.Client{Country: "DE"}, rnd)
		require.NoError(t, err)
		out[a.Address] += 100 / float64(n)
	}
	return out
}

// TestCloudflareLoadBalancingThroughServe runs meridian serve against the
// Cloudflare fake with load_balancing: preferred: without the entitlement it
// writes plain records and says so on the status page and in a metric; once
// Load Balancing is there the next sync replaces them with a load balancer
// that keeps the 70/30 split, and a failover disables the dead origin.
func TestCloudflareLoadBalancingThroughServe(t *testing.T) {
	const token = "e2e-cloudflare-token"
	t.Setenv("CLOUDFLARE_API_TOKEN", token)
	cf := cffake.New(token)
	defer cf.Close()
	cfz := cf.AddZone("example.net")
	cf.DisableLoadBalancing()
	port := freePort(t)
	backends := map[string]*backend{}
	for _, a := range []string{"127.0.0.71", "127.0.0.72"} {
		backends[a] = startBackend(t, fmt.Sprintf("%s:%d", a, port))
	}
	m := startMeridian(t, fmt.Sprintf(cloudflareLBConfig, freePort(t), port, cf.URL))
	const name = "app.gslb.example.net"

	// No Load Balancing on the account: plain records, a notice, the metric at 0.
	require.Eventually(t, func() bool {
		ov := providersOf(t, m)
		return len(ov.Providers) == 1 && strings.Contains(ov.Providers[0].Notice, "no Load Balancing") && len(cfValues(cf.Records(cfz), name)) == 2
	}, 30*time.Second, 100*time.Millisecond, "plain records and a notice:\n%s", m.log())
	assert.Contains(t, m.metrics(t), `meridian_provider_load_balancing{zone="example.net."} 0`)
	plain := cfShares(t, cf, name, 2000)
	t.Logf("FIGURE cloudflare plain records: shares %v (weights cannot be expressed)", plain)

	// Load Balancing bought: the next sync (a decision or the 10 s resync) switches to a load balancer.
	cf.EnableLoadBalancing()
	require.Eventually(t, func() bool {
		return len(cf.LoadBalancers(cfz)) == 1 && len(cfValues(cf.Records(cfz), name)) == 0
	}, 30*time.Second, 200*time.Millisecond, "the load balancer replaces the plain records:\n%s", m.log())
	require.Eventually(t, func() bool { return providersOf(t, m).Providers[0].Notice == "" }, 10*time.Second, 100*time.Millisecond)
	assert.Contains(t, m.metrics(t), `meridian_provider_load_balancing{zone="example.net."} 1`)
	assert.Len(t, cf.Monitors(), 1, "the backstop monitor")
	sh := cfShares(t, cf, name, 20000)
	t.Logf("FIGURE cloudflare load balancer through serve: 70/30 over 20000 simulated answers → %.2f / %.2f", sh["127.0.0.71"], sh["127.0.0.72"])
	assert.InDelta(t, 70, sh["127.0.0.71"], 1.5)
	assert.InDelta(t, 30, sh["127.0.0.72"], 1.5)

	// A dry run finds nothing to do, objects included.
	out, err := exec.Command(meridianBin, "push", "--config", m.config, "--dry-run").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "cloudflare example.net.: 0 create, 0 update, 0 delete, 0 conflict (dry run: nothing written)")

	// Meridian decides east down: its origin and pool are disabled.
	require.NoError(t, backends["127.0.0.71"].srv.Close())
	waitDecidedDown(t, m, name+". 127.0.0.71")
	require.Eventually(t, func() bool {
		sh := cfShares(t, cf, name, 200)
		return sh["127.0.0.71"] == 0
	}, 20*time.Second, 100*time.Millisecond, "the load balancer follows the decision:\n%s", m.log())
}
