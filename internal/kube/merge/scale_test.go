package merge

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/failover"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/kube"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/serving"
)

// The scale benchmarks: a generated state of N services (MERIDIAN_BENCH_SERVICES,
// default 10 000; 100 000 for the figure), a mix of weighted, geo and
// failover services with three endpoints each in one zone, of which the last
// K (MERIDIAN_BENCH_KUBE_SERVICES, default N/100) come from Kubernetes
// objects through the pipeline's real Kubernetes merge (Kube.merge).
//
//	MERIDIAN_BENCH_SERVICES=100000 go test -run '^$' -bench OneServiceChange -benchmem ./internal/kube/merge/

var scaleClusters = []model.Cluster{
	{Name: "east", Region: "us-east", Country: "US", Continent: "NA"},
	{Name: "west", Region: "us-west", Country: "US", Continent: "NA"},
	{Name: "eu", Region: "eu-west", Country: "DE", Continent: "EU"},
}

// scaleAddr is the k-th address of service i: unique over the state.
func scaleAddr(i, k int) string {
	n := uint32(i)*4 + uint32(k) + 1
	return netip.AddrFrom4([4]byte{10, byte(n >> 16), byte(n >> 8), byte(n)}).String()
}

// scaleService is the i-th generated file service.
func scaleService(i int) model.Service {
	s := model.Service{Name: fmt.Sprintf("s%d.gslb.test", i)}
	for k, c := range scaleClusters {
		s.Endpoints = append(s.Endpoints, model.Endpoint{Address: scaleAddr(i, k), Cluster: c.Name})
	}
	switch i % 3 {
	case 1:
		s.Strategy = model.StrategyGeo
		s.Geo = &model.GeoPolicy{Default: []string{"east"}, Rules: []model.GeoRule{{Continents: []string{"EU"}, Clusters: []string{"eu"}}}}
	case 2:
		s.Strategy = model.StrategyFailover
		s.Failover = &model.FailoverPolicy{Order: []string{"west", "east", "eu"}}
	}
	return s
}

// scaleFile is the config file of n services, k of them left to Kubernetes.
func scaleFile(tb testing.TB, n, k int) *serving.Loaded {
	tb.Helper()
	d := model.Desired{
		Zones:    []model.Zone{{Apex: "gslb.test", SOA: model.SOA{Serial: 7}, Nameservers: []model.Nameserver{{Name: "ns1.gslb.test", IPv4: []string{"192.0.2.53"}}}}},
		Clusters: scaleClusters,
	}
	for i := range n - k {
		d.Services = append(d.Services, scaleService(i))
	}
	nd, err := model.Normalize(&d)
	require.NoError(tb, err)
	loc, err := geo.New(nil, "")
	require.NoError(tb, err)
	return &serving.Loaded{File: &config.File{Desired: *nd}, Locator: loc}
}

// scaleObjects are the Kubernetes objects of services n-k..n-1: one
// annotated Service per hostname and cluster (east and west).
func scaleObjects(n, k int) []kube.Object {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var out []kube.Object
	for i := n - k; i < n; i++ {
		host := fmt.Sprintf("s%d.gslb.test.", i)
		for c, cl := range []string{"east", "west"} {
			out = append(out, kube.Object{
				Ref:      kube.ObjectRef{Cluster: cl, Kind: kube.KindService, Namespace: "shop", Name: fmt.Sprintf("s%d", i)},
				Created:  created.Add(time.Duration(c) * time.Second),
				Settings: kube.Settings{Hostnames: []string{host}},
				Valid:    true,
				Targets:  []string{scaleAddr(i, c)},
			})
		}
	}
	return out
}

// objectSource is a KubeSource over a fixed list of objects, merged the
// way Kube merges what its informers watch.
type objectSource struct {
	k    Kube
	objs []kube.Object
}

func (o *objectSource) Merge(l *serving.Loaded) (*config.File, error) {
	return o.k.merge(l, nil, o.objs, func(kube.Result) {})
}

func (o *objectSource) PrepareNext() { o.k.PrepareNext() }

