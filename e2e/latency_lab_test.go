//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/require"
)

// The latency strategy in a netns lab: two prober regions (one meridian
// node each) with different RTTs to three sites, given by each prober
// host's delay line (netns_delay_test.go):
//
//	one-way delay   site A   site B   site C
//	east (p1)        5 ms    40 ms    60 ms
//	west (p2)       40 ms     5 ms    60 ms
//
// Clients are placed by geo.networks: ECS subnets of 10.1/16 and the
// source address of p1 are east, 10.2/16 and p2 are west. Every node must
// answer every client from its own region's RTTs (the other region's
// arrive by gossip).

const latencyLabConfig = `
server:
  # One client host stands for a region's many clients: no rate limit.
  dns: {listen: ["%[1]s:53"], rrl: {enabled: false}}
  http: {listen: "%[1]s:8080"}
  log: {level: info}
  state_dir: %[7]s
zones:
  - apex: t.test
    ttl: 30
    nameservers: [{name: ns1.t.test, ipv4: [%[1]s]}]
health: {interval: 1s, timeout: 600ms, fall: 3, rise: 2}
ring:
  enabled: true
  node_name: %[2]s
  region: %[3]s
  bind: "%[1]s:7946"
  seeds: [%[4]s]
  key_file: %[5]s
  label: e2e
  memberlist: {gossip_interval: 100ms, probe_interval: 1s, probe_timeout: 500ms, push_pull_interval: 5s, suspicion_mult: 3}
  %[6]s
decision: {hold_down: 2s, hold_down_max: 30s}
clusters:
  - {name: ca, region: east}
  - {name: cb, region: west}
  - {name: cc, region: central}
geo:
  networks:
    - {cidr: 10.1.0.0/16, region: east}
    - {cidr: 10.2.0.0/16, region: west}
    - {cidr: 10.77.1.0/24, region: east}
    - {cidr: 10.77.2.0/24, region: west}
services:
  - name: near.t.test
    strategy: latency
    latency: {tolerance: 20%%}
    health_check: {kind: http, port: 8081, path: /healthz}
    endpoints:
      - {address: %[8]s, cluster: ca}
      - {address: %[9]s, cluster: cb}
      - {address: %[10]s, cluster: cc}
`

type latencyLab struct {
	lab     *Lab
	nodes   []*gnode
	sites   *Host
	a, b, c netip.Addr
	lines   map[string]*DelayLine // by node name
	backs   map[netip.Addr]*Proc
}

func newLatencyLab(t *testing.T) *latencyLab {
	t.Helper()
	dir := t.TempDir()
	x := &latencyLab{lab: NewLab(t, "lat"), lines: map[string]*DelayLine{}, backs: map[netip.Addr]*Proc{}}
	for i, r := range []string{"east", "west"} {
		n := &gnode{name: fmt.Sprintf("p%d", i+1), region: r}
		n.host = x.lab.AddHost(n.name)
		x.nodes = append(x.nodes, n)
	}
	x.sites = x.lab.AddHost("sites")
	x.a, x.b, x.c = x.sites.Addr(10), x.sites.Addr(11), x.sites.Addr(12)
	for _, s := range []netip.Addr{x.a, x.b, x.c} {
		x.sites.AddAddr(t, s)
		x.backs[s] = x.sites.StartHTTP(t, netip.AddrPortFrom(s, 8081), "/healthz")
	}
	ms := time.Millisecond
	x.lines["p1"] = x.nodes[0].host.StartDelayLine(t, x.a, x.b, x.c)
	x.lines["p1"].SetMany(t, map[netip.Addr]time.Duration{x.a: 5 * ms, x.b: 40 * ms, x.c: 60 * ms})
	x.lines["p2"] = x.nodes[1].host.StartDelayLine(t, x.a, x.b, x.c)
	x.lines["p2"].SetMany(t, map[netip.Addr]time.Duration{x.a: 40 * ms, x.b: 5 * ms, x.c: 60 * ms})

	key := filepath.Join(dir, "gossip.key")
	require.NoError(t, os.WriteFile(key, []byte(strings.TrimSpace(run(t, meridianBin, "ring", "keygen"))+"\n"), 0o600))
	ids := newTestRing(t, dir, "p1@east", "p2@west")
	for _, n := range x.nodes {
		var seeds []string
		for _, m := range x.nodes {
			if m != n {
				seeds = append(seeds, fmt.Sprintf(`"%s:7946"`, m.host.IP))
			}
		}
		cfg := fmt.Sprintf(latencyLabConfig, n.host.IP, n.name, n.region, strings.Join(seeds, ", "), key,
			"identity_file: "+strconv.Quote(ids.files[n.name])+"\n  peers: "+ids.Peers(), filepath.Join(dir, n.name+".state"), x.a, x.b, x.c)
		n.config = filepath.Join(dir, n.name+".yaml")
		require.NoError(t, os.WriteFile(n.config, []byte(cfg), 0o644))
		require.Contains(t, run(t, meridianBin, "check-config", n.config), "ok")
		n.proc = n.host.Start(t, "meridian "+n.name, meridianBin, "serve", "--config", n.config)
	}
	return x
}

