package observe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meridian-gslb/meridian/internal/capacity"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/kube"
	"github.com/meridian-gslb/meridian/internal/model"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const app = "app.example.test."

// desired parses a config with two clusters and app at 50/50, with the
// capacity section given.
func desired(t *testing.T, capacitySection string) *model.Desired {
	t.Helper()
	f, err := config.Parse("test.yaml", []byte(`
zones:
  - apex: example.test
    nameservers: [{name: ns1.example.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east, kubernetes: {in_cluster: true}}
  - {name: west, region: us-west, kubernetes: {in_cluster: true}}
  - {name: dc, region: eu-west}
services:
  - name: app.example.test
    capacity: `+capacitySection+`
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 50}
      - {address: 192.0.2.2, cluster: west, weight: 50}
`))
	require.NoError(t, err)
	return &f.Desired
}

// fakeKube holds EndpointSlice counts by cluster/namespace/name.
type fakeKube struct {
	mu       sync.Mutex
	counts   map[string]kube.SliceCounts
	notReady map[string]bool
	backends map[string]map[string][]kube.Backend
	enabled  atomic.Int32
}

func (f *fakeKube) EnableEndpointSlices() { f.enabled.Add(1) }
func (f *fakeKube) EndpointCounts(cluster, ns, name string) (kube.SliceCounts, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.notReady[cluster] {
		return kube.SliceCounts{}, false
	}
	return f.counts[cluster+"/"+ns+"/"+name], true
}
func (f *fakeKube) Backends() map[string]map[string][]kube.Backend { return f.backends }

func (f *fakeKube) set(key string, c kube.SliceCounts) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[key] = c
}

// clock is a settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func percents(st *capacity.State) map[string]int {
	out := map[string]int{}
	ss, _ := st.Lookup(app)
	for _, e := range ss.Endpoints {
		out[e.Cluster] = e.Percent
	}
	return out
}

