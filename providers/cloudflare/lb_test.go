package cloudflare

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/cloudflare/cffake"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// newLBEnv is an env whose Provider writes load balancers (mode: required
// or preferred).
func newLBEnv(t *testing.T, mode string, opts Options) *env {
	t.Helper()
	opts.LoadBalancing, opts.OwnerID = mode, ownerID
	opts.Registerer = nil
	return newEnv(t, opts)
}

// pass is one reconciler pass over the zone, as providers.Reconciler makes
// it for a direct-mode zone: PrepareObjects, the records (Desired, plan,
// Apply), CollectObjects.
type pass struct {
	prepare, collect providers.ObjectResult
	plan             plan.Plan
	applied          providers.Result
}

func (e *env) pass(t *testing.T, views []providers.ServiceView) pass {
	t.Helper()
	ps, err := e.tryPass(context.Background(), views, false)
	require.NoError(t, err)
	return ps
}

func (e *env) tryPass(ctx context.Context, views []providers.ServiceView, dryRun bool) (pass, error) {
	var ps pass
	var err error
	if ps.prepare, err = e.p.PrepareObjects(ctx, zoneName, views, dryRun); err != nil {
		return ps, err
	}
	cur, err := e.p.Records(ctx, zoneName)
	if err != nil {
		return ps, err
	}
	ps.plan = plan.Compute(plan.Input{Owner: ownerID, Desired: e.p.Desired(views, zoneName), Current: cur})
	if !dryRun {
		if ps.applied, err = e.p.Apply(ctx, zoneName, ps.plan.Changes); err != nil {
			return ps, err
		}
	}
	ps.collect, err = e.p.CollectObjects(ctx, zoneName, dryRun)
	return ps, err
}

func (ps pass) writes() int { return ps.prepare.Calls + ps.applied.Calls + ps.collect.Calls }

func (ps pass) failed() []providers.ObjectChange {
	var out []providers.ObjectChange
	for _, c := range append(ps.prepare.Changes, ps.collect.Changes...) {
		if c.Err != nil {
			out = append(out, c)
		}
	}
	return out
}

// weighted is a weighted service with one address per cluster.
func weighted(name string, eps ...providers.EndpointView) providers.ServiceView {
	return providers.ServiceView{Name: name, Strategy: model.StrategyWeighted, TTL: 60, Endpoints: eps}
}

// up is an available endpoint with configured weight w.
func up(target, cluster string, w int) providers.EndpointView {
	typ := "A"
	if target[len(target)-1] == '.' {
		typ = "CNAME"
	}
	return providers.EndpointView{Target: target, Type: typ, Cluster: cluster, Weight: w, Available: true, Effective: w}
}

// shares resolves name n times for client c and returns the share of each address.
func (e *env) shares(t *testing.T, name string, c cffake.Client, n int) map[string]float64 {
	t.Helper()
	rnd := rand.New(rand.NewPCG(1, 2))
	counts := map[string]int{}
	for range n {
		a, err := e.srv.Resolve(name, c, rnd)
		require.NoError(t, err)
		counts[a.Address]++
	}
	out := map[string]float64{}
	for k, v := range counts {
		out[k] = float64(v) / float64(n)
	}
	return out
}

func TestLoadBalancingKeepsAWeightedSplit(t *testing.T) {
	e := newLBEnv(t, model.LoadBalancingRequired, Options{})
	views := []providers.ServiceView{weighted("app.example.com.", up("10.0.0.1", "eu", 70), up("10.0.1.1", "us", 30))}
	ps := e.pass(t, views)
	require.Empty(t, ps.failed())
	assert.Equal(t, 3, ps.prepare.Calls, "two pools and a load balancer")
	assert.Empty(t, e.contents(), "no plain records beside the load balancer")

	got := e.shares(t, "app.example.com", cffake.Client{Country: "DE"}, 20000)
	t.Logf("70/30 over 20000 answers: %.4f / %.4f", got["10.0.0.1"], got["10.0.1.1"])
	assert.InDelta(t, 0.70, got["10.0.0.1"], 0.015)
	assert.InDelta(t, 0.30, got["10.0.1.1"], 0.015)

	again := e.pass(t, views)
	assert.Zero(t, again.writes(), "%+v", again)
	assert.Empty(t, again.prepare.Changes)
	assert.Equal(t, 0, e.srv.Calls(http.MethodGet, "/zones/{zone}")-1, "the account is looked up once")
}

