// Command failover measures, side by side on the same loopback backends,
// how fast Meridian and PowerDNS (Lua records with ifurlup) take a failed
// backend out of their DNS answers and put it back, at each one's default
// settings: kill (connection refused) → out, restart → back, blackhole
// (requests never answered) → out, a 2 s up / 2 s down flap, and 10 % loss
// (false downs). Every server is queried every 50 ms with a real DNS client.
//
//	go run ./bench/failover          # or: make bench-failover
//
// Every parameter comes from a BENCH_FAILOVER_* environment variable (see
// README.md). The result is a table on stdout and in
// bench/results/failover.txt, with every trial in bench/results/failover.json.
// Every process it starts is stopped on exit, error or Ctrl-C, and every wait
// is bounded.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/meridian-gslb/meridian/bench/internal/benchenv"
)

// params of one run; every field has a BENCH_FAILOVER_* variable.
type params struct {
	Trials       int           // kill/restart and blackhole trials (default 5)
	Servers      []string      // pdns, meridian (one-node ring), meridian-ring (two nodes, two regions)
	Scenarios    []string      // kill, blackhole, flap, loss
	Poll         time.Duration // DNS query period per server (default 50ms)
	Stable       time.Duration // a server is done once its answers stayed settled this long (default 1500ms)
	ReadyTimeout time.Duration // before each trial: every server answers both backends (default 90s)
	OutTimeout   time.Duration // bound of kill/blackhole → out (default 90s)
	BackTimeout  time.Duration // bound of restart → back (default 120s)
	FlapFor      time.Duration // flap duration (default 60s)
	FlapUp       time.Duration // up phase (default 2s)
	FlapDown     time.Duration // down phase (default 2s)
	LossFor      time.Duration // loss duration (default 60s)
	LossPercent  int           // share of requests lost (default 10)
	Tail         time.Duration // after flap/loss: changes still counted this long (default 5s)
	BasePort     int           // backends' port; DNS/HTTP/gossip ports above it (default 17600)
	Bin          string        // meridian binary (default: build bin/meridian)
	Pdns         string        // pdns_server binary (default: from PATH, installed when missing)
	Out          string        // result path without extension (default bench/results/failover)
	KeepTmp      bool          // keep the temporary directory

	// The clients scenario (clients.go).
	Resolvers     int           // Unbound resolvers per server, each its own cache (default 4)
	GoClients     int           // Go HTTP clients per resolver and name (default 2)
	CurlClients   bool          // one curl client per name (default true; needs root for unshare --mount)
	ClientPeriod  time.Duration // a Go client's request period (default 100ms)
	CurlPeriod    time.Duration // the curl client's request period (default 250ms)
	ClientWindow  time.Duration // fault → its end: the window whose failed requests count (default 60s)
	ClientFaults  []string      // kill, blackhole, flap (default all, each Trials times)
	ClientTimeout time.Duration // a client request's bound, every address of the answer included (default 5s)
}

var (
	allServers   = []string{"pdns", "meridian", "meridian-ring"}
	allScenarios = []string{"kill", "blackhole", "flap", "loss", "clients"}
)

// Port offsets from BasePort (the backends' HTTP port).
const (
	portPdns     = 1  // PowerDNS DNS
	portMeridian = 11 // one-node ring: DNS, HTTP, gossip at +11, +12, +13
	portRing     = 21 // two-node ring: node a at +21..23, node b at +31..33
)

