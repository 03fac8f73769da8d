package capacity

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
)

const app = "app.example.test."

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func s(n float64) time.Duration { return time.Duration(n * float64(time.Second)) }

// service is app with one endpoint per weight, in clusters c1, c2, ...,
// addresses 192.0.2.1, 192.0.2.2, ...
func service(weights ...int) Service {
	svc := Service{Name: app, Source: model.CapacitySourceKubernetes, Step: 0.05, Hysteresis: 0.02,
		MinChangeInterval: 30 * time.Second, StaleAfter: 5 * time.Minute}
	for i, w := range weights {
		svc.Endpoints = append(svc.Endpoints, Endpoint{Target: fmt.Sprintf("192.0.2.%d", i+1), Cluster: fmt.Sprintf("c%d", i+1), Weight: w})
	}
	return svc
}

// step is one call: the readings present (endpoint index → fraction, read
// at readAt, default the call's time) and the expected percents and holds.
type step struct {
	at     time.Duration
	read   map[int]float64
	readAt map[int]time.Duration // when the reading was taken (default: at)
	want   []int                 // percent per endpoint
	held   []string              // Held per endpoint (nil: none held)
}

func runSteps(t *testing.T, svc Service, p Params, steps []step) *State {
	t.Helper()
	var prev *State
	readings := map[Key]Reading{}
	for i, st := range steps {
		now := t0.Add(st.at)
		for k, f := range st.read {
			at := now
			if ra, ok := st.readAt[k]; ok {
				at = t0.Add(ra)
			}
			readings[Key{svc.Name, svc.Endpoints[k].Target}] = Reading{Fraction: f, At: at, Detail: fmt.Sprintf("read %v", f)}
		}
		got := Decide(Input{Services: []Service{svc}, Readings: readings, Prev: prev, Now: now}, p)
		ss, ok := got.Lookup(svc.Name)
		require.True(t, ok)
		var pct []int
		var held []string
		anyHeld := false
		for _, e := range ss.Endpoints {
			pct = append(pct, e.Percent)
			held = append(held, e.Held)
			anyHeld = anyHeld || e.Held != ""
		}
		if !anyHeld {
			held = nil
		}
		assert.Equal(t, st.want, pct, "step %d (t=%s): percents", i, st.at)
		assert.Equal(t, st.held, held, "step %d (t=%s): holds", i, st.at)
		prev = got
	}
	return prev
}