func TestLoadBalancingAnswersAPromotedStandby(t *testing.T) {
	w := func(n int) *int { return &n }
	d := &model.Desired{
		Clusters: []model.Cluster{{Name: "a", Region: "eu"}, {Name: "b", Region: "us"}},
		Services: []model.Service{{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 60, Endpoints: []model.Endpoint{
			{Address: "10.0.0.1", Cluster: "a", Weight: w(70), State: model.StateDown},
			{Address: "10.0.0.2", Cluster: "a", Weight: w(0)},
			{Address: "10.0.1.1", Cluster: "b", Weight: w(30), State: model.StateDown},
		}}},
	}
	views := providers.Services(d, nil)
	require.Equal(t, 1, views[0].Endpoints[1].Effective, "precondition: Meridian answers the standby, every weighted endpoint being down")
	require.False(t, views[0].FailOpen)

	e := newLBEnv(t, model.LoadBalancingRequired, Options{})
	require.Empty(t, e.pass(t, views).failed())
	got := e.shares(t, "app.example.com", cffake.Client{Country: "DE"}, 500)
	assert.Equal(t, map[string]float64{"10.0.0.2": 1}, got, "Cloudflare answers the standby Meridian answers")
}

// poolOf is the name of the pool of cluster in the fake ("" when none).
func (e *env) poolOf(cluster string) string {
	for _, p := range e.srv.Pools() {
		if mark(p.Description)["cluster"] == cluster {
			return p.Name
		}
	}
	return ""
}

func TestLoadBalancingSendsAGermanClientToTheEUPool(t *testing.T) {
	e := newLBEnv(t, model.LoadBalancingRequired, Options{})
	v := providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyGeo, TTL: 60,
		Endpoints: []providers.EndpointView{up("10.0.1.1", "us", 100), up("10.0.0.1", "eu", 100)},
		Geo: &model.GeoPolicy{Default: []string{"us"}, Rules: []model.GeoRule{
			{Continents: []string{"EU"}, Clusters: []string{"eu"}},
			{Continents: []string{"NA"}, Clusters: []string{"us"}},
		}}}
	require.Empty(t, e.pass(t, []providers.ServiceView{v}).failed())

	rnd := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ country, cluster, address string }{
		{"DE", "eu", "10.0.0.1"}, {"FR", "eu", "10.0.0.1"}, {"PL", "eu", "10.0.0.1"},
		{"US", "us", "10.0.1.1"}, {"JP", "us", "10.0.1.1"}, // no rule for Asia: the default
	} {
		a, err := e.srv.Resolve("app.example.com", cffake.Client{Country: tc.country}, rnd)
		require.NoError(t, err)
		assert.Equal(t, e.poolOf(tc.cluster), a.Pool, "client in %s", tc.country)
		assert.Equal(t, tc.address, a.Address, "client in %s", tc.country)
	}
}

