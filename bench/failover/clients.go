package main

// The "clients" scenario: failover as users see it (issue 35). Clients
// resolve through real Unbound resolvers (each with its own cache, at
// Unbound's defaults: rrset-roundrobin included) and connect as users do:
// a Go HTTP client with the standard library's dialer, which tries every
// address of an answer in order, and curl, whose glibc stub is pointed at
// a resolver through a private mount of /etc/resolv.conf. Under steady load
// a backend is killed (connections refused), vanishes (SYNs dropped:
// connections time out) or flaps; what counts is the share of failed HTTP
// requests over the fault's window, the time until no request fails, and,
// once the fault ends, the time until the backend gets traffic again.
// PowerDNS and Meridian are measured in the same run, at their defaults
// (PowerDNS: ifurlup's default selector, one random up address; Meridian:
// fallback_answer auto, which for this 50/50 service answers the pick and
// the other cluster's address), with TTL 30 s and 5 s, and Meridian with
// fallback_answer off (one address).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/bench/internal/benchenv"
)

// clientName is one name the clients ask for and what serves it.
type clientName struct {
	Server string // pdns or meridian
	Label  string // web, web5, webfb: the owner name under the zone
	TTL    int
	Note   string // what differs
}

func (c clientName) fqdn() string { return c.Label + "." + zone }
func (c clientName) key() string  { return c.Server + "/" + c.Label }

// clientNames are the names of the scenario: every server at its defaults
// with TTL 30 and 5; Meridian with fallback_answer off as well.
var clientNames = []clientName{
	{"pdns", "web", 30, "ifurlup, default selector (one random up address)"},
	{"pdns", "web5", 5, "the same, TTL 5"},
	{"meridian", "web", 30, "defaults: weighted 50/50, fallback_answer auto (the pick, then the other cluster's address)"},
	{"meridian", "web5", 5, "the same, TTL 5"},
	{"meridian", "webone", 30, "fallback_answer: off (one weighted address)"},
}

// fallbackMode is a Meridian client name's fallback_answer ("" = default).
func (c clientName) fallbackMode() string {
	if c.Label == "webone" {
		return "off"
	}
	return ""
}

// Share names: Meridian services whose first-address shares are measured
// behind a rotating resolver: 70/30 at the default (auto leaves the
// fallback out), 70/30 with fallback_answer on (what it costs), 50/50 at
// the default (auto adds it: the shares must hold).
var shareNames = []struct {
	Name, Mode string
	Weights    []int
}{
	{"share." + zone, "", []int{70, 30}},
	{"sharefb." + zone, "on", []int{70, 30}},
	{"shareeq." + zone, "", []int{50, 50}},
}

// pdnsClientRecords are the LUA records of the scenario's PowerDNS names
// (ifurlup at its defaults).
func pdnsClientRecords(port int, backends []string) string {
	quoted := make([]string, len(backends))
	for i, a := range backends {
		quoted[i] = "'" + a + "'"
	}
	var s strings.Builder
	for _, c := range clientNames {
		if c.Server == "pdns" {
			fmt.Fprintf(&s, "%-6s %d IN LUA A \"ifurlup('http://%s:%d/healthz', {%s})\"\n", c.Label, c.TTL, c.fqdn(), port, strings.Join(quoted, ", "))
		}
	}
	return s.String()
}

// meridianClientServices are the scenario's Meridian services (appended to
// the node's config).
func (b *bench) meridianClientServices() string {
	var s strings.Builder
	svc := func(name string, ttl int, mode string, weights []int) {
		fmt.Fprintf(&s, "  - name: %s\n    ttl: %d\n", name, ttl)
		if mode != "" {
			fmt.Fprintf(&s, "    fallback_answer: %s\n", mode)
		}
		fmt.Fprintf(&s, "    health_check: {kind: http, port: %d, path: /healthz}\n    endpoints:\n", b.p.BasePort)
		for i, be := range b.backends {
			fmt.Fprintf(&s, "      - {address: %s, cluster: site-%s, weight: %d}\n", be.addr.Addr(), strings.ToLower(be.name), weights[i%len(weights)])
		}
	}
	for _, c := range clientNames {
		if c.Server == "meridian" {
			svc(c.fqdn(), c.TTL, c.fallbackMode(), []int{100})
		}
	}
	for _, sn := range shareNames {
		svc(sn.Name, 30, sn.Mode, sn.Weights)
	}
	return s.String()
}

