package route53

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/plan"
	"github.com/meridian-gslb/meridian/providers/route53/route53fake"
)

// backstop is the provider options of a zone with health_checks: backstop.
var backstop = Options{Owner: testOwner, HealthChecks: model.HealthChecksBackstop}

// pass runs one reconciler pass the way providers.Reconciler does for a
// direct-mode zone of an ObjectSyncer: PrepareObjects, the records' plan
// with p.Desired, Apply, then CollectObjects. It returns the plan and the
// object changes of both calls.
func (e *env) pass(t *testing.T, views []providers.ServiceView) (plan.Plan, providers.ObjectResult) {
	t.Helper()
	pl, objs, err := e.tryPass(context.Background(), e.p, views)
	require.NoError(t, err)
	for _, c := range objs.Changes {
		require.NoError(t, c.Err, "object change %s", c)
	}
	return pl, objs
}

func (e *env) tryPass(ctx context.Context, p *Provider, views []providers.ServiceView) (plan.Plan, providers.ObjectResult, error) {
	var all providers.ObjectResult
	o, err := p.PrepareObjects(ctx, testZone, views, false)
	all.Changes, all.Calls = append(all.Changes, o.Changes...), all.Calls+o.Calls
	if err != nil {
		return plan.Plan{}, all, err
	}
	cur, err := p.Records(ctx, testZone)
	if err != nil {
		return plan.Plan{}, all, err
	}
	pl := plan.Compute(plan.Input{Owner: testOwner, Desired: p.Desired(views, testZone), Current: cur})
	res, err := p.Apply(ctx, testZone, pl.Changes)
	if err != nil {
		return pl, all, err
	}
	if len(res.Failed) > 0 {
		return pl, all, fmt.Errorf("refused: %v", res.Failed)
	}
	o, err = p.CollectObjects(ctx, testZone, false)
	all.Changes, all.Calls = append(all.Changes, o.Changes...), all.Calls+o.Calls
	return pl, all, err
}

// writes counts the fake's write calls so far.
func (e *env) writes() int {
	n := 0
	for op, c := range e.fake.Calls() {
		switch op {
		case route53fake.OpChangeResourceRecordSets, route53fake.OpCreateHealthCheck, route53fake.OpUpdateHealthCheck, route53fake.OpDeleteHealthCheck,
			route53fake.OpChangeTagsForResource, route53fake.OpCreateCidrCollection, route53fake.OpChangeCidrCollection, route53fake.OpDeleteCidrCollection:
			n += c
		}
	}
	return n
}

// calls counts every call of the fake so far.
func (e *env) calls() int {
	n := 0
	for _, c := range e.fake.Calls() {
		n += c
	}
	return n
}

// resolve answers name A for client c as Route 53 would.
func (e *env) resolve(t *testing.T, name, typ string, c route53fake.Client, rnd *rand.Rand) []string {
	t.Helper()
	got, err := e.fake.Resolve(e.zoneID, name, typ, c, rnd)
	require.NoError(t, err)
	return got
}

// ours returns the fake's health checks tagged with our owner id.
func (e *env) ours() []route53fake.HealthCheck {
	var out []route53fake.HealthCheck
	for _, hc := range e.fake.HealthChecks() {
		if hc.Tags[tagOwner] == testOwner {
			out = append(out, hc)
		}
	}
	return out
}

// backend is an HTTP server on a loopback address, or a bare TCP listener.
type backend struct {
	addr string // loopback address, e.g. 127.0.0.2
	ln   net.Listener
	srv  *http.Server
	wg   sync.WaitGroup
	once sync.Once
}

// newBackends starts one backend per loopback address, all on one port
// (a service's health_check has one port). tcp: bare listeners that
// accept and close.
func newBackends(t *testing.T, tcp bool, addrs ...string) ([]*backend, int) {
	t.Helper()
	var out []*backend
	port := 0
	for _, a := range addrs {
		ln, err := net.Listen("tcp", net.JoinHostPort(a, strconv.Itoa(port)))
		require.NoError(t, err)
		port = ln.Addr().(*net.TCPAddr).Port
		b := &backend{addr: a, ln: ln}
		if tcp {
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					_ = c.Close()
				}
			}()
		} else {
			b.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }), ReadHeaderTimeout: time.Second}
			b.wg.Add(1)
			go func() { defer b.wg.Done(); _ = b.srv.Serve(ln) }()
		}
		out = append(out, b)
		t.Cleanup(b.stop)
	}
	return out, port
}

