//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/srcdir"
)

var (
	corednsOnce sync.Once
	corednsBin  string
	corednsErr  error
)

// coredns returns the coredns-meridian binary: COREDNS_BIN, or a build.
func coredns(t testing.TB) string {
	corednsOnce.Do(func() {
		if corednsBin = os.Getenv("COREDNS_BIN"); corednsBin != "" {
			return
		}
		dir, err := os.MkdirTemp("", "coredns-e2e")
		if err != nil {
			corednsErr = err
			return
		}
		corednsBin = filepath.Join(dir, "coredns-meridian")
		build := exec.Command("go", "build", "-o", corednsBin, "./cmd/coredns-meridian")
		build.Dir = srcdir.Root()
		out, err := build.CombinedOutput()
		if err != nil {
			corednsErr = fmt.Errorf("build coredns-meridian: %v\n%s", err, out)
		}
	})
	require.NoError(t, corednsErr)
	return corednsBin
}

type corednsInstance struct {
	cmd  *exec.Cmd
	port int
	addr string
	mu   sync.Mutex
	out  []string
	done chan struct{}
}

func (c *corednsInstance) log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.out, "\n")
}

// startCoreDNS starts coredns-meridian from a Corefile template in which
// %[1]d is the DNS port and %[2]s the meridian config path.
func startCoreDNS(t *testing.T, corefile, meridianConfig string) *corednsInstance {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "meridian.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(meridianConfig), 0o644))
	c := &corednsInstance{port: freePort(t), done: make(chan struct{})}
	c.addr = fmt.Sprintf("127.0.0.1:%d", c.port)
	cf := filepath.Join(dir, "Corefile")
	require.NoError(t, os.WriteFile(cf, []byte(fmt.Sprintf(corefile, c.port, cfg)), 0o644))
	c.cmd = exec.Command(coredns(t), "-conf", cf)
	stdout, err := c.cmd.StdoutPipe()
	require.NoError(t, err)
	c.cmd.Stderr = c.cmd.Stdout
	require.NoError(t, c.cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.mu.Lock()
			c.out = append(c.out, sc.Text())
			c.mu.Unlock()
		}
	}()
	go func() { c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		c.cmd.Process.Signal(os.Interrupt)
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
			c.cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("coredns log:\n%s", c.log())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", c.addr, 200*time.Millisecond)
		if err == nil {
			conn.Close()
			return c
		}
		select {
		case <-c.done:
			t.Fatalf("coredns exited:\n%s", c.log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("coredns not listening after 20s:\n%s", c.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func digAt(t *testing.T, port int, args ...string) string {
	return run(t, "dig", append([]string{"@127.0.0.1", "-p", fmt.Sprint(port), "+time=2", "+tries=1"}, args...)...)
}

const corednsCorefile = `
gslb.test:%[1]d big.test:%[1]d {
    errors
    log
    prometheus 127.0.0.1:0
    meridian {
        config %[2]s
    }
}
`

const diffConfig = `
# 20 000 queries from 127.0.0.1 per server: far above the default rate
# limit, which is not what this test compares (the plugin has none).
server: {dns: {rrl: {responses_per_second: 1000000}}}
zones:
  - apex: gslb.test
    ttl: 30
    soa: {serial: 2026112901, minimum: 20, ttl: 3600}
    nameservers:
      - {name: ns1.gslb.test, ipv4: [192.0.2.53], ipv6: ["2001:db8::53"]}
      - {name: ns.provider.example}
  - apex: big.test
    soa: {serial: 7}
    nameservers:
%s
clusters:
  - {name: east, region: us-east, continent: NA, country: US}
  - {name: west, region: us-west, continent: NA, country: US}
  - {name: eu, region: eu-west, continent: EU, country: DE}
geo:
  networks:
    - {cidr: 10.1.0.0/16, region: us-east}
    - {cidr: 10.3.0.0/16, region: eu-west, country: DE, continent: EU}
services:
  - name: app.gslb.test
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 700}
      - {address: 192.0.2.2, cluster: eu, weight: 300}
  - name: api.gslb.test
    strategy: failover
    failover: {order: [east, west]}
    endpoints:
      - {address: 198.51.100.1, cluster: east, state: down}
      - {address: 198.51.100.2, cluster: west}
  - name: www.gslb.test
    strategy: geo
    geo: {default: [east]}
    endpoints:
      - {address: 203.0.113.1, cluster: east}
      - {address: 203.0.113.3, cluster: eu}
  - name: docs.gslb.test
    endpoints: [{cname: app.gslb.test, cluster: east}]
  - name: svc.deep.gslb.test
    endpoints: [{address: 192.0.2.9, cluster: west}]
`

func diffConfigText() string { return fmt.Sprintf(diffConfig, bigNameservers()) }

// normalized is what must agree between the two servers for one query.
type normalized struct {
	Rcode         int
	Flags         string
	AnswerTypes   string
	Authority     []string
	Additional    []string
	ECSScope      int
	AnswerOptions []string // the answer, one RR per line, lower case
}

func normalize(m *dns.Msg) normalized {
	n := normalized{Rcode: m.Rcode, ECSScope: -1}
	n.Flags = fmt.Sprintf("qr=%v aa=%v tc=%v rd=%v ra=%v", m.Response, m.Authoritative, m.Truncated, m.RecursionDesired, m.RecursionAvailable)
	var types []string
	for _, rr := range m.Answer {
		types = append(types, dns.TypeToString[rr.Header().Rrtype])
		n.AnswerOptions = append(n.AnswerOptions, strings.ToLower(rr.String()))
	}
	n.AnswerTypes = strings.Join(types, ",")
	for _, rr := range m.Ns {
		n.Authority = append(n.Authority, strings.ToLower(rr.String()))
	}
	for _, rr := range m.Extra {
		if opt, ok := rr.(*dns.OPT); ok {
			for _, o := range opt.Option {
				if e, ok := o.(*dns.EDNS0_SUBNET); ok {
					n.ECSScope = int(e.SourceScope)
				}
			}
			n.Additional = append(n.Additional, fmt.Sprintf("OPT udp=%d", opt.UDPSize()))
			continue
		}
		n.Additional = append(n.Additional, strings.ToLower(rr.String()))
	}
	slices.Sort(n.Authority)
	slices.Sort(n.Additional)
	return n
}

// withRingAndToken adds a ring section and an admin token file to the
// differential config.
func withRingAndToken(cfg, tokens, ring string) string {
	cfg = strings.Replace(cfg, "server: {dns: {rrl: {responses_per_second: 1000000}}}",
		fmt.Sprintf("server: {dns: {rrl: {responses_per_second: 1000000}}, admin: {token_file: %q}}", tokens), 1)
	return cfg + "ring: {enabled: true, label: e2e, " + ring + "}\n"
}

// TestCoreDNSPluginAgreesWithMeridianServe: the same config, with a weight
// override and a drain set on the serve node, answered by `meridian serve`
// and by the plugin following it on the ring: the same answers.
func TestCoreDNSPluginAgreesWithMeridianServe(t *testing.T) {
	dir := t.TempDir()
	tokens, tokenFile := adminTokenFiles(t, dir)
	g := freePort(t)
	tr := newTestRing(t, dir, "serve@us-east")
	m := startMeridian(t, withRingAndToken(diffConfigText(), tokens, fmt.Sprintf(`node_name: serve, region: us-east, bind: "127.0.0.1:%d", %s`, g, tr.Ring("serve"))))
	c := startCoreDNS(t, strings.Replace(corednsCorefile, "config %[2]s", "config %[2]s\n        ring", 1),
		withRingAndToken(diffConfigText(), tokens, fmt.Sprintf(`node_name: obs, region: us-east, bind: "127.0.0.1:%d", seeds: ["127.0.0.1:%d"], peers: %s`, freePort(t), g, tr.Peers())))
	// The overrides: app's eu endpoint weighs 100 instead of 300 (70/30
	// becomes 87.5/12.5), www's eu endpoint is drained.
	for _, args := range [][]string{
		{"weight", "app.gslb.test", "192.0.2.2", "100", "--reason", "differential"},
		{"drain", "endpoint", "www.gslb.test", "203.0.113.3", "--reason", "differential"},
	} {
		out, err := cli(t, m, append(args, "--token-file", tokenFile)...)
		require.NoError(t, err, out)
	}
	require.Eventually(t, func() bool {
		out := digAt(t, c.port, "www.gslb.test", "A", "+subnet=10.3.1.0/24")
		return slices.Equal(section(out, "ANSWER"), []string{"www.gslb.test. 30 IN A 203.0.113.1"})
	}, 10*time.Second, 50*time.Millisecond, "the plugin follows the drain:\n%s", c.log())
	ecs := func(cidr string) func(*dns.Msg) {
		return func(q *dns.Msg) {
			q.SetEdns0(1232, false)
			ip, ipnet, _ := net.ParseCIDR(cidr)
			bits, _ := ipnet.Mask.Size()
			q.IsEdns0().Option = append(q.IsEdns0().Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: uint8(bits), Address: ip.To4()})
		}
	}
	edns := func(q *dns.Msg) { q.SetEdns0(1232, false) }
	cases := []struct {
		name  string
		qname string
		qtype uint16
		net   string
		edit  func(*dns.Msg)
	}{
		{"weighted", "app.gslb.test.", dns.TypeA, "udp", nil},
		{"weighted with EDNS", "app.gslb.test.", dns.TypeA, "udp", edns},
		{"failover", "api.gslb.test.", dns.TypeA, "udp", nil},
		{"geo with ECS from eu-west", "www.gslb.test.", dns.TypeA, "udp", ecs("10.3.1.0/24")},
		{"geo with ECS from elsewhere", "www.gslb.test.", dns.TypeA, "udp", ecs("172.16.0.0/24")},
		{"ECS on a non-geo name", "app.gslb.test.", dns.TypeA, "udp", ecs("10.3.1.0/24")},
		{"NXDOMAIN", "nope.gslb.test.", dns.TypeA, "udp", nil},
		{"NODATA", "app.gslb.test.", dns.TypeMX, "udp", nil},
		{"NODATA at an empty non-terminal", "deep.gslb.test.", dns.TypeA, "udp", nil},
		{"REFUSED outside the zones", "example.com.", dns.TypeA, "udp", nil},
		{"CNAME with the in-zone target", "docs.gslb.test.", dns.TypeA, "udp", nil},
		{"apex NS with glue", "gslb.test.", dns.TypeNS, "udp", nil},
		{"apex SOA", "gslb.test.", dns.TypeSOA, "udp", nil},
		{"ANY", "app.gslb.test.", dns.TypeANY, "udp", nil},
		{"truncated over UDP", "big.test.", dns.TypeNS, "udp", nil},
		{"complete over TCP", "big.test.", dns.TypeNS, "tcp", nil},
	}
	ask := func(addr, netw string, q *dns.Msg) *dns.Msg {
		cl := &dns.Client{Net: netw, Timeout: 2 * time.Second}
		r, _, err := cl.Exchange(q, addr)
		require.NoError(t, err)
		return r
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := new(dns.Msg)
			q.SetQuestion(tc.qname, tc.qtype)
			if tc.edit != nil {
				tc.edit(q)
			}
			// Collect the possible answers from many queries on each side:
			// 80 draws miss a 12.5 % answer with probability 2e-5.
			seen := [2]map[string]bool{{}, {}}
			var first [2]normalized
			for i, addr := range []string{m.dns, c.addr} {
				for k := range 80 {
					r := ask(addr, tc.net, q.Copy())
					n := normalize(r)
					if k == 0 {
						first[i] = n
					}
					assert.Equal(t, first[i].Rcode, n.Rcode)
					seen[i][strings.Join(n.AnswerOptions, "|")] = true
				}
			}
			a, b := first[0], first[1]
			assert.Equal(t, a.Rcode, b.Rcode, "rcode")
			assert.Equal(t, a.Flags, b.Flags, "flags")
			assert.Equal(t, a.Authority, b.Authority, "authority")
			assert.Equal(t, a.Additional, b.Additional, "additional")
			assert.Equal(t, a.ECSScope, b.ECSScope, "ECS scope")
			assert.Equal(t, a.AnswerTypes, b.AnswerTypes, "answer types")
			assert.Equal(t, seen[0], seen[1], "the same set of possible answers")
		})
	}
	t.Run("weighted shares with the weight override agree within 1.5 points over 20 000 queries each", func(t *testing.T) {
		shares := func(addr string) map[string]float64 {
			cl := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
			conn, err := cl.Dial(addr)
			require.NoError(t, err)
			defer conn.Close()
			counts := map[string]int{}
			const n = 20000
			for range n {
				q := new(dns.Msg)
				q.SetQuestion("app.gslb.test.", dns.TypeA)
				r, _, err := cl.ExchangeWithConn(q, conn)
				require.NoError(t, err)
				counts[r.Answer[0].(*dns.A).A.String()]++
			}
			out := map[string]float64{}
			for k, v := range counts {
				out[k] = 100 * float64(v) / n
			}
			return out
		}
		sm, sc := shares(m.dns), shares(c.addr)
		t.Logf("FIGURE weighted 700/100 (an override on 700/300) over 20 000 queries: meridian serve %.2f/%.2f, coredns-meridian %.2f/%.2f",
			sm["192.0.2.1"], sm["192.0.2.2"], sc["192.0.2.1"], sc["192.0.2.2"])
		for _, ip := range []string{"192.0.2.1", "192.0.2.2"} {
			assert.LessOrEqual(t, math.Abs(sm[ip]-sc[ip]), 1.5, ip)
			assert.InDelta(t, map[string]float64{"192.0.2.1": 87.5, "192.0.2.2": 12.5}[ip], sc[ip], 1.5)
		}
	})
	t.Run("dig and kdig get the plugin's answers", func(t *testing.T) {
		out := digAt(t, c.port, "www.gslb.test", "A", "+subnet=10.3.1.0/24")
		assert.Contains(t, out, "CLIENT-SUBNET: 10.3.1.0/24/16")
		assert.Equal(t, []string{"www.gslb.test. 30 IN A 203.0.113.1"}, section(out, "ANSWER"), "eu's endpoint is drained")
		kout := run(t, "kdig", "@127.0.0.1", "-p", fmt.Sprint(c.port), "+time=2", "+retry=0", "+tcp", "app.gslb.test", "A")
		assert.Regexp(t, `app\.gslb\.test\.\s+30\s+IN\s+A\s+192\.0\.2\.[12]`, kout)
		assert.Contains(t, kout, "(TCP)")
	})
}

// The documented setup: `cache` in front of geo answers must not serve one
// subnet's answer to another; `disable success` for the zone does that.
func TestCoreDNSCacheInFrontOfGeoAnswers(t *testing.T) {
	cfg := diffConfigText()
	query := func(port int, subnet string) []string {
		return section(digAt(t, port, "www.gslb.test", "A", "+subnet="+subnet), "ANSWER")
	}
	t.Run("the documented setup keeps geo answers per subnet", func(t *testing.T) {
		c := startCoreDNS(t, `
gslb.test:%[1]d big.test:%[1]d {
    errors
    cache 30 {
        disable success gslb.test
    }
    meridian {
        config %[2]s
    }
}
`, cfg)
		assert.Equal(t, []string{"www.gslb.test. 30 IN A 203.0.113.3"}, query(c.port, "10.3.1.0/24"))
		assert.Equal(t, []string{"www.gslb.test. 30 IN A 203.0.113.1"}, query(c.port, "10.1.1.0/24"))
		// Negative answers are still cached.
		assert.Contains(t, digAt(t, c.port, "nope.gslb.test", "A"), "NXDOMAIN")
	})
	t.Run("a plain cache serves one subnet's answer to another (why the README warns)", func(t *testing.T) {
		c := startCoreDNS(t, `
gslb.test:%[1]d big.test:%[1]d {
    cache 30
    meridian {
        config %[2]s
    }
}
`, cfg)
		assert.Equal(t, []string{"www.gslb.test. 30 IN A 203.0.113.3"}, query(c.port, "10.3.1.0/24"))
		got := query(c.port, "10.1.1.0/24")
		require.Len(t, got, 1)
		assert.Contains(t, got[0], "203.0.113.3", "the eu-west answer came from the cache")
	})
}

func TestCoreDNSWithTheUsualPlugins(t *testing.T) {
	cfg := diffConfigText()
	metricsPort := freePort(t)
	healthPort := freePort(t)
	c := startCoreDNS(t, `
gslb.test:%[1]d big.test:%[1]d {
    errors
    log
    health 127.0.0.1:`+fmt.Sprint(healthPort)+`
    prometheus 127.0.0.1:`+fmt.Sprint(metricsPort)+`
    meridian {
        config %[2]s
    }
}
`, cfg)
	assert.Len(t, section(digAt(t, c.port, "app.gslb.test", "A"), "ANSWER"), 1)
	digAt(t, c.port, "nope.gslb.test", "A")
	require.Eventually(t, func() bool { return strings.Contains(c.log(), `"A IN app.gslb.test. udp`) }, 5*time.Second, 50*time.Millisecond, "the log plugin saw the query")
	health := runNoFail("curl", "-s", fmt.Sprintf("http://127.0.0.1:%d/health", healthPort))
	assert.Contains(t, health, "OK")
	metrics := runNoFail("curl", "-s", fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
	assert.Contains(t, metrics, `coredns_meridian_queries_total{qtype="A",rcode="NOERROR",server="dns://:`)
	assert.Contains(t, metrics, `coredns_meridian_queries_total{qtype="A",rcode="NXDOMAIN",server="dns://:`)
	assert.Contains(t, metrics, "coredns_meridian_snapshot_generation 1")
}

const ringFollowConfig = `
zones:
  - apex: ring.test
    nameservers: [{name: ns1.ring.test, ipv4: [127.0.0.1]}]
health: {interval: 1s, timeout: 500ms, fall: 3, rise: 2}
ring: {enabled: true, node_name: %[1]s, region: r1, bind: "127.0.0.1:%[2]d", seeds: [%[3]s], label: e2e, %[5]s}
clusters:
  - {name: east, region: r1}
  - {name: west, region: r1}
services:
  - name: app.ring.test
    max_answers: 2
    health_check: {kind: http, port: %[4]d, path: /healthz}
    endpoints:
      - {address: 127.0.0.81, cluster: east}
      - {address: 127.0.0.82, cluster: west}
`

// TestCoreDNSFollowsTheRingsDecisions: coredns-meridian with `ring` joins a
// prober's ring as an observer and its answers follow the prober's decision,
// fail-open (with its EDE) included.
func TestCoreDNSFollowsTheRingsDecisions(t *testing.T) {
	port := freePort(t)
	var backends []*backend
	for _, a := range []string{"127.0.0.81", "127.0.0.82"} {
		backends = append(backends, startBackend(t, fmt.Sprintf("%s:%d", a, port)))
	}
	proberPort, observerPort := freePort(t), freePort(t)
	tr := newTestRing(t, t.TempDir(), "prober@r1")
	m := startMeridian(t, fmt.Sprintf(ringFollowConfig, "prober", proberPort, "", port, tr.Ring("prober")))
	c := startCoreDNS(t, `
ring.test:%[1]d {
    meridian {
        config %[2]s
        ring
    }
}
`, fmt.Sprintf(ringFollowConfig, "observer", observerPort, fmt.Sprintf(`"127.0.0.1:%d"`, proberPort), port, "peers: "+tr.Peers()))
	answers := func(p int) []string {
		var out []string
		for _, l := range section(digAt(t, p, "app.ring.test", "A"), "ANSWER") {
			f := strings.Fields(l)
			out = append(out, f[len(f)-1])
		}
		slices.Sort(out)
		return out
	}
	require.Eventually(t, func() bool {
		return strings.Contains(c.log(), "member joined") || strings.Contains(m.log(), `member=observer`)
	}, 10*time.Second, 100*time.Millisecond, "the observer joined")
	require.NoError(t, backends[0].srv.Close())
	start := time.Now()
	require.Eventually(t, func() bool {
		return slices.Equal(answers(m.dnsPort), []string{"127.0.0.82"}) && slices.Equal(answers(c.port), []string{"127.0.0.82"})
	}, 20*time.Second, 100*time.Millisecond, "both follow the decision:\n%s", c.log())
	t.Logf("FIGURE coredns ring observer: the killed endpoint left the answers of serve and coredns-meridian within %s", time.Since(start).Round(100*time.Millisecond))
	assert.Regexp(t, `health decision changed reason=\S+ from=(up|unknown) to=down .*service=app\.ring\.test\. endpoint=127\.0\.0\.81`, c.log())

	// The plugin answers through the same engine: with both endpoints
	// down by the probes, dig shows the fail-open EDE through it too.
	require.NoError(t, backends[1].srv.Close())
	var out string
	require.Eventually(t, func() bool {
		out = digAt(t, c.port, "app.ring.test", "A")
		return strings.Contains(out, digFailOpenEDE)
	}, 20*time.Second, 200*time.Millisecond, "dig through coredns-meridian never showed the fail-open EDE; last:\n%s", out)
	assert.Equal(t, "NOERROR", status(out))
	assert.Subset(t, []string{"127.0.0.81", "127.0.0.82"}, answerAddrs(section(out, "ANSWER")))
}

// TestCoreDNSIsReadyOnceTheObserverMetTheRing: CoreDNS's ready plugin
// asks the meridian plugin; with ring it is not ready while the prober its
// seed names is not there (its answers would come from the config alone),
// and ready once it met it.
func TestCoreDNSIsReadyOnceTheObserverMetTheRing(t *testing.T) {
	port := freePort(t)
	startBackend(t, fmt.Sprintf("127.0.0.81:%d", port))
	startBackend(t, fmt.Sprintf("127.0.0.82:%d", port))
	proberPort, observerPort, readyPort := freePort(t), freePort(t), freePort(t)
	tr := newTestRing(t, t.TempDir(), "prober@r1")
	// The prober on 127.0.0.2: a seed on this node's own address would
	// count as "no other node" and settle the observer alone.
	c := startCoreDNS(t, `
ring.test:%[1]d {
    ready 127.0.0.1:`+fmt.Sprint(readyPort)+`
    meridian {
        config %[2]s
        ring
    }
}
`, fmt.Sprintf(ringFollowConfig, "observer", observerPort, fmt.Sprintf(`"127.0.0.2:%d"`, proberPort), port, "rejoin_interval: 1s, peers: "+tr.Peers()))
	ready := func() (string, string) {
		out := runNoFail("curl", "-s", "-w", " %{http_code}", fmt.Sprintf("http://127.0.0.1:%d/ready", readyPort))
		i := strings.LastIndex(out, " ")
		return out[i+1:], out[:i]
	}
	for range 15 { // 3 s: the observer's seed rounds (every 1 s) find nobody
		code, body := ready()
		require.Equal(t, "503", code, "not ready before it met the ring: %s", body)
		assert.Contains(t, body, "meridian", "the ready plugin names meridian as the plugin not ready")
		time.Sleep(200 * time.Millisecond)
	}
	prober := strings.Replace(fmt.Sprintf(ringFollowConfig, "prober", proberPort, "", port, tr.Ring("prober")), `bind: "127.0.0.1:`, `bind: "127.0.0.2:`, 1)
	startMeridian(t, prober)
	start := time.Now()
	require.Eventually(t, func() bool { code, _ := ready(); return code == "200" }, 20*time.Second, 100*time.Millisecond, "ready once it met the prober:\n%s", c.log())
	t.Logf("FIGURE coredns ready: 200 %s after the prober started", time.Since(start).Round(100*time.Millisecond))
}