// ------------------------------------------------------------- resolvers ----

// resolver is one Unbound: its own cache, listening on its own loopback
// address, port 53 (so that a resolv.conf can name it).
type resolver struct {
	Server string // whose zone it sends queries to
	Addr   string // ip (port 53)
	conf   string
	proc   *proc
}

// resolverAddr is the address of resolver k of a server: 127.0.0.7x for
// PowerDNS, 127.0.0.8x for Meridian.
func resolverAddr(server string, k int) string {
	base := 70
	if server == "meridian" {
		base = 80
	}
	return fmt.Sprintf("127.0.0.%d", base+k)
}

// startResolvers writes the configs of R Unbound per server (and one
// without a cache for the share measurement).
func (b *bench) startResolvers() error {
	bin, err := exec.LookPath("unbound")
	if err != nil {
		bin = "/usr/sbin/unbound"
		if _, err := os.Stat(bin); err != nil {
			return errors.New("unbound not found: apt-get install unbound (make e2e installs it)")
		}
	}
	b.unboundBin = bin
	upstream := map[string]string{"pdns": b.addr(portPdns), "meridian": b.addr(portMeridian)}
	for _, server := range []string{"pdns", "meridian"} {
		for k := range b.p.Resolvers {
			b.resolvers = append(b.resolvers, &resolver{Server: server, Addr: resolverAddr(server, k)})
		}
	}
	// The share resolver: Meridian's, no cache (every query asks Meridian
	// and the answer is rotated as the others rotate theirs).
	b.shareResolver = &resolver{Server: "meridian", Addr: "127.0.0.89"}
	for i, r := range append(slices.Clone(b.resolvers), b.shareResolver) {
		dir := filepath.Join(b.tmp, fmt.Sprintf("unbound-%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		extra := ""
		if r == b.shareResolver {
			extra = "  cache-max-ttl: 0\n  cache-max-negative-ttl: 0\n"
		}
		up := upstream[r.Server]
		host, port, _ := net.SplitHostPort(up)
		r.conf = filepath.Join(dir, "unbound.conf")
		conf := fmt.Sprintf(`server:
  interface: %[1]s@53
  port: 53
  do-ip6: no
  access-control: 127.0.0.0/8 allow
  do-not-query-localhost: no
  username: ""
  chroot: ""
  directory: "%[2]s"
  pidfile: "%[2]s/unbound.pid"
  use-syslog: no
  logfile: ""
  verbosity: 0
  module-config: "iterator"
  qname-minimisation: no
  local-zone: "test." nodefault
%[5]sstub-zone:
  name: "%[6]s"
  stub-addr: %[3]s@%[4]s
`, r.Addr, dir, host, port, extra, zone)
		if err := os.WriteFile(r.conf, []byte(conf), 0o644); err != nil {
			return err
		}
		if err := portFree(r.Addr+":53", true); err != nil {
			return err
		}
	}
	return nil // each trial starts them (restartResolvers), once the servers are ready
}

// restartResolvers starts every Unbound afresh (empty caches) and waits
// until each answers.
func (b *bench) restartResolvers(ctx context.Context) error {
	all := append(slices.Clone(b.resolvers), b.shareResolver)
	var ps []*proc
	for _, r := range all {
		ps = append(ps, r.proc)
		r.proc = nil
	}
	stopProcs(5*time.Second, ps...)
	for i, r := range all {
		p, err := startProc(fmt.Sprintf("unbound-%s-%d", r.Server, i), filepath.Join(b.tmp, fmt.Sprintf("unbound-%d.log", i)), b.unboundBin, "-d", "-c", r.conf)
		if err != nil {
			return err
		}
		r.proc = p
	}
	c := &dns.Client{Timeout: time.Second}
	for _, r := range all {
		deadline := time.Now().Add(20 * time.Second)
		for {
			m := new(dns.Msg)
			m.SetQuestion(zone+".", dns.TypeSOA) // not a client name: the clients start from empty caches
			if in, _, err := c.ExchangeContext(ctx, m, r.Addr+":53"); err == nil && in.Rcode != dns.RcodeServerFailure {
				break
			}
			if err := r.proc.alive(); err != nil {
				return err
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("unbound on %s:53 does not answer after 20 s; log:\n%s", r.Addr, tail(r.proc.logPath, 20))
			}
			if err := benchenv.Sleep(ctx, 200*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return benchenv.Sleep(ctx, time.Second)
}

// --------------------------------------------------------------- clients ----

// request is one HTTP request of a client: when, whether it succeeded and
// which backend answered.
type request struct {
	At      time.Time
	OK      bool
	Backend string // remote IP that answered ("" on failure)
}

// clientLog collects the requests of every client, per name.
type clientLog struct {
	mu   sync.Mutex
	reqs map[string][]request // clientName.key() -> requests
}

func (l *clientLog) add(key string, r request) {
	l.mu.Lock()
	l.reqs[key] = append(l.reqs[key], r)
	l.mu.Unlock()
}

func (l *clientLog) since(key string, from time.Time) []request {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []request
	for _, r := range l.reqs[key] {
		if !r.At.Before(from) {
			out = append(out, r)
		}
	}
	return out
}

// goClient starts a request for name through resolver addr every period
// (open loop: a slow request does not delay the next one), each a fresh
// connection (a new user) with the standard dialer, which tries every
// address of the answer in order within ClientTimeout (at least 2 s per
// address), the whole request bounded by ClientTimeout.
func (b *bench) goClient(ctx context.Context, c clientName, resolverIP string, log *clientLog) {
	res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, resolverIP+":53")
	}}
	dialer := &net.Dialer{Resolver: res, Timeout: b.p.ClientTimeout}
	tr := &http.Transport{DisableKeepAlives: true, DialContext: dialer.DialContext}
	hc := &http.Client{Transport: tr, Timeout: b.p.ClientTimeout}
	url := fmt.Sprintf("http://%s:%d/healthz", c.fqdn(), b.p.BasePort)
	b.openLoop(ctx, b.p.ClientPeriod, func() {
		r := request{At: time.Now()}
		var remote string
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req = req.WithContext(withRemote(req.Context(), &remote))
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			r.OK, r.Backend = resp.StatusCode == http.StatusOK, remote
		}
		if ctx.Err() == nil {
			log.add(c.key(), r)
		}
	})
}

// curlClient is goClient with curl (--max-time ClientTimeout): glibc's stub
// resolver reads a resolv.conf naming the resolver (a private mount
// namespace per request).
func (b *bench) curlClient(ctx context.Context, c clientName, resolverIP string, log *clientLog) {
	rc := filepath.Join(b.tmp, "resolv-"+resolverIP+".conf")
	os.WriteFile(rc, []byte("nameserver "+resolverIP+"\noptions timeout:1 attempts:1\n"), 0o644)
	url := fmt.Sprintf("http://%s:%d/healthz", c.fqdn(), b.p.BasePort)
	script := fmt.Sprintf("mount --bind %s /etc/resolv.conf && exec curl -s -o /dev/null --max-time %g -w '%%{http_code} %%{remote_ip}' %s", rc, b.p.ClientTimeout.Seconds(), url)
	b.openLoop(ctx, b.p.CurlPeriod, func() {
		r := request{At: time.Now()}
		out, _ := exec.CommandContext(ctx, "unshare", "--mount", "sh", "-c", script).Output()
		if ctx.Err() != nil {
			return
		}
		if f := strings.Fields(string(out)); len(f) == 2 && f[0] == "200" {
			r.OK, r.Backend = true, f[1]
		}
		log.add(c.key()+"/curl", r)
	})
}

// openLoop runs do every period, each in its own goroutine, until ctx ends;
// it returns once every do has.
func (b *bench) openLoop(ctx context.Context, period time.Duration, do func()) {
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			wg.Go(do)
		}
	}
}

