package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/meridian-gslb/meridian/bench/internal/benchenv"
)

const zone = "ring.bench.meridian.test"

// node is one `meridian serve` process of the ring.
type node struct {
	name, region string
	dnsAddr      string // server.dns.listen
	httpAddr     string // server.http.listen
	gossipAddr   string // ring.bind
	cfgPath      string
	keyPath      string
	idPath       string // ring identity
	logPath      string
	logFile      *os.File
	cmd          *exec.Cmd
	exited       chan struct{} // closed when the process has exited
	exitErr      error         // valid once exited is closed
	logOffset    int64         // log size when the benchmark started stopping the nodes
}

// bench is one run: the backend, the nodes and what was measured.
type bench struct {
	p       params
	root    string
	tmp     string
	bin     string
	backend *backend
	nodes   []*node
	rep     *report
}

// run does the whole benchmark; the caller stops the processes afterwards.
func (b *bench) run(ctx context.Context) error {
	if err := b.build(ctx); err != nil {
		return err
	}
	var err error
	if b.tmp, err = os.MkdirTemp("", "meridian-bench-ring-"); err != nil {
		return err
	}
	if err := b.checkPorts(); err != nil {
		return err
	}
	if b.backend, err = startBackend(b.p.BasePort); err != nil {
		return err
	}
	if err := b.backend.check(ctx, endpointAddr(b.p.Endpoints-1), b.p.BasePort); err != nil {
		return err
	}
	if err := b.writeConfigs(ctx); err != nil {
		return err
	}
	t0 := time.Now()
	if err := b.startNodes(ctx); err != nil {
		return err
	}
	logf("%d nodes started; waiting up to %v for %d members and %d endpoints decided up on every node", len(b.nodes), b.p.ConvergeTimeout, b.p.Probers, b.p.Endpoints)
	if err := b.converge(ctx, t0); err != nil {
		return err
	}
	if b.p.Warmup > 0 {
		logf("warm-up %v", b.p.Warmup)
		if err := benchenv.Sleep(ctx, b.p.Warmup); err != nil {
			return err
		}
		if err := b.checkAlive(); err != nil {
			return err
		}
	}
	if err := b.settle(ctx, t0); err != nil {
		return err
	}
	logf("steady state: measuring %v", b.p.Window)
	w, err := b.window(ctx, b.p.Window, nil)
	if err != nil {
		return fmt.Errorf("steady window: %w", err)
	}
	b.rep.steady = w
	b.rep.meridianVersion = w.Nodes[0].raw.end.met.Label("meridian_build_info", "version")
	b.rep.meridianGo = w.Nodes[0].raw.end.met.Label("meridian_build_info", "goversion")
	b.rep.afterSteady = b.pollAll(ctx, nil)
	if b.p.Churn {
		if err := b.churn(ctx); err != nil {
			return err
		}
	}
	if b.p.Restart {
		return b.restart(ctx)
	}
	return nil
}

// build sets b.bin: MERIDIAN_BIN, or bin/meridian built like `make build`.
func (b *bench) build(ctx context.Context) error {
	if b.p.Bin != "" {
		abs, err := filepath.Abs(b.p.Bin)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("MERIDIAN_BIN: %w", err)
		}
		b.bin = abs
		return nil
	}
	ver := "dev"
	if out, err := exec.CommandContext(ctx, "git", "-C", b.root, "describe", "--tags", "--always", "--dirty").Output(); err == nil {
		ver = strings.TrimSpace(string(out))
	}
	b.bin = filepath.Join(b.root, "bin", "meridian")
	logf("go build -o bin/meridian ./cmd/meridian (version %s)", ver)
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags", "-X github.com/meridian-gslb/meridian/internal/app.Version="+ver, "-o", b.bin, "./cmd/meridian")
	cmd.Dir, cmd.Stdout, cmd.Stderr = b.root, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/meridian: %w", err)
	}
	return nil
}

// Ports: backend BasePort; node i (0-based) DNS BasePort+100+i, HTTP +200+i, gossip +300+i.
func (b *bench) port(kind, i int) int { return b.p.BasePort + kind*100 + i }