func TestLoadBalancingFailsOverInOrder(t *testing.T) {
	e := newLBEnv(t, model.LoadBalancingRequired, Options{})
	view := func(euUp, usUp bool) []providers.ServiceView {
		eu, us := up("10.0.0.1", "eu", 100), up("10.0.1.1", "us", 100)
		eu.Available, us.Available = euUp, usUp
		if !euUp {
			eu.Effective = 0
		}
		if !usUp {
			us.Effective = 0
		}
		return []providers.ServiceView{{Name: "app.example.com.", Strategy: model.StrategyFailover, TTL: 60,
			Endpoints: []providers.EndpointView{up("10.0.2.1", "ap", 100), us, eu}, Failover: [][]int{{2}, {1}, {0}}}}
	}
	answer := func() cffake.Answer {
		a, err := e.srv.Resolve("app.example.com", cffake.Client{Country: "US"}, rand.New(rand.NewPCG(5, 6)))
		require.NoError(t, err)
		return a
	}
	require.Empty(t, e.pass(t, view(true, true)).failed())
	assert.Equal(t, "10.0.0.1", answer().Address, "the first pool in failover order")

	ps := e.pass(t, view(false, true))
	require.Empty(t, ps.failed())
	require.Len(t, ps.prepare.Changes, 1, "one pool disabled")
	assert.Equal(t, "update", ps.prepare.Changes[0].Op)
	assert.Contains(t, ps.prepare.Changes[0].Detail, "enabled true → false")
	assert.Equal(t, "10.0.1.1", answer().Address, "Meridian decided eu down: the next pool")

	e.pass(t, view(false, false))
	assert.Equal(t, "10.0.2.1", answer().Address, "then the last")
}

// backend is an HTTP server on a loopback address that answers /healthz.
type backend struct {
	addr string
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// backends starts one HTTP backend per loopback address, all on one port
// (a monitor has one port for every origin).
func backends(t *testing.T, addrs ...string) (int, map[string]*backend) {
	t.Helper()
	for attempt := 0; attempt < 20; attempt++ {
		out := map[string]*backend{}
		port := 0
		ok := true
		for _, a := range addrs {
			ln, err := net.Listen("tcp", net.JoinHostPort(a, strconv.Itoa(port)))
			if err != nil {
				ok = false
				break
			}
			port = ln.Addr().(*net.TCPAddr).Port
			b := &backend{addr: a, ln: ln, done: make(chan struct{}),
				srv: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }), ReadHeaderTimeout: time.Second}}
			go func() { defer close(b.done); _ = b.srv.Serve(ln) }()
			out[a] = b
		}
		if ok {
			t.Cleanup(func() {
				for _, b := range out {
					b.stop()
				}
			})
			return port, out
		}
		for _, b := range out {
			b.stop()
		}
	}
	t.Fatalf("no common free port on %v", addrs)
	return 0, nil
}

func (b *backend) stop() {
	_ = b.srv.Close()
	<-b.done
}

// checked is a weighted 50/50 service over 127.0.0.1 (eu) and 127.0.0.2
// (us) with an http health check on port.
func checked(port int) providers.ServiceView {
	v := weighted("app.example.com.", up("127.0.0.1", "eu", 50), up("127.0.0.2", "us", 50))
	v.HealthCheck = &model.Check{Kind: model.CheckHTTP, Port: port, Method: "GET", Path: "/healthz", Host: "app.example.com",
		ExpectStatus: []string{"200-399"}, Interval: model.Duration(5 * time.Second), Timeout: model.Duration(2 * time.Second), Fall: 2, Rise: 2}
	return v
}

func (e *env) checkHealth(t *testing.T, rounds int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range rounds {
		e.srv.CheckHealth(ctx)
	}
}

func TestBackstopMonitorsFailOverWithMeridianDown(t *testing.T) {
	port, bs := backends(t, "127.0.0.1", "127.0.0.2")
	for _, backstop := range []bool{true, false} {
		t.Run(fmt.Sprintf("backstop %v", backstop), func(t *testing.T) {
			e := newLBEnv(t, model.LoadBalancingRequired, Options{Backstop: backstop})
			ps := e.pass(t, []providers.ServiceView{checked(port)})
			require.Empty(t, ps.failed())
			if backstop {
				require.Len(t, e.srv.Monitors(), 1)
				for _, p := range e.srv.Pools() {
					assert.Equal(t, e.srv.Monitors()[0].ID, p.Monitor)
				}
			} else {
				require.Empty(t, e.srv.Monitors())
			}
			e.checkHealth(t, 2)
			before := e.shares(t, "app.example.com", cffake.Client{Country: "DE"}, 2000)
			assert.InDelta(t, 0.5, before["127.0.0.2"], 0.05, "both backends answer")

			// Every Meridian node is down from here: no more syncs. Then
			// the us backend dies.
			if backstop {
				bs["127.0.0.2"].stop()
				defer func() { // bring it back for the run without backstop
					ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", strconv.Itoa(port)))
					require.NoError(t, err)
					b := bs["127.0.0.2"]
					b.ln, b.done = ln, make(chan struct{})
					b.srv = &http.Server{Handler: b.srv.Handler, ReadHeaderTimeout: time.Second}
					go func() { defer close(b.done); _ = b.srv.Serve(ln) }()
				}()
			} else {
				bs["127.0.0.2"].stop()
			}
			e.checkHealth(t, 2) // consecutive_down = fall = 2
			after := e.shares(t, "app.example.com", cffake.Client{Country: "DE"}, 2000)
			if backstop {
				assert.Zero(t, after["127.0.0.2"], "Cloudflare's monitor took the dead origin out")
				assert.Equal(t, 1.0, after["127.0.0.1"])
			} else {
				t.Logf("without backstop, with Meridian down, the dead origin still gets %.1f%% of the answers", 100*after["127.0.0.2"])
				assert.InDelta(t, 0.5, after["127.0.0.2"], 0.05, "without monitors nothing takes the dead origin out")
			}
		})
	}
}

