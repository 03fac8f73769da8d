package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/meridian-gslb/meridian/internal/api"
)

const (
	zone    = "failover.bench.meridian.test"
	svcName = "svc." + zone
)

// ------------------------------------------------------------ processes ----

// proc is one server process started by the benchmark.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	exited  chan struct{} // closed when the process has exited
	exitErr error         // valid once exited is closed
}

// startProc starts argv with its output appended to logPath. The process
// gets SIGKILL when the benchmark dies without cleaning up.
func startProc(name, logPath string, argv ...string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	p := &proc{name: name, logPath: logPath, logFile: f, exited: make(chan struct{})}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: start %s: %w", name, argv[0], err)
	}
	go func() {
		p.exitErr = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// alive returns an error with the last log lines when the process has exited.
func (p *proc) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited unexpectedly (%v); last log lines:\n%s", p.name, p.exitErr, tail(p.logPath, 20))
	default:
		return nil
	}
}

// stop sends SIGTERM, waits up to grace, then SIGKILL.
func (p *proc) stop(grace time.Duration) { stopProcs(grace, p) }

// stopProcs sends SIGTERM to every process at once, waits up to grace for
// them all, then kills what is left. Nil entries are skipped.
func stopProcs(grace time.Duration, ps ...*proc) {
	for _, p := range ps {
		if p != nil {
			p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	deadline := time.Now().Add(grace)
	for _, p := range ps {
		if p == nil {
			continue
		}
		select {
		case <-p.exited:
		case <-time.After(time.Until(deadline)):
			p.cmd.Process.Kill()
			<-p.exited
		}
		p.logFile.Close()
	}
}

// tail returns the last n lines of a file, indented.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "    (" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

// portFree fails, naming the variable to change, when a port is taken.
func portFree(hostport string, udp bool) error {
	if udp {
		c, err := net.ListenPacket("udp4", hostport)
		if err != nil {
			return fmt.Errorf("port %s/udp is taken (set BENCH_FAILOVER_BASE_PORT to move every port): %w", hostport, err)
		}
		return c.Close()
	}
	l, err := net.Listen("tcp4", hostport)
	if err != nil {
		return fmt.Errorf("port %s/tcp is taken (set BENCH_FAILOVER_BASE_PORT to move every port): %w", hostport, err)
	}
	return l.Close()
}

// -------------------------------------------------------------- PowerDNS ----

// pdnsSettings are the only settings the PowerDNS side sets; everything
// else, lua-health-checks-interval (5 s) included, is PowerDNS's default.
// loglevel 6 only adds the "Lua record monitoring declaring … UP/DOWN"
// lines to its log.
const pdnsSettings = `launch=bind
bind-config=%s
enable-lua-records=yes
local-address=127.0.0.1
local-port=%d
webserver=no
api=no
security-poll-suffix=
loglevel=6
`

// pdnsZone is the zone PowerDNS serves: the service is one LUA record
// checking both backends with ifurlup at its defaults (timeout 2 s; the
// interval is lua-health-checks-interval), selector 'all' so that every
// answer holds every backend it considers up (the default, 'random',
// answers one of them; the health checking is the same).
func pdnsZone(port int, backends []string) string {
	quoted := make([]string, len(backends))
	for i, a := range backends {
		quoted[i] = "'" + a + "'"
	}
	return fmt.Sprintf(`$ORIGIN %[1]s.
$TTL 30
@    3600 IN SOA ns1.%[1]s. hostmaster.%[1]s. 1 3600 600 1209600 30
@    3600 IN NS  ns1.%[1]s.
ns1  3600 IN A   127.0.0.1
svc    5 IN LUA A "ifurlup('http://%[2]s:%[3]d/healthz', {%[4]s}, {selector='all'})"
%[5]s`, zone, svcName, port, strings.Join(quoted, ", "), pdnsClientRecords(port, backends))
}

// findPdns returns the pdns_server binary, installing pdns-server and
// pdns-backend-bind with apt-get when they are missing (as bench/run.sh does).
func findPdns(ctx context.Context, explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	need := func() []string {
		var pkgs []string
		if _, err := exec.LookPath("pdns_server"); err != nil {
			if _, err := os.Stat("/usr/sbin/pdns_server"); err != nil {
				pkgs = append(pkgs, "pdns-server")
			}
		}
		m1, _ := filepath.Glob("/usr/lib/*/pdns/libbindbackend.so")
		m2, _ := filepath.Glob("/usr/lib/pdns/libbindbackend.so")
		if len(m1)+len(m2) == 0 {
			pkgs = append(pkgs, "pdns-backend-bind")
		}
		return pkgs
	}
	if pkgs := need(); len(pkgs) > 0 {
		logf("installing missing Debian packages: %s", strings.Join(pkgs, " "))
		if _, err := exec.LookPath("apt-get"); err != nil {
			return "", fmt.Errorf("missing %s and no apt-get here: install them, set PDNS_SERVER, or leave pdns out of BENCH_FAILOVER_SERVERS", strings.Join(pkgs, " "))
		}
		var prefix []string
		if os.Geteuid() != 0 {
			prefix = []string{"sudo", "-n"}
		}
		env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		for _, args := range [][]string{
			{"apt-get", "update", "-qq"},
			append([]string{"apt-get", "install", "-y", "-qq", "--no-install-recommends", "-o", "Dpkg::Use-Pty=0"}, pkgs...),
		} {
			argv := append(append([]string{}, prefix...), args...)
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				return "", fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, tailString(string(out), 10))
			}
		}
		if pkgs := need(); len(pkgs) > 0 {
			return "", fmt.Errorf("still missing after apt-get install: %s", strings.Join(pkgs, " "))
		}
	}
	if p, err := exec.LookPath("pdns_server"); err == nil {
		return p, nil
	}
	return "/usr/sbin/pdns_server", nil
}