// processCPU is the CPU time the process has used (user and system, all
// threads: the garbage collector's work a change causes counts), in ns.
// On a shared machine it is steadier than the wall time of ns/op.
func processCPU(tb testing.TB) int64 {
	var ru syscall.Rusage
	require.NoError(tb, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func envInt(tb testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(tb, err, "%s", name)
	return n
}

type scaleState struct {
	n, k int
	l    *serving.Loaded
}

var (
	scaleOnce sync.Once
	scaleMemo scaleState
)

// scale is the generated state of the benchmarks, built once per process.
func scale(tb testing.TB) scaleState {
	scaleOnce.Do(func() {
		n := envInt(tb, "MERIDIAN_BENCH_SERVICES", 10_000)
		k := envInt(tb, "MERIDIAN_BENCH_KUBE_SERVICES", max(1, n/100))
		scaleMemo = scaleState{n: n, k: k, l: scaleFile(tb, n, k)}
	})
	return scaleMemo
}

func scalePipeline(tb testing.TB, st scaleState, src *objectSource, adm *admin.Store) *serving.Pipeline {
	tb.Helper()
	src.k.Logger = slog.New(slog.DiscardHandler)
	src.objs = scaleObjects(st.n, st.k)
	p, err := serving.New(st.l, serving.Options{Logger: slog.New(slog.DiscardHandler), Metrics: serving.NewMetrics(prometheus.NewRegistry()), Kube: src, Admin: adm})
	require.NoError(tb, err)
	return p
}

// BenchmarkOneServiceChange measures the time from one service's change to
// the new snapshot answering, on the generated state: a Kubernetes
// annotation (meridian.io/weight 0 and back on one object, through the
// pipeline's Kubernetes merge), an operator's drain set and removed, and
// one endpoint's decided health down and up. Every iteration checks the
// changed name's answers.
func BenchmarkOneServiceChange(b *testing.B) {
	st := scale(b)
	b.Logf("%d services, %d from Kubernetes", st.n, st.k)
	changed := st.n - 1 // a Kubernetes service: the last
	name := fmt.Sprintf("s%d.gslb.test.", changed)
	east, west := scaleAddr(changed, 0), scaleAddr(changed, 1)

	b.Run("kubernetes annotation", func(b *testing.B) {
		src := &objectSource{}
		p := scalePipeline(b, st, src, nil)
		obj := &src.objs[len(src.objs)-1] // the west object of the last service
		zero := 0
		b.ReportAllocs()
		cpu := processCPU(b)
		i := 0
		for b.Loop() {
			i++
			want := map[string]bool{east: true, west: true}
			if i%2 == 1 {
				obj.Settings.Weight = &zero
				want = map[string]bool{east: true}
			} else {
				obj.Settings.Weight = nil
			}
			if err := p.Remerge(); err != nil {
				b.Fatal(err)
			}
			if got := answers(b, p, name); len(got) != len(want) || !got[east] {
				b.Fatalf("iteration %d: %s answers %v, want %v", i, name, got, want)
			}
		}
		b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
	})

	b.Run("kubernetes hostname moved", func(b *testing.B) {
		src := &objectSource{}
		p := scalePipeline(b, st, src, nil)
		obj := &src.objs[len(src.objs)-1] // the west object of the last service
		const moved = "moved.gslb.test."
		before := obj.Settings.Hostnames
		b.ReportAllocs()
		cpu := processCPU(b)
		i := 0
		for b.Loop() {
			i++
			name2 := name
			obj.Settings.Hostnames = before
			if i%2 == 1 { // a name the state did not have, and back
				obj.Settings.Hostnames, name2 = []string{moved}, moved
			}
			if err := p.Remerge(); err != nil {
				b.Fatal(err)
			}
			if got := answers(b, p, name2); !got[west] {
				b.Fatalf("iteration %d: %s answers %v, want %s among them", i, name2, got, west)
			}
		}
		b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
	})

	b.Run("admin drain", func(b *testing.B) {
		adm, err := admin.Open("", "n1", 0)
		require.NoError(b, err)
		p := scalePipeline(b, st, &objectSource{}, adm)
		drain := admin.Request{Kind: admin.KindDrain, Service: fmt.Sprintf("s%d.gslb.test", changed), Endpoint: west, Reason: "bench"}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			o, err := p.AddOverride(drain, "bench")
			if err != nil {
				b.Fatal(err)
			}
			if got := answers(b, p, name); got[west] {
				b.Fatalf("iteration %d: drained %s still answered: %v", i, west, got)
			}
			if _, err := p.RemoveOverride(o.ID, "bench"); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/change")
	})

	b.Run("endpoint health", func(b *testing.B) {
		p := scalePipeline(b, st, &objectSource{}, nil)
		s := p.State()
		up := failover.Decide(failover.Input{Desired: &s.Effective.Desired, Now: time.Now()}, failover.ParamsFrom(&s.Effective.Desired))
		down := *up
		down.Endpoints = append([]failover.EndpointState(nil), up.Endpoints...)
		for j := range down.Endpoints {
			if down.Endpoints[j].Subject.Target == east && down.Endpoints[j].Subject.Service == name {
				down.Endpoints[j].State = failover.Down
			}
		}
		up.StatesChanged, down.StatesChanged = true, true
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			d := up
			if i%2 == 1 {
				d = &down
			}
			if err := p.SetDecision(d); err != nil {
				b.Fatal(err)
			}
			if got := answers(b, p, name); got[east] != (i%2 == 0) {
				b.Fatalf("iteration %d: %s answers %v", i, name, got)
			}
		}
	})
}

// BenchmarkFullCompile is engine.Compile of the whole generated state
// (Kubernetes services merged), from nothing.
func BenchmarkFullCompile(b *testing.B) {
	st := scale(b)
	p := scalePipeline(b, st, &objectSource{}, nil)
	s := p.State()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := engine.Compile(s.Served, engine.Options{Locator: st.l.Locator}); err != nil {
			b.Fatal(err)
		}
	}
}

