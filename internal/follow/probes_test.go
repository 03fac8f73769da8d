package follow

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/vote"
)

// probeService is a service of the probes tests: name, strategy, a health
// check of kind check ("" = none) and endpoints at the given addresses.
func probeService(name, strategy, check string, addrs ...string) model.Service {
	s := model.Service{Name: name, Strategy: strategy}
	for _, a := range addrs {
		s.Endpoints = append(s.Endpoints, model.Endpoint{Address: a, Cluster: "east"})
	}
	if check != "" {
		s.HealthCheck = &model.Check{Kind: check, Port: 80}
	}
	return s
}

func probeDesired() *model.Desired {
	return &model.Desired{
		Clusters: []model.Cluster{{Name: "east"}, {Name: "west"}},
		Services: []model.Service{
			probeService("a.test", model.StrategyWeighted, model.CheckHTTP, "192.0.2.1", "192.0.2.2"),
			probeService("b.test", model.StrategyLatency, model.CheckTCP, "192.0.2.3", "2001:db8::3"),
			probeService("c.test", model.StrategyWeighted, "", "192.0.2.5"),
			probeService("d.test", model.StrategyFailover, model.CheckNone, "192.0.2.6"),
			{Name: "e.test", Endpoints: []model.Endpoint{{CNAME: "x.example.", Cluster: "west"}}, HealthCheck: &model.Check{Kind: model.CheckHTTP}},
			probeService("f.test", model.StrategyGeo, model.CheckDNS, "192.0.2.7", "192.0.2.8", "192.0.2.9"),
		},
	}
}

// next is d's successor the way the pipeline makes one: a new desired
// state whose unchanged services are the same values (same slices and
// pointers), with change applied.
func next(d *model.Desired, change func(*model.Desired)) *model.Desired {
	n := *d
	n.Services = slices.Clone(d.Services)
	n.Clusters = slices.Clone(d.Clusters)
	change(&n)
	return &n
}

func index(d *model.Desired, name string) int {
	return slices.IndexFunc(d.Services, func(s model.Service) bool { return s.Name == name })
}

// sortedTargets is ts as the prober takes them: a set (a duplicate
// subject is ignored), here sorted.
func sortedTargets(ts []health.Target) []health.Target {
	if len(ts) == 0 {
		return nil
	}
	ts = slices.Clone(ts)
	slices.SortStableFunc(ts, func(a, b health.Target) int {
		return cmp.Or(cmp.Compare(a.Subject.Service, b.Subject.Service), cmp.Compare(a.Subject.Target, b.Subject.Target))
	})
	return slices.CompactFunc(ts, func(a, b health.Target) bool { return a.Subject == b.Subject })
}

// requireFromScratch checks that p's view is exactly what Subjects,
// LatencySubjects and Targets give on d, and that ch says what changed
// since prev.
func requireFromScratch(t *testing.T, p *Probes, prev, d *model.Desired, ch ProbeChange) {
	t.Helper()
	known, measured := Subjects(d), LatencySubjects(d)
	targets, _ := Targets(d, nil)
	assert.Equal(t, known, p.known, "subjects")
	assert.Equal(t, measured, p.measured, "latency subjects")
	assert.Equal(t, sortedTargets(targets), sortedTargets(p.Targets()), "targets")
	for s := range known {
		assert.True(t, p.Known(s), "Known(%v)", s)
	}
	for s := range measured {
		assert.True(t, p.Measured(s), "Measured(%v)", s)
	}
	assert.Equal(t, len(measured) > 0, p.AnyMeasured())
	if prev == nil {
		return
	}
	var removed []vote.Subject
	for s := range Subjects(prev) {
		if !known[s] {
			removed = append(removed, s)
			assert.False(t, p.Known(s), "Known(%v) after its removal", s)
		}
	}
	assert.ElementsMatch(t, removed, ch.Removed, "removed subjects")
	before, _ := Targets(prev, nil)
	assert.Equal(t, !slices.Equal(sortedTargets(before), sortedTargets(targets)), ch.TargetsChanged, "targets changed")
	// The previous targets with the changes applied (as the prober's
	// ChangeTargets applies them) are the new ones.
	applied := map[vote.Subject]health.Target{}
	for _, x := range sortedTargets(before) {
		applied[x.Subject] = x
	}
	for _, s := range ch.Untargeted {
		require.Contains(t, applied, s, "an untargeted subject had a target")
		delete(applied, s)
	}
	for _, x := range ch.Retargeted {
		applied[x.Subject] = x
	}
	var got []health.Target
	for _, x := range applied {
		got = append(got, x)
	}
	assert.Equal(t, sortedTargets(targets), sortedTargets(got), "the previous targets with the changes applied")
}

