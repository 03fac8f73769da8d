package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// report is the whole run (scale.json).
type report struct {
	Started time.Time    `json:"started"`
	Host    string       `json:"host"`
	Bin     string       `json:"bin"`
	Reloads int          `json:"reloads"`
	Sizes   []sizeResult `json:"sizes"`
	Error   string       `json:"error,omitempty"`
	Err     error        `json:"-"`
}

func (r *report) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "meridian scale: %s, %s\n", r.Started.Format(time.RFC3339), r.Host)
	fmt.Fprintf(&b, "one zone, N services of 3 endpoints (weighted/geo/failover); RSS = VmRSS after the load or reload settled; heap = go_memstats_heap_inuse_bytes\n\n")
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "services\tfile MB\tcheck-config s\tcheck CPU s\tcheck peak MB\tready s\tready CPU s\tRSS MB\theap MB\treload s (max)\tRSS after reloads MB\tvs load\tpeak MB\t")
	for _, s := range r.Sizes {
		maxSec, last := 0.0, step{}
		for _, st := range s.Reloads {
			maxSec, last = max(maxSec, st.Sec), st
		}
		ratio := "-"
		if len(s.Reloads) > 0 && s.LoadRSSMB > 0 {
			ratio = fmt.Sprintf("%+.0f%%", 100*(last.RSSMB/s.LoadRSSMB-1))
		}
		fmt.Fprintf(w, "%d\t%.1f\t%.2f\t%.2f\t%.0f\t%.2f\t%.2f\t%.0f\t%.0f\t%.2f\t%.0f\t%s\t%.0f\t\n",
			s.Services, s.FileMB, s.CheckSec, s.CheckCPU, s.CheckMaxMB, s.ReadySec, s.ReadyCPU, s.LoadRSSMB, s.LoadHeapMB, maxSec, last.RSSMB, ratio, s.PeakRSSMB)
	}
	w.Flush()
	for _, s := range r.Sizes {
		if len(s.Reloads) > 0 {
			parts := make([]string, len(s.Reloads))
			for i, st := range s.Reloads {
				parts[i] = fmt.Sprintf("%.2fs/%.0fMB", st.Sec, st.RSSMB)
			}
			fmt.Fprintf(&b, "\n%d services, reloads (time/RSS): %s", s.Services, strings.Join(parts, " "))
		}
		for _, x := range s.Extra {
			fmt.Fprintf(&b, "\n%d services, %s: %g %s %s", s.Services, x.Name, x.Value, x.Unit, x.Note)
		}
		if s.Error != "" {
			fmt.Fprintf(&b, "\n%d services: FAILED: %s", s.Services, s.Error)
		}
	}
	b.WriteString("\n")
	return b.String()
}

func (r *report) write(out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("results %s: %w", out, err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return errors.Join(
		os.WriteFile(out+".txt", []byte(r.text()), 0o644),
		os.WriteFile(out+".json", append(js, '\n'), 0o644))
}

// hostInfo names the machine: CPUs and model, memory.
func hostInfo() string {
	model := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%d CPUs (%s), %s", runtime.NumCPU(), model, runtime.Version())
}