func TestDecide(t *testing.T) {
	cases := []struct {
		name   string
		svc    Service
		params Params
		steps  []step
	}{
		{
			name: "without readings every endpoint draws its configured weight",
			svc:  service(50, 50),
			steps: []step{
				{at: 0, want: []int{100, 100}},
			},
		},
		{
			name: "eight of ten endpoints failing readiness take east to 20 % at once",
			svc:  service(50, 50),
			steps: []step{
				{at: 0, read: map[int]float64{0: 1, 1: 1}, want: []int{100, 100}},
				{at: s(1), read: map[int]float64{0: 0.2}, want: []int{20, 100}},
			},
		},
		{
			name: "a second change waits for the minimum change interval",
			svc:  service(50, 50),
			steps: []step{
				{at: 0, read: map[int]float64{0: 0.2, 1: 1}, want: []int{20, 100}},
				{at: s(10), read: map[int]float64{0: 1}, want: []int{20, 100}, held: []string{"interval", ""}},
				{at: s(29), want: []int{20, 100}, held: []string{"interval", ""}},
				{at: s(30), want: []int{100, 100}},
			},
		},
		{
			name: "a held change that is no longer wanted is dropped",
			svc:  service(50, 50),
			steps: []step{
				{at: 0, read: map[int]float64{0: 0.2, 1: 1}, want: []int{20, 100}},
				{at: s(10), read: map[int]float64{0: 1}, want: []int{20, 100}, held: []string{"interval", ""}},
				{at: s(20), read: map[int]float64{0: 0.2}, want: []int{20, 100}},
				{at: s(40), want: []int{20, 100}},
			},
		},
		{
			name: "a reading within the hysteresis keeps the fraction in use",
			svc:  service(50, 50),
			steps: []step{
				{at: 0, read: map[int]float64{0: 0.8, 1: 1}, want: []int{80, 100}},
				{at: s(60), read: map[int]float64{0: 0.76, 1: 0.96}, want: []int{80, 100}},
				{at: s(120), read: map[int]float64{0: 0.84}, want: []int{80, 100}},
				{at: s(180), read: map[int]float64{0: 0.75}, want: []int{75, 100}},
			},
		},
		{
			name: "a reading wobbling across a step boundary does not flip the level",
			svc:  service(50, 50),
			steps: []step{
				{at: 0, read: map[int]float64{0: 0.925, 1: 1}, want: []int{95, 100}},
				{at: s(60), read: map[int]float64{0: 0.92}, want: []int{95, 100}},
				{at: s(120), read: map[int]float64{0: 0.93}, want: []int{95, 100}},
				{at: s(180), read: map[int]float64{0: 0.924}, want: []int{95, 100}},
			},
		},
		{
			name: "a change moving more than half of the answers is braked and the rest applied one interval later",
			svc:  service(100, 100, 100),
			steps: []step{
				{at: 0, read: map[int]float64{0: 1, 1: 1, 2: 1}, want: []int{100, 100, 100}},
				{at: s(1), read: map[int]float64{0: 0, 1: 0}, want: []int{0, 100, 100}, held: []string{"", "brake", ""}},
				{at: s(5), want: []int{0, 100, 100}, held: []string{"", "brake", ""}},
				{at: s(6), want: []int{0, 0, 100}},
			},
		},
		{
			name:   "brake 1 lets any change through at once",
			svc:    service(100, 100, 100),
			params: Params{Brake: 1},
			steps: []step{
				{at: 0, read: map[int]float64{0: 0, 1: 0, 2: 1}, want: []int{0, 0, 100}},
			},
		},
		{
			name: "a braked change is applied after its interval even inside the minimum change interval",
			svc:  service(100, 100, 100),
			steps: []step{
				{at: 0, read: map[int]float64{0: 0, 1: 0, 2: 1}, want: []int{0, 100, 100}, held: []string{"", "brake", ""}},
				{at: s(5), want: []int{0, 0, 100}},
				{at: s(10), read: map[int]float64{0: 1, 1: 1}, want: []int{0, 0, 100}, held: []string{"interval", "interval", ""}},
				{at: s(35), want: []int{100, 0, 100}, held: []string{"", "brake", ""}},
				{at: s(40), want: []int{100, 100, 100}},
			},
		},
		{
			name: "every weighted endpoint at 0 ready falls back to the configured weights",
			svc:  service(50, 50, 0),
			steps: []step{
				{at: 0, read: map[int]float64{0: 0, 1: 0, 2: 1}, want: []int{100, 100, 100}},
			},
		},
		{
			name: "one endpoint at 0 while another has capacity draws 0",
			svc:  service(50, 50),
			steps: []step{
				{at: 0, read: map[int]float64{0: 0, 1: 0.4}, want: []int{0, 40}},
			},
		},
		{
			name: "the last endpoint with capacity going to 0 brings back the configured weights",
			svc:  service(50, 50),
			steps: []step{
				{at: 0, read: map[int]float64{0: 0, 1: 1}, want: []int{0, 100}},
				{at: s(30), read: map[int]float64{1: 0}, want: []int{100, 100}},
			},
		},
		{
			name: "a failed source keeps the last good fraction until the reading is stale",
			svc:  service(50, 50),
			steps: []step{
				{at: 0, read: map[int]float64{0: 0.2, 1: 1}, want: []int{20, 100}},
				{at: s(299), want: []int{20, 100}},
				{at: s(301), want: []int{100, 100}},
			},
		},
		{
			name: "a reading taken long ago counts as none",
			svc:  service(50, 50),
			steps: []step{
				{at: s(600), read: map[int]float64{0: 0.2}, readAt: map[int]time.Duration{0: 0}, want: []int{100, 100}},
			},
		},
		{
			name: "a weight-0 endpoint never holds the brake",
			svc:  service(100, 0),
			steps: []step{
				{at: 0, read: map[int]float64{0: 1, 1: 1}, want: []int{100, 100}},
				{at: s(1), read: map[int]float64{1: 0}, want: []int{100, 0}},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runSteps(t, tc.svc, tc.params, tc.steps)
		})
	}
}

func TestFractionsInUseNeverAllStayAtZero(t *testing.T) {
	svc := service(50, 50)
	prev := &State{Services: []ServiceState{{Name: app, Source: "kubernetes", Step: 0.05, LastChange: t0.Add(-time.Second), Endpoints: []EndpointState{
		{Target: "192.0.2.1", Cluster: "c1", Weight: 50, Percent: 0},
		{Target: "192.0.2.2", Cluster: "c2", Weight: 50, Percent: 0},
	}}}}
	r := map[Key]Reading{{app, "192.0.2.1"}: {Fraction: 0, At: t0}, {app, "192.0.2.2"}: {Fraction: 0.5, At: t0}}
	st := Decide(Input{Services: []Service{svc}, Readings: r, Prev: prev, Now: t0}, Params{})
	ss, _ := st.Lookup(app)
	assert.Equal(t, 0, ss.Endpoints[0].Percent, "east keeps its 0 %")
	assert.Equal(t, 50, ss.Endpoints[1].Percent, "west would wait for the interval, but a service never draws every weighted endpoint at 0 %")
	assert.Empty(t, ss.Endpoints[1].Held)
	require.NotEmpty(t, st.Changes)
	assert.Equal(t, Change{Service: app, Target: "192.0.2.2", Cluster: "c2", From: 0, To: 50, Reason: "fallback", At: t0}, st.Changes[len(st.Changes)-1])
	assert.Equal(t, t0, ss.LastChange)
}

