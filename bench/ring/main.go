// Command ring benchmarks Meridian's prober ring at scale: N `meridian
// serve` processes (5 by default, in 3 regions) probe the same endpoints (1000
// by default) over loopback and gossip their votes, and the benchmark measures
// each process from the outside: CPU and memory from /proc, gossip bytes,
// ring messages, probes and decision time from its /metrics. An optional
// churn phase makes 10% of the endpoints fail and times how long every node
// takes to decide them down and, after they recover, up again.
//
//	go run ./bench/ring          # or: make bench-ring
//
// Every parameter comes from a BENCH_RING_* environment variable (see
// README.md). The result is a markdown report on stdout and in
// bench/results/ring-latest.md. Every process it starts is stopped on exit,
// error or Ctrl-C, and every wait is bounded.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/meridian-gslb/meridian/bench/internal/benchenv"
)

// params of one run; every field has a BENCH_RING_* variable.
type params struct {
	Probers         int           // meridian serve processes (default 5)
	Regions         int           // prober regions, assigned round robin (default 3)
	Endpoints       int           // probed endpoints in total (default 1000)
	PerService      int           // endpoints per service (default 10)
	Interval        time.Duration // health.interval (default 5s; timeout, fall and rise keep their defaults)
	Warmup          time.Duration // after convergence, before the steady window (at least; see SettleTimeout) (default 20s)
	Window          time.Duration // steady-state measurement (default 60s)
	Sample          time.Duration // /proc sampling period inside a window (default 5s)
	Churn           bool          // run the churn phase (default true)
	ChurnPercent    int           // share of endpoints that fail in the churn phase (default 10)
	ChurnWindow     time.Duration // churn measurement window from the first failure (default 30s)
	ConvergeTarget  time.Duration // startup convergence slower than this is reported as a finding (default 90s)
	ConvergeTimeout time.Duration // startup: every node up, N members, every endpoint decided up, else fail (default 300s)
	SettleTimeout   time.Duration // after the warm-up: wait this long at most for the vote broadcasts to die down (default 240s)
	DownTimeout     time.Duration // churn: every node decided every failed endpoint down (default 90s)
	RecoverTimeout  time.Duration // churn: every node decided them up again (default 150s: hold-down 30s + rise)
	Restart         bool          // restart the last prober at the end and time until it counts again everywhere (default false)
	RestartTimeout  time.Duration // bound of that wait (default 180s)
	BasePort        int           // backend on BasePort; DNS, HTTP, gossip on BasePort+100/200/300+i (default 17100)
	Nice            int           // probers run at this niceness above the harness, whose HTTP server stands for the endpoints (default 10; 0 = same)
	Bin             string        // meridian binary (default: build bin/meridian)
	Out             string        // report file (default bench/results/ring-latest.md)
	KeepTmp         bool          // keep the temporary directory (configs, logs)
}

func loadParams() (params, error) {
	env := &benchenv.Env{}
	geti, getd, getb := env.Int, env.Duration, env.Bool
	p := params{
		Probers:         geti("BENCH_RING_PROBERS", 5, 1, 50),
		Regions:         geti("BENCH_RING_REGIONS", 3, 1, 50),
		Endpoints:       geti("BENCH_RING_ENDPOINTS", 1000, 1, 60000),
		PerService:      geti("BENCH_RING_PER_SERVICE", 10, 1, 1000),
		Interval:        getd("BENCH_RING_INTERVAL", 5*time.Second, 100*time.Millisecond),
		Warmup:          getd("BENCH_RING_WARMUP", 20*time.Second, 0),
		Window:          getd("BENCH_RING_SECONDS", 60*time.Second, time.Second),
		Sample:          getd("BENCH_RING_SAMPLE", 5*time.Second, 100*time.Millisecond),
		Churn:           getb("BENCH_RING_CHURN", true),
		ChurnPercent:    geti("BENCH_RING_CHURN_PERCENT", 10, 1, 100),
		ChurnWindow:     getd("BENCH_RING_CHURN_SECONDS", 30*time.Second, time.Second),
		ConvergeTarget:  getd("BENCH_RING_CONVERGE_TARGET", 90*time.Second, time.Second),
		ConvergeTimeout: getd("BENCH_RING_CONVERGE_TIMEOUT", 300*time.Second, time.Second),
		SettleTimeout:   getd("BENCH_RING_SETTLE_TIMEOUT", 240*time.Second, 0),
		DownTimeout:     getd("BENCH_RING_DOWN_TIMEOUT", 90*time.Second, time.Second),
		RecoverTimeout:  getd("BENCH_RING_RECOVER_TIMEOUT", 150*time.Second, time.Second),
		Restart:         getb("BENCH_RING_RESTART", false),
		RestartTimeout:  getd("BENCH_RING_RESTART_TIMEOUT", 180*time.Second, time.Second),
		BasePort:        geti("BENCH_RING_BASE_PORT", 17100, 1024, 65535-400),
		Nice:            geti("BENCH_RING_NICE", 10, 0, 19),
		Bin:             os.Getenv("MERIDIAN_BIN"),
		Out:             os.Getenv("BENCH_RING_OUT"),
		KeepTmp:         getb("BENCH_RING_KEEP_TMP", false),
	}
	if p.Regions > p.Probers {
		p.Regions = p.Probers
	}
	if p.Probers > 100 {
		env.Add(errors.New("BENCH_RING_PROBERS: at most 100 (ports BasePort+100+i)"))
	}
	return p, env.Err()
}

func main() { os.Exit(run()) }

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p, err := loadParams()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-ring: %v\n", err)
		return 2
	}
	root, err := benchenv.RepoRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-ring: %v\n", err)
		return 2
	}
	if p.Out == "" {
		p.Out = filepath.Join(root, "bench", "results", "ring-latest.md")
	}
	b := &bench{p: p, root: root, rep: &report{p: p, started: time.Now()}}
	err = b.run(ctx)
	if ctx.Err() != nil && err != nil {
		err = fmt.Errorf("interrupted: %w", err)
	}
	b.stopAll()
	b.collectLogs()
	b.rep.err = err
	md := b.rep.markdown()
	fmt.Println()
	fmt.Print(md)
	if werr := writeReport(p.Out, md); werr != nil {
		fmt.Fprintf(os.Stderr, "bench-ring: %v\n", werr)
	} else {
		logf("report written to %s", p.Out)
	}
	b.removeTmp(err != nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-ring: FAILED: %v\n", err)
		return 1
	}
	return 0
}

func writeReport(path, md string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("report %s: %w", path, err)
	}
	if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
		return fmt.Errorf("report %s: %w", path, err)
	}
	return nil
}

// logf prints a progress line on stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "==> %s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