func TestProbesFollowEachChangeAsFromScratch(t *testing.T) {
	newAddrs := func(name string, addrs ...string) func(*model.Desired) {
		return func(d *model.Desired) {
			i := index(d, name)
			s := probeService(name, d.Services[i].Strategy, "", addrs...)
			s.HealthCheck = d.Services[i].HealthCheck
			d.Services[i] = s
		}
	}
	tests := []struct {
		name     string
		change   func(*model.Desired)
		services int // services looked at again
	}{
		{"nothing changes", func(*model.Desired) {}, 0},
		{"a copy of every service is looked at again and changes nothing", func(d *model.Desired) {
			for i := range d.Services {
				d.Services[i].Endpoints = slices.Clone(d.Services[i].Endpoints)
			}
		}, 6},
		{"a service is added at the end", func(d *model.Desired) {
			d.Services = append(d.Services, probeService("g.test", model.StrategyWeighted, model.CheckHTTP, "192.0.2.10"))
		}, 1},
		{"a service is added in the middle", func(d *model.Desired) {
			d.Services = slices.Insert(d.Services, 2, probeService("bb.test", model.StrategyLatency, model.CheckTCP, "192.0.2.11"))
		}, 1},
		{"a service is removed", func(d *model.Desired) { d.Services = slices.Delete(d.Services, 1, 2) }, 1},
		{"the last service is removed", func(d *model.Desired) { d.Services = d.Services[:len(d.Services)-1] }, 1},
		{"an endpoint is added", newAddrs("a.test", "192.0.2.1", "192.0.2.2", "192.0.2.12"), 1},
		{"an endpoint is removed", newAddrs("f.test", "192.0.2.7", "192.0.2.9"), 1},
		{"an endpoint's address changes", newAddrs("b.test", "192.0.2.3", "2001:db8::4"), 1},
		{"an endpoint's weight changes (new slice, same subjects)", func(d *model.Desired) {
			i := index(d, "a.test")
			eps := slices.Clone(d.Services[i].Endpoints)
			w := 0
			eps[0].Weight = &w
			d.Services[i].Endpoints = eps
		}, 1},
		{"the health check changes", func(d *model.Desired) {
			i := index(d, "a.test")
			d.Services[i].HealthCheck = &model.Check{Kind: model.CheckTCP, Port: 443}
		}, 1},
		{"a health check is added", func(d *model.Desired) {
			d.Services[index(d, "c.test")].HealthCheck = &model.Check{Kind: model.CheckHTTP}
		}, 1},
		{"the health check is removed", func(d *model.Desired) { d.Services[index(d, "f.test")].HealthCheck = nil }, 1},
		{"a check of kind none becomes tcp", func(d *model.Desired) {
			d.Services[index(d, "d.test")].HealthCheck = &model.Check{Kind: model.CheckTCP, Port: 22}
		}, 1},
		{"a service becomes a latency service", func(d *model.Desired) { d.Services[index(d, "a.test")].Strategy = model.StrategyLatency }, 1},
		{"a latency service becomes weighted", func(d *model.Desired) { d.Services[index(d, "b.test")].Strategy = model.StrategyWeighted }, 1},
		{"a service is renamed in place", func(d *model.Desired) { d.Services[index(d, "a.test")].Name = "z.test" }, 1},
		{"two services swap places", func(d *model.Desired) { d.Services[0], d.Services[1] = d.Services[1], d.Services[0] }, 0},
		{"a cluster is added", func(d *model.Desired) { d.Clusters = append(d.Clusters, model.Cluster{Name: "eu"}) }, 0},
		{"a cluster is removed", func(d *model.Desired) { d.Clusters = d.Clusters[:1] }, 0},
		{"every service is removed", func(d *model.Desired) { d.Services = nil }, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Probes
			d := probeDesired()
			p.Update(d)
			requireFromScratch(t, &p, nil, d, ProbeChange{})
			n := next(d, tt.change)
			ch := p.Update(n)
			requireFromScratch(t, &p, d, n, ch)
			assert.Equal(t, tt.services, ch.Services, "services looked at again")
		})
	}
}