const mergeConfig = `
zones:
  - apex: gslb.test
    ttl: 45
    soa: {serial: 7, minimum: 20}
    nameservers: [{name: ns1.gslb.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east, country: US, continent: NA}
  - {name: west, region: us-west, country: US, continent: NA, heartbeat: {interval: 2s, agent: true}}
  - {name: eu, region: eu-west, country: DE, continent: EU}
health: {interval: 3s}
services:
  - name: App.gslb.test
    max_answers: 2
    health_check: {kind: http, path: /healthz}
    min_healthy: 1
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 300}
      - {address: "2001:db8::1", cluster: west}
  - name: geo.gslb.test
    strategy: geo
    geo: {rules: [{continents: [EU], clusters: [eu]}], default: [east]}
    endpoints:
      - {address: 192.0.2.11, cluster: east}
      - {address: 192.0.2.12, cluster: eu, drain: true}
  - name: fo.gslb.test
    strategy: failover
    failover: {order: [west, east]}
    when_all_down: nodata
    endpoints:
      - {address: 192.0.2.21, cluster: east, state: down}
      - {address: 192.0.2.22, cluster: west}
  - name: rr.gslb.test
    strategy: roundrobin
    sticky: subnet
    ttl: 30
    endpoints:
      - {cname: a.example.org, cluster: east}
`