func (b *backend) stop() {
	b.once.Do(func() {
		if b.srv != nil {
			_ = b.srv.Close()
		} else {
			_ = b.ln.Close()
		}
		b.wg.Wait()
	})
}

func httpCheck(port int) *model.Check {
	return &model.Check{Kind: model.CheckHTTP, Port: port, Path: "/healthz", Host: "app.example.com", Interval: model.Duration(5 * time.Second), Fall: 1}
}

func weighted7030(check *model.Check, a, b string) providers.ServiceView {
	return providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, HealthCheck: check, Endpoints: []providers.EndpointView{
		ep(a, "A", "us", 700, true), ep(b, "A", "eu", 300, true),
	}}
}

func failover3(check *model.Check, a, b, c string, up ...bool) providers.ServiceView {
	if len(up) == 0 {
		up = []bool{true, true, true}
	}
	return providers.ServiceView{Name: "api.example.com.", Strategy: model.StrategyFailover, TTL: 20, HealthCheck: check, Failover: [][]int{{0}, {1}, {2}}, Endpoints: []providers.EndpointView{
		ep(a, "A", "us", 100*b2i(up[0]), up[0]), ep(b, "A", "eu", 100*b2i(up[1]), up[1]), ep(c, "A", "ap", 100*b2i(up[2]), up[2]),
	}}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// share draws n answers of name and returns the share of want, in percent.
func (e *env) share(t *testing.T, name, want string, n int) float64 {
	t.Helper()
	rnd := rand.New(rand.NewPCG(14, 70))
	hits := 0
	for range n {
		got := e.resolve(t, name, "A", route53fake.Client{}, rnd)
		require.Len(t, got, 1)
		if got[0] == want {
			hits++
		}
	}
	return 100 * float64(hits) / float64(n)
}

func TestWeightedSharesWithHealthChecks(t *testing.T) {
	for _, mode := range []string{model.HealthChecksOff, model.HealthChecksBackstop} {
		t.Run("health_checks "+mode, func(t *testing.T) {
			e := newEnv(t, route53fake.Options{}, Options{Owner: testOwner, HealthChecks: mode})
			e.pass(t, []providers.ServiceView{weighted7030(httpCheck(80), "198.51.99.1", "198.51.99.2")})
			got := e.share(t, "app.example.com.", "198.51.99.1", 20000)
			t.Logf("70/30 with health_checks %s: %.2f%% of 20000 answers", mode, got)
			assert.InDelta(t, 70, got, 1.5)
			if mode == model.HealthChecksBackstop {
				assert.Len(t, e.ours(), 2, "one check per endpoint")
			} else {
				assert.Empty(t, e.fake.HealthChecks())
			}
		})
	}
}

func TestGeoAndFailoverAnswers(t *testing.T) {
	e := newEnv(t, route53fake.Options{}, backstop)
	geo := providers.ServiceView{Name: "geo.example.com.", Strategy: model.StrategyGeo, TTL: 30, HealthCheck: httpCheck(80),
		Geo: &model.GeoPolicy{Rules: []model.GeoRule{{Continents: []string{"EU"}, Clusters: []string{"eu"}}}, Default: []string{"us"}},
		Endpoints: []providers.EndpointView{
			tagged(ep("198.51.99.11", "A", "us", 100, true), "US", "NA", "us-east"),
			tagged(ep("198.51.99.12", "A", "eu", 100, true), "DE", "EU", "eu-central"),
		}}
	views := []providers.ServiceView{geo, failover3(httpCheck(80), "198.51.99.21", "198.51.99.22", "198.51.99.23")}
	e.pass(t, views)

	de := route53fake.Client{Country: "DE", Continent: "EU"}
	assert.Equal(t, []string{"198.51.99.12"}, e.resolve(t, "geo.example.com.", "A", de, nil), "a German client gets the EU record")
	assert.Equal(t, []string{"198.51.99.11"}, e.resolve(t, "geo.example.com.", "A", route53fake.Client{Country: "BR", Continent: "SA"}, nil), "others the default")
	assert.Equal(t, []string{"198.51.99.21"}, e.resolve(t, "api.example.com.", "A", de, nil), "failover answers PRIMARY")

	// Meridian decides the first group down: PRIMARY becomes the second.
	views[1] = failover3(httpCheck(80), "198.51.99.21", "198.51.99.22", "198.51.99.23", false, true, true)
	e.pass(t, views)
	assert.Equal(t, []string{"198.51.99.22"}, e.resolve(t, "api.example.com.", "A", de, nil))
	// Route 53 alone (no Meridian): the new PRIMARY's check fails → SECONDARY.
	e.setHealth(t, "198.51.99.22", false)
	assert.Equal(t, []string{"198.51.99.23"}, e.resolve(t, "api.example.com.", "A", de, nil), "SECONDARY once PRIMARY's check fails")
}

// setHealth sets the status of our check of address addr.
func (e *env) setHealth(t *testing.T, addr string, up bool) {
	t.Helper()
	for _, hc := range e.ours() {
		if hc.Config.IPAddress == addr {
			e.fake.SetHealth(hc.ID, up)
			return
		}
	}
	t.Fatalf("no health check of %s", addr)
}

func TestBackstopWithEveryMeridianNodeDown(t *testing.T) {
	for _, mode := range []string{model.HealthChecksBackstop, model.HealthChecksOff} {
		t.Run("health_checks "+mode, func(t *testing.T) {
			e := newEnv(t, route53fake.Options{AllowPrivateIPs: true}, Options{Owner: testOwner, HealthChecks: mode})
			web, port := newBackends(t, false, "127.0.0.2", "127.0.0.3")
			tcps, tport := newBackends(t, true, "127.0.0.4", "127.0.0.5", "127.0.0.6")
			tcpCheck := &model.Check{Kind: model.CheckTCP, Port: tport, Interval: model.Duration(30 * time.Second), Fall: 2}
			e.pass(t, []providers.ServiceView{
				weighted7030(httpCheck(port), "127.0.0.2", "127.0.0.3"),
				failover3(tcpCheck, "127.0.0.4", "127.0.0.5", "127.0.0.6"),
			})
			ctx := context.Background()
			e.fake.CheckHealth(ctx)
			rnd := rand.New(rand.NewPCG(1, 2))
			seen := map[string]bool{}
			for range 200 {
				seen[e.resolve(t, "app.example.com.", "A", route53fake.Client{}, rnd)[0]] = true
			}
			require.True(t, seen["127.0.0.2"] && seen["127.0.0.3"], "both answer while both are up")
			require.Equal(t, []string{"127.0.0.4"}, e.resolve(t, "api.example.com.", "A", route53fake.Client{}, nil))

			// Every Meridian node is down from here: no more passes.
			web[0].stop()
			tcps[0].stop()
			for range 2 { // fall 1 and fall 2
				e.fake.CheckHealth(ctx)
			}
			seen = map[string]bool{}
			for range 200 {
				seen[e.resolve(t, "app.example.com.", "A", route53fake.Client{}, rnd)[0]] = true
			}
			api := e.resolve(t, "api.example.com.", "A", route53fake.Client{}, nil)
			if mode == model.HealthChecksBackstop {
				assert.Equal(t, map[string]bool{"127.0.0.3": true}, seen, "the dead weighted endpoint is out")
				assert.Equal(t, []string{"127.0.0.5"}, api, "the dead PRIMARY fails over to SECONDARY")
			} else {
				assert.True(t, seen["127.0.0.2"], "without backstop Route 53 keeps answering the dead address")
				assert.Equal(t, []string{"127.0.0.4"}, api, "without backstop PRIMARY stays, dead")
			}
		})
	}
}

func TestMeridianAndRoute53Disagree(t *testing.T) {
	e := newEnv(t, route53fake.Options{}, backstop)
	// Meridian decided 198.51.99.1 down while its check passes.
	w := weighted7030(httpCheck(80), "198.51.99.1", "198.51.99.2")
	w.Endpoints[0].Available, w.Endpoints[0].Effective = false, 0
	f := failover3(httpCheck(80), "198.51.99.21", "198.51.99.22", "198.51.99.23", false, true, true)
	e.pass(t, []providers.ServiceView{w, f})
	rnd := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		require.Equal(t, []string{"198.51.99.2"}, e.resolve(t, "app.example.com.", "A", route53fake.Client{}, rnd), "Meridian's down stays out")
	}
	assert.Equal(t, []string{"198.51.99.22"}, e.resolve(t, "api.example.com.", "A", route53fake.Client{}, nil), "and out of PRIMARY")
	// Then the check of the endpoint Meridian has up fails: Route 53 falls
	// open over what Meridian left in, never onto what it took out.
	e.setHealth(t, "198.51.99.2", false)
	e.setHealth(t, "198.51.99.22", false)
	e.setHealth(t, "198.51.99.23", false)
	for range 200 {
		require.Equal(t, []string{"198.51.99.2"}, e.resolve(t, "app.example.com.", "A", route53fake.Client{}, rnd), "the decided-down endpoint is never answered")
		require.NotContains(t, e.resolve(t, "api.example.com.", "A", route53fake.Client{}, rnd), "198.51.99.21", "nor the decided-down PRIMARY")
	}
	e.setHealth(t, "198.51.99.2", true)
	e.setHealth(t, "198.51.99.22", true)
	e.setHealth(t, "198.51.99.23", true)

	// Meridian says up, the check fails: out (ADR 0011: either one takes it out).
	e.pass(t, []providers.ServiceView{weighted7030(httpCheck(80), "198.51.99.1", "198.51.99.2"), failover3(httpCheck(80), "198.51.99.21", "198.51.99.22", "198.51.99.23")})
	e.setHealth(t, "198.51.99.1", false)
	e.setHealth(t, "198.51.99.21", false)
	for range 200 {
		require.Equal(t, []string{"198.51.99.2"}, e.resolve(t, "app.example.com.", "A", route53fake.Client{}, rnd), "a failing check takes it out")
	}
	assert.Equal(t, []string{"198.51.99.22"}, e.resolve(t, "api.example.com.", "A", route53fake.Client{}, nil))
	// Both out by their checks: Route 53's own fail-open answers again.
	e.setHealth(t, "198.51.99.2", false)
	got := map[string]bool{}
	for range 200 {
		got[e.resolve(t, "app.example.com.", "A", route53fake.Client{}, rnd)[0]] = true
	}
	assert.Equal(t, map[string]bool{"198.51.99.1": true, "198.51.99.2": true}, got, "every set unhealthy: Route 53 answers as if all were healthy")
}

