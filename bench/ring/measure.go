package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/bench/internal/benchenv"
)

// ---------------------------------------------------------------- /proc ----

// procSample is one reading of a process from /proc.
type procSample struct {
	At      time.Time
	Ticks   uint64 // utime + stime, in clock ticks
	RSSKB   uint64 // VmRSS
	HWMKB   uint64 // VmHWM: peak RSS since the process started
	Threads int
}

// clockTicks is sysconf(_SC_CLK_TCK) via getconf, 100 when that fails
// (it is 100 on every Linux this runs on).
var clockTicks = sync.OnceValue(func() float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && v > 0 {
			return float64(v)
		}
	}
	return 100
})

// readProc reads /proc/PID/stat and /proc/PID/status ("self" for this process).
func readProc(pid string) (procSample, error) {
	s := procSample{At: time.Now()}
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return s, err
	}
	// The command name (field 2) may hold spaces: fields 3.. follow the last ')'.
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return s, fmt.Errorf("/proc/%s/stat: no ')'", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 18 {
		return s, fmt.Errorf("/proc/%s/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64) // field 14 utime
	st, err2 := strconv.ParseUint(f[12], 10, 64) // field 15 stime
	th, err3 := strconv.Atoi(f[17])              // field 20 num_threads
	if err := errors.Join(err1, err2, err3); err != nil {
		return s, fmt.Errorf("/proc/%s/stat: %w", pid, err)
	}
	s.Ticks, s.Threads = ut+st, th
	n, err := strconv.Atoi(pid)
	if err != nil {
		return s, fmt.Errorf("pid %q: %w", pid, err)
	}
	s.RSSKB, s.HWMKB, err = benchenv.Memory(n)
	return s, err
}

// cpuPct is the CPU used between a and b in % of one core.
func cpuPct(a, b procSample) float64 {
	dt := b.At.Sub(a.At).Seconds()
	if dt <= 0 || b.Ticks < a.Ticks {
		return 0
	}
	return float64(b.Ticks-a.Ticks) / clockTicks() / dt * 100
}

// machineSample is the first line of /proc/stat.
type machineSample struct {
	busy, steal, total uint64
}

func readMachine() machineSample {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineSample{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var m machineSample
	for i, s := range f[1:] {
		if i >= 8 { // guest and guest_nice are already in user and nice
			break
		}
		v, _ := strconv.ParseUint(s, 10, 64)
		m.total += v
		switch i {
		case 3, 4: // idle, iowait
		case 7:
			m.steal += v
		default:
			m.busy += v
		}
	}
	return m
}

// machineLoad returns the busy and steal share of all CPUs between a and b, in %.
func machineLoad(a, b machineSample) (busy, steal float64) {
	dt := float64(b.total - a.total)
	if dt <= 0 {
		return 0, 0
	}
	return float64(b.busy-a.busy) / dt * 100, float64(b.steal-a.steal) / dt * 100
}

// -------------------------------------------------------------- scrapes ----

var httpc = &http.Client{Timeout: 15 * time.Second}

// get fetches url and returns its body; any status but 200 is an error.
func get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("GET %s: status %d: %s", url, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// nodeSnap is one node's state at one instant of a window.
type nodeSnap struct {
	proc procSample
	met  benchenv.Metrics
}

func (n *node) snap(ctx context.Context) (nodeSnap, error) {
	var s nodeSnap
	body, err := get(ctx, "http://"+n.httpAddr+"/metrics")
	if err != nil {
		return s, fmt.Errorf("node %s: metrics: %w", n.name, err)
	}
	if s.met, err = benchenv.ParseMetrics(strings.NewReader(string(body))); err != nil {
		return s, fmt.Errorf("node %s: metrics: %w", n.name, err)
	}
	if s.proc, err = readProc(strconv.Itoa(n.cmd.Process.Pid)); err != nil {
		return s, fmt.Errorf("node %s: %w", n.name, err)
	}
	return s, nil
}

// msgTypes are the ring message types shown in the tables.
var msgTypes = []string{"vote", "summary", "confirm", "state"}

// nodeResult is one node over one window.
type nodeResult struct {
	Name, Region     string
	CPUPct, CPUMax   float64 // mean and largest Sample-long slice, % of one core
	RSSMiB, HWMMiB   float64 // at the end; peak since start (VmHWM)
	RSSMaxMiB        float64 // largest RSS seen in the window
	HeapMiB          float64 // go_memstats_heap_inuse_bytes at the end
	Goroutines       float64
	Threads          int
	SentBps, RecvBps float64                       // gossip bytes per second
	MsgSent, MsgRecv map[string]float64            // ring messages per second by type
	ProbeOK, ProbeKO float64                       // probes per second
	Decisions        float64                       // per second
	DecisionMeanMs   float64                       // mean time of one decision
	DecisionCPUPct   float64                       // decisions' share of one core
	Events           float64                       // decided changes in the window
	Members          float64                       // prober members at the end
	Detection        float64                       // mean meridian_failover_detection_seconds observed in the window
	DetectionN       float64                       // observations of it
	raw              struct{ start, end nodeSnap } // for anything else
}

func result(n *node, a, b nodeSnap, cpuMax, rssMaxKB float64) nodeResult {
	dt := b.proc.At.Sub(a.proc.At).Seconds()
	rate := func(name string, kv ...string) float64 {
		if dt <= 0 {
			return 0
		}
		return (b.met.Sum(name, kv...) - a.met.Sum(name, kv...)) / dt
	}
	delta := func(name string, kv ...string) float64 { return b.met.Sum(name, kv...) - a.met.Sum(name, kv...) }
	count := func(name string, kv ...string) float64 { return b.met.Count(name, kv...) - a.met.Count(name, kv...) }
	r := nodeResult{Name: n.name, Region: n.region,
		CPUPct: cpuPct(a.proc, b.proc), CPUMax: cpuMax,
		RSSMiB: float64(b.proc.RSSKB) / 1024, HWMMiB: float64(b.proc.HWMKB) / 1024, RSSMaxMiB: rssMaxKB / 1024,
		HeapMiB: b.met.Sum("go_memstats_heap_inuse_bytes") / (1 << 20), Goroutines: b.met.Sum("go_goroutines"), Threads: b.proc.Threads,
		SentBps: rate("meridian_ring_gossip_bytes_total", "direction", "sent"),
		RecvBps: rate("meridian_ring_gossip_bytes_total", "direction", "received"),
		MsgSent: map[string]float64{}, MsgRecv: map[string]float64{},
		ProbeOK: rate("meridian_probe_results_total", "result", "ok"),
		ProbeKO: rate("meridian_probe_results_total", "result", "fail"),
		Events:  delta("meridian_failover_events_total"),
		Members: b.met.Sum("meridian_ring_members", "role", "prober"),
	}
	for _, t := range msgTypes {
		r.MsgSent[t] = rate("meridian_ring_messages_total", "type", t, "direction", "sent")
		r.MsgRecv[t] = rate("meridian_ring_messages_total", "type", t, "direction", "received")
	}
	if cnt := count("meridian_decision_duration_seconds"); cnt > 0 && dt > 0 {
		sum := delta("meridian_decision_duration_seconds")
		r.Decisions = cnt / dt
		r.DecisionMeanMs = sum / cnt * 1000
		r.DecisionCPUPct = sum / dt * 100
	}
	if cnt := count("meridian_failover_detection_seconds"); cnt > 0 {
		r.Detection = delta("meridian_failover_detection_seconds") / cnt
		r.DetectionN = cnt
	}
	r.raw.start, r.raw.end = a, b
	return r
}

// windowResult is every node over one measurement window.
type windowResult struct {
	Start, End           time.Time
	Nodes                []nodeResult
	MachineBusy, Steal   float64 // % of all CPUs
	HarnessCPU           float64 // this process (HTTP backend + scrapes), % of one core
	BackendOK, BackendKO float64 // backend answers per second
}

// window measures every node for d: /metrics and /proc at both ends, /proc
// every p.Sample in between (for the largest CPU slice and RSS).
// onStart, when not nil, runs right after the first snapshot.
func (b *bench) window(ctx context.Context, d time.Duration, onStart func()) (*windowResult, error) {
	n := len(b.nodes)
	start := make([]nodeSnap, n)
	end := make([]nodeSnap, n)
	cpuMax := make([]float64, n)
	rssMax := make([]float64, n)
	last := make([]procSample, n)
	w := &windowResult{}
	m0 := readMachine()
	self0, _ := readProc("self")
	ok0, ko0 := b.backend.ok.Load(), b.backend.failed.Load()
	if err := b.snapAll(ctx, start); err != nil {
		return nil, err
	}
	w.Start = time.Now()
	if onStart != nil {
		onStart()
	}
	for i := range n {
		last[i] = start[i].proc
		rssMax[i] = float64(start[i].proc.RSSKB)
	}
	deadline := w.Start.Add(d)
	for time.Until(deadline) > 0 {
		if err := benchenv.Sleep(ctx, min(b.p.Sample, time.Until(deadline))); err != nil {
			return nil, err
		}
		if err := b.checkAlive(); err != nil {
			return nil, err
		}
		for i, nd := range b.nodes {
			s, err := readProc(strconv.Itoa(nd.cmd.Process.Pid))
			if err != nil {
				return nil, fmt.Errorf("node %s: %w", nd.name, err)
			}
			if s.At.Sub(last[i].At) >= b.p.Sample/2 {
				cpuMax[i] = max(cpuMax[i], cpuPct(last[i], s))
			}
			rssMax[i] = max(rssMax[i], float64(s.RSSKB))
			last[i] = s
		}
	}
	if err := b.snapAll(ctx, end); err != nil {
		return nil, err
	}
	w.End = time.Now()
	m1 := readMachine()
	self1, _ := readProc("self")
	w.MachineBusy, w.Steal = machineLoad(m0, m1)
	w.HarnessCPU = cpuPct(self0, self1)
	if dt := w.End.Sub(w.Start).Seconds(); dt > 0 {
		w.BackendOK = float64(b.backend.ok.Load()-ok0) / dt
		w.BackendKO = float64(b.backend.failed.Load()-ko0) / dt
	}
	for i, nd := range b.nodes {
		w.Nodes = append(w.Nodes, result(nd, start[i], end[i], cpuMax[i], rssMax[i]))
	}
	return w, nil
}

// snapAll takes every node's snapshot at once.
func (b *bench) snapAll(ctx context.Context, out []nodeSnap) error {
	errs := make([]error, len(b.nodes))
	var wg sync.WaitGroup
	for i, nd := range b.nodes {
		wg.Go(func() { out[i], errs[i] = nd.snap(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