func TestBackstopAndMeridianDisagree(t *testing.T) {
	port, bs := backends(t, "127.0.0.1", "127.0.0.2")
	e := newLBEnv(t, model.LoadBalancingRequired, Options{Backstop: true})

	t.Run("Meridian decided an endpoint down while the monitor passes: it stays out", func(t *testing.T) {
		v := checked(port)
		v.Endpoints[1].Available, v.Endpoints[1].Effective = false, 0
		require.Empty(t, e.pass(t, []providers.ServiceView{v}).failed())
		e.checkHealth(t, 2)
		st, ok := e.srv.OriginHealth(e.poolOf("us"), "127.0.0.2")
		require.True(t, ok)
		assert.True(t, st.Up || st.Checks == 0, "the monitor does not see it failing")
		got := e.shares(t, "app.example.com", cffake.Client{Country: "DE"}, 2000)
		assert.Zero(t, got["127.0.0.2"], "a disabled origin gets nothing, whatever the monitor says")
	})
	t.Run("Meridian has the endpoint up while the monitor fails: it is out", func(t *testing.T) {
		bs["127.0.0.2"].stop()
		e.checkHealth(t, 2)
		require.Empty(t, e.pass(t, []providers.ServiceView{checked(port)}).failed(), "Meridian runs and syncs the endpoint as up")
		pool := e.srv.Pools()
		for _, p := range pool {
			for _, o := range p.Origins {
				assert.True(t, o.Enabled, "Meridian enabled %s", o.Name)
			}
		}
		e.checkHealth(t, 2)
		st, _ := e.srv.OriginHealth(e.poolOf("us"), "127.0.0.2")
		assert.False(t, st.Up, st.LastError)
		got := e.shares(t, "app.example.com", cffake.Client{Country: "DE"}, 2000)
		assert.Zero(t, got["127.0.0.2"], "the failing cloud check takes it out (ADR 0011): Meridian cannot override it")
	})
}

func TestTwoThousandServicesStayWithinTheRequestBudget(t *testing.T) {
	e := newLBEnv(t, model.LoadBalancingRequired, Options{})
	e.srv.RateLimit(1200, 5*time.Minute) // Cloudflare's per-user limit: 429 past it
	views := make([]providers.ServiceView, 0, 2000)
	for i := range 2000 {
		views = append(views, weighted(fmt.Sprintf("s%04d.example.com.", i), up(fmt.Sprintf("10.%d.%d.1", i/250, i%250), "eu", 70), up(fmt.Sprintf("10.%d.%d.2", i/250, i%250), "us", 30)))
	}
	ps := e.pass(t, views)
	require.Empty(t, ps.failed())
	assert.Len(t, e.srv.LoadBalancers(e.zone), 2000)
	assert.Len(t, e.srv.Pools(), 4000)
	assert.Empty(t, e.contents())

	times := e.srv.CallTimes()
	most := 0
	for i := range times {
		n := 0
		for _, u := range times[i:] {
			if u.Sub(times[i]) < 5*time.Minute {
				n++
			}
		}
		most = max(most, n)
	}
	t.Logf("2000 services: %d requests (%d writes), at most %d in any 5 minutes, %v of virtual time, %v throttled",
		len(times), ps.writes(), most, e.clock.Now().Sub(times[0]).Round(time.Second), e.counter("throttles"))
	assert.LessOrEqual(t, most, 1200)
	assert.Equal(t, 6000, ps.writes(), "2 pools and a load balancer per service")
	assert.Equal(t, float64(0), e.counter("throttles"), "no 429")

	before := len(e.srv.CallTimes())
	again := e.pass(t, views)
	assert.Zero(t, again.writes())
	assert.Empty(t, again.prepare.Changes)
	assert.Empty(t, again.collect.Changes)
	t.Logf("second sync: %d requests, %d writes", len(e.srv.CallTimes())-before, again.writes())
}

