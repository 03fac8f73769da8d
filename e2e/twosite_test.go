//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meridian-gslb/meridian/e2e/kubelab"
	"github.com/meridian-gslb/meridian/internal/api"
	"github.com/meridian-gslb/meridian/internal/srcdir"
)

// The two-site walkthrough of deploy/README.md ("Two sites in a few
// commands"), run as written with real kubectl and helm against two real
// kube-apiservers (contexts east and eu-west); twosite_kube_test.go stands
// in for their kubelets and load balancers. The parent example.com is a
// signed BIND taking RFC 2136 updates with keys/parent.tsig; the pods'
// resolver is a validating Unbound whose only way to example.com is BIND.
// Then the walkthrough switches the parent to Route 53 (route53fake).
//
//	parent  10.77.1.1   BIND, example.com (signed), :53; later route53fake's endpoint
//	resolv  10.77.2.1   Unbound, the pods' /etc/resolv.conf, :53
//	e0, e1  10.77.3.1, 10.77.4.1   east's pods meridian-0, meridian-1
//	w0      10.77.5.1   eu-west's pod meridian-0
//	lb      10.77.6.1 (east), 10.77.6.2 (eu-west): meridian-dns, :53 → pods' :5353
//	web     10.77.7.1:9000 the Slack receiver; 10.77.7.10 (east), 10.77.7.20 (eu-west): shop/web, :8080/healthz
//	x       10.77.8.1   nodes of the trust checks
//	tester  10.77.9.1   where the test's own queries come from

const twoSiteHeading = "Two sites in a few commands"

// twoSite is the lab of TestTwoSites.
type twoSite struct {
	t                                     *testing.T // the running check's
	root                                  *testing.T // TestTwoSites': what lives as long as the lab
	lab                                   *Lab
	parent, resolver, lbh, web, x, tester *Host
	east, west                            *tsCluster
	dir                                   string   // the walkthrough's working directory
	env                                   []string // its environment
	tsigSecret                            string
	sink                                  *Proc
	backends                              map[string]*Proc // shop/web's backend by site
	lastSync                              time.Time
	// parentNS is what BIND delegated gslb.example.com to, each time it
	// changed (sampled at every sync while watchParent is set).
	parentNS    []string
	watchParent bool
	// delegation reads the parent the sites write to now (BIND's
	// parentSays, then Route 53's), named parentName.
	delegation func() (ns, glue, ds []string, err error)
	parentName string
	zoneDS     string // the DS of keys/zone.private (normDS), once read
}

func (s *twoSite) clusters() []*tsCluster { return []*tsCluster{s.east, s.west} }

// sync lets the clusters' stand-ins do a pass (at most one a second).
func (s *twoSite) sync() {
	s.t.Helper()
	if time.Since(s.lastSync) < time.Second {
		return
	}
	s.lastSync = time.Now()
	for _, c := range s.clusters() {
		c.reconcile(s.t)
	}
	if s.watchParent {
		if ns, glue, _, err := s.parentSays(); err == nil {
			now := fmt.Sprintf("%v %v", ns, glue)
			if len(s.parentNS) == 0 || !strings.HasSuffix(s.parentNS[len(s.parentNS)-1], now) {
				s.parentNS = append(s.parentNS, time.Now().Format("15:04:05.0")+" "+now)
			}
		}
	}
}

// until polls cond (the clusters' stand-ins running between polls) until
// it holds; it fails the test after timeout, with what cond said last.
func (s *twoSite) until(what string, timeout time.Duration, cond func() error) time.Duration {
	s.t.Helper()
	start := time.Now()
	for {
		s.sync()
		err := cond()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			s.dumpPods()
			s.t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// wait lets d pass with the stand-ins running.
func (s *twoSite) wait(d time.Duration) {
	s.t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		s.sync()
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *twoSite) dumpPods() {
	for _, p := range s.pods() {
		s.t.Logf("%s/%s log tail:\n%s", p.site, p.name, tail(p.proc.Output(), 40))
	}
}

// pods are the running pods, east's first.
func (s *twoSite) pods() []*tsPod {
	var out []*tsPod
	for _, c := range s.clusters() {
		c.mu.Lock()
		for _, name := range slices.Sorted(maps.Keys(c.pods)) {
			out = append(out, c.pods[name])
		}
		c.mu.Unlock()
	}
	return out
}

// runBlock runs one ```sh block of the walkthrough as written (bash -e -o
// pipefail, in the working directory), the clusters' stand-ins running
// meanwhile; it returns the output and the error.
func (s *twoSite) runBlock(what, block string, timeout time.Duration) (string, error) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-x", "-c", block)
	labKillGroupOnCancel(cmd)
	cmd.Dir, cmd.Env = s.dir, s.env
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	require.NoError(s.t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case err := <-done:
			s.t.Logf("walkthrough, %s (%s):\n%s", what, time.Since(start).Round(time.Millisecond), out.String())
			return out.String(), err
		case <-time.After(200 * time.Millisecond):
			s.sync()
		}
	}
}

