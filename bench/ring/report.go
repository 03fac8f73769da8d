package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// report collects what the run measured and renders it as markdown.
type report struct {
	p               params
	started         time.Time
	err             error
	meridianVersion string
	meridianGo      string
	upAfter         time.Duration // start → every node: every member, every endpoint up
	votesAfter      time.Duration // start → every node: fresh votes from every prober everywhere
	settledAfter    time.Duration // start → no node receives vote messages any more
	convergeViews   []healthView  // when the convergence wait timed out
	steady          *windowResult
	afterSteady     []healthView
	churn           *churnResult
	restart         *restartResult
	findings        []string
	logs            []logSummary
	logDir          string
}

// markdown renders the report: the set-up, the steady, churn and restart
// sections, the findings and the node logs.
func (r *report) markdown() string {
	var s strings.Builder
	p := r.p
	r.writeSetup(&s)
	if r.err != nil {
		fmt.Fprintf(&s, "**FAILED:** %s\n\n", indentBlock(r.err.Error()))
	}
	if w := r.steady; w != nil {
		fmt.Fprintf(&s, "### Steady state (%.0f s, every endpoint up)\n\n", w.End.Sub(w.Start).Seconds())
		steadyTable(&s, w)
		fmt.Fprintf(&s, "\nRing total: %.1f KiB/s of gossip sent by all %d probers together.\n\n", sumBy(w.Nodes, func(n nodeResult) float64 { return n.SentBps })/1024, len(w.Nodes))
	}
	if c := r.churn; c != nil && c.Window != nil {
		w := c.Window
		fmt.Fprintf(&s, "### Churn (%d endpoints = %d %% answer 503; first %.0f s; machine %.0f %% busy)\n\n", c.Failing, p.ChurnPercent, w.End.Sub(w.Start).Seconds(), w.MachineBusy)
		churnTable(&s, c)
		s.WriteString("\n")
	}
	if rs := r.restart; rs != nil {
		after := "after " + fmtAfter(rs.After)
		if rs.After <= 0 {
			after = fmt.Sprintf("**not within %v** (see the findings)", p.RestartTimeout)
		}
		fmt.Fprintf(&s, "### Restart\n\n%s stopped (SIGTERM) and started again; every node held a fresh vote from every prober on every endpoint again %s.\n\n", rs.Node, after)
	}
	r.autoFindings()
	if len(r.findings) > 0 {
		s.WriteString("### Findings\n\n")
		for _, f := range r.findings {
			fmt.Fprintf(&s, "- %s\n", indentBlock(f))
		}
		s.WriteString("\n")
	}
	if len(r.logs) > 0 {
		fmt.Fprintf(&s, "### Node logs (level warn; copies in `%s`)\n\n", relPath(r.logDir))
		for _, l := range r.logs {
			fmt.Fprintf(&s, "- %s\n", l.String())
		}
		s.WriteString("\n")
	}
	return s.String()
}

// writeSetup writes the report's title and the table of what ran where:
// machine, versions, ring, endpoints, probing, start-up and steady window.
func (r *report) writeSetup(s *strings.Builder) {
	p := r.p
	status := "ok"
	if r.err != nil {
		status = "**FAILED**"
	}
	fmt.Fprintf(s, "## Ring benchmark (`make bench-ring`), %s — %s\n\n", r.started.UTC().Format("2006-01-02 15:04 UTC"), status)
	ver := r.meridianVersion
	if r.meridianGo != "" {
		ver += ", built with " + r.meridianGo
	}
	fmt.Fprintf(s, "| | |\n|---|---|\n")
	fmt.Fprintf(s, "| machine | %s, nproc %d, %s, Linux %s |\n", cpuModel(), runtime.NumCPU(), memTotal(), kernel())
	fmt.Fprintf(s, "| Go | harness %s; meridian %s |\n", runtime.Version(), ver)
	fmt.Fprintf(s, "| ring | %d probers (`meridian serve`) in %d regions, one loopback host, memberlist WAN defaults, gossip encrypted (one AES-256 key) |\n", p.Probers, p.Regions)
	fmt.Fprintf(s, "| endpoints | %d = %d weighted services × %d, `GET /healthz` on 127.1.x.y:%d, all served by one HTTP server in the harness (probers at niceness +%d) |\n",
		p.Endpoints, (p.Endpoints+p.PerService-1)/p.PerService, p.PerService, p.BasePort, p.Nice)
	fmt.Fprintf(s, "| health | interval %v (±10%% jitter), timeout, fall, rise at their defaults (3 s, 3, 2): %.0f probes/s expected per prober |\n",
		p.Interval, float64(p.Endpoints)/p.Interval.Seconds())
	fmt.Fprintf(s, "| startup | every node: %d members and every endpoint up after %s; fresh votes from every prober on every endpoint after %s; vote broadcasts died down after %s |\n",
		p.Probers, fmtAfter(r.upAfter), fmtAfter(r.votesAfter), fmtAfter(r.settledAfter))
	if w := r.steady; w != nil {
		fmt.Fprintf(s, "| steady window | %.0f s after a %v warm-up; machine %.0f %% busy (steal %.1f %%); harness (backend + scrapes) %.1f %% of one core; backend answered %.0f req/s |\n",
			w.End.Sub(w.Start).Seconds(), p.Warmup, w.MachineBusy, w.Steal, w.HarnessCPU, w.BackendOK+w.BackendKO)
	}
	s.WriteString("\n")
}