func TestForeignObjectsAreNeverChanged(t *testing.T) {
	e := newLBEnv(t, model.LoadBalancingRequired, Options{Backstop: true})
	mon, err := e.srv.PutMonitor(cffake.Monitor{Type: "http", Description: "team B's monitor", Path: "/", Interval: 60, Timeout: 5, ExpectedCodes: "200"})
	require.NoError(t, err)
	pool, err := e.srv.PutPool(cffake.Pool{Name: "team-b", Description: "managed by meridian owner=other zone=example.com", Enabled: true, MinimumOrigins: 1, Monitor: mon.ID,
		Origins: []cffake.Origin{{Name: "b1", Address: "192.0.2.1", Enabled: true, Weight: 1}}})
	require.NoError(t, err)
	// Unreferenced foreign objects: no load balancer points at them, so
	// only the owner check keeps the collection pass off them.
	orphanMon, err := e.srv.PutMonitor(cffake.Monitor{Type: "tcp", Description: "team C's monitor", Port: 22, Interval: 60, Timeout: 5})
	require.NoError(t, err)
	orphanPool, err := e.srv.PutPool(cffake.Pool{Name: "team-c", Description: "managed by meridian owner=other zone=example.com", Enabled: true, MinimumOrigins: 1, Monitor: orphanMon.ID,
		Origins: []cffake.Origin{{Name: "c1", Address: "192.0.2.3", Enabled: true, Weight: 1}}})
	require.NoError(t, err)
	handPool, err := e.srv.PutPool(cffake.Pool{Name: "hand-made", Enabled: true, MinimumOrigins: 1,
		Origins: []cffake.Origin{{Name: "h1", Address: "192.0.2.4", Enabled: true, Weight: 1}}})
	require.NoError(t, err)
	lbs := map[string]cffake.LoadBalancer{}
	for _, name := range []string{"other.example.com", "taken.example.com"} {
		lb, err := e.srv.PutLoadBalancer(e.zone, cffake.LoadBalancer{Name: name, Enabled: true, TTL: 30, DefaultPools: []string{pool.ID}, FallbackPool: pool.ID})
		require.NoError(t, err)
		lbs[name] = lb
	}
	raw := func() []string {
		return []string{string(e.srv.RawMonitor(mon.ID)), string(e.srv.RawPool(pool.ID)),
			string(e.srv.RawLoadBalancer(lbs["other.example.com"].ID)), string(e.srv.RawLoadBalancer(lbs["taken.example.com"].ID)),
			string(e.srv.RawMonitor(orphanMon.ID)), string(e.srv.RawPool(orphanPool.ID)), string(e.srv.RawPool(handPool.ID))}
	}
	before := raw()
	for i, b := range before {
		require.NotEmpty(t, b, "foreign object %d", i)
	}

	app := checked(8080)
	taken := weighted("taken.example.com.", up("10.0.5.1", "eu", 100))
	for i := range 2 {
		ps := e.pass(t, []providers.ServiceView{app, taken})
		failed := ps.failed()
		require.Len(t, failed, 1, "pass %d", i+1)
		assert.Equal(t, providers.KindLoadBalancer, failed[0].Kind)
		assert.Equal(t, "taken.example.com", failed[0].Name)
		assert.ErrorContains(t, failed[0].Err, "not ours")
	}
	assert.Equal(t, before, raw(), "foreign monitor, pool and load balancers byte-identical after two passes")
	assert.Len(t, e.srv.LoadBalancers(e.zone), 3, "ours for app, theirs for other and taken")
	assert.Contains(t, e.contents(), "taken.example.com A 10.0.5.1 60", "the service whose name is taken keeps its plain records")

	// Everything of ours goes when the services go; theirs stays.
	ps := e.pass(t, nil)
	require.Empty(t, ps.failed())
	assert.Equal(t, before, raw())
	assert.Len(t, e.srv.LoadBalancers(e.zone), 2)
	assert.Len(t, e.srv.Pools(), 3, "theirs: the referenced pool, the unreferenced one and the hand-made one")
	assert.Len(t, e.srv.Monitors(), 2, "theirs: the referenced monitor and the unreferenced one")
}

