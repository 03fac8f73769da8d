//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/api"
)

// gslb is a multi-node Meridian deployment in a netns lab: prober nodes
// (each a `meridian serve` in its own host, own region, encrypted gossip)
// and one host carrying the endpoints' HTTP backends.
type gslb struct {
	lab      *Lab
	nodes    []*gnode
	eps      *Host
	endpts   []netip.Addr
	backends map[netip.Addr]*Proc
	keyFile  string
	tokens   string    // admin token file (token gslbToken)
	ids      *testRing // node identities and ring.peers (probers p1..pN, agent agent-c1 for c1)
	dir      string
}

type gnode struct {
	name, region string
	host         *Host
	proc         *Proc
	config       string
}

// gslbOptions shape the deployment.
type gslbOptions struct {
	regions   []string // one prober per entry
	endpoints int      // endpoints of app.t.test, one per cluster c1..cN (round robin over regions)
	extra     string   // YAML appended at top level (e.g. decision: ...)
	ring      string   // YAML lines appended under ring: (indented 2)
	clusterHB string   // YAML for c1's heartbeat (e.g. "{agent: true, interval: 1s, grace: 4s}"), "" = none
	// secretKey supplies the gossip key as a deploy does: read-only (a
	// Kubernetes Secret mount; here a read-only bind mount).
	secretKey bool
	// defaults leaves health, decision and the memberlist knobs at their
	// defaults (interval 5s, timeout 3s, WAN gossip) instead of the fast
	// lab settings.
	defaults bool
}

// The lab's fast settings; defaults drops these lines.
var gslbFastLines = []string{
	"health: {interval: 1s, timeout: 500ms, fall: 3, rise: 2}\n",
	"  memberlist: {gossip_interval: 100ms, probe_interval: 1s, probe_timeout: 500ms, push_pull_interval: 5s, suspicion_mult: 3}\n",
	"decision: {hold_down: 2s, hold_down_max: 30s}\n",
}

const gslbConfig = `
server:
  dns: {listen: ["%[1]s:53"]}
  http: {listen: "%[1]s:8080"}
  log: {level: info}
  admin: {token_file: %[12]s}
  state_dir: %[13]s
zones:
  - apex: t.test
    ttl: 30
    nameservers: [{name: ns1.t.test, ipv4: [%[1]s]}]
health: {interval: 1s, timeout: 500ms, fall: 3, rise: 2}
ring:
  enabled: true
  node_name: %[2]s
  region: %[3]s
  bind: "%[1]s:7946"
  seeds: [%[4]s]
  key_file: %[5]s
  require_encryption: true
  label: e2e
  memberlist: {gossip_interval: 100ms, probe_interval: 1s, probe_timeout: 500ms, push_pull_interval: 5s, suspicion_mult: 3}
  identity_file: %[10]s
  peers: %[11]s
%[6]s
decision: {hold_down: 2s, hold_down_max: 30s}
clusters:
%[7]s
services:
  - name: app.t.test
    max_answers: 16
    health_check: {kind: http, port: 8081, path: /healthz}
    endpoints:
%[8]s
%[9]s
`

func newGSLB(t *testing.T, name string, o gslbOptions) *gslb {
	t.Helper()
	g := &gslb{lab: NewLab(t, name), backends: map[netip.Addr]*Proc{}, dir: t.TempDir()}
	g.keyFile = filepath.Join(g.dir, "secret", "gossip.key")
	require.NoError(t, os.MkdirAll(filepath.Dir(g.keyFile), 0o700))
	require.NoError(t, os.WriteFile(g.keyFile, []byte(strings.TrimSpace(run(t, meridianBin, "ring", "keygen"))+"\n"), 0o600))
	if o.secretKey {
		g.readOnly(t, filepath.Dir(g.keyFile))
	}
	g.tokens = filepath.Join(g.dir, "tokens")
	require.NoError(t, os.WriteFile(g.tokens, []byte("ops "+gslbToken+"\n"), 0o600))
	for i, r := range o.regions {
		n := &gnode{name: fmt.Sprintf("p%d", i+1), region: r}
		n.host = g.lab.AddHost(n.name)
		g.nodes = append(g.nodes, n)
	}
	specs := []string{"agent-c1>c1"}
	for _, n := range g.nodes {
		specs = append(specs, n.name+"@"+n.region)
	}
	g.ids = newTestRing(t, g.dir, specs...)
	g.eps = g.lab.AddHost("eps")
	var clusters, endpoints strings.Builder
	for i := range o.endpoints {
		c := fmt.Sprintf("c%d", i+1)
		region := o.regions[i%len(o.regions)]
		hb := ""
		if i == 0 && o.clusterHB != "" {
			hb = ", heartbeat: " + o.clusterHB
		}
		fmt.Fprintf(&clusters, "  - {name: %s, region: %s%s}\n", c, region, hb)
		addr := g.eps.Addr(10 + i)
		g.eps.AddAddr(t, addr)
		g.endpts = append(g.endpts, addr)
		fmt.Fprintf(&endpoints, "      - {address: %s, cluster: %s}\n", addr, c)
		g.startBackend(t, addr)
	}
	ringExtra := ""
	if o.ring != "" {
		ringExtra = "  " + strings.ReplaceAll(strings.TrimSpace(o.ring), "\n", "\n  ")
	}
	for _, n := range g.nodes {
		var seeds []string
		for _, m := range g.nodes {
			if m != n {
				seeds = append(seeds, fmt.Sprintf(`"%s:7946"`, m.host.IP))
			}
		}
		cfg := fmt.Sprintf(gslbConfig, n.host.IP, n.name, n.region, strings.Join(seeds, ", "), g.keyFile, ringExtra,
			clusters.String(), endpoints.String(), o.extra, g.ids.files[n.name], g.ids.Peers(), g.tokens, g.stateDir(n))
		if o.defaults {
			for _, l := range gslbFastLines {
				require.Contains(t, cfg, l)
				cfg = strings.Replace(cfg, l, "", 1)
			}
		}
		n.config = filepath.Join(g.dir, n.name+".yaml")
		require.NoError(t, os.WriteFile(n.config, []byte(cfg), 0o644))
		out := run(t, meridianBin, "check-config", n.config)
		require.Contains(t, out, "ok")
		g.start(t, n)
	}
	return g
}