// podGet GETs a path of a pod's HTTP port from the tester host.
func (s *twoSite) podGet(p *tsPod, path string) (string, error) {
	code, body, err := netnsGet(s.tester.NS, fmt.Sprintf("http://%s:8080%s", p.host.IP, path))
	if err == nil && code != 200 {
		err = fmt.Errorf("%s %s: HTTP %d: %s", p.name, path, code, strings.TrimSpace(body))
	}
	return body, err
}

// health is a pod's GET /v1/health.
func (s *twoSite) health(p *tsPod) (api.HealthReport, error) {
	var rep api.HealthReport
	body, err := s.podGet(p, "/v1/health")
	if err == nil {
		err = json.Unmarshal([]byte(body), &rep)
	}
	return rep, err
}

// metric sums the samples of a metric family on a pod's /metrics whose
// labels contain every given `k="v"` pair.
func (s *twoSite) metric(p *tsPod, name string, labels ...string) (float64, error) {
	body, err := s.podGet(p, "/metrics")
	if err != nil {
		return 0, err
	}
	sum := 0.0
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, name+"{") && !strings.HasPrefix(l, name+" ") {
			continue
		}
		ok := true
		for _, kv := range labels {
			ok = ok && strings.Contains(l, kv)
		}
		if !ok {
			continue
		}
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", l, err)
		}
		sum += v
	}
	return sum, nil
}

// trusted is what a pod counts: the trusted probers of its ring (itself
// included) and the live members it does not trust.
func (s *twoSite) trusted(p *tsPod) (probers []string, untrusted []string, err error) {
	rep, err := s.health(p)
	if err != nil {
		return nil, nil, err
	}
	for _, pr := range rep.Probers {
		if pr.Role == "prober" || pr.Role == "" {
			probers = append(probers, pr.Name)
		}
	}
	for _, u := range rep.Untrusted {
		untrusted = append(untrusted, u.Name)
	}
	slices.Sort(probers)
	slices.Sort(untrusted)
	return probers, untrusted, nil
}

// ringWhole reports whether every pod (but the skipped) counts exactly the
// given trusted probers.
func (s *twoSite) ringWhole(want []string, skip ...*tsPod) error {
	for _, p := range s.pods() {
		if slices.Contains(skip, p) || p.stopped {
			continue
		}
		got, _, err := s.trusted(p)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("%s/%s counts %v", p.site, p.name, got)
		}
		n, err := s.metric(p, "meridian_ring_members", `role="prober"`)
		if err != nil {
			return err
		}
		if int(n) != len(want) {
			return fmt.Errorf("%s/%s: meridian_ring_members{role=\"prober\"} %v", p.site, p.name, n)
		}
	}
	return nil
}

// dig runs dig from host h and returns its output.
func (s *twoSite) dig(h *Host, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return h.Exec(s.t, ctx, "dig", append([]string{"+time=2", "+tries=1"}, args...)...)
}

// answerAddrs are the addresses a pod answers for name (dig @pod:5353):
// the union of 16 answers, since each is one weighted draw.
func (s *twoSite) answerAddrs(p *tsPod, name string) ([]string, error) {
	args := []string{"@" + p.host.IP.String(), "-p", "5353", "+noall", "+answer"}
	for range 16 {
		args = append(args, name, "A")
	}
	out, err := s.dig(s.tester, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", p.name, err, out)
	}
	var addrs []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 5 && f[3] == "A" {
			addrs = append(addrs, f[4])
		}
	}
	slices.Sort(addrs)
	return slices.Compact(addrs), nil
}