func TestARestartMidSyncConverges(t *testing.T) {
	e := newLBEnv(t, model.LoadBalancingRequired, Options{Backstop: true, MaxAttempts: 2})
	views := func(n int) []providers.ServiceView {
		var out []providers.ServiceView
		for i := range n {
			v := checked(8080)
			v.Name = fmt.Sprintf("s%d.example.com.", i)
			out = append(out, v)
		}
		return out
	}
	// The first run dies after its monitor and pools: every load balancer
	// create fails.
	e.srv.Inject(cffake.Fault{Method: http.MethodPost, Path: "/zones/" + e.zone + "/load_balancers", Status: http.StatusServiceUnavailable})
	_, err := e.tryPass(context.Background(), views(3), false)
	require.ErrorIs(t, err, providers.ErrTransient)
	require.Len(t, e.srv.Pools(), 6)
	require.Empty(t, e.srv.LoadBalancers(e.zone))
	e.srv.ClearFaults()

	// A new process, with one service fewer in its config.
	e.p = New(e.p.api, Options{LoadBalancing: model.LoadBalancingRequired, OwnerID: ownerID, Backstop: true, Now: e.clock.Now, Sleep: e.clock.Sleep, Metrics: e.p.metrics, Logger: e.p.log})
	ps := e.pass(t, views(2))
	require.Empty(t, ps.failed())
	assert.Len(t, e.srv.LoadBalancers(e.zone), 2)
	assert.Len(t, e.srv.Pools(), 4, "the third service's pools were collected, none duplicated")
	assert.Len(t, e.srv.Monitors(), 1)
	assert.Zero(t, e.pass(t, views(2)).writes())
}

func TestALostCreateAnswerIsAdopted(t *testing.T) {
	e := newLBEnv(t, model.LoadBalancingRequired, Options{})
	// The first pool POST is stored, but its answer comes too late.
	e.srv.Inject(cffake.Fault{Method: http.MethodPost, Path: "/pools", Delay: 700 * time.Millisecond, Times: 1})
	e.p = New(NewAPI(testToken, APIOptions{BaseURL: e.srv.URL, HTTPClient: e.hc, RequestTimeout: 200 * time.Millisecond}),
		Options{LoadBalancing: model.LoadBalancingRequired, OwnerID: ownerID, Now: e.clock.Now, Sleep: e.clock.Sleep, Metrics: e.p.metrics, Logger: e.p.log})
	ps := e.pass(t, []providers.ServiceView{weighted("app.example.com.", up("10.0.0.1", "eu", 70), up("10.0.1.1", "us", 30))})
	require.Empty(t, ps.failed())
	assert.Len(t, e.srv.Pools(), 2)
	assert.Len(t, e.srv.LoadBalancers(e.zone), 1)
	assert.Contains(t, e.logs.String(), "pool adopted")
	assert.NotContains(t, e.logs.String(), "change refused")
}