func loadParams() (params, error) {
	env := &benchenv.Env{}
	geti, getd, getb := env.Int, env.Duration, env.Bool
	getl := env.List
	p := params{
		Trials:        geti("BENCH_FAILOVER_TRIALS", 5, 1, 50),
		Servers:       getl("BENCH_FAILOVER_SERVERS", allServers),
		Scenarios:     getl("BENCH_FAILOVER_SCENARIOS", allScenarios),
		Poll:          getd("BENCH_FAILOVER_POLL", 50*time.Millisecond, 10*time.Millisecond),
		Stable:        getd("BENCH_FAILOVER_STABLE", 1500*time.Millisecond, 100*time.Millisecond),
		ReadyTimeout:  getd("BENCH_FAILOVER_READY_TIMEOUT", 90*time.Second, time.Second),
		OutTimeout:    getd("BENCH_FAILOVER_OUT_TIMEOUT", 90*time.Second, time.Second),
		BackTimeout:   getd("BENCH_FAILOVER_BACK_TIMEOUT", 120*time.Second, time.Second),
		FlapFor:       getd("BENCH_FAILOVER_FLAP_SECONDS", 60*time.Second, time.Second),
		FlapUp:        getd("BENCH_FAILOVER_FLAP_UP", 2*time.Second, 100*time.Millisecond),
		FlapDown:      getd("BENCH_FAILOVER_FLAP_DOWN", 2*time.Second, 100*time.Millisecond),
		LossFor:       getd("BENCH_FAILOVER_LOSS_SECONDS", 60*time.Second, time.Second),
		LossPercent:   geti("BENCH_FAILOVER_LOSS_PERCENT", 10, 1, 100),
		Tail:          getd("BENCH_FAILOVER_TAIL", 5*time.Second, 0),
		BasePort:      geti("BENCH_FAILOVER_BASE_PORT", 17600, 1024, 65535-40),
		Bin:           os.Getenv("MERIDIAN_BIN"),
		Pdns:          os.Getenv("PDNS_SERVER"),
		Out:           os.Getenv("BENCH_FAILOVER_OUT"),
		KeepTmp:       getb("BENCH_FAILOVER_KEEP_TMP", false),
		Resolvers:     geti("BENCH_FAILOVER_RESOLVERS", 4, 1, 9),
		GoClients:     geti("BENCH_FAILOVER_GO_CLIENTS", 2, 1, 20),
		CurlClients:   getb("BENCH_FAILOVER_CURL", os.Geteuid() == 0),
		ClientPeriod:  getd("BENCH_FAILOVER_CLIENT_PERIOD", 100*time.Millisecond, 10*time.Millisecond),
		CurlPeriod:    getd("BENCH_FAILOVER_CURL_PERIOD", 250*time.Millisecond, 50*time.Millisecond),
		ClientWindow:  getd("BENCH_FAILOVER_CLIENT_WINDOW", 60*time.Second, 5*time.Second),
		ClientFaults:  getl("BENCH_FAILOVER_CLIENT_FAULTS", clientFaults),
		ClientTimeout: getd("BENCH_FAILOVER_CLIENT_TIMEOUT", 5*time.Second, time.Second),
	}
	if len(p.Servers) == 0 {
		env.Add(errors.New("BENCH_FAILOVER_SERVERS: no server"))
	}
	if len(p.Scenarios) == 0 {
		env.Add(errors.New("BENCH_FAILOVER_SCENARIOS: no scenario"))
	}
	return p, env.Err()
}

// bench is one run: the backends, the servers, the poller and the results.
type bench struct {
	p        params
	root     string
	tmp      string
	bin      string
	pdnsBin  string
	keyPath  string
	backends []*backend
	poller   *poller
	pdns     *proc
	mnodes   []*mnode
	gen      int // Meridian restarts, for fresh state directories
	res      *results

	unboundBin    string
	resolvers     []*resolver // the clients scenario's Unbound
	shareResolver *resolver
}

func (b *bench) has(server string) bool { return slices.Contains(b.p.Servers, server) }
func (b *bench) port(off int) int       { return b.p.BasePort + off }
func (b *bench) addr(off int) string    { return fmt.Sprintf("127.0.0.1:%d", b.port(off)) }

func main() { os.Exit(run()) }

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p, err := loadParams()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-failover: %v\n", err)
		return 2
	}
	root, err := benchenv.RepoRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-failover: %v\n", err)
		return 2
	}
	if p.Out == "" {
		p.Out = filepath.Join(root, "bench", "results", "failover")
	}
	b := &bench{p: p, root: root, res: &results{Started: time.Now().UTC(), Params: p, Settings: p.settings(), Machine: machine()}}
	err = b.run(ctx)
	if ctx.Err() != nil && err != nil {
		err = fmt.Errorf("interrupted: %w", err)
	}
	b.stopAll()
	b.collectLogs()
	if err != nil {
		b.res.Error = err.Error()
	}
	b.res.Seconds = time.Since(b.res.Started).Seconds()
	txt := b.res.text()
	fmt.Println()
	fmt.Print(txt)
	if werr := b.res.write(p.Out, txt); werr != nil {
		fmt.Fprintf(os.Stderr, "bench-failover: %v\n", werr)
	} else {
		logf("written to %s.txt and %s.json", p.Out, p.Out)
	}
	b.removeTmp(err != nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-failover: FAILED: %v\n", err)
		return 1
	}
	return 0
}