// query sends count queries for near.t.test A from host from to node n's
// server, with ECS subnets /24 inside ecs (a /16, cycling) or none (""),
// and returns the first answer's counts.
func (x *latencyLab) query(t testing.TB, from *Host, n *gnode, ecs string, count int) map[string]int {
	t.Helper()
	if ecs == "" {
		ecs = "none"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := runNetnsHelper(ctx, from.NS, "dnsq", n.host.IP.String()+":53", "near.t.test.", ecs, strconv.Itoa(count))
	require.NoError(t, err)
	var got map[string]int
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &got), "dnsq output %q", out)
	return got
}

// share is the fraction of answers that are want.
func share(got map[string]int, want netip.Addr) float64 {
	total := 0
	for _, c := range got {
		total += c
	}
	if total == 0 {
		return 0
	}
	return float64(got[want.String()]) / float64(total)
}

// waitNearest waits until every node answers every client of its map with
// only the given site (≥ 95 % of 50 queries), and returns how long it took.
func (x *latencyLab) waitNearest(t *testing.T, what string, timeout time.Duration, want map[string]netip.Addr) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ok := true
		for _, n := range x.nodes {
			for ecs, site := range want {
				if share(x.query(t, x.nodes[0].host, n, ecs, 50), site) < 0.95 {
					ok = false
				}
			}
		}
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			for _, n := range x.nodes {
				t.Logf("%s log tail:\n%s", n.name, tail(n.proc.Output(), 40))
				out, _ := x.explain(t, n, "10.1.7.0/24")
				t.Logf("%s explain for 10.1.7.0/24:\n%s", n.name, out)
			}
			t.Fatalf("%s: not reached within %s", what, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (x *latencyLab) explain(t testing.TB, n *gnode, subnet string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return n.host.Exec(t, ctx, meridianBin, "explain", "near.t.test", "--subnet", subnet, "--http", n.host.IP.String()+":8080")
}

func TestLatencyLab(t *testing.T) {
	x := newLatencyLab(t)
	const east, west = "10.1.0.0/16", "10.2.0.0/16"
	took := x.waitNearest(t, "every node answers each region's nearest site", 90*time.Second, map[string]netip.Addr{east: x.a, west: x.b})
	t.Logf("ring formed, sites probed and RTTs gossiped in %s", took.Round(100*time.Millisecond))
	out, err := x.explain(t, x.nodes[1], "10.1.7.0/24")
	require.NoError(t, err)
	t.Logf("p2 (west) explains an east client:\n%s", out)
	require.Contains(t, out, "from region east")

	t.Run("clients of each region get their nearest site, from every node", func(t *testing.T) {
		for _, n := range x.nodes {
			for _, c := range []struct {
				name string
				from *Host
				ecs  string
				want netip.Addr
			}{
				{"east ECS clients", x.nodes[0].host, east, x.a},
				{"west ECS clients", x.nodes[0].host, west, x.b},
				{"p1's own address (east)", x.nodes[0].host, "", x.a},
				{"p2's own address (west)", x.nodes[1].host, "", x.b},
			} {
				got := x.query(t, c.from, n, c.ecs, 5000)
				s := share(got, c.want)
				t.Logf("%s asked %s: %.2f%% %s of 5000 (%v)", c.name, n.name, 100*s, c.want, got)
				require.GreaterOrEqual(t, s, 0.95, "%s asked %s", c.name, n.name)
			}
		}
	})

	t.Run("raising one site's delay moves that region's clients within 3 probe intervals", func(t *testing.T) {
		x.lines["p1"].Set(t, x.a, 100*time.Millisecond)
		took := x.waitNearest(t, "east clients moved to B", 30*time.Second, map[string]netip.Addr{east: x.b, west: x.b})
		t.Logf("east's clients moved from A to B %s after A's delay from east went 5ms → 100ms: %.2f probe intervals (1s)", took.Round(10*time.Millisecond), took.Seconds())
		require.LessOrEqual(t, took, 3*time.Second, "within 3 probe intervals")
		for _, n := range x.nodes {
			got := x.query(t, x.nodes[0].host, n, east, 5000)
			t.Logf("east ECS clients asked %s after the move: %.2f%% B (%v)", n.name, 100*share(got, x.b), got)
			require.GreaterOrEqual(t, share(got, x.b), 0.95)
		}
		got := x.query(t, x.nodes[1].host, x.nodes[0], west, 5000)
		require.GreaterOrEqual(t, share(got, x.b), 0.95, "west's clients stay on B")
	})

	t.Run("when the nearest site fails its clients get the nearest healthy one", func(t *testing.T) {
		require.NoError(t, x.backs[x.b].Stop())
		// east: A 100 ms, C 60 ms → C; west: A 40 ms, C 60 ms → A.
		took := x.waitNearest(t, "B down: east to C, west to A", 60*time.Second, map[string]netip.Addr{east: x.c, west: x.a})
		t.Logf("B failed: both regions moved to their nearest healthy site in %s", took.Round(10*time.Millisecond))
		for _, n := range x.nodes {
			for ecs, want := range map[string]netip.Addr{east: x.c, west: x.a} {
				got := x.query(t, x.nodes[0].host, n, ecs, 5000)
				t.Logf("%s clients asked %s with B down: %.2f%% %s (%v)", ecs, n.name, 100*share(got, want), want, got)
				require.GreaterOrEqual(t, share(got, want), 0.95)
			}
		}
	})
}

// netnsHelperDNSQuery sends count A queries for name to server over UDP,
// one after the other, each with an ECS /24 taken in turn inside ecs (a
// /16; "none": no ECS), and prints the first answer's counts as JSON
// ("error" counts failed queries, "empty" empty answers).
func netnsHelperDNSQuery(server, name, ecs string, count int) error {
	var base netip.Prefix
	if ecs != "none" {
		p, err := netip.ParsePrefix(ecs)
		if err != nil || !p.Addr().Is4() {
			return fmt.Errorf("ecs %q: want an IPv4 /16", ecs)
		}
		base = p
	}
	conn, err := net.Dial("udp", server)
	if err != nil {
		return err
	}
	defer conn.Close()
	c := &dns.Conn{Conn: conn}
	counts := map[string]int{}
	for i := range count {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		m.SetEdns0(1232, false)
		if base.IsValid() {
			a := base.Addr().As4()
			a[2] = byte(i % 256)
			m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: net.IP(a[:])})
		}
		_ = conn.SetDeadline(time.Now().Add(time.Second))
		if err := c.WriteMsg(m); err != nil {
			counts["error"]++
			continue
		}
		r, err := c.ReadMsg()
		switch {
		case err != nil || r.Id != m.Id:
			counts["error"]++
		case len(r.Answer) == 0:
			counts["empty"]++
		default:
			if a, ok := r.Answer[0].(*dns.A); ok {
				counts[a.A.String()]++
			}
		}
	}
	b, err := json.Marshal(counts)
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	return nil
}