func TestWithoutLoadBalancingEntitlement(t *testing.T) {
	views := []providers.ServiceView{weighted("app.example.com.", up("10.0.0.1", "eu", 70), up("10.0.1.1", "us", 30))}
	gauge := func(e *env) float64 { return testutil.ToFloat64(e.p.lbGauge.WithLabelValues(zoneName)) }

	t.Run("required fails the sync naming the zone, the setting and the way out", func(t *testing.T) {
		e := newLBEnv(t, model.LoadBalancingRequired, Options{})
		e.srv.DisableLoadBalancing()
		_, err := e.tryPass(context.Background(), views, false)
		require.Error(t, err)
		for _, s := range []string{"example.com.", "load_balancing is required", "no Load Balancing", "load_balancing: preferred"} {
			assert.Contains(t, err.Error(), s)
		}
		assert.False(t, errors.Is(err, providers.ErrTransient))
		assert.Equal(t, 0.0, gauge(e))
		assert.Empty(t, e.contents())
		assert.Equal(t, 1, strings.Count(e.logs.String(), "the account has no Load Balancing"))
		_, err = e.tryPass(context.Background(), views, false)
		require.Error(t, err)
		assert.Equal(t, 1, strings.Count(e.logs.String(), "the account has no Load Balancing"), "warned once per change of state")
	})
	t.Run("preferred writes plain records with a notice until Load Balancing is bought", func(t *testing.T) {
		e := newLBEnv(t, model.LoadBalancingPreferred, Options{})
		e.srv.DisableLoadBalancing()
		ps := e.pass(t, views)
		assert.Contains(t, ps.prepare.Notice, "plain DNS records")
		assert.Equal(t, 0.0, gauge(e))
		assert.Contains(t, e.contents(), "app.example.com A 10.0.0.1 60")
		assert.Contains(t, e.contents(), "app.example.com A 10.0.1.1 60")

		e.srv.EnableLoadBalancing()
		ps = e.pass(t, views)
		require.Empty(t, ps.failed())
		assert.Empty(t, ps.prepare.Notice)
		assert.Equal(t, 1.0, gauge(e))
		assert.Len(t, e.srv.LoadBalancers(e.zone), 1)
		assert.Empty(t, e.contents(), "the load balancer replaced the plain records in the same pass")
		assert.Empty(t, e.srv.Gaps())
		assert.Contains(t, e.logs.String(), "Load Balancing is available again")
	})
}

func TestDryRunPlansLoadBalancingWithoutWriting(t *testing.T) {
	e := newLBEnv(t, model.LoadBalancingRequired, Options{Backstop: true})
	e.put(t, "app.example.com", "A", "10.0.0.1", 60)
	e.put(t, "_meridian-owner.app.example.com", "TXT", `"heritage=meridian,owner=m1,types=A"`, 300)
	views := []providers.ServiceView{checked(8080)}
	ps, err := e.tryPass(context.Background(), views, true)
	require.NoError(t, err)
	assert.Zero(t, e.srv.WriteCalls())
	var got []string
	for _, c := range ps.prepare.Changes {
		got = append(got, c.Op+" "+c.Kind)
		assert.NotEmpty(t, c.Detail)
	}
	assert.Equal(t, []string{"create monitor", "create pool", "create pool", "create load_balancer"}, got)
	assert.Len(t, ps.plan.Changes.Deletes, 2, "the plain records and their ownership record would go")

	e.pass(t, views)
	v := checked(8080)
	v.Endpoints[0].Weight, v.Endpoints[0].Effective = 150, 150
	ps, err = e.tryPass(context.Background(), []providers.ServiceView{v}, true)
	require.NoError(t, err)
	require.Len(t, ps.prepare.Changes, 1)
	assert.Equal(t, "update", ps.prepare.Changes[0].Op)
	assert.Contains(t, ps.prepare.Changes[0].Detail, "0.50 → 0.75")
}