// checkPorts fails early, with the variable to change, when a port is taken.
func (b *bench) checkPorts() error {
	try := func(network, addr string) error {
		if network == "udp" {
			c, err := net.ListenPacket("udp4", addr)
			if err != nil {
				return err
			}
			return c.Close()
		}
		l, err := net.Listen("tcp4", addr)
		if err != nil {
			return err
		}
		return l.Close()
	}
	for i := range b.p.Probers {
		for _, k := range []int{1, 2, 3} {
			addr := fmt.Sprintf("127.0.0.1:%d", b.port(k, i))
			for _, nw := range []string{"tcp", "udp"} {
				if k == 2 && nw == "udp" {
					continue
				}
				if err := try(nw, addr); err != nil {
					return fmt.Errorf("port %s/%s is taken (set BENCH_RING_BASE_PORT to move every port): %w", addr, nw, err)
				}
			}
		}
	}
	return nil
}

// writeConfigs writes one key file and one config per node, and checks the
// first config with `meridian check-config`.
func (b *bench) writeConfigs(ctx context.Context) error {
	key, err := exec.CommandContext(ctx, b.bin, "ring", "keygen").Output()
	if err != nil {
		return fmt.Errorf("meridian ring keygen: %w", err)
	}
	seed := fmt.Sprintf("127.0.0.1:%d", b.port(3, 0))
	var peers []string // ring.peers: every prober, from `meridian ring identity`
	for i := range b.p.Probers {
		n := &node{
			name:       fmt.Sprintf("p%d", i+1),
			region:     fmt.Sprintf("r%d", i%b.p.Regions+1),
			dnsAddr:    fmt.Sprintf("127.0.0.1:%d", b.port(1, i)),
			httpAddr:   fmt.Sprintf("127.0.0.1:%d", b.port(2, i)),
			gossipAddr: fmt.Sprintf("127.0.0.1:%d", b.port(3, i)),
		}
		n.cfgPath = filepath.Join(b.tmp, n.name+".yaml")
		n.keyPath = filepath.Join(b.tmp, n.name+".key")
		n.logPath = filepath.Join(b.tmp, n.name+".log")
		n.idPath = filepath.Join(b.tmp, n.name+".identity.pem")
		if err := os.WriteFile(n.keyPath, key, 0o600); err != nil {
			return err
		}
		entry, err := exec.CommandContext(ctx, b.bin, "ring", "identity", "--file", n.idPath, "--name", n.name, "--role", "prober", "--region", n.region).Output()
		if err != nil {
			return fmt.Errorf("meridian ring identity: %w", err)
		}
		for _, l := range strings.Split(string(entry), "\n") {
			if strings.HasPrefix(l, "- ") {
				peers = append(peers, "    "+l)
			}
		}
		b.nodes = append(b.nodes, n)
	}
	for _, n := range b.nodes {
		if err := os.WriteFile(n.cfgPath, []byte(b.config(n, seed, strings.Join(peers, "\n"))), 0o644); err != nil {
			return err
		}
	}
	out, err := exec.CommandContext(ctx, b.bin, "check-config", b.nodes[0].cfgPath).CombinedOutput()
	if err != nil {
		return fmt.Errorf("meridian check-config %s: %w\n%s", b.nodes[0].cfgPath, err, out)
	}
	return nil
}

// config is node n's YAML: the same zone, clusters and services on every
// node; its own listeners, name, region and key file.
func (b *bench) config(n *node, seed, peers string) string {
	var s strings.Builder
	fmt.Fprintf(&s, `# bench/ring: prober %s of %d (written by go run ./bench/ring)
server:
  dns: {listen: ["%s"]}
  http: {listen: "%s"}
  log: {format: text, level: warn}
  state_dir: "%s"
zones:
  - apex: %s
    nameservers:
      - {name: ns1.%s, ipv4: [127.0.0.1]}
health:
  interval: %s
ring:
  enabled: true
  node_name: %s
  region: %s
  bind: "%s"
  seeds: ["%s"]
  key_file: "%s"
  require_encryption: true
  identity_file: "%s"
  peers:
%s
clusters:
`, n.name, b.p.Probers, n.dnsAddr, n.httpAddr, filepath.Join(b.tmp, n.name+".state"), zone, zone, b.p.Interval, n.name, n.region, n.gossipAddr, seed, n.keyPath, n.idPath, peers)
	const clusters = 5
	for c := range clusters {
		fmt.Fprintf(&s, "  - {name: site%d, region: site%d}\n", c+1, c+1)
	}
	s.WriteString("services:\n")
	for e := 0; e < b.p.Endpoints; e += b.p.PerService {
		fmt.Fprintf(&s, "  - name: s%04d.%s\n    strategy: weighted\n    health_check: {kind: http, port: %d, path: /healthz}\n    endpoints:\n",
			e/b.p.PerService, zone, b.p.BasePort)
		for i := e; i < min(e+b.p.PerService, b.p.Endpoints); i++ {
			fmt.Fprintf(&s, "      - {address: %s, cluster: site%d, weight: 100}\n", endpointAddr(i), (i-e)%clusters+1)
		}
	}
	return s.String()
}

