package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// results is everything one run measured; written as JSON and as text.
type results struct {
	Started         time.Time                     `json:"started"`
	Seconds         float64                       `json:"seconds"`
	Params          params                        `json:"-"`
	Settings        map[string]string             `json:"settings"`
	Machine         string                        `json:"machine"`
	MeridianVersion string                        `json:"meridian_version,omitempty"`
	PdnsVersion     string                        `json:"pdns_version,omitempty"`
	Targets         []string                      `json:"targets"` // DNS servers queried: pdns, meridian, ring-a, ring-b
	Kill            []faultResult                 `json:"kill,omitempty"`
	Blackhole       []faultResult                 `json:"blackhole,omitempty"`
	Summary         map[string]map[string]summary `json:"summary,omitempty"` // "kill out" → server → median/max
	Flap            *flapResult                   `json:"flap,omitempty"`
	Loss            *lossResult                   `json:"loss,omitempty"`
	Clients         *clientsResult                `json:"clients,omitempty"`
	Error           string                        `json:"error,omitempty"`
}

// columns are the servers as reported: pdns, meridian, and ring (the
// slower node of the two-node ring) when they ran.
func (r *results) columns() []string {
	var out []string
	for _, name := range []string{"pdns", "meridian"} {
		if slices.Contains(r.Targets, name) {
			out = append(out, name)
		}
	}
	if slices.Contains(r.Targets, "ring-a") {
		out = append(out, "ring")
	}
	return out
}

var labels = map[string]string{
	"pdns":     "PowerDNS (Lua ifurlup)",
	"meridian": "Meridian, 1 node",
	"ring":     "Meridian ring, 2 nodes (every node)",
	"ring-a":   "ring node a",
	"ring-b":   "ring node b",
}

func fmtMeasure(m measure) string {
	if m.TimedOut {
		return fmt.Sprintf(">%.0f s", m.Seconds)
	}
	return fmt.Sprintf("%.1f s", m.Seconds)
}

func fmtSummary(s summary) string {
	if s.N == 0 {
		return "—"
	}
	out := fmt.Sprintf("%.1f s (max %.1f)", s.Median, s.Max)
	if s.TimedOut > 0 {
		out += fmt.Sprintf(", %d/%d timed out", s.TimedOut, s.N)
	}
	return out
}

// phases are the timed rows: name, trials, which map.
type phase struct {
	key, label string
	trials     []faultResult
	back       bool
}

func (r *results) phases() []phase {
	return []phase{
		{"kill out", "kill (connection refused) → out of the answers", r.Kill, false},
		{"kill back", "restart → back in the answers", r.Kill, true},
		{"blackhole out", "blackhole (no answer, checks time out) → out", r.Blackhole, false},
	}
}

func pick(t faultResult, back bool) map[string]measure {
	if back {
		return t.Back
	}
	return t.Out
}

// summarizeAll fills r.Summary from the trials.
func (r *results) summarizeAll() {
	r.Summary = map[string]map[string]summary{}
	names := append(r.columns(), "ring-a", "ring-b")
	for _, ph := range r.phases() {
		if len(ph.trials) == 0 {
			continue
		}
		m := map[string]summary{}
		for _, name := range names {
			var ms []measure
			for _, t := range ph.trials {
				if v, ok := pick(t, ph.back)[name]; ok {
					ms = append(ms, v)
				}
			}
			if len(ms) > 0 {
				m[name] = summarize(ms)
			}
		}
		r.Summary[ph.key] = m
	}
}