func TestKubeMergeIsTheWholeNormalized(t *testing.T) {
	l := load(t, mergeConfig)
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	weight, ttl := 40, 90
	obj := func(cluster, name, host string, s kube.Settings, targets ...string) kube.Object {
		s.Hostnames = []string{host}
		return kube.Object{Ref: kube.ObjectRef{Cluster: cluster, Kind: kube.KindService, Namespace: "shop", Name: name},
			Created: created, Settings: s, Valid: true, Targets: targets}
	}
	objs := []kube.Object{
		obj("east", "web", "web.gslb.test.", kube.Settings{Weight: &weight, TTL: ttl}, "192.0.2.101"),
		obj("west", "web", "web.gslb.test.", kube.Settings{}, "192.0.2.102", "2001:db8::102"),
		obj("east", "api", "api.gslb.test.", kube.Settings{Strategy: model.StrategyFailover, FailoverOrder: []string{"west", "east"},
			HealthCheck: &model.Check{Kind: "tcp", Port: 8443}, Sticky: model.StickySubnet}, "192.0.2.111"),
		obj("west", "api", "api.gslb.test.", kube.Settings{Drain: true}, "192.0.2.112"),
		obj("eu", "geo", "g.gslb.test.", kube.Settings{Strategy: model.StrategyGeo, Geo: &kube.GeoPlaces{Continents: []string{"EU"}}}, "192.0.2.121"),
		obj("east", "app", "app.gslb.test.", kube.Settings{}, "192.0.2.131"), // defined in the file: not taken
	}
	whole := func(objs []kube.Object) *model.Desired {
		res := kube.Build(objs, &l.File.Desired)
		d := l.File.Desired
		d.Services = append(slices.Clone(d.Services), res.Services...)
		nd, err := model.Normalize(&d)
		require.NoError(t, err)
		return nd
	}
	k := &Kube{Logger: discard()}
	f, err := k.merge(l, nil, objs, func(r kube.Result) { require.Len(t, r.Dropped, 1, "%v", r.Dropped) })
	require.NoError(t, err)
	require.Len(t, f.Services, 4+3, "the file's services and three from Kubernetes")
	assert.Equal(t, *whole(objs), f.Desired, "the merge is the whole desired state normalized")
	for i := range 4 {
		assert.Same(t, &l.File.Services[i].Endpoints[0], &f.Services[i].Endpoints[0], "the file's services are the values it loaded")
	}

	objs[4].Settings.Geo = &kube.GeoPlaces{Countries: []string{"FR"}}
	f2, err := k.merge(l, nil, objs, func(kube.Result) {})
	require.NoError(t, err)
	assert.Equal(t, *whole(objs), f2.Desired, "after a change too")
	byName := func(f *config.File, name string) *model.Service {
		i := slices.IndexFunc(f.Services, func(s model.Service) bool { return s.Name == name })
		require.GreaterOrEqual(t, i, 0, name)
		return &f.Services[i]
	}
	assert.Same(t, &byName(f, "web.gslb.test.").Endpoints[0], &byName(f2, "web.gslb.test.").Endpoints[0], "an unchanged Kubernetes service keeps its value")
	assert.NotSame(t, &byName(f, "g.gslb.test.").Endpoints[0], &byName(f2, "g.gslb.test.").Endpoints[0], "the changed one is new")
}

func TestAMergeIntoThePreparedListIsTheWholeNormalized(t *testing.T) {
	old := spareFrom
	spareFrom = 1
	t.Cleanup(func() { spareFrom = old })
	l := load(t, mergeConfig)
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	obj := func(cluster, name, host string, targets ...string) kube.Object {
		return kube.Object{Ref: kube.ObjectRef{Cluster: cluster, Kind: kube.KindService, Namespace: "shop", Name: name},
			Created: created, Settings: kube.Settings{Hostnames: []string{host}}, Valid: true, Targets: targets}
	}
	whole := func(l *serving.Loaded, objs []kube.Object) model.Desired {
		res := kube.Build(objs, &l.File.Desired)
		d := l.File.Desired
		d.Services = append(slices.Clone(d.Services), res.Services...)
		nd, err := model.Normalize(&d)
		require.NoError(t, err)
		return *nd
	}
	k := &Kube{Logger: discard()}
	objs := []kube.Object{obj("east", "web", "web.gslb.test.", "192.0.2.101"), obj("west", "api", "api.gslb.test.", "192.0.2.112")}
	_, err := k.merge(l, nil, objs, func(kube.Result) {})
	require.NoError(t, err)

	for _, tc := range []struct {
		name   string
		change func() *serving.Loaded
		used   bool
	}{
		{"a hostname moved is merged into the prepared list", func() *serving.Loaded {
			objs[0].Settings.Hostnames = []string{"moved.gslb.test."}
			return l
		}, true},
		{"a service removed is merged into it", func() *serving.Loaded { objs = objs[:1]; return l }, true},
		{"services beyond its room are merged into a new list", func() *serving.Loaded {
			for i := range 80 {
				objs = append(objs, obj("east", fmt.Sprintf("n%d", i), fmt.Sprintf("n%d.gslb.test.", i), "192.0.2.9"))
			}
			return l
		}, false},
		{"another file is merged into a new list", func() *serving.Loaded { return load(t, mergeConfig) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k.PrepareNext()
			spare := k.spare.buf
			require.NotNil(t, spare, "a list is prepared")
			l := tc.change()
			f, err := k.merge(l, nil, objs, func(kube.Result) {})
			require.NoError(t, err)
			assert.Equal(t, whole(l, objs), f.Desired)
			assert.Equal(t, len(f.Services), cap(f.Services), "no room after the list: an append copies it")
			assert.Equal(t, tc.used, &spare[0] == &f.Services[0], "the prepared list is used")
			assert.Nil(t, k.spare.buf, "a prepared list serves one merge")
			for i := range l.File.Services {
				assert.Same(t, &l.File.Services[i].Endpoints[0], &f.Services[i].Endpoints[0], "the file's services are the values it loaded")
			}
		})
	}
}