// run does the whole benchmark; the caller stops the processes afterwards.
func (b *bench) run(ctx context.Context) error {
	if err := b.findBinaries(ctx); err != nil {
		return err
	}
	var err error
	if b.tmp, err = os.MkdirTemp("", "meridian-bench-failover-"); err != nil {
		return err
	}
	addrs, err := b.startBackends()
	if err != nil {
		return err
	}
	b.poller = newPoller(svcName, addrs, b.p.Poll)
	var targets []target
	if b.has("pdns") {
		if err := b.startPdns(); err != nil {
			return err
		}
		targets = append(targets, target{"pdns", b.addr(portPdns)})
	}
	if err := b.setupMeridian(ctx); err != nil {
		return err
	}
	for _, n := range b.mnodes {
		targets = append(targets, target{n.name, n.dns})
	}
	b.res.Targets = make([]string, 0, len(targets))
	for _, t := range targets {
		b.res.Targets = append(b.res.Targets, t.name)
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go b.poller.run(pctx, targets)
	return b.trials(ctx)
}

// findBinaries builds meridian and finds pdns_server, for the servers
// compared, and records their versions.
func (b *bench) findBinaries(ctx context.Context) error {
	if b.has("meridian") || b.has("meridian-ring") {
		if err := b.build(ctx); err != nil {
			return err
		}
		b.res.MeridianVersion = b.meridianVersion()
	}
	if b.has("pdns") {
		bin, err := findPdns(ctx, b.p.Pdns)
		if err != nil {
			return err
		}
		b.pdnsBin = bin
		b.res.PdnsVersion = b.pdnsVersion()
	}
	return nil
}

// startBackends starts the two HTTP backends, A and B, checks that they
// answer and returns their addresses.
func (b *bench) startBackends() ([]netip.Addr, error) {
	for i, name := range []string{"A", "B"} {
		be := newBackend(name, netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, byte(61 + i)}), uint16(b.p.BasePort)))
		b.backends = append(b.backends, be)
	}
	if err := b.checkPorts(); err != nil {
		return nil, err
	}
	for _, be := range b.backends {
		if err := be.start(); err != nil {
			return nil, err
		}
		if err := be.check(); err != nil {
			return nil, err
		}
	}
	var addrs []netip.Addr
	for _, be := range b.backends {
		addrs = append(addrs, be.addr.Addr())
	}
	return addrs, nil
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

// checkPorts fails early, with the variable to change, when a port is taken.
func (b *bench) checkPorts() error {
	for _, be := range b.backends {
		if err := portFree(be.addr.String(), false); err != nil {
			return err
		}
	}
	var offs []int
	if b.has("pdns") {
		offs = append(offs, portPdns)
	}
	if b.has("meridian") {
		offs = append(offs, portMeridian, portMeridian+1, portMeridian+2)
	}
	if b.has("meridian-ring") {
		offs = append(offs, portRing, portRing+1, portRing+2, portRing+10, portRing+11, portRing+12)
	}
	for _, o := range offs {
		for _, udp := range []bool{false, true} {
			if err := portFree(b.addr(o), udp); err != nil {
				return err
			}
		}
	}
	return nil
}

// stopAll stops every server process and backend.
func (b *bench) stopAll() {
	for _, n := range b.mnodes {
		n.proc.stop(10 * time.Second)
		n.proc = nil
	}
	b.pdns.stop(10 * time.Second)
	b.pdns = nil
	for _, r := range append(slices.Clone(b.resolvers), b.shareResolver) {
		if r != nil && r.proc != nil {
			r.proc.stop(5 * time.Second)
			r.proc = nil
		}
	}
	for _, be := range b.backends {
		be.kill()
	}
}

// collectLogs copies the servers' logs to bench/results/failover-logs/.
func (b *bench) collectLogs() {
	if b.tmp == "" {
		return
	}
	logs, _ := filepath.Glob(filepath.Join(b.tmp, "*.log"))
	if len(logs) == 0 {
		return
	}
	dir := b.p.Out + "-logs"
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	for _, l := range logs {
		if data, err := os.ReadFile(l); err == nil {
			os.WriteFile(filepath.Join(dir, filepath.Base(l)), data, 0o644)
		}
	}
}

func (b *bench) removeTmp(failed bool) {
	if b.tmp == "" {
		return
	}
	if b.p.KeepTmp || failed {
		logf("configs and logs kept in %s", b.tmp)
		return
	}
	os.RemoveAll(b.tmp)
}

// logf prints a progress line on stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "==> %s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