// text is the report: settings, the table, every trial.
func (r *results) text() string {
	r.summarizeAll()
	cols := r.columns()
	var s strings.Builder
	r.writeSettings(&s)
	if len(r.Kill)+len(r.Blackhole) > 0 || r.Flap != nil || r.Loss != nil {
		r.writeTable(&s, cols)
	}
	if len(r.Kill)+len(r.Blackhole) > 0 {
		r.writeTrials(&s, cols)
	}
	if l := r.Loss; l != nil {
		s.WriteString("\nLoss applied (checks received / held unanswered):")
		for _, k := range slices.Sorted(maps.Keys(l.Requests)) {
			fmt.Fprintf(&s, " backend %s %d / %d;", k, l.Requests[k], l.Dropped[k])
		}
		if a, ok := l.Servers["ring-a"]; ok {
			bb := l.Servers["ring-b"]
			fmt.Fprintf(&s, " false downs (changes) per ring node: a %d (%d), b %d (%d)", a.FalseDowns, a.Changes, bb.FalseDowns, bb.Changes)
		}
		s.WriteString("\n")
	}
	r.writeClients(&s)
	if r.Error != "" {
		fmt.Fprintf(&s, "\n**FAILED**: %s\n", r.Error)
	}
	return s.String()
}

// writeSettings writes the report's title and the list of what ran: date,
// machine, the servers' versions and settings.
func (r *results) writeSettings(s *strings.Builder) {
	fmt.Fprintf(s, "## Failover: Meridian vs PowerDNS Lua records (make bench-failover)\n\n")
	fmt.Fprintf(s, "- date: %s, run time %.0f s\n", r.Started.Format("2006-01-02 15:04 UTC"), r.Seconds)
	fmt.Fprintf(s, "- machine: %s\n", r.Machine)
	if r.PdnsVersion != "" {
		fmt.Fprintf(s, "- PowerDNS Authoritative %s: bind backend, `enable-lua-records=yes`, `ifurlup` over both backends with `selector='all'`; every health setting at its default: lua-health-checks-interval 5 s, ifurlup timeout 2 s, one failed check = down\n", r.PdnsVersion)
	}
	if r.MeridianVersion != "" {
		fmt.Fprintf(s, "- Meridian %s: `meridian serve`, http health_check, every health and decision setting at its default (see bench/failover/README.md); restarted with an empty state before every trial\n", r.MeridianVersion)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Settings)) {
		fmt.Fprintf(s, "- %s: %s\n", k, r.Settings[k])
	}
}

// writeTable writes the summary table: one row per phase, then the flap
// and loss rows, one column per server.
func (r *results) writeTable(s *strings.Builder, cols []string) {
	s.WriteString("\n| trial |")
	for _, c := range cols {
		fmt.Fprintf(s, " %s |", labels[c])
	}
	s.WriteString("\n|---|")
	for range cols {
		s.WriteString("--:|")
	}
	s.WriteString("\n")
	for _, ph := range r.phases() {
		if len(ph.trials) == 0 {
			continue
		}
		fmt.Fprintf(s, "| %s, median (max) of %d |", ph.label, len(ph.trials))
		for _, c := range cols {
			fmt.Fprintf(s, " %s |", fmtSummary(r.Summary[ph.key][c]))
		}
		s.WriteString("\n")
	}
	if f := r.Flap; f != nil {
		fmt.Fprintf(s, "| flap %s (%.0f s; %d real flips = %.1f/min): answer changes per minute |", f.Backend, f.Seconds, f.RealFlips, float64(f.RealFlips)*60/f.Seconds)
		for _, c := range cols {
			fmt.Fprintf(s, " %.1f |", f.Servers[c].ChangesPerMin)
		}
		fmt.Fprintf(s, "\n| flap: dead backend still answered (share of its %.0f s down) |", f.DownTotalS)
		for _, c := range cols {
			fmt.Fprintf(s, " %.1f s (%.0f %%) |", f.Servers[c].DeadAnsweredS, f.Servers[c].DeadAnsweredPc)
		}
		fmt.Fprintf(s, "\n| flap: live backend left out (share of its %.0f s up) |", f.UpTotalS)
		for _, c := range cols {
			fmt.Fprintf(s, " %.1f s (%.0f %%) |", f.Servers[c].LiveMissingS, f.Servers[c].LiveMissingPc)
		}
		s.WriteString("\n")
	}
	if l := r.Loss; l != nil {
		fmt.Fprintf(s, "| %d %% loss on both backends for %.0f s: false downs (answer changes) |", l.Percent, l.Seconds)
		for _, c := range cols {
			fmt.Fprintf(s, " %d (%d) |", l.Servers[c].FalseDowns, l.Servers[c].Changes)
		}
		s.WriteString("\n")
	}
}

