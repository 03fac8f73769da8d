//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/meridian-gslb/meridian/providers/route53/route53fake"
)

// Route 53 as the parent of the two-site lab (TestTwoSites, check 7), as
// deploy/README.md switches to it: the walkthrough's block creates the
// Secret meridian-aws and upgrades each site with route53.yaml; the
// changed pod template rolls the pods (the providers section is read at
// start), and the writer puts the same NS, glue and DS into route53fake.

// r53Parent is route53fake holding the hosted zone example.com, which the
// pods reach at endpoint, an address of the parent host: the fake serves
// on the test process's loopback, and a reverse proxy listening in the
// parent host's namespace forwards to it, noting which pod sent each
// ChangeResourceRecordSets.
type r53Parent struct {
	fake     *route53fake.Server
	zone     string // example.com's hosted zone id
	endpoint string // http://<parent>:<port>

	mu      sync.Mutex
	writers map[string]int // source address → ChangeResourceRecordSets requests
}

// startRoute53Parent starts the fake and its proxy for the rest of the
// lab's life.
func (s *twoSite) startRoute53Parent() *r53Parent {
	t := s.t
	fake := route53fake.New(route53fake.Options{})
	r := &r53Parent{fake: fake, zone: fake.AddZone("example.com"), writers: map[string]int{}}
	target, err := url.Parse(fake.URL())
	require.NoError(t, err)
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Host = pr.In.Host // as signed
	}}
	var ln net.Listener
	require.NoError(t, inNetns(s.parent.NS, func() error {
		var err error
		ln, err = net.Listen("tcp", netip.AddrPortFrom(s.parent.IP, 0).String())
		return err
	}), "listen in the parent's namespace")
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/rrset") {
			host, _, _ := net.SplitHostPort(req.RemoteAddr)
			r.mu.Lock()
			r.writers[host]++
			r.mu.Unlock()
		}
		proxy.ServeHTTP(w, req)
	})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	s.root.Cleanup(func() {
		srv.Close()
		<-done
		fake.Close()
	})
	r.endpoint = "http://" + ln.Addr().String()
	return r
}

// says is what the fake holds for gslb.example.com, as parentSays reads
// BIND: the NS names, the glue ("name addr") and the DS, each sorted.
func (r *r53Parent) says() (ns, glue, ds []string, err error) {
	for _, rs := range r.fake.Records(r.zone) {
		for _, v := range rs.Values {
			switch {
			case rs.Type == "NS" && rs.Name == "gslb.example.com.":
				ns = append(ns, v)
			case rs.Type == "A" && strings.HasSuffix(rs.Name, ".gslb.example.com."):
				glue = append(glue, rs.Name+" "+v)
			case rs.Type == "DS" && rs.Name == "gslb.example.com.":
				ds = append(ds, normDS(v))
			}
		}
	}
	slices.Sort(ns)
	slices.Sort(glue)
	slices.Sort(ds)
	return ns, glue, ds, nil
}

// writerPods are the pods that sent change batches, by name.
func (r *r53Parent) writerPods(pods []*tsPod) map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for addr, n := range r.writers {
		name := addr
		for _, p := range pods {
			if p.host.IP.String() == addr {
				name = p.site + "/" + p.name
			}
		}
		out[name] += n
	}
	return out
}

// route53Endpoint writes the values file the test adds after route53.yaml,
// the one substitution of this block: route53.yaml's providers.route53
// entries, each with the fake's endpoint (a real user has none: the SDK
// finds Route 53). It returns the file's path, relative to the working
// directory.
func (s *twoSite) route53Endpoint(endpoint string) string {
	t := s.t
	b, err := os.ReadFile(filepath.Join(s.dir, "deploy", "helm", "examples", "route53.yaml"))
	require.NoError(t, err)
	var v struct {
		Providers struct {
			Route53 []map[string]any `json:"route53"`
		} `json:"providers"`
	}
	require.NoError(t, yaml.Unmarshal(b, &v))
	require.NotEmpty(t, v.Providers.Route53, "route53.yaml has providers.route53")
	for _, z := range v.Providers.Route53 {
		z["endpoint"] = endpoint
	}
	out, err := yaml.Marshal(map[string]any{"providers": map[string]any{"route53": v.Providers.Route53}})
	require.NoError(t, err)
	const name = "route53-endpoint.yaml"
	require.NoError(t, os.WriteFile(filepath.Join(s.dir, name), out, 0o644))
	return name
}

// checkRoute53: the walkthrough's block "With Route 53 as the parent
// instead of BIND", as written but for the endpoint file added after
// route53.yaml, with fake keys in AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY: every pod is replaced once, one at a time; the
// ring stays whole; route53fake gets NS, glue and DS of both sites (the
// DS BIND has) from exactly one writer; no pod logs the secret key.
func (s *twoSite) checkRoute53(t *testing.T, block string, all []string) {
	s.t = t
	r := s.startRoute53Parent()
	file := s.route53Endpoint(r.endpoint)
	const values = "-f deploy/helm/examples/route53.yaml"
	require.Contains(t, block, values)
	block = strings.ReplaceAll(block, values, values+" -f "+file)
	raw := make([]byte, 30)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	secret := base64.StdEncoding.EncodeToString(raw)
	defer func(env []string) { s.env = env }(s.env)
	s.env = append(slices.Clone(s.env), "AWS_ACCESS_KEY_ID=AKIDTWOSITEE2E", "AWS_SECRET_ACCESS_KEY="+secret)
	before := map[*tsPod]bool{}
	for _, p := range s.pods() {
		before[p] = true
	}

	start := time.Now()
	out, err := s.runBlock("Route 53 as the parent", block, 5*time.Minute)
	require.NoError(t, err, out)
	rolled := time.Since(start)
	for _, p := range s.pods() {
		assert.False(t, before[p], "%s/%s was not replaced: the providers section is read at start", p.site, p.name)
	}
	s.until("route53fake holds NS, glue and DS of both sites", 2*time.Minute, func() error { return s.delegatesToBoth(r.says) })
	var last time.Time
	for _, b := range r.fake.Batches() {
		if b.ChangeID != "" && b.End.After(last) {
			last = b.End
		}
	}
	t.Logf("FIGURE two sites: Route 53 block started (Secret, helm upgrade east) → NS + glue + DS of both sites in Route 53 %s (the block, both sites' rolling restarts, took %s)",
		last.Sub(start).Round(100*time.Millisecond), rolled.Round(100*time.Millisecond))
	s.delegation, s.parentName = r.says, "Route 53"

	writers := r.writerPods(s.pods())
	t.Logf("change batches to Route 53 by pod: %v; %d batches, %d calls", writers, len(r.fake.Batches()), r.fake.Calls()[route53fake.OpChangeResourceRecordSets])
	// One writer puts the delegation into Route 53. The rolling restart may
	// hand the writer role over once, when a restart outlasts the 10 s vote
	// lease (a loaded machine): then two pods wrote one after the other,
	// never at once (internal/leader's tests hold that property).
	assert.NotEmpty(t, writers, "a writer puts the delegation into Route 53")
	assert.LessOrEqual(t, len(writers), 2, "at most one hand-over of the writer during the rolling restart")
	s.until("the ring is whole", time.Minute, func() error { return s.ringWhole(all) })
	for _, p := range s.pods() {
		assert.NotContains(t, p.proc.Output(), secret, "%s/%s logs the AWS secret key", p.site, p.name)
	}
	if ns, glue, ds, err := s.parentSays(); err == nil {
		t.Logf("BIND after the switch (not written any more): NS %v, glue %v, DS %v", ns, glue, ds)
	}
}