func TestSecondPassWritesNothingAndForeignChecksStay(t *testing.T) {
	e := newEnv(t, route53fake.Options{}, backstop)
	foreign := e.fake.PutHealthCheck(route53fake.HealthCheck{CallerReference: "someone-else", Tags: map[string]string{tagOwner: "other", "Name": "theirs"},
		Config: route53fake.HealthCheckConfig{Type: "HTTP", IPAddress: "198.51.99.1", Port: 80, ResourcePath: "/healthz", RequestInterval: 10, FailureThreshold: 1}})
	untagged := e.fake.PutHealthCheck(route53fake.HealthCheck{CallerReference: "console-made",
		Config: route53fake.HealthCheckConfig{Type: "TCP", IPAddress: "198.51.99.2", Port: 80, RequestInterval: 30, FailureThreshold: 3}})
	before := e.fake.HealthChecks()
	geo := providers.ServiceView{Name: "geo.example.com.", Strategy: model.StrategyGeo, TTL: 30, HealthCheck: httpCheck(80),
		Geo: &model.GeoPolicy{Rules: []model.GeoRule{{Continents: []string{"EU"}, Clusters: []string{"eu", "eu2"}}}},
		Endpoints: []providers.EndpointView{
			tagged(ep("198.51.99.11", "A", "us", 100, true), "US", "NA", ""),
			tagged(ep("198.51.99.12", "A", "eu", 100, true), "DE", "EU", ""),
			tagged(ep("198.51.99.13", "A", "eu2", 100, true), "FR", "EU", ""),
		}}
	views := []providers.ServiceView{
		weighted7030(httpCheck(80), "198.51.99.1", "198.51.99.2"),
		failover3(httpCheck(80), "198.51.99.21", "198.51.99.22", "198.51.99.23"),
		geo,
		{Name: "cn.example.com.", Strategy: model.StrategyWeighted, TTL: 30, HealthCheck: httpCheck(443), Endpoints: []providers.EndpointView{
			ep("a.cdn.example.net.", "CNAME", "us", 100, true), ep("b.cdn.example.net.", "CNAME", "eu", 100, true),
		}},
	}
	startCalls := e.calls()
	_, first := e.pass(t, views)
	firstCalls := e.calls() - startCalls
	t.Logf("first pass: %d calls, %d object changes", firstCalls, len(first.Changes))
	for _, s := range e.fake.Records(e.zoneID) {
		if s.SetID != "" && s.Type != "TXT" {
			assert.NotEmpty(t, s.HealthCheckID, "%s %s [%s] has a health check", s.Name, s.Type, s.SetID)
		}
	}
	writes, calls := e.writes(), e.calls()
	_, second := e.pass(t, views)
	assert.Empty(t, second.Changes)
	assert.Equal(t, writes, e.writes(), "the second pass writes nothing")
	t.Logf("second pass: %d calls, %d writes", e.calls()-calls, e.writes()-writes)
	after := map[string]route53fake.HealthCheck{}
	for _, hc := range e.fake.HealthChecks() {
		after[hc.ID] = hc
	}
	for _, hc := range before {
		assert.Equal(t, hc, after[hc.ID], "a foreign check is identical after two passes")
	}
	assert.Contains(t, after, foreign)
	assert.Contains(t, after, untagged)
}

func TestRestartMidPassConverges(t *testing.T) {
	e := newEnv(t, route53fake.Options{}, backstop)
	views := []providers.ServiceView{
		weighted7030(httpCheck(80), "198.51.99.1", "198.51.99.2"),
		failover3(httpCheck(80), "198.51.99.21", "198.51.99.22", "198.51.99.23"),
	}
	// Tagging fails: checks get created but stay untagged, and the pass ends.
	e.fake.SetFaults(route53fake.Faults{ServerError: 1, Ops: []string{route53fake.OpChangeTagsForResource}})
	_, _, err := e.tryPass(context.Background(), e.p, views)
	require.Error(t, err)
	created := len(e.fake.HealthChecks())
	require.Positive(t, created, "the first pass got as far as creating a check")
	require.Empty(t, e.ours(), "none tagged yet")

	// A new process (fresh caches) finishes the job.
	e.fake.SetFaults(route53fake.Faults{})
	e.p = e.provider(t, backstop)
	e.pass(t, views)
	// 2 weighted endpoints, PRIMARY's and SECONDARY's (the third group is in no set).
	assert.Len(t, e.fake.HealthChecks(), 4, "one per endpoint in a set, no duplicate of those made before the restart")
	assert.Len(t, e.ours(), 4, "all tagged")

	// A pass cancelled midway, then another new process.
	views[0] = weighted7030(httpCheck(81), "198.51.99.1", "198.51.99.2") // other port: new checks
	ctx, cancel := context.WithCancel(context.Background())
	p := e.provider(t, backstop)
	e.fake.SetFaults(route53fake.Faults{Delay: 50 * time.Millisecond})
	go func() { time.Sleep(120 * time.Millisecond); cancel() }()
	_, _, err = e.tryPass(ctx, p, views)
	require.Error(t, err)
	e.fake.SetFaults(route53fake.Faults{})
	e.p = e.provider(t, backstop)
	e.pass(t, views)
	assert.Len(t, e.fake.HealthChecks(), 4, "no leftover of port 80, no duplicate of port 81")
	for _, hc := range e.fake.HealthChecks() {
		if hc.Config.Type == "HTTP" && (hc.Config.IPAddress == "198.51.99.1" || hc.Config.IPAddress == "198.51.99.2") {
			assert.Equal(t, int32(81), hc.Config.Port)
		}
	}
	writes := e.writes()
	e.pass(t, views)
	assert.Equal(t, writes, e.writes(), "converged")
}

func TestRemovedEndpointLosesItsCheckAfterItsSet(t *testing.T) {
	e := newEnv(t, route53fake.Options{}, backstop)
	three := providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, HealthCheck: httpCheck(80), Endpoints: []providers.EndpointView{
		ep("198.51.99.1", "A", "us", 100, true), ep("198.51.99.2", "A", "eu", 100, true), ep("198.51.99.3", "A", "ap", 100, true),
	}}
	e.pass(t, []providers.ServiceView{three})
	require.Len(t, e.ours(), 3)
	two := three
	two.Endpoints = three.Endpoints[:2]
	_, objs := e.pass(t, []providers.ServiceView{two})
	require.Len(t, objs.Changes, 1)
	assert.Equal(t, "delete", objs.Changes[0].Op)
	for _, hc := range e.ours() {
		assert.NotEqual(t, "198.51.99.3", hc.Config.IPAddress)
	}
	assert.Len(t, e.ours(), 2)

	// Backstop turned off: the records lose their checks, then the checks go.
	e.p = e.provider(t, Options{Owner: testOwner})
	e.pass(t, []providers.ServiceView{two})
	assert.Empty(t, e.ours())
	for _, s := range e.fake.Records(e.zoneID) {
		assert.Empty(t, s.HealthCheckID)
	}
	lists := e.fake.Calls()[route53fake.OpListHealthChecks]
	e.pass(t, []providers.ServiceView{two})
	assert.Equal(t, lists, e.fake.Calls()[route53fake.OpListHealthChecks], "with health_checks off and none of ours left, checks are not listed again")
}

func TestIPBasedRoutingFromGeoNetworks(t *testing.T) {
	e := newEnv(t, route53fake.Options{}, backstop)
	geo := providers.ServiceView{Name: "geo.example.com.", Strategy: model.StrategyGeo, TTL: 30, HealthCheck: httpCheck(80),
		Geo: &model.GeoPolicy{Rules: []model.GeoRule{
			{Regions: []string{"office"}, Clusters: []string{"onprem"}},
			{Continents: []string{"EU"}, Clusters: []string{"eu"}},
		}, Default: []string{"us"}},
		Networks: []model.GeoNetwork{{CIDR: "10.1.0.0/16", Region: "office"}, {CIDR: "203.0.113.0/24", Country: "DE", Continent: "EU"}},
		Endpoints: []providers.EndpointView{
			tagged(ep("198.51.99.11", "A", "us", 100, true), "US", "NA", "us-east"),
			tagged(ep("198.51.99.12", "A", "eu", 100, true), "DE", "EU", "eu-central"),
			ep("198.51.99.13", "A", "onprem", 100, true),
		}}
	plain := geo
	plain.Networks = nil
	e.pass(t, []providers.ServiceView{plain}) // geolocation at the name first, then networks configured
	assert.Empty(t, e.fake.CidrCollections())
	e.pass(t, []providers.ServiceView{geo})
	colls := e.fake.CidrCollections()
	require.Len(t, colls, 1)
	assert.Equal(t, collectionName(testOwner, testZone), colls[0].Name)

	ask := func(ip, country, continent string) []string {
		return e.resolve(t, "geo.example.com.", "A", route53fake.Client{IP: netip.MustParseAddr(ip), Country: country, Continent: continent}, nil)
	}
	assert.Equal(t, []string{"198.51.99.13"}, ask("10.1.2.3", "US", "NA"), "a client in the office network gets the office's endpoints")
	assert.Equal(t, []string{"198.51.99.12"}, ask("203.0.113.9", "US", "NA"), "a client in a network placed in DE gets the EU endpoints")
	assert.Equal(t, []string{"198.51.99.12"}, ask("192.0.2.1", "DE", "EU"), "another client gets the geolocation answer")
	assert.Equal(t, []string{"198.51.99.11"}, ask("192.0.2.1", "BR", "SA"), "and the default")

	writes := e.writes()
	e.pass(t, []providers.ServiceView{geo})
	assert.Equal(t, writes, e.writes(), "the second pass writes nothing")

	// Backstop: the office endpoint's check fails → the "*" location answers.
	e.setHealth(t, "198.51.99.13", false)
	assert.Equal(t, []string{"198.51.99.11"}, ask("10.1.2.3", "US", "NA"), "an unhealthy location falls back to the geolocation answer")

	// Networks removed: geolocation at the name again, the collection goes.
	geo.Networks = nil
	e.pass(t, []providers.ServiceView{geo})
	assert.Empty(t, e.fake.CidrCollections())
	assert.Equal(t, []string{"198.51.99.12"}, ask("203.0.113.9", "DE", "EU"))
	for _, s := range e.fake.Records(e.zoneID) {
		assert.NotContains(t, s.Name, "_geo.", "the _geo. sets are gone")
	}
}

func TestWeightedAAAAAndCNAMEWithAndWithoutChecks(t *testing.T) {
	for _, mode := range []string{model.HealthChecksOff, model.HealthChecksBackstop} {
		t.Run("health_checks "+mode, func(t *testing.T) {
			e := newEnv(t, route53fake.Options{}, Options{Owner: testOwner, HealthChecks: mode})
			views := []providers.ServiceView{
				{Name: "v6.example.com.", Strategy: model.StrategyWeighted, TTL: 30, HealthCheck: httpCheck(80), Endpoints: []providers.EndpointView{
					ep("2600:1f00::1", "AAAA", "us", 700, true), ep("2600:1f00::2", "AAAA", "eu", 300, true),
				}},
				{Name: "cn.example.com.", Strategy: model.StrategyWeighted, TTL: 30, HealthCheck: &model.Check{Kind: model.CheckHTTPS, Port: 443, Path: "/", Host: "cn.example.com", Fall: 3}, Endpoints: []providers.EndpointView{
					ep("a.cdn.example.net.", "CNAME", "us", 700, true), ep("b.cdn.example.net.", "CNAME", "eu", 300, true),
				}},
			}
			e.pass(t, views)
			rnd := rand.New(rand.NewPCG(6, 7))
			count := map[string]int{}
			for range 20000 {
				count[e.resolve(t, "v6.example.com.", "AAAA", route53fake.Client{}, rnd)[0]]++
				count[e.resolve(t, "cn.example.com.", "CNAME", route53fake.Client{}, rnd)[0]]++
			}
			v6 := 100 * float64(count["2600:1f00::1"]) / 20000
			cn := 100 * float64(count["a.cdn.example.net."]) / 20000
			t.Logf("AAAA 70/30: %.2f%%, CNAME 70/30: %.2f%%", v6, cn)
			assert.InDelta(t, 70, v6, 1.5)
			assert.InDelta(t, 70, cn, 1.5)
			if mode == model.HealthChecksOff {
				assert.Empty(t, e.fake.HealthChecks())
				return
			}
			require.Len(t, e.ours(), 4)
			var cnameCheck route53fake.HealthCheck
			for _, hc := range e.ours() {
				if hc.Config.FullyQualifiedDomainName == "a.cdn.example.net" {
					cnameCheck = hc
				}
			}
			assert.Equal(t, "HTTPS", cnameCheck.Config.Type)
			assert.Empty(t, cnameCheck.Config.IPAddress, "a CNAME target is checked by name")
			e.fake.SetHealth(cnameCheck.ID, false)
			e.setHealth(t, "2600:1f00::1", false)
			for range 100 {
				assert.Equal(t, []string{"b.cdn.example.net."}, e.resolve(t, "cn.example.com.", "CNAME", route53fake.Client{}, rnd))
				assert.Equal(t, []string{"2600:1f00::2"}, e.resolve(t, "v6.example.com.", "AAAA", route53fake.Client{}, rnd))
			}
		})
	}
}

func TestDryRunPlansObjectsWithoutWriting(t *testing.T) {
	e := newEnv(t, route53fake.Options{}, backstop)
	geo := providers.ServiceView{Name: "geo.example.com.", Strategy: model.StrategyGeo, TTL: 30, HealthCheck: httpCheck(80),
		Networks:  []model.GeoNetwork{{CIDR: "10.1.0.0/16", Region: "office"}},
		Endpoints: []providers.EndpointView{ep("198.51.99.1", "A", "us", 100, true), ep("198.51.99.2", "A", "eu", 100, true)}}
	views := []providers.ServiceView{weighted7030(httpCheck(80), "198.51.99.1", "198.51.99.2"), geo}
	ctx := context.Background()
	o, err := e.p.PrepareObjects(ctx, testZone, views, true)
	require.NoError(t, err)
	var kinds []string
	for _, c := range o.Changes {
		kinds = append(kinds, c.Kind+" "+c.Op)
	}
	assert.Equal(t, []string{"cidr_collection create", "cidr_collection update", "health_check create", "health_check create", "health_check create"}, kinds,
		"the collection, its blocks, two endpoint checks and the CALCULATED one of the default set")
	assert.Zero(t, e.writes())
	recs := e.p.Desired(views, testZone)
	var withCheck int
	for _, r := range recs {
		if strings.HasPrefix(r.HealthCheckID, "new-") {
			withCheck++
		}
	}
	assert.Positive(t, withCheck, "the planned records show the checks to be")
	assert.Contains(t, strings_(recs), "geo.example.com. 30 A 198.51.99.1,198.51.99.2 set=ip-office cidr=new-"+collectionName(testOwner, testZone)+"/office health-check="+recs[len(recs)-1].HealthCheckID,
		"and the IP-based sets to be")
	_, err = e.p.CollectObjects(ctx, testZone, true)
	require.NoError(t, err)
	assert.Zero(t, e.writes())
}

func TestServicesRoute53WouldJudgeOtherwiseAreWarnedOnce(t *testing.T) {
	e := newEnv(t, route53fake.Options{}, backstop)
	login := &model.Check{Kind: model.CheckHTTP, Port: 80, Path: "/", ExpectStatus: []string{"200-299", "401"}, Fall: 1}
	views := []providers.ServiceView{
		weighted7030(login, "198.51.99.1", "198.51.99.2"),
		{Name: "cn.example.com.", Strategy: model.StrategyWeighted, TTL: 30, HealthCheck: httpCheck(80), Endpoints: []providers.EndpointView{
			ep("a.cdn.example.net.", "CNAME", "us", 100, true), ep("b.cdn.example.net.", "CNAME", "eu", 100, true),
		}},
	}
	e.pass(t, views)
	e.pass(t, views)
	for _, s := range e.fake.Records(e.zoneID) {
		if s.Name == "app.example.com." && s.Type == "A" {
			assert.Empty(t, s.HealthCheckID, "%s [%s]: Route 53 would fail on the 401 Meridian accepts", s.Name, s.SetID)
		}
		if s.Name == "cn.example.com." && s.Type == "CNAME" {
			assert.NotEmpty(t, s.HealthCheckID, "%s [%s]: a CNAME endpoint keeps its check", s.Name, s.SetID)
		}
	}
	for _, hc := range e.ours() {
		assert.NotContains(t, []string{"198.51.99.1", "198.51.99.2"}, hc.Config.IPAddress)
	}
	logs := e.logs.String()
	assert.Equal(t, 1, strings.Count(logs, "accepts codes outside 200-399"), "the expect_status warning, once")
	assert.Equal(t, 1, strings.Count(logs, "not health_check.host"), "the CNAME Host warning, once")
	assert.Contains(t, logs, "service=cn.example.com.")
}