func steadyTable(s *strings.Builder, w *windowResult) {
	s.WriteString("| prober | region | CPU % of 1 core (max 5 s) | RSS MiB (peak) | Go heap MiB | goroutines | gossip sent KiB/s | gossip recv KiB/s | ring msgs sent/s vote / summary / confirm / state | ring msgs recv/s vote / summary / confirm / state | probes/s ok / fail | decisions/s | decision ms (CPU %) |\n")
	s.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	rows := append(slices.Clone(w.Nodes), mean(w.Nodes))
	for i, n := range rows {
		name := n.Name
		if i == len(rows)-1 {
			name = "**mean**"
		}
		fmt.Fprintf(s, "| %s | %s | %.1f (%.1f) | %.0f (%.0f) | %.1f | %.0f | %.1f | %.1f | %s | %s | %.0f / %.0f | %.2f | %.2f (%.2f) |\n",
			name, n.Region, n.CPUPct, n.CPUMax, n.RSSMiB, n.HWMMiB, n.HeapMiB, n.Goroutines,
			n.SentBps/1024, n.RecvBps/1024, msgs(n.MsgSent), msgs(n.MsgRecv), n.ProbeOK, n.ProbeKO,
			n.Decisions, n.DecisionMeanMs, n.DecisionCPUPct)
	}
}

func churnTable(s *strings.Builder, c *churnResult) {
	w := c.Window
	s.WriteString("| prober | CPU % of 1 core (max 5 s) | RSS MiB | gossip sent KiB/s | gossip recv KiB/s | ring msgs sent/s vote / summary / confirm / state | probes/s ok / fail | decisions/s | decision ms | all failed decided down after | up again after (hold-down incl.) | mean detection (metric) | healthy endpoints decided down |\n")
	s.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	rows := append(slices.Clone(w.Nodes), mean(w.Nodes))
	for i, n := range rows {
		name, down, up, falseDown := n.Name, "", "", ""
		if i < len(w.Nodes) {
			down, up = fmtAfter(c.DownAfter[i]), fmtAfter(c.UpAfter[i])
			falseDown = fmt.Sprint(c.FalseDowns[i])
		} else {
			name = "**mean**"
			down, up = fmtAfter(meanDur(c.DownAfter)), fmtAfter(meanDur(c.UpAfter))
		}
		det := "—"
		if n.DetectionN > 0 {
			det = fmt.Sprintf("%.1f s", n.Detection)
		}
		fmt.Fprintf(s, "| %s | %.1f (%.1f) | %.0f | %.1f | %.1f | %s | %.0f / %.0f | %.2f | %.2f | %s | %s | %s | %s |\n",
			name, n.CPUPct, n.CPUMax, n.RSSMiB, n.SentBps/1024, n.RecvBps/1024, msgs(n.MsgSent), n.ProbeOK, n.ProbeKO,
			n.Decisions, n.DecisionMeanMs, down, up, det, falseDown)
	}
}