// gslbToken is the admin token of every node of a gslb lab.
const gslbToken = "gslb-admin-token-0123456789"

// stateDir is node n's server.state_dir.
func (g *gslb) stateDir(n *gnode) string { return filepath.Join(g.dir, n.name+".state") }

// start starts (or restarts) node n's meridian serve.
func (g *gslb) start(t testing.TB, n *gnode) {
	n.proc = n.host.Start(t, "meridian "+n.name, meridianBin, "serve", "--config", n.config)
}

// readOnly makes dir read-only even for root (a read-only bind mount),
// as a Kubernetes Secret or ConfigMap volume is.
func (g *gslb) readOnly(t testing.TB, dir string) {
	out, err := exec.Command("sh", "-c", fmt.Sprintf("mount --bind %[1]q %[1]q && mount -o remount,bind,ro %[1]q", dir)).CombinedOutput()
	require.NoError(t, err, "read-only bind mount: %s", out)
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
}

// cli runs the meridian CLI inside node n's namespace against its HTTP API, with the admin token.
func (g *gslb) cli(t testing.TB, n *gnode, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args = append(args, "--http", n.host.IP.String()+":8080")
	return n.host.Exec(t, ctx, "env", append([]string{"MERIDIAN_ADMIN_TOKEN=" + gslbToken, meridianBin}, args...)...)
}

func (g *gslb) startBackend(t testing.TB, addr netip.Addr) {
	g.backends[addr] = g.eps.StartHTTP(t, netip.AddrPortFrom(addr, 8081), "/healthz")
}

func (g *gslb) stopBackend(t testing.TB, addr netip.Addr) {
	require.NoError(t, g.backends[addr].Stop())
}

// answers returns the sorted A records a node gives for app.t.test, or an
// error text when dig failed.
func (g *gslb) answers(t testing.TB, n *gnode) ([]string, []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := n.host.Exec(t, ctx, "dig", "@"+n.host.IP.String(), "app.t.test", "A", "+time=1", "+tries=2", "+noall", "+answer")
	if err != nil {
		return nil, []string{"dig: " + err.Error()}
	}
	var addrs, ttls []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 5 && f[3] == "A" {
			addrs = append(addrs, f[4])
			ttls = append(ttls, f[1])
		}
	}
	slices.Sort(addrs)
	return addrs, ttls
}

func (g *gslb) health(t testing.TB, n *gnode) (api.HealthReport, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	code, body, err := n.host.HTTPGet(t, ctx, fmt.Sprintf("http://%s:8080/v1/health", n.host.IP))
	var rep api.HealthReport
	if err != nil {
		return rep, err
	}
	if code != 200 {
		return rep, fmt.Errorf("%s: /v1/health: HTTP %d", n.name, code)
	}
	return rep, json.Unmarshal([]byte(body), &rep)
}

func (g *gslb) allAddrs() []string {
	var out []string
	for _, a := range g.endpts {
		out = append(out, a.String())
	}
	slices.Sort(out)
	return out
}

// waitAll waits until cond holds on every node.
func (g *gslb) waitAll(t *testing.T, what string, timeout time.Duration, cond func(n *gnode) bool) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		ok := true
		for _, n := range g.nodes {
			if !cond(n) {
				ok = false
				break
			}
		}
		if ok {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			for _, n := range g.nodes {
				t.Logf("%s log tail:\n%s", n.name, tail(n.proc.Output(), 30))
			}
			t.Fatalf("%s: not reached within %s", what, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ready waits until every node has every prober as a member and answers
// every endpoint.
func (g *gslb) ready(t *testing.T) {
	t.Helper()
	want := g.allAddrs()
	g.waitAll(t, "ring formed and all endpoints up", 60*time.Second, func(n *gnode) bool {
		rep, err := g.health(t, n)
		if err != nil || len(rep.Probers) < len(g.nodes) {
			return false
		}
		for _, e := range rep.Endpoints {
			if e.State != "up" {
				return false
			}
		}
		got, _ := g.answers(t, n)
		return slices.Equal(got, want)
	})
}

// stateChanges returns the decided state changes (not hold events) a node
// made after since.
func stateChanges(rep api.HealthReport, since time.Time) []api.ChangeEvent {
	var out []api.ChangeEvent
	for _, c := range rep.Changes {
		if c.At.After(since) && c.From != c.To && c.From != "unknown" {
			out = append(out, c)
		}
	}
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }
