//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const xfrConfig = `
zones:
  - apex: xfr.test
    nameservers: [{name: ns1.xfr.test, ipv4: [127.0.0.1]}]
    transfer:
      allow: [127.0.0.1]
      tsig_key_file: %s
      notify: [127.0.0.1:%d, 127.0.0.1:%d]
clusters:
  - {name: east, region: us-east, state: %s}
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
`

const namedConf = `options {
	directory "%[1]s";
	pid-file "%[1]s/named.pid";
	session-keyfile "%[1]s/session.key";
	managed-keys-directory "%[1]s";
	listen-on port %[2]d { 127.0.0.1; };
	listen-on-v6 { none; };
	recursion no;
	notify no;
	dnssec-validation no;
	allow-query { any; };
	allow-transfer { none; };
};
controls { };
key "xfr-key" { algorithm hmac-sha256; secret "%[3]s"; };
zone "xfr.test" {
	type secondary;
	primaries { 127.0.0.1 port %[4]d key "xfr-key"; };
	file "%[1]s/xfr.test.db";
};
`

const knotConf = `server:
    rundir: "%[1]s"
    listen: 127.0.0.1@%[2]d
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
database:
    storage: "%[1]s"
log:
  - target: stderr
    any: info
key:
  - id: xfr-key
    algorithm: hmac-sha256
    secret: %[3]s
remote:
  - id: meridian
    address: 127.0.0.1@%[4]d
    key: xfr-key
acl:
  - id: notify-from-meridian
    address: 127.0.0.1
    key: xfr-key
    action: notify
template:
  - id: default
    storage: "%[1]s"
    zonefile-load: none
    zonefile-sync: -1
    journal-content: none
zone:
  - domain: xfr.test
    master: meridian
    acl: notify-from-meridian