// autoFindings adds what looks wrong in the numbers.
func (r *report) autoFindings() {
	if w := r.steady; w != nil {
		want := float64(r.p.Endpoints) / r.p.Interval.Seconds()
		for _, n := range w.Nodes {
			if n.Events > 0 {
				r.findings = append(r.findings, fmt.Sprintf("%s: %.0f decided changes during the steady window (expected none: every endpoint stays up)", n.Name, n.Events))
			}
			if int(n.Members) != r.p.Probers {
				r.findings = append(r.findings, fmt.Sprintf("%s: %.0f prober members at the end of the steady window (expected %d)", n.Name, n.Members, r.p.Probers))
			}
			if got := n.ProbeOK + n.ProbeKO; got < want*0.9 || got > want*1.1 {
				r.findings = append(r.findings, fmt.Sprintf("%s: %.0f probes/s (expected %.0f ±10%%)", n.Name, got, want))
			}
			if n.ProbeKO > 0 {
				r.findings = append(r.findings, fmt.Sprintf("%s: %.1f failed probes/s in the steady window (every endpoint answers 200)", n.Name, n.ProbeKO))
			}
		}
	}
	if r.upAfter > r.p.ConvergeTarget || r.votesAfter > r.p.ConvergeTarget {
		r.findings = append(r.findings, fmt.Sprintf("slow start-up: every endpoint up everywhere after %s, every vote everywhere after %s (target %v, BENCH_RING_CONVERGE_TARGET)",
			fmtAfter(r.upAfter), fmtAfter(r.votesAfter), r.p.ConvergeTarget))
	}
	for _, v := range r.afterSteady {
		if v.Err != nil || v.FullVotes != r.p.Endpoints || v.Up != r.p.Endpoints {
			r.findings = append(r.findings, "after the steady window: "+v.String())
		}
	}
	if c := r.churn; c != nil {
		// docs/health-and-failover.md: fall × interval + confirmation + a decision tick (16–25 s at 5 s);
		// back: hold-down 30 s + rise × interval, plus gossip.
		downTarget := 55 * r.p.Interval / 10 // ±10 % jitter on the fall probes
		upTarget := 30*time.Second + 4*r.p.Interval
		if d := maxDur(c.DownAfter); d > downTarget {
			r.findings = append(r.findings, fmt.Sprintf("slow detection: the last node decided the failed endpoints down %.1f s after the failure (expected ≤ %v: fall × interval with jitter + confirmation + one tick; docs/health-and-failover.md: 16–25 s)", d.Seconds(), downTarget))
		}
		if d := maxDur(c.UpAfter); d > upTarget {
			r.findings = append(r.findings, fmt.Sprintf("slow recovery: the last node decided them up %.1f s after they recovered (expected ≤ %v: rise × interval + hold-down 30 s + gossip)", d.Seconds(), upTarget))
		}
		for i, f := range c.FalseDowns {
			if f > 0 {
				r.findings = append(r.findings, fmt.Sprintf("%s: %d healthy endpoints decided down during the churn phase", c.Window.nodeName(i), f))
			}
		}
	}
	for _, l := range r.logs {
		if l.Errors > 0 || l.Panic || l.Unexpected > 0 {
			f := fmt.Sprintf("%s logged %d unexpected WARN and %d ERROR lines (see the node logs below)", l.Node, l.Unexpected, l.Errors)
			if l.Panic {
				f = fmt.Sprintf("%s **panicked** (see its log in %s)", l.Node, relPath(r.logDir))
			}
			r.findings = append(r.findings, f)
		}
	}
}

func (w *windowResult) nodeName(i int) string {
	if w != nil && i < len(w.Nodes) {
		return w.Nodes[i].Name
	}
	return fmt.Sprintf("p%d", i+1)
}

// mean averages every numeric column.
func mean(ns []nodeResult) nodeResult {
	m := nodeResult{MsgSent: map[string]float64{}, MsgRecv: map[string]float64{}}
	if len(ns) == 0 {
		return m
	}
	k := float64(len(ns))
	for _, n := range ns {
		m.CPUPct += n.CPUPct / k
		m.CPUMax += n.CPUMax / k
		m.RSSMiB += n.RSSMiB / k
		m.HWMMiB += n.HWMMiB / k
		m.HeapMiB += n.HeapMiB / k
		m.Goroutines += n.Goroutines / k
		m.SentBps += n.SentBps / k
		m.RecvBps += n.RecvBps / k
		m.ProbeOK += n.ProbeOK / k
		m.ProbeKO += n.ProbeKO / k
		m.Decisions += n.Decisions / k
		m.DecisionMeanMs += n.DecisionMeanMs / k
		m.DecisionCPUPct += n.DecisionCPUPct / k
		m.Events += n.Events / k
		if n.DetectionN > 0 {
			m.Detection += n.Detection / k
			m.DetectionN++
		}
		for _, t := range msgTypes {
			m.MsgSent[t] += n.MsgSent[t] / k
			m.MsgRecv[t] += n.MsgRecv[t] / k
		}
	}
	if m.DetectionN > 0 {
		m.Detection *= k / m.DetectionN
	}
	return m
}

func sumBy(ns []nodeResult, f func(nodeResult) float64) float64 {
	var t float64
	for _, n := range ns {
		t += f(n)
	}
	return t
}

func msgs(m map[string]float64) string {
	var parts []string
	for _, t := range msgTypes {
		parts = append(parts, fmtRate(m[t]))
	}
	return strings.Join(parts, " / ")
}