func TestKubernetesReadingsMoveTheFractions(t *testing.T) {
	d := desired(t, "{source: kubernetes, kubernetes: {service: shop/web}}")
	k := &fakeKube{counts: map[string]kube.SliceCounts{
		"east/shop/web": {Ready: 10, Slices: 1}, "west/shop/web": {Ready: 10, Slices: 1}}, notReady: map[string]bool{}}
	clk := &clock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	reg := prometheus.NewRegistry()
	var published []*capacity.State
	o := New(Options{Desired: func() *model.Desired { return d }, Kube: k, Registry: reg, Now: clk.now, Logger: slog.New(slog.DiscardHandler),
		Publish: func(st *capacity.State) { published = append(published, st) }})
	ctx := context.Background()

	st := o.Step(ctx)
	assert.Equal(t, map[string]int{"east": 100, "west": 100}, percents(st))
	assert.Positive(t, k.enabled.Load(), "EndpointSlices are watched once a service needs them")
	require.Len(t, published, 1, "the first state is published")

	k.set("east/shop/web", kube.SliceCounts{Ready: 2, NotReady: 8, Slices: 1})
	clk.add(time.Second)
	st = o.Step(ctx)
	assert.Equal(t, map[string]int{"east": 20, "west": 100}, percents(st))
	require.Len(t, published, 2)
	c, ok := st.Endpoint(app, "192.0.2.1")
	require.True(t, ok)
	assert.Equal(t, "2 of 10 endpoints ready (shop/web in east)", c.Why)
	assert.InDelta(t, 0.2, testutil.ToFloat64(o.m.fraction.WithLabelValues(app, "east")), 1e-9)
	assert.InDelta(t, 0.2, testutil.ToFloat64(o.m.read.WithLabelValues(app, "east")), 1e-9)
	assert.InDelta(t, 1, testutil.ToFloat64(o.m.changes.WithLabelValues(app, "reading")), 1e-9)

	clk.add(time.Second)
	o.Step(ctx)
	assert.Len(t, published, 2, "nothing new: nothing published")

	// The member goes NotReady: the last good reading stays until stale.
	k.mu.Lock()
	k.notReady["east"] = true
	k.mu.Unlock()
	clk.add(4 * time.Minute)
	st = o.Step(ctx)
	assert.Equal(t, map[string]int{"east": 20, "west": 100}, percents(st))
	clk.add(2 * time.Minute)
	st = o.Step(ctx)
	assert.Equal(t, map[string]int{"east": 100, "west": 100}, percents(st))
	c, _ = st.Endpoint(app, "192.0.2.1")
	assert.Equal(t, "none", c.Source)
	assert.Contains(t, c.Why, "member east is not Ready or its EndpointSlices are not listed yet")
	assert.InDelta(t, 1, testutil.ToFloat64(o.m.stale.WithLabelValues(app)), 1e-9)

	// The service leaves the config: its series go.
	d2 := *d
	d2.Services = nil
	o.opts.Desired = func() *model.Desired { return &d2 }
	o.Step(ctx)
	n, err := testutil.GatherAndCount(reg, "meridian_capacity_ready_fraction", "meridian_capacity_stale_endpoints")
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestAClusterThatIsNotAMemberHasNoReading(t *testing.T) {
	d := desired(t, "{source: kubernetes, kubernetes: {service: shop/web}}")
	d.Services[0].Endpoints[1].Cluster = "dc"
	o := New(Options{Desired: func() *model.Desired { return d }, Kube: &fakeKube{counts: map[string]kube.SliceCounts{}, notReady: map[string]bool{}}, Logger: slog.New(slog.DiscardHandler)})
	st := o.Step(context.Background())
	c, ok := st.Endpoint(app, "192.0.2.2")
	require.True(t, ok)
	assert.Equal(t, "no reading yet (cluster dc is not a Kubernetes member): the configured weight", c.Why)
	c, _ = st.Endpoint(app, "192.0.2.1")
	assert.Equal(t, "no reading yet (no EndpointSlices of shop/web in east): the configured weight", c.Why)

	o = New(Options{Desired: func() *model.Desired { return d }, Logger: slog.New(slog.DiscardHandler)})
	c, _ = o.Step(context.Background()).Endpoint(app, "192.0.2.1")
	assert.Contains(t, c.Why, "no Kubernetes member clusters are configured")
}

func TestKubernetesSourcedServicesReadTheServicesBehindTheirObjects(t *testing.T) {
	d := desired(t, "{source: kubernetes, kubernetes: {service: shop/web}}")
	d.Services[0].Capacity = &model.Capacity{Source: "kubernetes", FromObjects: true, Step: 0.05, Hysteresis: new(0.02),
		MinChangeInterval: model.Duration(30 * time.Second), StaleAfter: model.Duration(5 * time.Minute)}
	k := &fakeKube{counts: map[string]kube.SliceCounts{
		"east/shop/web": {Ready: 3, NotReady: 1, Slices: 1}, "east/shop/api": {Ready: 1, NotReady: 3, Slices: 1}}, notReady: map[string]bool{},
		backends: map[string]map[string][]kube.Backend{app: {"192.0.2.1": {{Cluster: "east", Namespace: "shop", Name: "api"}, {Cluster: "east", Namespace: "shop", Name: "web"}}}}}
	o := New(Options{Desired: func() *model.Desired { return d }, Kube: k, Logger: slog.New(slog.DiscardHandler)})
	st := o.Step(context.Background())
	assert.Equal(t, map[string]int{"east": 50, "west": 100}, percents(st))
	c, _ := st.Endpoint(app, "192.0.2.1")
	assert.Equal(t, "4 of 8 endpoints ready (shop/api, shop/web in east)", c.Why)
	c, _ = st.Endpoint(app, "192.0.2.2")
	assert.Contains(t, c.Why, "no backend Service behind the endpoint's object")
}

// fakeProm answers /api/v1/query like Prometheus, with the result its
// handler gives.
type fakeProm struct {
	srv     *httptest.Server
	mu      sync.Mutex
	answer  func(w http.ResponseWriter, query string)
	queries atomic.Int32
}

func newFakeProm(t *testing.T) *fakeProm {
	f := &fakeProm{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		if err := r.ParseForm(); err != nil || r.Form.Get("query") == "" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"status":"error","errorType":"bad_data","error":"no query"}`)
			return
		}
		f.queries.Add(1)
		f.mu.Lock()
		answer := f.answer
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		answer(w, r.Form.Get("query"))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeProm) set(a func(w http.ResponseWriter, query string)) {
	f.mu.Lock()
	f.answer = a
	f.mu.Unlock()
}

// vector answers an instant vector of cluster samples.
func vector(values map[string]string) func(w http.ResponseWriter, _ string) {
	return func(w http.ResponseWriter, _ string) {
		var res []map[string]any
		for cluster, v := range values {
			res = append(res, map[string]any{"metric": map[string]string{"__name__": "ready_fraction", "cluster": cluster}, "value": []any{1764590400.0, v}})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": res}})
	}
}

func promObserver(t *testing.T, f *fakeProm, timeout string) (*Observer, *clock, *model.Desired) {
	t.Helper()
	if timeout == "" {
		timeout = "1s"
	}
	d := desired(t, fmt.Sprintf(`{source: prometheus, prometheus: {url: "%s", query: "ready_fraction", interval: 10s, timeout: %s}}`, f.srv.URL, timeout))
	clk := &clock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	o := New(Options{Desired: func() *model.Desired { return d }, Now: clk.now, Transport: tr, Registry: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler)})
	return o, clk, d
}

// pollOnce runs one query of the service's poller.
func pollOnce(t *testing.T, o *Observer, d *model.Desired) {
	t.Helper()
	q, err := newProm(*d.Services[0].Capacity.Prometheus, o.opts.Transport)
	require.NoError(t, err)
	svcs := capacity.Services(d)
	o.pollOnce(context.Background(), q, &poller{cfg: *d.Services[0].Capacity.Prometheus, svc: svcs[0]}, false)
}

func TestAPrometheusQueryGivesTheFractions(t *testing.T) {
	f := newFakeProm(t)
	f.set(vector(map[string]string{"east": "0.2", "west": "1", "eu": "0.5"}))
	o, clk, d := promObserver(t, f, "")
	pollOnce(t, o, d)
	st := o.decide(d)
	assert.Equal(t, map[string]int{"east": 20, "west": 100}, percents(st))
	c, _ := st.Endpoint(app, "192.0.2.1")
	assert.Equal(t, capacityState(20, "prometheus", `prometheus {cluster="east"} = 0.2`), c)
	assert.InDelta(t, 1, testutil.ToFloat64(o.m.queries.WithLabelValues(app)), 1e-9)
	assert.InDelta(t, 1, testutil.ToFloat64(o.m.invalidSamples.WithLabelValues(app, "unmatched")), 1e-9, "eu is no cluster of the service")

	// A failing query keeps the last good fraction, and counts.
	f.set(func(w http.ResponseWriter, _ string) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "overloaded")
	})
	clk.add(time.Minute)
	pollOnce(t, o, d)
	clk.add(31 * time.Second)
	st = o.decide(d)
	assert.Equal(t, map[string]int{"east": 20, "west": 100}, percents(st))
	assert.InDelta(t, 1, testutil.ToFloat64(o.m.queryFailures.WithLabelValues(app, "status")), 1e-9)
	// ... until stale_after (5m), then the configured weight.
	clk.add(5 * time.Minute)
	st = o.decide(d)
	assert.Equal(t, map[string]int{"east": 100, "west": 100}, percents(st))
	c, _ = st.Endpoint(app, "192.0.2.1")
	assert.Equal(t, "none", c.Source)
	assert.Contains(t, c.Why, "prometheus query failing: status")
}

func capacityState(pct int, source, why string) any {
	c, _ := (&capacity.State{}).Endpoint("", "")
	c.Percent, c.Source, c.Why = pct, source, why
	return c
}

// oversized is an answer one sample larger than MaxResponseBytes.
var oversized = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"cluster":"east","job":"` +
	strings.Repeat("x", MaxResponseBytes) + `"},"value":[1764590400,"0.5"]}]}}`

func TestBadPrometheusAnswersAreRefusedAndCounted(t *testing.T) {
	cases := []struct {
		name    string
		answer  func(w http.ResponseWriter, _ string)
		reason  string // failure reason; "" when the query succeeds
		invalid string
		timeout string
	}{
		{"a scalar is not a vector", func(w http.ResponseWriter, _ string) {
			_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"scalar","result":[1764590400,"0.5"]}}`)
		}, "result", "", ""},
		{"a body that is not JSON is refused", func(w http.ResponseWriter, _ string) { _, _ = io.WriteString(w, "<html>proxy error</html>") }, "result", "", ""},
		{"an API error names its reason", func(w http.ResponseWriter, _ string) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"status":"error","errorType":"bad_data","error":"parse error at char 5"}`)
		}, "status", "", ""},
		{"an answer slower than the timeout is a timeout", func(w http.ResponseWriter, _ string) {
			time.Sleep(600 * time.Millisecond)
			vector(map[string]string{"east": "0.5"})(w, "")
		}, "timeout", "", "300ms"},
		{"a body over 4 MiB is refused", func(w http.ResponseWriter, _ string) { _, _ = io.WriteString(w, oversized) }, "oversized", "", "8s"},
		{"NaN is left out", vector(map[string]string{"east": "NaN", "west": "1"}), "", "nan", ""},
		{"a negative value is left out", vector(map[string]string{"east": "-0.5", "west": "1"}), "", "negative", ""},
		{"a value above one is used as one", vector(map[string]string{"east": "1.5", "west": "1"}), "", "above-one", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeProm(t)
			f.set(tc.answer)
			o, _, d := promObserver(t, f, tc.timeout)
			pollOnce(t, o, d)
			st := o.decide(d)
			assert.Equal(t, map[string]int{"east": 100, "west": 100}, percents(st), "nothing usable for east: the configured weight")
			if tc.reason != "" {
				assert.InDelta(t, 1, testutil.ToFloat64(o.m.queryFailures.WithLabelValues(app, tc.reason)), 1e-9)
				assert.Zero(t, testutil.ToFloat64(o.m.queries.WithLabelValues(app)))
			} else {
				assert.InDelta(t, 1, testutil.ToFloat64(o.m.invalidSamples.WithLabelValues(app, tc.invalid)), 1e-9)
			}
		})
	}
}