// writeTrials writes every kill and blackhole trial's measure per server
// (and per ring node when the ring ran).
func (r *results) writeTrials(s *strings.Builder, cols []string) {
	s.WriteString("\nEvery trial (seconds; `>` = not done at the bound):\n\n")
	names := slices.Clone(cols)
	if slices.Contains(r.Targets, "ring-a") {
		names = append(names, "ring-a", "ring-b")
	}
	for _, ph := range r.phases() {
		if len(ph.trials) == 0 {
			continue
		}
		fmt.Fprintf(s, "- %s (backend per trial:", ph.key)
		for _, t := range ph.trials {
			fmt.Fprintf(s, " %s", t.Backend)
		}
		s.WriteString(")\n")
		for _, n := range names {
			fmt.Fprintf(s, "  - %s:", labels[n])
			for _, t := range ph.trials {
				if m, ok := pick(t, ph.back)[n]; ok {
					fmt.Fprintf(s, " %s", strings.TrimSuffix(fmtMeasure(m), " s"))
				}
			}
			s.WriteString("\n")
		}
	}
}

// write writes path.txt and path.json.
func (r *results) write(path, txt string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("results %s: %w", path, err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path+".txt", []byte(txt), 0o644); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	if err := os.WriteFile(path+".json", append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// machine describes where the run happened.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := "?"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%d CPUs, %s, Linux %s, %s", runtime.NumCPU(), model, kernel, runtime.Version())
}

// settings lists the run's parameters for the report.
func (p params) settings() map[string]string {
	m := map[string]string{
		"polling":  fmt.Sprintf("every server queried every %v (miekg/dns, UDP); a server is done once its answers stayed settled %v, timed from the first answer of that run", p.Poll, p.Stable),
		"backends": "two loopback HTTP servers, 127.0.0.61 and 127.0.0.62, GET /healthz",
	}
	if slices.Contains(p.Scenarios, "kill") || slices.Contains(p.Scenarios, "blackhole") {
		m["trials"] = fmt.Sprintf("%d per fault, backends A and B in turn, each fault and each restart after a random 0–5 s pause (one check interval); bounds: out %v, back %v", p.Trials, p.OutTimeout, p.BackTimeout)
	}
	if slices.Contains(p.Scenarios, "flap") {
		m["flap"] = fmt.Sprintf("backend A %v down (killed) / %v up for %v", p.FlapDown, p.FlapUp, p.FlapFor)
	}
	if slices.Contains(p.Scenarios, "loss") {
		m["loss"] = fmt.Sprintf("both backends hold %d %% of requests unanswered for %v (application-level loss: each lost request is a failed check); changes counted until %v after", p.LossPercent, p.LossFor, p.Tail)
	}
	if slices.Contains(p.Scenarios, "clients") {
		curl := "no curl clients"
		if p.CurlClients {
			curl = fmt.Sprintf("one curl per name every %v (glibc's stub resolver, a private mount of /etc/resolv.conf)", p.CurlPeriod)
		}
		m["clients"] = fmt.Sprintf("%d Unbound resolvers per server (defaults, each its own cache), %d Go clients per resolver and name starting a request every %v whatever the earlier ones do (a new connection each, the standard dialer trying every address in order, at least 2 s each, %v per request), %s; the clients of each resolver start after a random 0–30 s (their caches expire at different times); 32–37 s after the first, backend A is %s for %v, then up again; %d trials of each",
			p.Resolvers, p.GoClients, p.ClientPeriod, p.ClientTimeout, curl, strings.Join(p.ClientFaults, " / "), p.ClientWindow, p.Trials)
	}
	return m
}