func TestOneKubernetesChangeIsServedAndThePreviousStateIsUntouched(t *testing.T) {
	for _, ahead := range []bool{false, true} {
		t.Run(fmt.Sprintf("merged list prepared %t", ahead), func(t *testing.T) {
			if ahead {
				old := spareFrom
				spareFrom = 1
				t.Cleanup(func() { spareFrom = old })
			}
			oneKubernetesChange(t, ahead)
		})
	}
}

func oneKubernetesChange(t *testing.T, ahead bool) {
	const n, k = 300, 30
	st := scaleState{n: n, k: k, l: scaleFile(t, n, k)}
	src := &objectSource{}
	p := scalePipeline(t, st, src, nil)
	name := fmt.Sprintf("s%d.gslb.test.", n-1)
	east, west := scaleAddr(n-1, 0), scaleAddr(n-1, 1)
	prev := p.State()
	require.Len(t, prev.Effective.Services, n)
	require.Equal(t, map[string]bool{east: true, west: true}, answers(t, p, name))
	frozen := func(s *serving.State) string { // the published values, deeply
		out, err := json.Marshal([]any{s.Effective.Desired, s.Served, s.Snapshot.Desired()})
		require.NoError(t, err)
		return string(out)
	}
	before := frozen(prev)

	zero := 0
	src.objs[len(src.objs)-1].Settings.Weight = &zero // the west object of the last service
	require.NoError(t, p.Remerge())
	next := p.State()
	require.Equal(t, ahead, src.k.spare.buf != nil, "the next merged list is prepared")

	require.NotSame(t, prev, next)
	assert.Equal(t, map[string]bool{east: true}, answers(t, p, name), "the change is served")
	assert.Equal(t, before, frozen(prev), "the previous state is untouched")
	assert.Equal(t, map[string]bool{east: true, west: true}, snapshotAnswers(t, prev.Snapshot, name), "the previous snapshot answers as it did")
	other := fmt.Sprintf("s%d.gslb.test.", n-2)
	assert.Equal(t, snapshotAnswers(t, prev.Snapshot, other), snapshotAnswers(t, next.Snapshot, other), "another Kubernetes service is unchanged")
	assert.Equal(t, n-1, next.Snapshot.SharedServices(), "every other service is shared with the previous snapshot")
	for _, i := range []int{0, n - k - 1, n - 2} {
		assert.Same(t, &prev.Effective.Services[i].Endpoints[0], &next.Effective.Services[i].Endpoints[0], "service %d keeps its value", i)
	}

	middle := frozen(next)
	src.objs[len(src.objs)-1].Settings.Weight = nil
	spare := src.k.spare.buf
	require.NoError(t, p.Remerge())
	if ahead {
		require.Same(t, &spare[0], &p.State().Effective.Services[0], "the second merge is into the prepared list")
	}
	assert.Equal(t, map[string]bool{east: true, west: true}, answers(t, p, name), "and back")
	assert.Equal(t, before, frozen(prev), "the first state is still untouched")
	// Each snapshot's name tables are shared with the one before (the
	// engine's nameTable): neither earlier snapshot answers the later change.
	assert.Equal(t, middle, frozen(next), "the second state is untouched")
	assert.Equal(t, map[string]bool{east: true}, snapshotAnswers(t, next.Snapshot, name), "the second snapshot answers as it did")
	assert.Equal(t, map[string]bool{east: true, west: true}, snapshotAnswers(t, prev.Snapshot, name), "the first snapshot answers as it did")
}