// TestProbesFollowARandomSequenceAsFromScratch applies random changes of
// the kinds above one after the other to one Probes.
func TestProbesFollowARandomSequenceAsFromScratch(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 5))
	checks := []string{"", model.CheckHTTP, model.CheckTCP, model.CheckNone}
	strategies := []string{model.StrategyWeighted, model.StrategyLatency, model.StrategyGeo}
	random := func(name string) model.Service {
		var addrs []string
		for range 1 + rng.IntN(3) {
			addrs = append(addrs, fmt.Sprintf("10.0.%d.%d", rng.IntN(3), rng.IntN(4)))
		}
		return probeService(name, strategies[rng.IntN(len(strategies))], checks[rng.IntN(len(checks))], addrs...)
	}
	d := &model.Desired{Clusters: []model.Cluster{{Name: "east"}}}
	for i := range 20 {
		d.Services = append(d.Services, random(fmt.Sprintf("s%d.test", i)))
	}
	var p Probes
	p.Update(d)
	requireFromScratch(t, &p, nil, d, ProbeChange{})
	names := 20
	for step := range 300 {
		n := next(d, func(d *model.Desired) {
			for range 1 + rng.IntN(2) {
				i := rng.IntN(len(d.Services) + 1)
				switch op := rng.IntN(6); {
				case op == 0 || i == len(d.Services):
					names++
					d.Services = slices.Insert(d.Services, min(i, len(d.Services)), random(fmt.Sprintf("s%d.test", names)))
				case op == 1 && len(d.Services) > 1:
					d.Services = slices.Delete(d.Services, i, i+1)
				case op == 2:
					d.Services[i] = random(d.Services[i].Name)
				case op == 3:
					d.Services[i].HealthCheck = random("").HealthCheck
				case op == 4:
					names++
					d.Services[i].Name = fmt.Sprintf("s%d.test", names)
				default:
					d.Services[i].Strategy = strategies[rng.IntN(len(strategies))]
				}
			}
		})
		ch := p.Update(n)
		requireFromScratch(t, &p, d, n, ch)
		if t.Failed() {
			t.Fatalf("step %d", step)
		}
		d = n
	}
	require.NotEmpty(t, p.known)
}

// BenchmarkProbingReconfigure measures what a serve node with probing on
// (ring.enabled) does for its prober on each new effective state, on the
// generated state of the scale benchmarks (MERIDIAN_BENCH_SERVICES, every
// service with an HTTP check): "from scratch" is Subjects, LatencySubjects,
// Targets and the prober's SetTargets on the whole list, as before Probes;
// "probes" is Probes.Update, and the prober's ChangeTargets with what
// changed, when a target changed.
// One service changes per iteration and back: "weight" gives one
// endpoint of it a new weight (a new endpoint slice, the same targets: a
// Kubernetes annotation change), "address" gives it a new address.
//
//	MERIDIAN_BENCH_SERVICES=100000 go test -run '^$' -bench ProbingReconfigure -benchmem -count 5 ./internal/follow/
func BenchmarkProbingReconfigure(b *testing.B) {
	d0 := scaleDesired(b, envInt(b, "MERIDIAN_BENCH_SERVICES", 10_000))
	d0.Services = slices.Clone(d0.Services)
	for i := range d0.Services {
		d0.Services[i].HealthCheck = &model.Check{Kind: model.CheckHTTP, Port: 80, Path: "/healthz"}
	}
	b.Logf("%d services", len(d0.Services))
	last := len(d0.Services) - 1
	weight := next(&d0, func(d *model.Desired) {
		eps := slices.Clone(d.Services[last].Endpoints)
		w := 7
		eps[0].Weight = &w
		d.Services[last].Endpoints = eps
	})
	address := next(&d0, func(d *model.Desired) {
		eps := slices.Clone(d.Services[last].Endpoints)
		eps[0].Address = "192.0.2.200"
		d.Services[last].Endpoints = eps
	})
	for _, change := range []struct {
		name string
		d    *model.Desired
	}{{"weight", weight}, {"address", address}} {
		states := []*model.Desired{change.d, &d0}
		b.Run(change.name+"/from scratch", func(b *testing.B) {
			pr := health.NewProber(health.ProberOptions{})
			ts, _ := Targets(&d0, nil)
			pr.SetTargets(ts)
			b.ReportAllocs()
			cpu := processCPU(b)
			i := 0
			for b.Loop() {
				d := states[i%2]
				i++
				known, measured := Subjects(d), LatencySubjects(d)
				ts, _ := Targets(d, nil)
				pr.SetTargets(ts)
				if len(known) == 0 || len(measured) != 0 {
					b.Fatalf("%d subjects, %d measured", len(known), len(measured))
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
		})
		b.Run(change.name+"/probes", func(b *testing.B) {
			pr := health.NewProber(health.ProberOptions{})
			var probes Probes
			probes.Update(&d0)
			pr.SetTargets(probes.Targets())
			b.ReportAllocs()
			cpu := processCPU(b)
			i := 0
			for b.Loop() {
				d := states[i%2]
				i++
				ch := probes.Update(d)
				if ch.TargetsChanged {
					pr.ChangeTargets(ch.Untargeted, ch.Retargeted)
				}
				if ch.Services != 1 {
					b.Fatalf("%d services looked at again, want 1", ch.Services)
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