func TestSwitchingLoadBalancingOffLeavesPlainRecordsAndNothingOfOurs(t *testing.T) {
	e := newLBEnv(t, model.LoadBalancingRequired, Options{Backstop: true})
	theirs, err := e.srv.PutPool(cffake.Pool{Name: "team-b", Description: "team B", Enabled: true, MinimumOrigins: 1,
		Origins: []cffake.Origin{{Name: "b1", Address: "192.0.2.1", Enabled: true, Weight: 1}}})
	require.NoError(t, err)
	app := checked(8080)
	e.pass(t, []providers.ServiceView{app})
	require.Len(t, e.srv.LoadBalancers(e.zone), 1)
	require.NotEmpty(t, e.srv.Monitors())

	// The same installation restarted with load_balancing: off.
	off := *e
	off.p = New(NewAPI(testToken, APIOptions{BaseURL: e.srv.URL, HTTPClient: e.hc}),
		Options{OwnerID: ownerID, LoadBalancing: model.LoadBalancingOff, Now: e.clock.Now, Sleep: e.clock.Sleep})
	ps := off.pass(t, []providers.ServiceView{app})
	require.Empty(t, ps.failed())
	assert.Empty(t, e.srv.LoadBalancers(e.zone), "our load balancer would hide the plain records: it goes")
	assert.Equal(t, []cffake.Pool{e.srv.Pools()[0]}, e.srv.Pools())
	assert.Equal(t, theirs.ID, e.srv.Pools()[0].ID, "only the foreign pool is left")
	assert.Empty(t, e.srv.Monitors())
	ans, err := e.srv.Resolve("app.example.com", cffake.Client{Country: "DE"}, rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	assert.Empty(t, ans.LoadBalancer, "answered from the plain records")
	assert.NotEmpty(t, ans.Addresses)

	calls := e.srv.WriteCalls()
	ps = off.pass(t, []providers.ServiceView{app})
	assert.Equal(t, 0, ps.writes())
	assert.Equal(t, calls, e.srv.WriteCalls(), "later passes make no Load Balancing request")
}

func TestPlainRecordsSyncWithATokenThatCannotSeeLoadBalancing(t *testing.T) {
	e := newEnv(t, Options{OwnerID: ownerID, LoadBalancing: model.LoadBalancingOff})
	e.srv.Inject(cffake.Fault{Path: "/load_balancers", Status: http.StatusForbidden})
	ps := e.pass(t, []providers.ServiceView{weighted("app.example.com.", up("10.0.0.1", "eu", 100))})
	assert.Empty(t, ps.failed())
	assert.Contains(t, e.contents(), "app.example.com A 10.0.0.1 60", "the plain records are written")
	e.srv.ClearFaults()
	before := e.srv.Calls("GET", "/zones/{zone}/load_balancers")
	require.Positive(t, before, "the first pass looked")
	e.pass(t, []providers.ServiceView{weighted("app.example.com.", up("10.0.0.1", "eu", 100))})
	assert.Equal(t, before, e.srv.Calls("GET", "/zones/{zone}/load_balancers"), "a refusal is final: no second look")
}

func TestABackstopMonitorPassesTheRedirectMeridianAccepts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/login", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/login", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	b := &backend{addr: "127.0.0.1", ln: ln, done: make(chan struct{}), srv: &http.Server{Handler: mux, ReadHeaderTimeout: time.Second}}
	go func() { defer close(b.done); _ = b.srv.Serve(ln) }()
	t.Cleanup(b.stop)

	for _, expect := range [][]string{{"301"}, {"300-399"}} {
		t.Run(strings.Join(expect, ","), func(t *testing.T) {
			v := checked(ln.Addr().(*net.TCPAddr).Port)
			v.Endpoints = v.Endpoints[:1]
			v.HealthCheck.ExpectStatus = expect
			e := newLBEnv(t, model.LoadBalancingRequired, Options{Backstop: true})
			require.Empty(t, e.pass(t, []providers.ServiceView{v}).failed())
			require.Len(t, e.srv.Monitors(), 1)
			e.checkHealth(t, 2)
			st, ok := e.srv.OriginHealth(e.poolOf("eu"), "127.0.0.1")
			require.True(t, ok)
			assert.True(t, st.Up, "Meridian's checker accepts the 301 without following it, so must the monitor: %s", st.LastError)
		})
	}
}