`

// secondary is a running named or knotd.
type secondary struct {
	name string
	port int
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  strings.Builder
	done chan struct{}
}

func (s *secondary) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.Write(p)
}

func (s *secondary) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

func sbin(t *testing.T, name string) string {
	t.Helper()
	for _, p := range []string{name, "/usr/sbin/" + name} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Fatalf("%s not found: run `make e2e`, which installs it (Debian bind9 / knot)", name)
	return ""
}

func startSecondary(t *testing.T, name string, port int, args ...string) *secondary {
	t.Helper()
	s := &secondary{name: name, port: port, done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // bounded whatever happens
	s.cmd = exec.CommandContext(ctx, sbin(t, name), args...)
	s.cmd.Stdout, s.cmd.Stderr = s, s
	require.NoError(t, s.cmd.Start())
	go func() { s.cmd.Wait(); cancel(); close(s.done) }()
	t.Cleanup(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
		if t.Failed() || os.Getenv("XFR_E2E_LOGS") != "" {
			t.Logf("%s log:\n%s", name, tail(s.log(), 60))
		}
	})
	return s
}

// query asks the secondary and returns dig +short lines ("" on failure).
func (s *secondary) query(name, qtype string) []string {
	out := runNoFail("dig", "@127.0.0.1", "-p", fmt.Sprint(s.port), "+time=1", "+tries=1", "+short", "+norec", name, qtype)
	if strings.Contains(out, ";;") {
		return nil
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	slices.Sort(lines)
	return lines
}

func (s *secondary) serial() string {
	soa := s.query("xfr.test", "SOA")
	if len(soa) != 1 {
		return ""
	}
	f := strings.Fields(soa[0])
	if len(f) < 3 {
		return ""
	}
	return f[2]
}

func meridianSerial(t *testing.T, port int) string {
	t.Helper()
	out := strings.Fields(run(t, "dig", "@127.0.0.1", "-p", fmt.Sprint(port), "+short", "xfr.test", "SOA"))
	require.Len(t, out, 7)
	return out[2]
}

// answers queries the secondary in-process (fast enough to time a
// transfer to the millisecond) and returns its SOA serial and the sorted
// addresses of app and web.
func (s *secondary) answers() (serial string, app, web []string) {
	c := &dns.Client{Timeout: 500 * time.Millisecond}
	ask := func(name string, qtype uint16) []dns.RR {
		q := new(dns.Msg)
		q.SetQuestion(name, qtype)
		r, _, err := c.Exchange(q, fmt.Sprintf("127.0.0.1:%d", s.port))
		if err != nil || r.Rcode != dns.RcodeSuccess {
			return nil
		}
		return r.Answer
	}
	if soa := ask("xfr.test.", dns.TypeSOA); len(soa) == 1 {
		serial = fmt.Sprint(soa[0].(*dns.SOA).Serial)
	}
	addrs := func(rrs []dns.RR) []string {
		var out []string
		for _, rr := range rrs {
			if a, ok := rr.(*dns.A); ok {
				out = append(out, a.A.String())
			}
		}
		slices.Sort(out)
		return out
	}
	return serial, addrs(ask("app.xfr.test.", dns.TypeA)), addrs(ask("web.xfr.test.", dns.TypeA))
}

// waitServes waits until every secondary answers app and web with the
// wanted addresses at serial, and returns how long each took from start;
// `dig @secondary` then confirms what it serves.
func waitServes(t *testing.T, secs []*secondary, start time.Time, serial string, app, web []string, timeout time.Duration) map[string]time.Duration {
	t.Helper()
	took := map[string]time.Duration{}
	for time.Since(start) < timeout && len(took) < len(secs) {
		for _, s := range secs {
			if _, ok := took[s.name]; ok {
				continue
			}
			if ser, a, w := s.answers(); ser == serial && slices.Equal(a, app) && slices.Equal(w, web) {
				took[s.name] = time.Since(start)
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	for _, s := range secs {
		if _, ok := took[s.name]; !ok {
			ser, a, w := s.answers()
			t.Fatalf("%s does not serve serial %s (app %v, web %v) after %v: serial %q app %v web %v", s.name, serial, app, web, timeout, ser, a, w)
		}
		assert.Equal(t, serial, s.serial(), "dig @%s SOA", s.name)
		assert.Equal(t, app, s.query("app.xfr.test", "A"), "dig @%s app A", s.name)
		assert.Equal(t, web, s.query("web.xfr.test", "A"), "dig @%s web A", s.name)
	}
	return took
}

func TestSecondariesBINDAndKnot(t *testing.T) {
	sbin(t, "named")
	sbin(t, "knotd")
	dir := t.TempDir()
	raw := make([]byte, 32)
	rand.Read(raw)
	secret := base64.StdEncoding.EncodeToString(raw)
	keyFile := filepath.Join(dir, "xfr.key")
	require.NoError(t, os.WriteFile(keyFile, []byte(fmt.Sprintf("key \"xfr-key\" {\n\talgorithm hmac-sha256;\n\tsecret \"%s\";\n};\n", secret)), 0o600))
	serials := "server: {serial_state_file: " + filepath.Join(dir, "serials.json") + "}\n" // kept across the restarts below

	primary, bindPort, knotPort := freePort(t), freePort(t), freePort(t)
	cfg := func(eastState string) string {
		return serials + fmt.Sprintf(xfrConfig, keyFile, bindPort, knotPort, eastState)
	}
	fixed := []string{"--dns-listen", fmt.Sprintf("127.0.0.1:%d", primary)} // the secondaries' primary, across restarts
	m := startMeridian(t, cfg("up"), fixed...)
	serial0 := meridianSerial(t, primary)

	bindDir, knotDir := filepath.Join(dir, "bind"), filepath.Join(dir, "knot")
	require.NoError(t, os.MkdirAll(bindDir, 0o755))
	require.NoError(t, os.MkdirAll(knotDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bindDir, "named.conf"), []byte(fmt.Sprintf(namedConf, bindDir, bindPort, secret, primary)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(knotDir, "knot.conf"), []byte(fmt.Sprintf(knotConf, knotDir, knotPort, secret, primary)), 0o644))
	bind := startSecondary(t, "named", bindPort, "-g", "-n", "1", "-c", filepath.Join(bindDir, "named.conf"))
	knot := startSecondary(t, "knotd", knotPort, "-c", filepath.Join(knotDir, "knot.conf"))
	secs := []*secondary{bind, knot}

	// Initial transfer (AXFR: the secondaries start empty).
	took := waitServes(t, secs, time.Now(), serial0, []string{"192.0.2.1", "192.0.2.2"}, []string{"192.0.2.11"}, 20*time.Second)
	t.Logf("initial transfer: serial %s, named %v, knotd %v after start", serial0, took["named"].Round(time.Millisecond), took["knotd"].Round(time.Millisecond))

	// Failovers: cluster east goes down and comes back, several times. The
	// secondaries must follow each within one NOTIFY round.
	serial1 := serial0
	lat := map[string][]time.Duration{}
	var atMeridian []time.Duration
	const rounds = 7 // odd: east ends down
	for i := range rounds {
		state, app, web := "down", []string{"192.0.2.2"}, []string{"192.0.2.12"}
		if i%2 == 1 {
			state, app, web = "up", []string{"192.0.2.1", "192.0.2.2"}, []string{"192.0.2.11"}
		}
		prev := serial1
		start := time.Now()
		writeAtomic(t, m.config, cfg(state))
		m.cmd.Process.Signal(syscall.SIGHUP)
		require.Eventually(t, func() bool { serial1 = meridianSerial(t, primary); return serial1 != prev }, 5*time.Second, 2*time.Millisecond)
		atMeridian = append(atMeridian, time.Since(start))
		assert.Equal(t, fmt.Sprint(mustAtoi(t, prev)+1), serial1, "a content change bumps the serial by one")
		took := waitServes(t, secs, start, serial1, app, web, 10*time.Second)
		for name, d := range took {
			lat[name] = append(lat[name], d)
			assert.Less(t, d, 3*time.Second, "%s took longer than one NOTIFY round", name)
		}
	}
	for _, name := range []string{"named", "knotd"} {
		t.Logf("failover → %s serving the new serial and records: %s (meridian itself: %s)", name, spread(lat[name]), spread(atMeridian))
	}
	if os.Getenv("XFR_E2E_LOGS") != "" {
		t.Logf("meridian log:\n%s", grepLines(m.log(), "zone transfer", "NOTIFY", "reloaded", "new serial"))
	}
	// The secondaries pulled the changes incrementally.
	assert.Contains(t, m.log(), "mode=incremental")

	// A reload with the same content keeps the serial.
	m.cmd.Process.Signal(syscall.SIGHUP)
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, serial1, meridianSerial(t, primary))

	// Refusals: no key, wrong key, unknown key, an address not allowed.
	key := "hmac-sha256:xfr-key:" + secret
	wrong := "hmac-sha256:xfr-key:" + base64.StdEncoding.EncodeToString(make([]byte, 32))
	digAXFR := func(args ...string) string {
		return runNoFail("dig", append([]string{"@127.0.0.1", "-p", fmt.Sprint(primary), "+time=2", "+tries=1", "AXFR", "xfr.test"}, args...)...)
	}
	kdigAXFR := func(args ...string) string {
		return runNoFail("kdig", append([]string{"@127.0.0.1", "-p", fmt.Sprint(primary), "+time=2", "+retry=0", "AXFR", "xfr.test"}, args...)...)
	}
	ok := digAXFR("-y", key)
	assert.Contains(t, ok, "192.0.2.12")
	assert.Equal(t, 2, strings.Count(ok, "\tSOA\t"), ok)
	out := kdigAXFR("-y", key)
	assert.Contains(t, out, "192.0.2.12", out)
	for what, out := range map[string]string{
		"dig without key":     digAXFR(),
		"kdig without key":    kdigAXFR(),
		"dig wrong key":       digAXFR("-y", wrong),
		"kdig wrong key":      kdigAXFR("-y", wrong),
		"dig unknown key":     digAXFR("-y", "hmac-sha256:other-key:"+secret),
		"dig from 127.0.0.2":  digAXFR("-b", "127.0.0.2", "-y", key),
		"kdig from 127.0.0.2": kdigAXFR("-b", "127.0.0.2", "-y", key),
	} {
		assert.NotContains(t, out, "192.0.2.12", what)
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "REFUSED") || strings.Contains(l, "NOTAUTH") || strings.Contains(l, "failed") || strings.Contains(l, "BAD") {
				line = strings.TrimSpace(l)
				break
			}
		}
		assert.NotEmpty(t, line, "%s:\n%s", what, out)
		t.Logf("%-20s → %s", what, line)
	}
	mt := m.metrics(t)
	for _, series := range []string{
		`meridian_xfr_requests_total{result="refused_no_tsig",type="axfr",zone="xfr.test"}`,
		`meridian_xfr_requests_total{result="refused_acl",type="axfr",zone="xfr.test"}`,
		`meridian_xfr_requests_total{result="badsig",type="axfr",zone="xfr.test"}`,
		`meridian_xfr_requests_total{result="badkey",type="axfr",zone="xfr.test"}`,
	} {
		assert.GreaterOrEqual(t, metricValue(t, mt, series), 1.0, series)
	}
	assert.GreaterOrEqual(t, metricValue(t, mt, `meridian_xfr_notify_total{result="ok",zone="xfr.test"}`), 2.0)
	assert.Equal(t, float64(mustAtoi(t, serial1)), metricValue(t, mt, `meridian_xfr_zone_serial{zone="xfr.test"}`))

	// A restart with unchanged content keeps the serial (state file).
	m.stop(t)
	m = startMeridian(t, cfg("down"), fixed...)
	assert.Equal(t, serial1, meridianSerial(t, primary))
	// A restart with changed content bumps it; the secondaries follow (an
	// IXFR answered in AXFR form: the new process has no history).
	m.stop(t)
	restarted := time.Now()
	m = startMeridian(t, cfg("up"), fixed...)
	serial2 := meridianSerial(t, primary)
	assert.Equal(t, fmt.Sprint(mustAtoi(t, serial1)+1), serial2)
	took = waitServes(t, secs, restarted, serial2, []string{"192.0.2.1", "192.0.2.2"}, []string{"192.0.2.11"}, 10*time.Second)
	t.Logf("restart with changed content: serial %s -> %s; named %v, knotd %v", serial1, serial2, took["named"].Round(time.Millisecond), took["knotd"].Round(time.Millisecond))
	assert.Contains(t, m.log(), "mode=full")
	t.Logf("meridian transfer log:\n%s", grepLines(m.log(), "zone transfer", "NOTIFY"))
}

// spread formats durations as min / median / max over n.
func spread(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return "-"
	}
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	var each []string
	for _, d := range ds {
		each = append(each, r(d).String())
	}
	return fmt.Sprintf("min %v / median %v / max %v over %d (in order: %s)", r(s[0]), r(s[len(s)/2]), r(s[len(s)-1]), len(s), strings.Join(each, " "))
}

func mustAtoi(t *testing.T, s string) uint64 {
	t.Helper()
	var n uint64
	_, err := fmt.Sscan(s, &n)
	require.NoError(t, err, s)
	return n
}

func grepLines(s string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, sub := range subs {
			if strings.Contains(l, sub) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

const xfrHealthConfig = `
zones:
  - apex: xfr.test
    nameservers: [{name: ns1.xfr.test, ipv4: [127.0.0.1]}]
    transfer:
      allow: [127.0.0.1]
      tsig_key_file: %[1]s
      notify: [127.0.0.1:%[2]d]