// delegatesToBoth reports whether a parent (read by says) delegates
// gslb.example.com to both sites' nameservers, with their DNS Services'
// addresses as glue and the DS of the zone's key (keys/zone.private).
func (s *twoSite) delegatesToBoth(says func() (ns, glue, ds []string, err error)) error {
	wantNS := []string{"ns-east.gslb.example.com.", "ns-eu-west.gslb.example.com."}
	wantGlue := []string{"ns-east.gslb.example.com. " + s.east.lb.String(), "ns-eu-west.gslb.example.com. " + s.west.lb.String()}
	if s.zoneDS == "" {
		s.zoneDS = normDS(strings.Join(strings.Fields(dsOf(s.t, "gslb.example.com", filepath.Join(s.dir, "keys", "zone.private")))[4:], " "))
	}
	wantDS := []string{s.zoneDS}
	ns, glue, ds, err := says()
	if err != nil {
		return err
	}
	if !slices.Equal(ns, wantNS) || !slices.Equal(glue, wantGlue) || !slices.Equal(ds, wantDS) {
		return fmt.Errorf("NS %v, glue %v, DS %v", ns, glue, ds)
	}
	return nil
}

// normDS writes a DS's rdata one way: "tag alg type DIGEST", the digest in
// one upper-case word (dig splits it).
func normDS(rdata string) string {
	f := strings.Fields(rdata)
	if len(f) < 4 {
		return rdata
	}
	return strings.Join(f[:3], " ") + " " + strings.ToUpper(strings.Join(f[3:], ""))
}

// parentSays is BIND's referral for gslb.example.com: the NS names, the
// glue ("name addr") and the DS, each sorted.
func (s *twoSite) parentSays() (ns, glue, ds []string, err error) {
	out, err := s.dig(s.tester, "@"+s.parent.IP.String(), "+norec", "gslb.example.com", "NS")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %s", err, out)
	}
	for _, l := range append(section(out, "AUTHORITY"), section(out, "ADDITIONAL")...) {
		f := strings.Fields(l)
		switch {
		case len(f) == 5 && f[3] == "NS" && f[0] == "gslb.example.com.":
			ns = append(ns, f[4])
		case len(f) == 5 && f[3] == "A":
			glue = append(glue, f[0]+" "+f[4])
		}
	}
	out, err = s.dig(s.tester, "@"+s.parent.IP.String(), "+norec", "gslb.example.com", "DS", "+short")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %s", err, out)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "" {
			ds = append(ds, normDS(l))
		}
	}
	slices.Sort(ns)
	slices.Sort(glue)
	slices.Sort(ds)
	return ns, glue, ds, nil
}