// ------------------------------------------------------------- the trial ----

// clientGroup is one name's figures in one trial.
type clientGroup struct {
	Requests      int     `json:"requests"`        // started in the fault's window
	Failed        int     `json:"failed"`          // of those
	FailedPct     float64 `json:"failed_pct"`      // Failed / Requests
	UntilNoneFail float64 `json:"until_no_fail_s"` // fault → the last failed request (0: none failed)
	Back          float64 `json:"back_s"`          // end of the fault → the first request the backend answered
	BackTimedOut  bool    `json:"back_timed_out,omitempty"`
	CurlRequests  int     `json:"curl_requests"`
	CurlFailed    int     `json:"curl_failed"`
}

// clientsTrial is one fault of the scenario.
type clientsTrial struct {
	Fault   string                 `json:"fault"` // kill, blackhole or flap
	Backend string                 `json:"backend"`
	Groups  map[string]clientGroup `json:"groups"` // clientName.key()
}

// clientsResult is the scenario's result.
type clientsResult struct {
	Trials []clientsTrial `json:"trials"`
	// Shares: first-address shares of the share names through a rotating
	// Unbound without a cache.
	Shares map[string]map[string]float64 `json:"shares"`
}

// clientFaults are what the scenario does to backend A, in the order run.
var clientFaults = []string{"kill", "blackhole", "flap"}