func TestThePollersFollowTheConfig(t *testing.T) {
	f := newFakeProm(t)
	f.set(vector(map[string]string{"east": "0.4", "west": "0.8"}))
	o, _, d := promObserver(t, f, "")
	d.Services[0].Capacity.Prometheus.Interval = model.Duration(time.Second)
	o.opts.Now = time.Now
	var cur atomic.Pointer[model.Desired]
	cur.Store(d)
	o.opts.Desired = cur.Load
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); o.Run(ctx) }()
	require.Eventually(t, func() bool {
		st := o.State()
		return st != nil && percents(st)["east"] == 40 && percents(st)["west"] == 80
	}, 10*time.Second, 20*time.Millisecond, "the poller queries at once and the loop decides")
	q := f.queries.Load()
	require.Eventually(t, func() bool { return f.queries.Load() > q }, 5*time.Second, 20*time.Millisecond, "and again after its interval")

	// The service drops its capacity section: the poller stops.
	d2 := *d
	d2.Services = []model.Service{d.Services[0]}
	d2.Services[0].Capacity = nil
	cur.Store(&d2)
	o.Poke()
	require.Eventually(t, func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return len(o.pollers) == 0
	}, 5*time.Second, 20*time.Millisecond)
	cancel()
	<-done
}

func TestAnOversizedLimitIsExact(t *testing.T) {
	body := strings.Repeat("x", MaxResponseBytes)
	c := &capped{rc: io.NopCloser(strings.NewReader(body)), left: MaxResponseBytes}
	n, err := io.Copy(io.Discard, c)
	require.NoError(t, err, "exactly the limit is allowed")
	assert.Equal(t, int64(MaxResponseBytes), n)
	c = &capped{rc: io.NopCloser(strings.NewReader(body + "y")), left: MaxResponseBytes}
	_, err = io.Copy(io.Discard, c)
	assert.ErrorIs(t, err, errOversized)
}