// TestTwoSites: deploy/README.md's two-site walkthrough, every command as
// written, forms one ring across the sites, delegates the zone and fails
// over; the trust model holds with the real binary; a credential renewed in
// its Secret is taken without a restart; the delegation moves to Route 53
// with a rolling restart; and the loss of a whole region is measured.
// Figures are logged as FIGURE lines.
//
// Each check was seen to fail with Meridian broken on purpose: seeds
// resolved only once (1: eu-west never joins), no DS in the delegation (2),
// writer candidates not taken from the credentials (3: one Slack message
// per node), a credential's region not checked at start (4a), credential
// files not followed (5), decision.min_regions not capped by the regions
// the ring has live (6: eu-west's endpoint stays in east's answers), no DS
// written to Route 53 (7).
func TestTwoSites(t *testing.T) {
	bins := kubelab.Bins(t)
	for _, b := range []string{"kubectl", "helm"} {
		_, err := os.Stat(filepath.Join(bins, b))
		require.NoError(t, err, "KUBE_BINS=%s has no %s: run `make kube-bins` (it builds kubectl and helm too)", bins, b)
	}
	s := &twoSite{t: t, root: t, lab: NewLab(t, "twosite"), dir: t.TempDir(), backends: map[string]*Proc{}}
	s.delegation, s.parentName = s.parentSays, "BIND"
	lab := s.lab
	s.parent, s.resolver = lab.AddHost("parent"), lab.AddHost("resolv")
	e0, e1, w0 := lab.AddHost("e0"), lab.AddHost("e1"), lab.AddHost("w0")
	s.lbh, s.web, s.x, s.tester = lab.AddHost("lb"), lab.AddHost("web"), lab.AddHost("x"), lab.AddHost("tester")
	lbEast, lbWest := s.lbh.IP, s.lbh.Addr(2)
	s.lbh.AddAddr(t, lbWest)
	webEast, webWest := s.web.Addr(10), s.web.Addr(20)
	s.web.AddAddr(t, webEast)
	s.web.AddAddr(t, webWest)

	kl := kubelab.Start(t, bins, "east", "eu-west")
	ports := []int{kl.Member("east").Port, kl.Member("eu-west").Port}
	newCluster := func(name string, hosts []*Host, lb, web netip.Addr) *tsCluster {
		m := kl.Member(name)
		cs, err := kubernetes.NewForConfig(m.AdminConfig())
		require.NoError(t, err)
		dir := filepath.Join(s.dir, "pods", name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		return &tsCluster{name: name, m: m, cs: cs, hosts: hosts, lb: lb, web: web, resolver: s.resolver.IP, bridges: ports, dir: dir,
			life: t, bridged: map[string]bool{}, pods: map[string]*tsPod{}}
	}
	s.east = newCluster("east", []*Host{e0, e1}, lbEast, webEast)
	s.west = newCluster("eu-west", []*Host{w0}, lbWest, webWest)

	s.setUpWorkdir(kl)
	s.startParent()
	s.startResolver()
	startDNSLB(t, s.lbh, lbEast, []*Host{e0, e1})
	startDNSLB(t, s.lbh, lbWest, []*Host{w0})
	sinkAddr := netip.AddrPortFrom(s.web.IP, 9000)
	s.sink = s.web.startHelper(t, "slack receiver", "hooksink", sinkAddr.String())
	s.sink.WaitFor(t, "ready", 10*time.Second)
	s.backends["east"] = s.web.StartHTTP(t, netip.AddrPortFrom(webEast, 8080), "/healthz")
	s.backends["eu-west"] = s.web.StartHTTP(t, netip.AddrPortFrom(webWest, 8080), "/healthz")

	// The walkthrough, as written: once, east, eu-west, the joins (the
	// annotations come with the app, in check 2).
	s.watchParent = true
	blocks := docBlocks(t, "deploy/README.md", twoSiteHeading)
	require.Len(t, blocks, 6, "once, east, eu-west, the joins, the app's annotations, Route 53 as the parent")
	var rolledOut time.Time
	for i, what := range []string{"once", "east", "eu-west", "joins"} {
		out, err := s.runBlock(what, blocks[i], 6*time.Minute)
		require.NoError(t, err, "walkthrough, %s:\n%s", what, out)
		if strings.Contains(blocks[i], "rollout status") {
			rolledOut = time.Now()
		}
	}
	allProbers := []string{"east-meridian-0", "east-meridian-1", "eu-west-meridian-0"}

	// Each check starts from what the one before left: the first to fail ends the test.
	if !t.Run("1: the ring forms across the sites", func(t *testing.T) {
		s.t = t
		s.until("every pod counts 3 trusted probers", 3*time.Minute, func() error { return s.ringWhole(allProbers) })
		t.Logf("FIGURE two sites: last `rollout status` returned → ring formed (3 trusted probers on every pod): %s", time.Since(rolledOut).Round(100*time.Millisecond))
		var writer string
		s.until("exactly one pod is the ring's writer", time.Minute, func() error {
			var writers []string
			for _, p := range s.pods() {
				n, err := s.metric(p, "meridian_ring_writer")
				if err != nil {
					return err
				}
				if n == 1 {
					writers = append(writers, p.site+"/"+p.name)
				}
			}
			if len(writers) != 1 {
				return fmt.Errorf("writers %v", writers)
			}
			writer = writers[0]
			return nil
		})
		t.Logf("FIGURE two sites: last `rollout status` returned → one writer (%s): %s", writer, time.Since(rolledOut).Round(100*time.Millisecond))
	}) {
		return
	}

	if !t.Run("2: the parent delegates to both sites' DNS addresses, and Unbound validates through it", func(t *testing.T) {
		s.t = t
		s.until("BIND holds NS, glue and DS of both sites", 2*time.Minute, func() error { return s.delegatesToBoth(s.parentSays) })
		t.Logf("FIGURE two sites: last `rollout status` returned → NS + glue + DS of both sites in BIND: %s", time.Since(rolledOut).Round(100*time.Millisecond))
		s.watchParent = false
		// A second site that runs alone before it finds the first elects
		// itself and writes the delegation; it keeps the first site's
		// nameserver, which it has never seen (providers.KeepUnseen): once
		// ns-east is in the parent it stays, while east lives.
		t.Logf("the parent's delegation of gslb.example.com while the sites came up:\n%s", strings.Join(s.parentNS, "\n"))
		inParent := false
		for _, l := range s.parentNS {
			has := strings.Contains(l, "ns-east.gslb.example.com.")
			assert.False(t, inParent && !has, "east's nameserver left the parent while east lived: %s", l)
			inParent = inParent || has
		}

		// The app: shop/web in each cluster, then the walkthrough's annotations.
		for _, c := range s.clusters() {
			webService(t, c)
		}
		out, err := s.runBlock("the app's annotations", blocks[4], time.Minute)
		require.NoError(t, err, out)
		annotated := time.Now()
		want := []string{webEast.String(), webWest.String()}
		slices.Sort(want)
		s.until("every pod answers both sites' web", 2*time.Minute, func() error {
			for _, p := range s.pods() {
				got, err := s.answerAddrs(p, "app.gslb.example.com")
				if err != nil {
					return err
				}
				if !slices.Equal(got, want) {
					return fmt.Errorf("%s/%s answers %v", p.site, p.name, got)
				}
			}
			return nil
		})
		t.Logf("FIGURE two sites: annotate → app.gslb.example.com answered with both sites' web by every pod: %s", time.Since(annotated).Round(100*time.Millisecond))
		s.until("every pod decides both sites' web up", 2*time.Minute, func() error {
			for _, p := range s.pods() {
				rep, err := s.health(p)
				if err != nil {
					return err
				}
				up := 0
				for _, e := range rep.Endpoints {
					if e.State == "up" {
						up++
					}
				}
				if up != 2 {
					return fmt.Errorf("%s/%s: %d endpoints up: %+v", p.site, p.name, up, rep.Endpoints)
				}
			}
			return nil
		})
		t.Logf("FIGURE two sites: annotate → both endpoints decided up by every pod: %s", time.Since(annotated).Round(100*time.Millisecond))

		out, err = s.dig(s.tester, "@"+s.resolver.IP.String(), "+dnssec", "app.gslb.example.com", "A")
		require.NoError(t, err, out)
		assert.Equal(t, "NOERROR", status(out), out)
		assert.Contains(t, flags(out), "ad", "validated from example.com's key through BIND's DS: %s", out)
		var ips []string
		for _, l := range section(out, "ANSWER") {
			if f := strings.Fields(l); len(f) == 5 && f[3] == "A" {
				ips = append(ips, f[4])
			}
		}
		require.NotEmpty(t, ips, out)
		for _, ip := range ips {
			assert.Contains(t, want, ip)
		}
	}) {
		return
	}

	if !t.Run("3: a backend killed in east is confirmed by eu-west, leaves every site's answers, one Slack message", func(t *testing.T) {
		s.checkFailover(t, webEast)
	}) {
		return
	}

	if !t.Run("5: a credential renewed in its Secret is taken without a restart", func(t *testing.T) {
		var line string
		for l := range strings.Lines(blocks[2]) {
			if strings.Contains(l, "ring ca issue") {
				line = l
			}
		}
		require.NotEmpty(t, line, "eu-west's block issues its credential")
		s.checkRenewal(t, line, allProbers)
	}) {
		return
	}

	if !t.Run("4: trust with the real binary", func(t *testing.T) {
		s.checkTrust(t, allProbers)
	}) {
		return
	}

	if !t.Run("7: Route 53 as the parent instead of BIND, as the walkthrough switches to it", func(t *testing.T) {
		s.checkRoute53(t, blocks[5], allProbers)
	}) {
		return
	}

	t.Run("6: losing a region", func(t *testing.T) {
		s.checkRegionLoss(t, webWest)
	})
}

// webService creates the app's Service shop/web (a LoadBalancer whose
// address is the site's backend) in cluster c.
func webService(t *testing.T, c *tsCluster) {
	t.Helper()
	ctx, cancel := tsCtx()
	defer cancel()
	_, err := c.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.cs.CoreV1().Services("shop").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// setUpWorkdir lays out the walkthrough's working directory: deploy/helm
// (the chart, and the examples with the parent's address the lab's BIND),
// keys/parent.tsig and keys/slack.url (what the parent's operator and Slack
// gave), bin/ with meridian, kubectl and helm, a kubeconfig with contexts
// east and eu-west.
func (s *twoSite) setUpWorkdir(kl *kubelab.Lab) {
	t := s.t
	root := srcdir.Root()
	require.NoError(t, os.MkdirAll(filepath.Join(s.dir, "deploy", "helm"), 0o755))
	out, err := exec.Command("cp", "-r", filepath.Join(root, "deploy", "helm", "meridian"), filepath.Join(s.dir, "deploy", "helm")+"/").CombinedOutput()
	require.NoError(t, err, "%s", out)
	ex := filepath.Join(s.dir, "deploy", "helm", "examples")
	require.NoError(t, os.MkdirAll(ex, 0o755))
	for _, f := range []string{"common.yaml", "east.yaml", "eu-west.yaml", "route53.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, "deploy", "helm", "examples", f))
		require.NoError(t, err)
		if f == "common.yaml" {
			require.Equal(t, 1, strings.Count(string(b), "192.0.2.53"), "common.yaml names the parent's address once")
			b = []byte(strings.Replace(string(b), "192.0.2.53", s.parent.IP.String(), 1))
		}
		require.NoError(t, os.WriteFile(filepath.Join(ex, f), b, 0o644))
	}

	keys := filepath.Join(s.dir, "keys")
	require.NoError(t, os.MkdirAll(keys, 0o700))
	raw := make([]byte, 32)
	_, err = rand.Read(raw)
	require.NoError(t, err)
	s.tsigSecret = base64.StdEncoding.EncodeToString(raw)
	require.NoError(t, os.WriteFile(filepath.Join(keys, "parent.tsig"),
		fmt.Appendf(nil, "key \"meridian-update\" {\n\talgorithm hmac-sha256;\n\tsecret \"%s\";\n};\n", s.tsigSecret), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(keys, "slack.url"), fmt.Appendf(nil, "http://%s:9000/slack/T000/B000/XXXX\n", s.web.IP), 0o600))

	bin := filepath.Join(s.dir, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	bins := kubelab.Bins(t)
	for name, path := range map[string]string{"meridian": meridianBin, "kubectl": filepath.Join(bins, "kubectl"), "helm": filepath.Join(bins, "helm")} {
		require.NoError(t, os.Symlink(path, filepath.Join(bin, name)))
	}
	kubeconfig := kl.Member("east").Kubeconfig(t, kubelab.AdminUser) + string(os.PathListSeparator) + kl.Member("eu-west").Kubeconfig(t, kubelab.AdminUser)
	home := filepath.Join(s.dir, "home")
	require.NoError(t, os.MkdirAll(home, 0o700))
	s.env = []string{"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + home, "KUBECONFIG=" + kubeconfig, "LANG=C.UTF-8"}
}

// twoSiteParentConf is BIND's example.com: signed by BIND (dnssec-policy
// default, inline signing), updates and transfers with the operator's key,
// which may change gslb.example.com and below only.
const twoSiteParentConf = `options {
	directory "%[1]s";
	pid-file "%[1]s/named.pid";
	session-keyfile "%[1]s/session.key";
	managed-keys-directory "%[1]s";
	listen-on port 53 { %[2]s; };
	listen-on-v6 { none; };
	recursion no;
	notify no;
	dnssec-validation no;
	allow-query { any; };
	allow-transfer { none; };
};
controls { };
include "%[3]s";
zone "example.com" {
	type primary;
	file "%[1]s/example.com.db";
	key-directory "%[1]s";
	dnssec-policy default;
	inline-signing yes;
	update-policy { grant meridian-update subdomain gslb.example.com. ANY; };
	allow-transfer { key meridian-update; };
};
`

// twoSiteParentZone: a 5 s negative TTL, so that a resolver that asked for
// ring.gslb.example.com before the first site delegated it asks again soon.
const twoSiteParentZone = `$TTL 60
@ IN SOA ns1.example.com. hostmaster.example.com. 1 3600 600 86400 5
@ IN NS ns1.example.com.
ns1 IN A %s
www IN A 192.0.2.80
`

// startParent runs BIND on the parent host and waits until it signs.
func (s *twoSite) startParent() {
	t := s.t
	dir := filepath.Join(s.dir, "bind")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	conf := filepath.Join(dir, "named.conf")
	require.NoError(t, os.WriteFile(conf, fmt.Appendf(nil, twoSiteParentConf, dir, s.parent.IP, filepath.Join(s.dir, "keys", "parent.tsig")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "example.com.db"), fmt.Appendf(nil, twoSiteParentZone, s.parent.IP), 0o644))
	s.parent.Start(t, "named", lookPath(t, "named"), "-g", "-n", "1", "-c", conf)
}

// startResolver waits for BIND's key and runs Unbound on the resolver host:
// validating, example.com only through BIND, BIND's key as trust anchor, and
// cluster.local answered as each cluster's DNS would for its pods (the
// headless Service of the StatefulSet).
func (s *twoSite) startResolver() {
	t := s.t
	var anchor string
	s.until("BIND signs example.com", 30*time.Second, func() error {
		out, err := s.dig(s.tester, "@"+s.parent.IP.String(), "+norec", "example.com", "DNSKEY", "+short")
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "257 ") {
				anchor = "example.com. DNSKEY " + l
				return nil
			}
		}
		return errNotReady
	})
	dir := filepath.Join(s.dir, "unbound")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	var b strings.Builder
	fmt.Fprintf(&b, `server:
  interface: %[1]s
  port: 53
  do-ip6: no
  access-control: 10.77.0.0/16 allow
  username: ""
  chroot: ""
  directory: "%[2]s"
  pidfile: "%[2]s/unbound.pid"
  use-syslog: no
  logfile: ""
  verbosity: 1
  val-log-level: 2
  module-config: "validator iterator"
  harden-dnssec-stripped: yes
  qname-minimisation: no
  cache-max-negative-ttl: 5
  infra-host-ttl: 10
  trust-anchor: %[3]q
  local-zone: "cluster.local." static
`, s.resolver.IP, dir, anchor)
	for _, c := range s.clusters() {
		for _, h := range c.hosts {
			fmt.Fprintf(&b, "  access-control-view: %s/32 %s\n", h.IP, c.name)
		}
	}
	for _, c := range s.clusters() {
		fmt.Fprintf(&b, "view:\n  name: %q\n  view-first: yes\n  local-zone: \"cluster.local.\" static\n", c.name)
		for _, h := range c.hosts {
			fmt.Fprintf(&b, "  local-data: \"%s-gossip.%s.svc.cluster.local. 5 IN A %s\"\n", tsStatefulSet, tsNamespace, h.IP)
		}
	}
	fmt.Fprintf(&b, "stub-zone:\n  name: \"example.com\"\n  stub-addr: %s\n", s.parent.IP)
	conf := filepath.Join(dir, "unbound.conf")
	require.NoError(t, os.WriteFile(conf, []byte(b.String()), 0o644))
	u := s.resolver.Start(t, "unbound", lookPath(t, "unbound"), "-d", "-c", conf)
	s.until("Unbound answers", 20*time.Second, func() error {
		select {
		case <-u.Exited():
			t.Fatalf("unbound exited:\n%s\n%s", u.Output(), b.String())
		default:
		}
		out, err := s.dig(s.tester, "@"+s.resolver.IP.String(), "www.example.com", "A", "+dnssec")
		if err != nil || status(out) != "NOERROR" {
			return fmt.Errorf("%v: %s", err, out)
		}
		if !slices.Contains(flags(out), "ad") {
			return fmt.Errorf("www.example.com not validated: %s", out)
		}
		return nil
	})
}