health: {interval: 1s, timeout: 500ms, fall: 3, rise: 2}
ring: {enabled: true, node_name: solo, region: r1, bind: "127.0.0.1:%[3]d"}
decision: {hold_down: 2s}
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
services:
  - name: app.xfr.test
    max_answers: 2
    health_check: {kind: http, port: %[4]d, path: /healthz}
    endpoints:
      - {address: 127.0.0.131, cluster: east}
      - {address: 127.0.0.132, cluster: west}
`

// TestSecondaryFollowsAHealthFailover: a probed endpoint dies, the decision
// takes it out, and Knot (TSIG secondary) serves the zone without it one
// NOTIFY round after the decision.
func TestSecondaryFollowsAHealthFailover(t *testing.T) {
	sbin(t, "knotd")
	dir := t.TempDir()
	raw := make([]byte, 32)
	rand.Read(raw)
	secret := base64.StdEncoding.EncodeToString(raw)
	keyFile := filepath.Join(dir, "xfr.key")
	require.NoError(t, os.WriteFile(keyFile, []byte("hmac-sha256:xfr-key:"+secret+"\n"), 0o600))
	hcPort := freePort(t)
	backends := map[string]*backend{}
	for _, a := range []string{"127.0.0.131", "127.0.0.132"} {
		backends[a] = startBackend(t, fmt.Sprintf("%s:%d", a, hcPort))
	}
	primary, knotPort := freePort(t), freePort(t)
	m := startMeridian(t, fmt.Sprintf(xfrHealthConfig, keyFile, knotPort, freePort(t), hcPort), "--dns-listen", fmt.Sprintf("127.0.0.1:%d", primary))
	knotDir := filepath.Join(dir, "knot")
	require.NoError(t, os.MkdirAll(knotDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(knotDir, "knot.conf"), []byte(fmt.Sprintf(knotConf, knotDir, knotPort, secret, primary)), 0o644))
	knot := startSecondary(t, "knotd", knotPort, "-c", filepath.Join(knotDir, "knot.conf"))
	both := []string{"127.0.0.131", "127.0.0.132"}
	require.Eventually(t, func() bool { return slices.Equal(knot.query("app.xfr.test", "A"), both) }, 30*time.Second, 50*time.Millisecond,
		"knot serves both endpoints:\n%s", m.log())

	require.NoError(t, backends["127.0.0.131"].srv.Close())
	killed := time.Now()
	decided := waitDecidedDown(t, m, "app.xfr.test. 127.0.0.131")
	require.Eventually(t, func() bool { return slices.Equal(knot.query("app.xfr.test", "A"), []string{"127.0.0.132"}) }, 10*time.Second, 10*time.Millisecond,
		"knot follows the failover:\n%s", m.log())
	served := time.Now()
	t.Logf("FIGURE xfr health failover: endpoint killed → decided down %s; decision → Knot serving the zone without it %s (one NOTIFY round)",
		decided.Sub(killed).Round(10*time.Millisecond), served.Sub(decided).Round(time.Millisecond))
	assert.Less(t, served.Sub(decided), 3*time.Second)
}
