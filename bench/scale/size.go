package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/meridian-gslb/meridian/bench/internal/benchenv"
	"github.com/meridian-gslb/meridian/internal/config/scalegen"
)

// sizeResult is what one size measured.
type sizeResult struct {
	Services   int     `json:"services"`
	FileMB     float64 `json:"file_mb"`
	CheckSec   float64 `json:"check_config_s"`
	CheckMaxMB float64 `json:"check_config_peak_rss_mb"`
	CheckCPU   float64 `json:"check_config_cpu_s"` // user + system
	ReadySec   float64 `json:"serve_ready_s"`
	ReadyCPU   float64 `json:"serve_ready_cpu_s"` // user + system of serve when /readyz first answered
	LoadRSSMB  float64 `json:"rss_after_load_mb"`
	LoadHeapMB float64 `json:"heap_inuse_after_load_mb"`
	PeakRSSMB  float64 `json:"peak_rss_mb"` // VmHWM at the end: since the start
	Reloads    []step  `json:"reloads"`
	Extra      []row   `json:"extra,omitempty"` // rows of the measures (hooks.go)
	Error      string  `json:"error,omitempty"`
}

// step is one SIGHUP reload.
type step struct {
	Sec    float64 `json:"s"`
	RSSMB  float64 `json:"rss_mb"`
	HeapMB float64 `json:"heap_inuse_mb"`
}

// server is a running `meridian serve` of one size.
type server struct {
	cmd      *exec.Cmd
	cfg      string // its config file
	dnsAddr  string
	httpBase string // http://127.0.0.1:PORT
	services int
}

func measureSize(ctx context.Context, p params, tmp string, n int) (sizeResult, error) {
	r := sizeResult{Services: n}
	err := measureInto(ctx, p, tmp, &r)
	if err != nil {
		r.Error = err.Error()
	}
	return r, err
}

// measureInto measures one size into r: the config check, the start of
// `meridian serve` until ready, its memory, the SIGHUP reloads and the
// extra measures.
func measureInto(ctx context.Context, p params, tmp string, r *sizeResult) error {
	s, dir, err := prepareSize(p, tmp, r)
	if err != nil {
		return err
	}
	if err := checkConfig(ctx, p, s.cfg, r); err != nil {
		return err
	}

	logf("%d services: serve", r.Services)
	s.cmd = exec.Command(p.Bin, "serve", "--config", s.cfg)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logFile, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	start := time.Now()
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(exited) }()
	defer benchenv.Stop(s.cmd.Process, exited, 10*time.Second)
	if err := waitFor(ctx, exited, p.ReadyTimeout, func() (bool, error) { return s.ready(), nil }); err != nil {
		return fmt.Errorf("serve: not ready (/readyz) after %v: %w (log: %s)", p.ReadyTimeout, err, logFile.Name())
	}
	r.ReadySec = time.Since(start).Seconds()
	r.ReadyCPU = procCPU(s.cmd.Process.Pid)
	if err := benchenv.Sleep(ctx, p.Settle); err != nil {
		return err
	}
	m, err := s.memory()
	if err != nil {
		return err
	}
	r.LoadRSSMB, r.LoadHeapMB = m.rssMB, m.heapMB
	if m, err = measureReloads(ctx, p, s, exited, logFile.Name(), r, m); err != nil {
		return err
	}
	for _, ms := range measures {
		rows, err := ms(ctx, s)
		r.Extra = append(r.Extra, rows...)
		if err != nil {
			return err
		}
	}
	r.PeakRSSMB = m.hwmMB
	if m, err := s.memory(); err == nil {
		r.PeakRSSMB = m.hwmMB
	}
	return nil
}

// prepareSize writes the config of one size into its own directory under
// tmp and returns the server it is for (not started) and the directory.
func prepareSize(p params, tmp string, r *sizeResult) (*server, string, error) {
	dir := filepath.Join(tmp, strconv.Itoa(r.Services))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", err
	}
	s := &server{
		cfg:      filepath.Join(dir, "meridian.yaml"),
		dnsAddr:  fmt.Sprintf("127.0.0.1:%d", p.BasePort),
		httpBase: fmt.Sprintf("http://127.0.0.1:%d", p.BasePort+1),
		services: r.Services,
	}
	server := fmt.Sprintf("  dns: {listen: [%q]}\n  http: {listen: %q}\n  log: {level: warn}\n  state_dir: %s",
		s.dnsAddr, strings.TrimPrefix(s.httpBase, "http://"), filepath.Join(dir, "state"))
	if err := writeConfig(s.cfg, r.Services, server); err != nil {
		return nil, "", err
	}
	if fi, err := os.Stat(s.cfg); err == nil {
		r.FileMB = mb(fi.Size())
	}
	return s, dir, nil
}

