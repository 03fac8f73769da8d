// Command scale measures what loading a large configuration costs the real
// binary: for generated files of 1 000, 10 000 and 100 000 services (one
// zone, 3 endpoints each, a weighted / geo / failover mix; see
// internal/config/scalegen) it times `meridian check-config` (wall time,
// peak RSS), starts `meridian serve` on loopback ports and measures the time
// to ready (GET /readyz answers 200), the RSS after the load, then the time
// and the RSS of each of 5 SIGHUP reloads (a reload is done when
// meridian_config_reloads_total{result="success"} counts it).
//
//	go run ./bench/scale          # or: make bench-scale
//
// Settings (environment): BENCH_SCALE_SIZES (comma-separated service
// counts, default 1000,10000,100000), BENCH_SCALE_RELOADS (default 5),
// BENCH_SCALE_SETTLE (pause before each RSS reading, default 2s),
// BENCH_SCALE_READY_TIMEOUT (per start or reload, default 300s),
// BENCH_SCALE_BASE_PORT (DNS on it, HTTP on it+1; default 17700),
// MERIDIAN_BIN (default bin/meridian), BENCH_SCALE_OUT (default
// bench/results/scale: .txt and .json are written), BENCH_SCALE_KEEP_TMP.
// Every process it starts is stopped on exit, error or Ctrl-C, and every
// wait is bounded.
//
// Other measurements of a running size (QPS against Knot, a one-service
// change) plug in through measures (see hooks.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/meridian-gslb/meridian/bench/internal/benchenv"
)

// params of one run.
type params struct {
	Sizes        []int
	Reloads      int
	Settle       time.Duration
	ReadyTimeout time.Duration
	BasePort     int
	Bin          string
	Out          string // without extension
	KeepTmp      bool
}

func loadParams(root string) (params, error) {
	env := &benchenv.Env{}
	p := params{
		Reloads:      env.Int("BENCH_SCALE_RELOADS", 5, 0, 100),
		Settle:       env.Duration("BENCH_SCALE_SETTLE", 2*time.Second, 0),
		ReadyTimeout: env.Duration("BENCH_SCALE_READY_TIMEOUT", 300*time.Second, time.Second),
		BasePort:     env.Int("BENCH_SCALE_BASE_PORT", 17700, 1024, 65534),
		Bin:          os.Getenv("MERIDIAN_BIN"),
		Out:          os.Getenv("BENCH_SCALE_OUT"),
		KeepTmp:      env.Bool("BENCH_SCALE_KEEP_TMP", false),
	}
	sizes := os.Getenv("BENCH_SCALE_SIZES")
	if strings.TrimSpace(sizes) == "" {
		sizes = "1000,10000,100000"
	}
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 1_000_000 {
			env.Add(fmt.Errorf("BENCH_SCALE_SIZES=%q: want comma-separated service counts in [1, 1000000] (e.g. 1000,10000,100000)", sizes))
			break
		}
		p.Sizes = append(p.Sizes, n)
	}
	if p.Bin == "" {
		p.Bin = filepath.Join(root, "bin", "meridian")
	}
	if _, err := os.Stat(p.Bin); err != nil {
		env.Add(fmt.Errorf("MERIDIAN_BIN=%q: %w (run `make build`, or use `make bench-scale`)", p.Bin, err))
	}
	if p.Out == "" {
		p.Out = filepath.Join(root, "bench", "results", "scale")
	}
	return p, env.Err()
}

func main() { os.Exit(run()) }

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := benchenv.RepoRoot()
	if err == nil {
		var p params
		if p, err = loadParams(root); err == nil {
			err = runSizes(ctx, p)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-scale: %v\n", err)
		return 1
	}
	return 0
}

func runSizes(ctx context.Context, p params) error {
	tmp, err := os.MkdirTemp("", "meridian-bench-scale-")
	if err != nil {
		return err
	}
	if p.KeepTmp {
		logf("keeping %s", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	rep := &report{Started: time.Now().UTC(), Bin: p.Bin, Reloads: p.Reloads, Host: hostInfo()}
	var errs []error
	for _, n := range p.Sizes {
		r, err := measureSize(ctx, p, tmp, n)
		rep.Sizes = append(rep.Sizes, r)
		if err != nil {
			errs = append(errs, fmt.Errorf("%d services: %w", n, err))
			if ctx.Err() != nil {
				break
			}
		}
	}
	rep.Err = errors.Join(errs...)
	if rep.Err != nil {
		rep.Error = rep.Err.Error()
	}
	txt := rep.text()
	fmt.Print(txt)
	if err := rep.write(p.Out); err != nil {
		errs = append(errs, err)
	} else {
		logf("results written to %s.txt and %s.json", p.Out, p.Out)
	}
	return errors.Join(errs...)
}

// logf prints a progress line on stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "==> %s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