// startNodes starts the seed node, waits for its /readyz, then the others.
func (b *bench) startNodes(ctx context.Context) error {
	for i, n := range b.nodes {
		if err := b.start(n); err != nil {
			return err
		}
		if i == 0 || i == len(b.nodes)-1 {
			if err := b.waitReady(ctx, b.nodes[:i+1]); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *bench) start(n *node) error {
	f, err := os.OpenFile(n.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	n.logFile = f
	// The harness's HTTP server stands for the endpoints, which in a real
	// ring run on other machines: the probers run at a lower priority so
	// that, on a small machine, they cannot starve it (it would drop SYNs
	// and the benchmark would measure the harness, not the ring).
	if b.p.Nice > 0 {
		n.cmd = exec.Command("nice", "-n", strconv.Itoa(b.p.Nice), b.bin, "serve", "--config", n.cfgPath)
	} else {
		n.cmd = exec.Command(b.bin, "serve", "--config", n.cfgPath)
	}
	n.cmd.Stdout, n.cmd.Stderr = f, f
	// Die with the benchmark even when it is killed without a chance to clean up.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := n.cmd.Start(); err != nil {
		return fmt.Errorf("node %s: start: %w", n.name, err)
	}
	cmd, exited := n.cmd, make(chan struct{})
	n.exited = exited
	go func() {
		n.exitErr = cmd.Wait()
		close(exited)
	}()
	return nil
}

// checkAlive reports the first node that has exited, with its last log lines.
func (b *bench) checkAlive() error {
	for _, n := range b.nodes {
		select {
		case <-n.exited:
			return fmt.Errorf("node %s exited unexpectedly (%v); last log lines:\n%s", n.name, n.exitErr, tail(n.logPath, 30))
		default:
		}
	}
	return nil
}

// waitReady waits (at most 30 s) until every node of ns answers /readyz 200.
func (b *bench) waitReady(ctx context.Context, ns []*node) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range ns {
		for {
			if err := b.checkAlive(); err != nil {
				return err
			}
			_, err := get(ctx, "http://"+n.httpAddr+"/readyz")
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("node %s: /readyz not 200 after 30 s: %w; last log lines:\n%s", n.name, err, tail(n.logPath, 20))
			}
			if err := benchenv.Sleep(ctx, 200*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

// stopAll sends SIGTERM to every node, waits up to 10 s, then kills what is left.
func (b *bench) stopAll() {
	for _, n := range b.nodes {
		if fi, err := os.Stat(n.logPath); err == nil {
			n.logOffset = fi.Size()
		}
	}
	for _, n := range b.nodes {
		if n.cmd != nil && n.cmd.Process != nil {
			n.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	deadline := time.After(10 * time.Second)
	for _, n := range b.nodes {
		if n.cmd == nil || n.cmd.Process == nil {
			continue
		}
		if n.logFile == nil {
			continue
		}
		select {
		case <-n.exited:
		case <-deadline:
			logf("node %s did not stop within 10 s of SIGTERM: killing it", n.name)
			n.cmd.Process.Kill()
			<-n.exited
		}
		n.logFile.Close()
	}
	if b.backend != nil {
		b.backend.close()
	}
}

// collectLogs copies each node's log to bench/results/ring-logs/ and scans
// it for warnings and errors.
func (b *bench) collectLogs() {
	dir := filepath.Join(filepath.Dir(b.p.Out), "ring-logs")
	if len(b.nodes) > 0 {
		os.RemoveAll(dir)
		os.MkdirAll(dir, 0o755)
	}
	for _, n := range b.nodes {
		data, err := os.ReadFile(n.logPath)
		if err != nil {
			continue
		}
		os.WriteFile(filepath.Join(dir, n.name+".log"), data, 0o644)
		b.rep.logs = append(b.rep.logs, scanLog(n.name, data, n.logOffset, expectedWarns(b.p)))
	}
	b.rep.logDir = dir
}

func (b *bench) removeTmp(failed bool) {
	if b.tmp == "" {
		return
	}
	if b.p.KeepTmp {
		logf("kept %s (configs, keys, logs)", b.tmp)
		return
	}
	if failed {
		logf("configs and logs kept in %s", b.tmp)
		return
	}
	os.RemoveAll(b.tmp)
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}