// checkConfig runs `meridian check-config` on cfg and records its time,
// peak memory and CPU.
func checkConfig(ctx context.Context, p params, cfg string, r *sizeResult) error {
	logf("%d services: check-config", r.Services)
	start := time.Now()
	cmd := exec.CommandContext(ctx, p.Bin, "check-config", cfg)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("check-config: %w: %s", err, out)
	}
	r.CheckSec = time.Since(start).Seconds()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.CheckMaxMB = float64(ru.Maxrss) / 1024 // kilobytes on Linux
		r.CheckCPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	return nil
}

// measureReloads sends the running server p.Reloads SIGHUPs one after the
// other and records how long each took and the memory after it; it returns
// the memory last read (m when there was no reload).
func measureReloads(ctx context.Context, p params, s *server, exited <-chan struct{}, logName string, r *sizeResult, m memory) (memory, error) {
	for i := range p.Reloads {
		before, err := s.reloads()
		if err != nil {
			return m, err
		}
		start := time.Now()
		if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			return m, err
		}
		err = waitFor(ctx, exited, p.ReadyTimeout, func() (bool, error) {
			n, err := s.reloads()
			return n > before, err
		})
		if err != nil {
			return m, fmt.Errorf("reload %d: %w (log: %s)", i+1, err, logName)
		}
		st := step{Sec: time.Since(start).Seconds()}
		if err := benchenv.Sleep(ctx, p.Settle); err != nil {
			return m, err
		}
		if m, err = s.memory(); err != nil {
			return m, err
		}
		st.RSSMB, st.HeapMB = m.rssMB, m.heapMB
		r.Reloads = append(r.Reloads, st)
		logf("%d services: reload %d: %.2fs, RSS %.0f MB", r.Services, i+1, st.Sec, st.RSSMB)
	}
	return m, nil
}

func writeConfig(path string, n int, server string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = scalegen.Write(f, scalegen.Options{Services: n, Server: server})
	return errors.Join(err, f.Close())
}

func (s *server) ready() bool {
	resp, err := httpClient.Get(s.httpBase + "/readyz")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

// metrics reads the server's /metrics page.
func (s *server) metrics() (benchenv.Metrics, error) {
	resp, err := httpClient.Get(s.httpBase + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return benchenv.ParseMetrics(resp.Body)
}

// metric is the sum of the /metrics samples of name whose labels match kv;
// an error when the page has no sample of name.
func (s *server) metric(name string, kv ...string) (float64, error) {
	m, err := s.metrics()
	if err != nil {
		return 0, err
	}
	if _, ok := m[name]; !ok {
		return 0, fmt.Errorf("/metrics: no %s", name)
	}
	return m.Sum(name, kv...), nil
}

func (s *server) reloads() (float64, error) {
	return s.metric("meridian_config_reloads_total", "result", "success")
}

// memory is a reading of the server's memory.
type memory struct{ rssMB, hwmMB, heapMB float64 }

func (s *server) memory() (memory, error) {
	var m memory
	rss, hwm, err := benchenv.Memory(s.cmd.Process.Pid)
	if err != nil {
		return m, err
	}
	m.rssMB, m.hwmMB = float64(rss)/1024, float64(hwm)/1024
	heap, err := s.metric("go_memstats_heap_inuse_bytes")
	m.heapMB = heap / (1 << 20)
	return m, err
}

// waitFor polls cond every 50 ms until it holds, the server exits, ctx
// ends or timeout passes.
func waitFor(ctx context.Context, exited <-chan struct{}, timeout time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		last = err
		select {
		case <-exited:
			return errors.New("the server exited")
		case <-ctx.Done():
			return errors.Join(ctx.Err(), last)
		case <-t.C:
		}
	}
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// procCPU is the user + system time of process pid in seconds
// (/proc/PID/stat, clock ticks of 10 ms; 0 when unreadable).
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name (in parentheses, which may hold
	// spaces): state is field 3, utime 14, stime 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return (ut + st) / 100 // USER_HZ
}