func tailString(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// startPdns writes the zone and settings into dir and starts pdns_server.
func (b *bench) startPdns() error {
	dir := filepath.Join(b.tmp, "pdns")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var addrs []string
	for _, be := range b.backends {
		addrs = append(addrs, be.addr.Addr().String())
	}
	files := map[string]string{
		zone + ".zone": pdnsZone(b.p.BasePort, addrs),
		"named.conf":   fmt.Sprintf("options { directory \"%s\"; };\nzone \"%s\" { type master; file \"%s\"; };\n", dir, zone, filepath.Join(dir, zone+".zone")),
		"pdns.conf":    fmt.Sprintf(pdnsSettings, filepath.Join(dir, "named.conf"), b.port(portPdns)),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	p, err := startProc("pdns", filepath.Join(b.tmp, "pdns.log"), b.pdnsBin,
		"--config-dir="+dir, "--socket-dir="+dir, "--daemon=no", "--guardian=no", "--disable-syslog", "--write-pid=no")
	if err != nil {
		return err
	}
	b.pdns = p
	return nil
}

func (b *bench) pdnsVersion() string {
	out, _ := exec.Command(b.pdnsBin, "--version").CombinedOutput()
	if m := regexp.MustCompile(`Server (\d+\.\d+\.\d+)`).FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return "unknown"
}

// -------------------------------------------------------------- Meridian ----

// mnode is one `meridian serve` process: the one-node ring ("meridian") or
// a node of the two-node ring ("ring-a", "ring-b").
type mnode struct {
	name, region  string
	dns, http, gw string // listen addresses: DNS, HTTP, gossip
	idPath        string // ring identity (kept across restarts: it is no decision state)
	peer          string // its ring.peers entry
	ring          []*mnode
	proc          *proc
}

// meridianConfig is a node's YAML: only what is required (listeners, the
// zone, a one-node or two-node ring, the two clusters the endpoints need, the
// service with an http health_check), so every health and decision setting
// is Meridian's default. max_answers: 2 makes every answer hold every
// backend Meridian considers up (the default, 1, answers one of them).
func (b *bench) meridianConfig(n *mnode, stateDir string) string {
	var s strings.Builder
	fmt.Fprintf(&s, `# bench/failover: %s (written by go run ./bench/failover)
server:
  dns: {listen: ["%s"]}
  http: {listen: "%s"}
  log: {format: text, level: info}
  state_dir: "%s"
zones:
  - apex: %s
    nameservers:
      - {name: ns1.%s, ipv4: [127.0.0.1]}
ring:
  enabled: true
  node_name: %s
  region: %s
  bind: "%s"
`, n.name, n.dns, n.http, stateDir, zone, zone, n.name, n.region, n.gw)
	if len(n.ring) > 1 {
		var seeds, peers []string
		for _, o := range n.ring {
			if o != n {
				seeds = append(seeds, `"`+o.gw+`"`)
			}
			peers = append(peers, "    "+o.peer)
		}
		fmt.Fprintf(&s, "  seeds: [%s]\n  key_file: \"%s\"\n  identity_file: \"%s\"\n  peers:\n%s\n",
			strings.Join(seeds, ", "), b.keyPath, n.idPath, strings.Join(peers, "\n"))
	}
	s.WriteString("clusters:\n")
	for _, be := range b.backends {
		fmt.Fprintf(&s, "  - {name: site-%s, region: site-%s}\n", strings.ToLower(be.name), strings.ToLower(be.name))
	}
	fmt.Fprintf(&s, "services:\n  - name: %s\n    max_answers: %d\n    health_check: {kind: http, port: %d, path: /healthz}\n    endpoints:\n",
		svcName, len(b.backends), b.p.BasePort)
	for _, be := range b.backends {
		fmt.Fprintf(&s, "      - {address: %s, cluster: site-%s}\n", be.addr.Addr(), strings.ToLower(be.name))
	}
	if slices.Contains(b.p.Scenarios, "clients") && n.name == "meridian" {
		s.WriteString(b.meridianClientServices())
	}
	return s.String()
}

// setupMeridian creates the nodes, the ring's key and identities, and
// checks one config of each kind with `meridian check-config`.
func (b *bench) setupMeridian(ctx context.Context) error {
	if b.has("meridian") {
		b.mnodes = append(b.mnodes, &mnode{name: "meridian", region: "r1",
			dns: b.addr(portMeridian), http: b.addr(portMeridian + 1), gw: b.addr(portMeridian + 2)})
		b.mnodes[len(b.mnodes)-1].ring = b.mnodes[len(b.mnodes)-1:]
	}
	if b.has("meridian-ring") {
		key, err := exec.CommandContext(ctx, b.bin, "ring", "keygen").Output()
		if err != nil {
			return fmt.Errorf("meridian ring keygen: %w", err)
		}
		b.keyPath = filepath.Join(b.tmp, "ring.key")
		if err := os.WriteFile(b.keyPath, key, 0o600); err != nil {
			return err
		}
		var ring []*mnode
		for i, name := range []string{"ring-a", "ring-b"} {
			base := portRing + 10*i
			n := &mnode{name: name, region: fmt.Sprintf("r%d", i+1),
				dns: b.addr(base), http: b.addr(base + 1), gw: b.addr(base + 2),
				idPath: filepath.Join(b.tmp, name+".identity.pem")}
			out, err := exec.CommandContext(ctx, b.bin, "ring", "identity", "--file", n.idPath, "--name", n.name, "--role", "prober", "--region", n.region).Output()
			if err != nil {
				return fmt.Errorf("meridian ring identity: %w", err)
			}
			for l := range strings.Lines(string(out)) {
				if strings.HasPrefix(l, "- ") {
					n.peer = strings.TrimSpace(l)
				}
			}
			if n.peer == "" {
				return fmt.Errorf("meridian ring identity printed no ring.peers entry:\n%s", out)
			}
			ring = append(ring, n)
		}
		for _, n := range ring {
			n.ring = ring
		}
		b.mnodes = append(b.mnodes, ring...)
	}
	for _, n := range b.mnodes {
		if n != n.ring[0] {
			continue
		}
		path := filepath.Join(b.tmp, n.name+"-check.yaml")
		if err := os.WriteFile(path, []byte(b.meridianConfig(n, filepath.Join(b.tmp, "check-state"))), 0o644); err != nil {
			return err
		}
		if out, err := exec.CommandContext(ctx, b.bin, "check-config", path).CombinedOutput(); err != nil {
			return fmt.Errorf("meridian check-config %s: %w\n%s", path, err, out)
		}
	}
	return nil
}

// restartMeridian stops every Meridian node and starts it again with an
// empty state directory, so each trial is a first failure after a healthy
// period: Meridian remembers failures (the hold-down doubles per failure
// until the endpoint has been up for hold_down_max, 300 s) where PowerDNS
// keeps no such memory.
func (b *bench) restartMeridian() error {
	var ps []*proc
	for _, n := range b.mnodes {
		ps = append(ps, n.proc)
		n.proc = nil
	}
	stopProcs(5*time.Second, ps...)
	b.gen++
	for _, n := range b.mnodes {
		dir := filepath.Join(b.tmp, fmt.Sprintf("%s-%02d", n.name, b.gen))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		cfg := filepath.Join(dir, "meridian.yaml")
		if err := os.WriteFile(cfg, []byte(b.meridianConfig(n, filepath.Join(dir, "state"))), 0o644); err != nil {
			return err
		}
		p, err := startProc(n.name, filepath.Join(b.tmp, n.name+".log"), b.bin, "serve", "--config", cfg)
		if err != nil {
			return err
		}
		n.proc = p
	}
	return nil
}

var httpc = &http.Client{Timeout: 2 * time.Second}

// health reads a node's /v1/health.
func (n *mnode) health(ctx context.Context) (api.HealthReport, error) {
	var r api.HealthReport
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.http+"/v1/health", nil)
	if err != nil {
		return r, err
	}
	resp, err := httpc.Do(req)
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return r, err
	}
	if resp.StatusCode != http.StatusOK {
		return r, fmt.Errorf("GET /v1/health: status %d", resp.StatusCode)
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&r); err != nil {
		return r, fmt.Errorf("GET /v1/health: %w", err)
	}
	return r, nil
}

// settledHealth reports whether a node decided every endpoint up on fresh
// votes from every prober of its ring, and if not, why.
func (n *mnode) settledHealth(ctx context.Context) error {
	r, err := n.health(ctx)
	if err != nil {
		return err
	}
	probers := 0
	for _, p := range r.Probers {
		if p.Role == "prober" {
			probers++
		}
	}
	if probers != len(n.ring) {
		return fmt.Errorf("%d prober members, want %d", probers, len(n.ring))
	}
	if len(r.Endpoints) == 0 {
		return errors.New("no endpoints in /v1/health")
	}
	for _, e := range r.Endpoints {
		fresh := 0
		for _, v := range e.Votes {
			if v.Fresh && v.Status == "up" {
				fresh++
			}
		}
		if e.State != "up" || fresh != len(n.ring) {
			return fmt.Errorf("endpoint %s: %s with %d fresh up votes (want up with %d)", e.Target, e.State, fresh, len(n.ring))
		}
	}
	return nil
}

func (b *bench) meridianVersion() string {
	out, _ := exec.Command(b.bin, "version").Output()
	// "meridian VERSION (goX.Y os/arch)"
	if f := strings.Fields(string(out)); len(f) >= 2 {
		return f[1]
	}
	return "unknown"
}