// clientFaultNote says what a fault is, for the report.
var clientFaultNote = map[string]string{
	"kill":      "killed: connections refused",
	"blackhole": "vanished: SYNs dropped, connections time out",
	"flap":      "flapping: killed and restarted in turn",
}

func (b *bench) clients(ctx context.Context) (*clientsResult, error) {
	if err := b.startResolvers(); err != nil {
		return nil, err
	}
	res := &clientsResult{Shares: map[string]map[string]float64{}}
	// The shares first, while every backend is up and no flap hold-down
	// keeps one out.
	if err := b.ready(ctx); err != nil {
		return res, err
	}
	if err := b.restartResolvers(ctx); err != nil {
		return res, err
	}
	for _, sn := range shareNames {
		s, err := b.firstShares(ctx, sn.Name, 4000)
		if err != nil {
			return res, err
		}
		res.Shares[sn.Name] = s
		logf("clients: first-address shares of %s (weights %v, fallback_answer %q) through a rotating Unbound: %v", sn.Name, sn.Weights, sn.Mode, s)
	}
	for _, fault := range b.p.ClientFaults {
		for k := range b.p.Trials {
			tr, err := b.clientsTrial(ctx, fault, k)
			if err != nil {
				return res, fmt.Errorf("%s trial %d: %w", fault, k+1, err)
			}
			res.Trials = append(res.Trials, tr)
		}
	}
	return res, nil
}

// firstShares asks the share resolver n times and returns the share of
// each address in the first place of the answers.
func (b *bench) firstShares(ctx context.Context, name string, n int) (map[string]float64, error) {
	c := &dns.Client{Timeout: time.Second}
	count, total := map[string]int{}, 0
	for range n {
		m := new(dns.Msg)
		m.SetQuestion(name+".", dns.TypeA)
		in, _, err := c.ExchangeContext(ctx, m, b.shareResolver.Addr+":53")
		if err != nil {
			return nil, fmt.Errorf("share query %s: %w", name, err)
		}
		for _, rr := range in.Answer {
			if a, ok := rr.(*dns.A); ok {
				count[a.A.String()]++
				total++
				break
			}
		}
	}
	out := map[string]float64{}
	for a, k := range count {
		out[a] = 100 * float64(k) / float64(total)
	}
	return out, nil
}

// clientsTrial: fresh servers and resolvers, the clients started, then
// the fault for ClientWindow, then the backend up again until every name
// got traffic from it.
func (b *bench) clientsTrial(ctx context.Context, fault string, k int) (clientsTrial, error) {
	be := b.backends[0] // A: the same backend every trial, so that trials compare
	tr := clientsTrial{Fault: fault, Backend: be.name, Groups: map[string]clientGroup{}}
	logf("clients %s %d/%d: restarting Meridian and the resolvers, waiting until ready", fault, k+1, b.p.Trials)
	if err := b.ready(ctx); err != nil {
		return tr, err
	}
	if err := b.restartResolvers(ctx); err != nil {
		return tr, err
	}
	log := &clientLog{reqs: map[string][]request{}}
	cctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	b.startClients(cctx, &wg, log)
	defer func() { stop(); wg.Wait() }()
	// Every client runs by 30 s; the fault falls anywhere in the
	// resolvers' cache lifetimes.
	if err := benchenv.Sleep(ctx, 32*time.Second+rand.N(5*time.Second)); err != nil {
		return tr, err
	}
	t0 := time.Now()
	if err := b.clientFault(ctx, be, fault); err != nil {
		return tr, err
	}
	t1 := time.Now()
	if err := be.start(); err != nil {
		return tr, err
	}
	back, err := b.awaitTraffic(ctx, log, be.addr.Addr().String(), t1)
	if err != nil {
		return tr, err
	}
	// Every request started in the window has ended (a request is logged
	// when it ends; stop would cancel the ones still running).
	if err := benchenv.Sleep(ctx, time.Until(t1.Add(b.p.ClientTimeout+500*time.Millisecond))); err != nil {
		return tr, err
	}
	stop()
	wg.Wait()
	for _, c := range clientNames {
		if !b.has(c.Server) {
			continue
		}
		g := b.clientFigures(log, c, t0, t1, back)
		tr.Groups[c.key()] = g
		logf("clients %s %d/%d: %-15s failed %5.2f%% of %d requests (curl %d/%d), the last failure %.1f s after the fault began; back %.1f s after it ended",
			fault, k+1, b.p.Trials, c.key(), g.FailedPct, g.Requests, g.CurlFailed, g.CurlRequests, g.UntilNoneFail, g.Back)
	}
	return tr, nil
}