func TestQuantise(t *testing.T) {
	cases := []struct {
		name string
		f    float64
		step float64
		want int
	}{
		{"a multiple of the step is kept", 0.8, 0.05, 80},
		{"a fraction is rounded to the nearest step", 0.83, 0.05, 85},
		{"a tie goes up", 0.825, 0.05, 85},
		{"one stays one", 1, 0.05, 100},
		{"zero stays zero", 0, 0.05, 0},
		{"a step that does not divide one still reaches one", 0.97, 0.3, 100},
		{"a step that does not divide one has its top level below one", 0.85, 0.3, 90},
		{"below zero is zero", -1, 0.05, 0},
		{"above one is one", 7, 0.05, 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Quantise(tc.f, tc.step))
		})
	}
}

func TestTheStateTellsTheEngineWhy(t *testing.T) {
	svc := service(50, 50)
	st := runSteps(t, svc, Params{}, []step{
		{at: 0, read: map[int]float64{0: 0.2}, want: []int{20, 100}},
		{at: s(10), read: map[int]float64{0: 0.6}, want: []int{20, 100}, held: []string{"interval", ""}},
	})
	c, ok := st.Endpoint(app, "192.0.2.1")
	require.True(t, ok)
	assert.Equal(t, 20, c.Percent)
	assert.Equal(t, "kubernetes", c.Source)
	assert.Equal(t, "read 0.6; wants 60 %, held by min_change_interval until 12:00:30", c.Why)
	c, ok = st.Endpoint(app, "192.0.2.2")
	require.True(t, ok)
	assert.Equal(t, engineNone("no reading yet: the configured weight"), c)
	_, ok = st.Endpoint("other.example.test.", "192.0.2.1")
	assert.False(t, ok, "a service Decide was not given is unknown")
	_, ok = (*State)(nil).Endpoint(app, "192.0.2.1")
	assert.False(t, ok)

	st = runSteps(t, svc, Params{}, []step{
		{at: 0, read: map[int]float64{0: 0.2, 1: 1}, want: []int{20, 100}},
		{at: s(400), want: []int{100, 100}},
	})
	c, _ = st.Endpoint(app, "192.0.2.1")
	assert.Equal(t, engineNone("no good reading since 12:00:00 (last: read 0.2): the configured weight"), c)

	st = runSteps(t, svc, Params{}, []step{{at: 0, read: map[int]float64{0: 0, 1: 0}, want: []int{100, 100}}})
	c, _ = st.Endpoint(app, "192.0.2.1")
	assert.Equal(t, "read 0; every weighted endpoint of the service reads 0: the configured weights", c.Why)

	st = runSteps(t, svc, Params{}, []step{{at: 0, read: map[int]float64{0: 0.97, 1: 1}, want: []int{100, 100}}})
	c, _ = st.Endpoint(app, "192.0.2.1")
	assert.Equal(t, "read 0.97 (0.97 is within the hysteresis of 100 %)", c.Why)
}

func TestChangedSaysWhenTheEngineSeesSomethingNew(t *testing.T) {
	svc := service(50, 50)
	read := func(f float64, detail string) map[Key]Reading {
		return map[Key]Reading{{app, "192.0.2.1"}: {Fraction: f, At: t0, Detail: detail}}
	}
	first := Decide(Input{Services: []Service{svc}, Readings: read(0.2, "2 of 10"), Now: t0}, Params{})
	assert.True(t, first.Changed, "the first state is new")
	same := Decide(Input{Services: []Service{svc}, Readings: read(0.2, "2 of 10"), Prev: first, Now: t0.Add(s(1))}, Params{})
	assert.False(t, same.Changed, "nothing the engine sees changed")
	assert.Empty(t, same.Changes)
	detail := Decide(Input{Services: []Service{svc}, Readings: read(0.2, "4 of 20"), Prev: same, Now: t0.Add(s(2))}, Params{})
	assert.True(t, detail.Changed, "the reading behind the fraction changed")
	gone := Decide(Input{Readings: read(0.2, "4 of 20"), Prev: detail, Now: t0.Add(s(3))}, Params{})
	assert.True(t, gone.Changed, "a service left")
	assert.Empty(t, gone.Services)
}