func fmtRate(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 1:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func fmtAfter(d time.Duration) string {
	if d <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

func meanDur(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		if d <= 0 {
			return 0
		}
		t += d
	}
	if len(ds) == 0 {
		return 0
	}
	return t / time.Duration(len(ds))
}

// indentBlock keeps a multi-line message inside one markdown list item: the
// first line as text, the rest as a code block.
func indentBlock(s string) string {
	head, rest, ok := strings.Cut(strings.TrimRight(s, "\n"), "\n")
	if !ok {
		return head
	}
	return head + strings.ReplaceAll("\n\n```\n"+rest+"\n```", "\n", "\n  ")
}

func relPath(p string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, ok := strings.CutPrefix(p, wd+"/"); ok {
			return rel
		}
	}
	return p
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func memTotal() string {
	b, _ := os.ReadFile("/proc/meminfo")
	var kb int
	for line := range strings.Lines(string(b)) {
		if _, err := fmt.Sscanf(line, "MemTotal: %d kB", &kb); err == nil {
			return fmt.Sprintf("%.0f GiB RAM", float64(kb)/(1<<20))
		}
	}
	return "RAM unknown"
}

func kernel() string {
	b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return strings.TrimSpace(string(b))
}

// ----------------------------------------------------------------- logs ----

// logSummary counts one node's log lines by level and message.
type logSummary struct {
	Node       string
	Lines      int
	Warns      int
	Errors     int
	Unexpected int  // warnings other than the decision changes the churn phase causes
	Panic      bool // "panic:" or "fatal error:" in the log
	Shutdown   int  // WARN and ERROR lines written while the benchmark stopped the nodes
	top        []string
	shutdown   []string
}

// expectedWarns are the warnings the benchmark itself causes: decided
// changes (start-up, churn) and, with the restart phase, a member leaving.
func expectedWarns(p params) []string {
	w := []string{"health decision changed"}
	if p.Restart {
		w = append(w, "ring: member left or failed")
	}
	return w
}

// Lines from stopAt on were written while the benchmark stopped the nodes
// (leave timeouts, sends on closed sockets): counted apart.
func scanLog(node string, data []byte, stopAt int64, expected []string) logSummary {
	l := logSummary{Node: node}
	counts := map[string]int{}
	var order []string
	if stopAt <= 0 || stopAt > int64(len(data)) {
		stopAt = int64(len(data))
	}
	sc := bufio.NewScanner(bytes.NewReader(data[:stopAt]))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		l.Lines++
		if strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") {
			l.Panic = true
		}
		level := field(line, "level")
		msg := field(line, "msg")
		switch level {
		case "WARN":
			l.Warns++
			if !slices.Contains(expected, msg) {
				l.Unexpected++
			}
		case "ERROR":
			l.Errors++
		default:
			continue
		}
		key := level + " " + msg
		if counts[key] == 0 {
			order = append(order, key)
		}
		counts[key]++
	}
	for _, k := range order {
		l.top = append(l.top, fmt.Sprintf("%d× %s", counts[k], k))
	}
	seen := map[string]bool{}
	for line := range strings.Lines(string(data[stopAt:])) {
		if strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") {
			l.Panic = true
		}
		if lv := field(line, "level"); lv == "WARN" || lv == "ERROR" {
			l.Shutdown++
			if k := lv + " " + shorten(field(line, "msg"), 60); !seen[k] {
				seen[k] = true
				l.shutdown = append(l.shutdown, k)
			}
		}
	}
	return l
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// field returns the value of key=value in a slog text line (quoted or not).
func field(line, key string) string {
	i := strings.Index(line, " "+key+"=")
	if i < 0 {
		if !strings.HasPrefix(line, key+"=") {
			return ""
		}
		i = -1
	}
	v := line[i+len(key)+2:]
	if strings.HasPrefix(v, `"`) {
		var b strings.Builder
		for j := 1; j < len(v); j++ {
			switch v[j] {
			case '\\':
				if j+1 < len(v) {
					j++
					b.WriteByte(v[j])
				}
			case '"':
				return b.String()
			default:
				b.WriteByte(v[j])
			}
		}
		return b.String()
	}
	if j := strings.IndexByte(v, ' '); j >= 0 {
		return v[:j]
	}
	return v
}

func (l logSummary) String() string {
	s := fmt.Sprintf("%s: %d lines, %d WARN, %d ERROR", l.Node, l.Lines, l.Warns, l.Errors)
	if l.Panic {
		s += ", **PANIC**"
	}
	if len(l.top) > 0 {
		top := l.top
		if len(top) > 6 {
			top = append(slices.Clone(top[:6]), fmt.Sprintf("… %d more kinds", len(l.top)-6))
		}
		s += ": " + strings.Join(top, "; ")
	}
	if l.Shutdown > 0 {
		s += fmt.Sprintf("; while stopping: %d lines (%s)", l.Shutdown, strings.Join(l.shutdown, "; "))
	}
	return s
}