// clientFault does fault to be for ClientWindow; the caller starts be
// again afterwards.
func (b *bench) clientFault(ctx context.Context, be *backend, fault string) error {
	end := time.Now().Add(b.p.ClientWindow)
	switch fault {
	case "kill":
		be.kill()
	case "blackhole":
		if err := be.vanish(); err != nil {
			return err
		}
	case "flap":
		for time.Now().Before(end) {
			be.kill()
			if err := benchenv.Sleep(ctx, min(b.p.FlapDown, time.Until(end))); err != nil {
				return err
			}
			if time.Until(end) <= 0 {
				break
			}
			if err := be.start(); err != nil {
				return err
			}
			if err := benchenv.Sleep(ctx, min(b.p.FlapUp, time.Until(end))); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unknown client fault %q (allowed: %s)", fault, strings.Join(clientFaults, ", "))
	}
	return benchenv.Sleep(ctx, time.Until(end))
}

// startClients starts every client loop: each resolver's Go clients after
// a random part of a 30 s TTL, so that the resolvers' caches expire at
// different times, as they do for resolvers that serve different users;
// one curl client per name on the server's first resolver.
func (b *bench) startClients(ctx context.Context, wg *sync.WaitGroup, log *clientLog) {
	start := map[string]time.Duration{}
	for _, r := range b.resolvers {
		start[r.Addr] = rand.N(30 * time.Second)
	}
	for _, c := range clientNames {
		if !b.has(c.Server) {
			continue
		}
		for _, r := range b.resolvers {
			if r.Server != c.Server {
				continue
			}
			for range b.p.GoClients {
				wg.Go(func() {
					if benchenv.Sleep(ctx, start[r.Addr]) == nil {
						b.goClient(ctx, c, r.Addr, log)
					}
				})
			}
		}
		if b.p.CurlClients {
			r := resolverAddr(c.Server, 0)
			wg.Go(func() { b.curlClient(ctx, c, r, log) })
		}
	}
}

// awaitTraffic waits until every name has sent a request the restarted
// backend (ip) answered, or the bound; it returns, per name, the seconds
// from the restart at t1.
func (b *bench) awaitTraffic(ctx context.Context, log *clientLog, ip string, t1 time.Time) (map[string]float64, error) {
	back := map[string]float64{}
	deadline := t1.Add(b.p.BackTimeout)
	for {
		for _, c := range clientNames {
			if _, done := back[c.key()]; done || !b.has(c.Server) {
				continue
			}
			for _, r := range log.since(c.key(), t1) {
				if r.OK && r.Backend == ip {
					back[c.key()] = r.At.Sub(t1).Seconds()
					break
				}
			}
		}
		if len(back) == countServers(b) || time.Now().After(deadline) {
			return back, nil
		}
		if err := benchenv.Sleep(ctx, 250*time.Millisecond); err != nil {
			return back, err
		}
		if err := b.alive(); err != nil {
			return back, err
		}
	}
}

// clientFigures is one name's figures of a trial: the requests between the
// kill (t0) and the restart (t1), and the time until traffic came back.
func (b *bench) clientFigures(log *clientLog, c clientName, t0, t1 time.Time, back map[string]float64) clientGroup {
	g := clientGroup{}
	count := func(key string, curl bool) {
		for _, r := range log.since(key, t0) {
			if r.At.After(t1) {
				continue
			}
			g.Requests++
			if curl {
				g.CurlRequests++
			}
			if !r.OK {
				g.Failed++
				g.UntilNoneFail = max(g.UntilNoneFail, r.At.Sub(t0).Seconds())
				if curl {
					g.CurlFailed++
				}
			}
		}
	}
	count(c.key(), false)
	count(c.key()+"/curl", true)
	if g.Requests > 0 {
		g.FailedPct = 100 * float64(g.Failed) / float64(g.Requests)
	}
	if s, ok := back[c.key()]; ok {
		g.Back = s
	} else {
		g.Back, g.BackTimedOut = b.p.BackTimeout.Seconds(), true
	}
	return g
}

func countServers(b *bench) int {
	n := 0
	for _, c := range clientNames {
		if b.has(c.Server) {
			n++
		}
	}
	return n
}

// withRemote makes the request record, in *remote, the IP address of the
// connection it was sent on.
func withRemote(ctx context.Context, remote *string) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if a, ok := i.Conn.RemoteAddr().(*net.TCPAddr); ok {
			*remote = a.IP.String()
		}
	}})
}