func TestChangesSayWhatHappened(t *testing.T) {
	svc := service(100, 100, 100)
	r := func(fs ...float64) map[Key]Reading {
		out := map[Key]Reading{}
		for i, f := range fs {
			out[Key{app, svc.Endpoints[i].Target}] = Reading{Fraction: f, At: t0, Detail: "x"}
		}
		return out
	}
	a := Decide(Input{Services: []Service{svc}, Readings: r(0, 0, 1), Now: t0}, Params{})
	assert.Equal(t, []Change{
		{Service: app, Target: "192.0.2.1", Cluster: "c1", From: 100, To: 0, Reason: "reading", At: t0},
		{Service: app, Target: "192.0.2.2", Cluster: "c2", From: 100, To: 100, Reason: "brake", At: t0},
	}, a.Changes)
	b := Decide(Input{Services: []Service{svc}, Readings: r(0, 0, 1), Prev: a, Now: t0.Add(s(5))}, Params{})
	assert.Equal(t, []Change{{Service: app, Target: "192.0.2.2", Cluster: "c2", From: 100, To: 0, Reason: "brake", At: t0.Add(s(5))}}, b.Changes)
}

func TestDecideIsDeterministicAndLeavesItsInputAlone(t *testing.T) {
	svc := service(70, 30)
	in := Input{Services: []Service{svc, service(10)}, Readings: map[Key]Reading{{app, "192.0.2.1"}: {Fraction: 0.5, At: t0}}, Now: t0}
	a := Decide(in, Params{})
	b := Decide(in, Params{})
	assert.Equal(t, a, b)
	require.Len(t, a.Services, 1, "one state per service name")
	c := Decide(Input{Services: in.Services, Readings: in.Readings, Prev: a, Now: t0.Add(time.Hour)}, Params{})
	assert.Equal(t, 50, a.Services[0].Endpoints[0].Percent, "the previous state is not modified")
	assert.NotSame(t, &a.Services[0].Endpoints[0], &c.Services[0].Endpoints[0])
}

func TestServicesReadsTheCapacityAwareServicesOfADesired(t *testing.T) {
	h := 0.0
	d := &model.Desired{
		Zones:    []model.Zone{{Apex: "example.test", Nameservers: []model.Nameserver{{Name: "ns1.example.test", IPv4: []string{"192.0.2.53"}}}}},
		Clusters: []model.Cluster{{Name: "east", Region: "us-east"}, {Name: "west", Region: "us-west"}},
		Services: []model.Service{
			{Name: "plain.example.test", Endpoints: []model.Endpoint{{Address: "192.0.2.9", Cluster: "east"}}},
			{Name: "app.example.test", Capacity: &model.Capacity{Source: "kubernetes", Kubernetes: &model.CapacityKubernetes{Service: "shop/web"}, Hysteresis: &h, Step: 0.1},
				Endpoints: []model.Endpoint{{CNAME: "Web-1.Example.org", Cluster: "east", Weight: new(70)}, {CNAME: "Web.Example.org", Cluster: "west"}}},
		},
	}
	n, err := model.Normalize(d)
	require.NoError(t, err)
	got := Services(n)
	require.Len(t, got, 1)
	assert.Equal(t, Service{Name: app, Source: "kubernetes", Step: 0.1, Hysteresis: 0, MinChangeInterval: 30 * time.Second, StaleAfter: 5 * time.Minute,
		Endpoints: []Endpoint{{Target: "web-1.example.org.", Cluster: "east", Weight: 70}, {Target: "web.example.org.", Cluster: "west", Weight: 100}}}, got[0])
}

func engineNone(why string) any {
	c, _ := (&State{}).Endpoint("", "")
	c.Percent, c.Source, c.Why = 100, SourceNone, why
	return c
}

func TestTotalVariation(t *testing.T) {
	eps := []EndpointState{{Weight: 50}, {Weight: 50}}
	assert.InDelta(t, 1.0/3, tv(eps, []int{100, 100}, []int{20, 100}), 1e-9, "50/50 to 10/50 moves a third of the answers")
	assert.InDelta(t, 0, tv(eps, []int{100, 100}, []int{50, 50}), 1e-9, "the same drop everywhere moves nothing")
	assert.InDelta(t, 0, tv(eps, []int{0, 0}, []int{100, 0}), 1e-9, "from nothing nothing moves")
	assert.InDelta(t, 1, tv(eps, []int{100, 0}, []int{0, 0}), 1e-9, "to nothing everything moves")
	assert.False(t, math.IsNaN(tv(nil, nil, nil)))
}