// writeClients writes the scenario's tables: per fault and name, the
// medians over the trials.
func (r *results) writeClients(s *strings.Builder) {
	c := r.Clients
	if c == nil || len(c.Trials) == 0 {
		return
	}
	for _, fault := range clientFaults {
		var trials []clientsTrial
		for _, t := range c.Trials {
			if t.Fault == fault {
				trials = append(trials, t)
			}
		}
		if len(trials) == 0 {
			continue
		}
		fmt.Fprintf(s, "\n### Clients behind Unbound: backend %s %s (%d resolvers per server, each its own cache; Go and curl clients; %d trials)\n\n",
			trials[0].Backend, clientFaultNote[fault], r.Params.Resolvers, len(trials))
		s.WriteString("| server / name | TTL | what | failed requests in the fault's window (median, max) | fault → last failed request (median) | end of the fault → traffic again (median, max) |\n|---|---:|---|---|---|---|\n")
		for _, n := range clientNames {
			var fail, until, back []float64
			timedOut := 0
			for _, t := range trials {
				if g, ok := t.Groups[n.key()]; ok {
					fail, until, back = append(fail, g.FailedPct), append(until, g.UntilNoneFail), append(back, g.Back)
					if g.BackTimedOut {
						timedOut++
					}
				}
			}
			if len(fail) == 0 {
				continue
			}
			backCell := fmt.Sprintf("%.1f s (%.1f s)", median(back), slices.Max(back))
			if timedOut > 0 {
				backCell += fmt.Sprintf("; %d of %d not back within %v", timedOut, len(back), r.Params.BackTimeout)
			}
			fmt.Fprintf(s, "| %s | %d | %s | %.2f %% (%.2f %%) | %.1f s | %s |\n", n.key(), n.TTL, n.Note,
				median(fail), slices.Max(fail), median(until), backCell)
		}
		s.WriteString("\nEvery trial: ")
		for i, t := range trials {
			fmt.Fprintf(s, "\n- trial %d:", i+1)
			for _, n := range clientNames {
				if g, ok := t.Groups[n.key()]; ok {
					fmt.Fprintf(s, " %s %.2f %% of %d (curl %d of %d; last failure %.1f s, back %.1f s);", n.key(), g.FailedPct, g.Requests, g.CurlFailed, g.CurlRequests, g.UntilNoneFail, g.Back)
				}
			}
		}
		s.WriteString("\n")
	}
	if len(c.Shares) > 0 {
		s.WriteString("\nFirst-address shares through an Unbound at its defaults (rrset-roundrobin yes), no cache, 4 000 queries each:")
		for _, sn := range shareNames {
			mode := sn.Mode
			if mode == "" {
				mode = "auto (default)"
			}
			fmt.Fprintf(s, " %s (weights %v, fallback_answer %s) %v;", sn.Name, sn.Weights, mode, fmtShares(c.Shares[sn.Name]))
		}
		s.WriteString("\n")
	}
}

func fmtShares(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %.1f %%", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
