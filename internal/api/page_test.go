package api

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
)

const overviewFixture = `
zones:
  - apex: example.test
    nameservers: [{name: ns1.example.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west, heartbeat: {url: "http://192.0.2.99/readyz"}}
  - {name: eu, region: eu-west, drain: %[1]s}
services:
  - name: w.example.test
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 600}
      - {address: 192.0.2.2, cluster: west, weight: 400}
      - {address: 192.0.2.3, cluster: eu, weight: 0}
      - {address: "2001:db8::1", cluster: east}
  - name: rr.example.test
    strategy: roundrobin
    endpoints:
      - {address: 192.0.2.11, cluster: east, weight: 500}
      - {address: 192.0.2.12, cluster: west, weight: 100}
      - {address: 192.0.2.13, cluster: eu, weight: 100}
  - name: fo.example.test
    strategy: failover
    failover: {order: [west, east]}
    endpoints:
      - {address: 192.0.2.21, cluster: east}
      - {address: 192.0.2.22, cluster: west, weight: 300}
      - {address: 192.0.2.23, cluster: west, weight: 100}
  - name: prio.example.test
    strategy: failover
    endpoints:
      - {address: 192.0.2.31, cluster: east, priority: 2}
      - {address: 192.0.2.32, cluster: west, priority: 1}
      - {address: 192.0.2.33, cluster: eu, priority: 1}
  - name: geo.example.test
    strategy: geo
    geo: {default: [east]}
    endpoints:
      - {address: 192.0.2.41, cluster: east}
      - {address: 192.0.2.42, cluster: west}
  - name: nd.example.test
    when_all_down: nodata
    endpoints:
      - {address: 192.0.2.51, cluster: east}
      - {address: 192.0.2.52, cluster: west}
`

type testHealth struct {
	endpoints map[string]engine.State // "service target"
	clusters  map[string]engine.State
}

func (h testHealth) Endpoint(svc, target string) engine.State { return h.endpoints[svc+" "+target] }
func (h testHealth) Cluster(name string) engine.State         { return h.clusters[name] }

func overviewSnap(t testing.TB, euDrained bool, down []string, notes map[string]string) *engine.Snapshot {
	t.Helper()
	drain := "false"
	if euDrained {
		drain = "true"
	}
	f, err := config.Parse("fixture.yaml", []byte(strings.ReplaceAll(overviewFixture, "%[1]s", drain)))
	require.NoError(t, err)
	h := testHealth{endpoints: map[string]engine.State{}, clusters: map[string]engine.State{}}
	for _, d := range down {
		if name, ok := strings.CutPrefix(d, "cluster "); ok {
			h.clusters[name] = engine.Down
		} else {
			h.endpoints[d] = engine.Down
		}
	}
	s, err := engine.Compile(&f.Desired, engine.Options{Health: h, Notes: notes, Generation: 7})
	require.NoError(t, err)
	return s
}

func shares(o Overview, service string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range o.Services {
		if s.Name == service {
			for _, e := range s.Endpoints {
				out[e.Target] = e.Share
			}
		}
	}
	return out
}

func service(o Overview, name string) ServiceOverview {
	for _, s := range o.Services {
		if s.Name == name {
			return s
		}
	}
	return ServiceOverview{}
}

func TestBuildOverviewShares(t *testing.T) {
	const w, rr, fo, prio, geo, nd = "w.example.test.", "rr.example.test.", "fo.example.test.", "prio.example.test.", "geo.example.test.", "nd.example.test."
	tests := []struct {
		name      string
		euDrained bool
		down      []string
		service   string
		want      map[string]float64
		mode      string
		failOpen  bool
		noData    bool
	}{
		{name: "weighted: by weight; weight 0 waits; the v6 endpoint is its own family", service: w, mode: ShareWeighted,
			want: map[string]float64{"192.0.2.1": 60, "192.0.2.2": 40, "192.0.2.3": 0, "2001:db8::1": 100}},
		{name: "weighted: a down endpoint gets nothing", service: w, down: []string{w + " 192.0.2.1"}, mode: ShareWeighted,
			want: map[string]float64{"192.0.2.1": 0, "192.0.2.2": 100, "192.0.2.3": 0, "2001:db8::1": 100}},
		{name: "weighted: the weight-0 endpoint takes over when every weighted one is down", service: w, mode: ShareWeighted,
			down: []string{w + " 192.0.2.1", w + " 192.0.2.2"},
			want: map[string]float64{"192.0.2.1": 0, "192.0.2.2": 0, "192.0.2.3": 100, "2001:db8::1": 100}},
		{name: "weighted: all down fails open by weight", service: w, mode: ShareWeighted, failOpen: true,
			down: []string{w + " 192.0.2.1", w + " 192.0.2.2", w + " 192.0.2.3", w + " 2001:db8::1"},
			want: map[string]float64{"192.0.2.1": 60, "192.0.2.2": 40, "192.0.2.3": 0, "2001:db8::1": 100}},
		{name: "weighted: a down cluster takes its endpoints down", service: w, down: []string{"cluster east"}, mode: ShareWeighted,
			want: map[string]float64{"192.0.2.1": 0, "192.0.2.2": 100, "192.0.2.3": 0, "2001:db8::1": 100}, failOpen: true},
		{name: "weighted: fail-open skips drained endpoints", service: w, euDrained: true, mode: ShareWeighted, failOpen: true,
			down: []string{w + " 192.0.2.1", w + " 192.0.2.2", w + " 2001:db8::1"},
			want: map[string]float64{"192.0.2.1": 60, "192.0.2.2": 40, "192.0.2.3": 0, "2001:db8::1": 100}},
		{name: "roundrobin: equal whatever the weights", service: rr, mode: ShareEqual,
			want: map[string]float64{"192.0.2.11": 33.3, "192.0.2.12": 33.3, "192.0.2.13": 33.3}},
		{name: "roundrobin: a drained endpoint is out", service: rr, euDrained: true, mode: ShareEqual,
			want: map[string]float64{"192.0.2.11": 50, "192.0.2.12": 50, "192.0.2.13": 0}},
		{name: "failover: the first cluster of the order, split by weight", service: fo, mode: ShareFailover,
			want: map[string]float64{"192.0.2.21": 0, "192.0.2.22": 75, "192.0.2.23": 25}},
		{name: "failover: one endpoint of the primary down, the other takes all", service: fo, mode: ShareFailover,
			down: []string{fo + " 192.0.2.22"}, want: map[string]float64{"192.0.2.21": 0, "192.0.2.22": 0, "192.0.2.23": 100}},
		{name: "failover: the primary cluster down, the next one takes all", service: fo, mode: ShareFailover,
			down: []string{"cluster west"}, want: map[string]float64{"192.0.2.21": 100, "192.0.2.22": 0, "192.0.2.23": 0}},
		{name: "failover by priority: lowest priority first", service: prio, mode: ShareFailover,
			want: map[string]float64{"192.0.2.31": 0, "192.0.2.32": 50, "192.0.2.33": 50}},
		{name: "failover by priority: the next level when the first is down", service: prio, mode: ShareFailover,
			down: []string{prio + " 192.0.2.32", "cluster eu"}, want: map[string]float64{"192.0.2.31": 100, "192.0.2.32": 0, "192.0.2.33": 0}},
		{name: "geo: an endpoint's share is the share among the clients we cannot locate (the default cluster)", service: geo, mode: ShareByLocation,
			want: map[string]float64{"192.0.2.41": 100, "192.0.2.42": 0}},
		{name: "geo: a down endpoint is out", service: geo, mode: ShareByLocation, down: []string{geo + " 192.0.2.41"},
			want: map[string]float64{"192.0.2.41": 0, "192.0.2.42": 100}},
		{name: "nodata: all down answers nothing", service: nd, mode: ShareWeighted, noData: true,
			down: []string{nd + " 192.0.2.51", nd + " 192.0.2.52"}, want: map[string]float64{"192.0.2.51": 0, "192.0.2.52": 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := BuildOverview(overviewSnap(t, tc.euDrained, tc.down, nil), HealthReport{})
			s := service(o, tc.service)
			assert.Equal(t, tc.want, shares(o, tc.service))
			assert.Equal(t, tc.mode, s.ShareMode)
			assert.Equal(t, tc.failOpen, s.FailOpen, "fail open")
			assert.Equal(t, tc.noData, s.NoData, "nodata")
		})
	}
}

// The computed shares match what the engine answers (weighted and failover
// services, sampled).
func TestBuildOverviewSharesMatchTheEngine(t *testing.T) {
	for _, down := range [][]string{nil, {"w.example.test. 192.0.2.1"}, {"cluster west"}} {
		snap := overviewSnap(t, false, down, nil)
		o := BuildOverview(snap, HealthReport{})
		for _, name := range []string{"w.example.test.", "fo.example.test.", "prio.example.test."} {
			const n = 20000
			count := map[string]int{}
			var r engine.Result
			for range n {
				r.Reset()
				snap.Lookup(name, dns.TypeA, engine.Client{}, &r)
				require.NotEmpty(t, r.Answer)
				count[r.Answer[0].(*dns.A).A.String()]++
			}
			for target, share := range shares(o, name) {
				if strings.Contains(target, ":") {
					continue
				}
				got := 100 * float64(count[target]) / n
				assert.InDelta(t, share, got, 2, "%s %s with %v down", name, target, down)
			}
		}
	}
}

func TestBuildOverviewMergesHealthAndNotes(t *testing.T) {
	since := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	age := 1.5
	snap := overviewSnap(t, true, []string{"w.example.test. 192.0.2.1"}, map[string]string{
		engine.NoteKey("w.example.test.", "192.0.2.2"): "weight 400 by alice: canary (until 13:00)",
		engine.NoteKey("", "eu"):                       "drained by bob: maintenance",
	})
	rep := HealthReport{
		Node: "p1", Region: "r1", Probing: true,
		Endpoints: []EndpointHealth{{Service: "w.example.test.", Target: "192.0.2.1", Cluster: "east", State: "down", Since: since, Reason: "confirmation", Voters: []string{"p1", "p2"}}},
		Clusters: []ClusterHealth{{Name: "west", State: "unreachable", Monitored: true, Since: since, Reason: "unconfirmed",
			Votes: []VoteInfo{{Prober: "p1", AgeSeconds: 3}, {Prober: "p2", AgeSeconds: 0.5}}}},
		Probers: []ProberHealth{{Name: "p1", Region: "r1", Role: "prober", LastVoteAgeSecond: &age}, {Name: "p2", Region: "r2"}},
		Changes: []ChangeEvent{
			{At: since.Add(time.Minute), Subject: "cluster west", From: "ready", To: "unreachable", Reason: "unconfirmed"},
			{At: since, Subject: "w.example.test. 192.0.2.1", From: "up", To: "down", Reason: "confirmation", Voters: []string{"p1", "p2"}},
		},
	}
	o := BuildOverview(snap, rep)
	assert.Equal(t, uint64(7), o.Generation)
	assert.Equal(t, "p1", o.Node)
	assert.True(t, o.Probing)

	w := service(o, "w.example.test.")
	require.Len(t, w.Endpoints, 4)
	e1, e2, e3 := w.Endpoints[0], w.Endpoints[1], w.Endpoints[2]
	assert.Equal(t, "down", e1.State)
	assert.False(t, e1.Available)
	assert.Equal(t, "confirmation", e1.Reason)
	assert.Equal(t, []string{"p1", "p2"}, e1.Voters)
	require.NotNil(t, e1.Since)
	assert.Equal(t, since, *e1.Since)
	assert.Equal(t, "weight 400 by alice: canary (until 13:00)", e2.Note)
	assert.Equal(t, 100.0, e2.Share)
	assert.True(t, e3.Drained, "eu is drained")

	require.Len(t, o.Clusters, 3)
	east, west, eu := o.Clusters[0], o.Clusters[1], o.Clusters[2]
	assert.Equal(t, ClusterOverview{Name: "east", Region: "us-east", State: "ready"}, east)
	assert.Equal(t, "unreachable", west.State)
	assert.True(t, west.Heartbeat)
	assert.True(t, west.Monitored)
	require.NotNil(t, west.LastBeat)
	assert.Equal(t, 0.5, *west.LastBeat, "the youngest heartbeat vote")
	assert.True(t, eu.Drained)
	assert.Equal(t, "drained by bob: maintenance", eu.Note)

	require.Len(t, o.Probers, 2)
	assert.True(t, o.Probers[0].Self)
	assert.Equal(t, &age, o.Probers[0].LastVoteAt)
	assert.Nil(t, o.Probers[1].LastVoteAt)

	require.Len(t, o.Changes, 2)
	assert.Equal(t, ChangeOverview{At: since.Add(time.Minute), Kind: "cluster", Target: "west", From: "ready", To: "unreachable", Reason: "unconfirmed"}, o.Changes[0])
	assert.Equal(t, ChangeOverview{At: since, Kind: "endpoint", Service: "w.example.test.", Target: "192.0.2.1", From: "up", To: "down",
		Reason: "confirmation", Voters: []string{"p1", "p2"}}, o.Changes[1])
}

func TestBuildOverviewWithoutSnapshot(t *testing.T) {
	o := BuildOverview(nil, HealthReport{})
	b, err := json.Marshal(o)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"services":[]`, "empty lists, not null, for the page")
	assert.Contains(t, string(b), `"changes":[]`)
}

func TestFingerprintIgnoresAgeing(t *testing.T) {
	now := time.Now()
	a, b := 2.0, 2.5
	o1 := Overview{Now: now, Probers: []ProberOverview{{Name: "p1", LastVoteAt: &a}}}
	o2 := Overview{Now: now.Add(500 * time.Millisecond), Probers: []ProberOverview{{Name: "p1", LastVoteAt: &b}}}
	o1.Now = o1.Now.Truncate(time.Second).Add(100 * time.Millisecond) // keep both inside one second
	o2.Now = o1.Now.Add(500 * time.Millisecond)
	assert.Equal(t, string(o1.fingerprint()), string(o2.fingerprint()), "the same vote, only older")
	assert.Equal(t, 2.0, *o1.Probers[0].LastVoteAt, "fingerprint leaves the overview alone")
	c := 0.1
	o3 := Overview{Now: o2.Now, Probers: []ProberOverview{{Name: "p1", LastVoteAt: &c}}}
	assert.NotEqual(t, string(o1.fingerprint()), string(o3.fingerprint()), "a new vote")
}

func TestPageRoutes(t *testing.T) {
	snap := overviewSnap(t, false, nil, nil)
	st := &engine.Store{}
	h := Handler(st, prometheus.NewRegistry(), func() error { return nil }, func() Status { return Status{ConfigPath: "x.yaml", LastReloadErr: "bad"} },
		slog.New(slog.DiscardHandler), Options{Overview: func() Overview { return BuildOverview(snap, HealthReport{}) }})

	code, body := get(t, h, "/")
	assert.Equal(t, 200, code)
	assert.Contains(t, body, `<script src="/assets/page.js"`)
	assert.NotContains(t, body, "http-equiv=\"refresh\"", "no reload: the page updates itself")

	for _, p := range []string{"/assets/page.js", "/assets/page.css"} {
		code, body = get(t, h, p)
		assert.Equal(t, 200, code, p)
		assert.NotEmpty(t, body, p)
	}
	code, body = get(t, h, "/assets/page.js")
	require.Equal(t, 200, code)
	assert.Contains(t, body, `"share-bar"`)
	assert.Contains(t, body, `"timeline-row"`)
	assert.Contains(t, body, `new EventSource("/v1/events")`)
	assert.False(t, strings.Contains(strings.ReplaceAll(body, `"http://www.w3.org/2000/svg"`, ""), "http"), "no external address in the script")
	for _, p := range []string{"/", "/assets/page.css"} {
		_, body := get(t, h, p)
		assert.False(t, strings.Contains(body, "http:") || strings.Contains(body, "https:"), "no external assets in %s", p)
	}

	code, body = get(t, h, "/v1/overview")
	assert.Equal(t, 200, code)
	var o Overview
	require.NoError(t, json.Unmarshal([]byte(body), &o))
	assert.Equal(t, uint64(7), o.Generation)
	assert.Equal(t, "x.yaml", o.ConfigPath)
	assert.Equal(t, "bad", o.LastReloadErr)
	assert.Equal(t, 60.0, shares(o, "w.example.test.")["192.0.2.1"])
}

// readEvent reads one SSE message: its event name and data (comments skipped).
func readEvent(t *testing.T, r *bufio.Reader) (string, string) {
	t.Helper()
	var event, data string
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && (event != "" || data != ""):
			return event, data
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data += strings.TrimPrefix(line, "data: ")
		case strings.HasPrefix(line, ":"):
			return "comment", line
		}
	}
}

// Server shutdown ends open streams, so that Shutdown does not wait for them.
func TestEventsEndOnShutdown(t *testing.T) {
	h := Handler(&engine.Store{}, prometheus.NewRegistry(), func() error { return nil }, nil, slog.New(slog.DiscardHandler),
		Options{Overview: func() Overview { return Overview{} }})
	srv := httptest.NewUnstartedServer(h)
	srv.Config.Handler = h
	srv.Start()
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/v1/events")
	require.NoError(t, err)
	defer resp.Body.Close()
	ev, _ := readEvent(t, bufio.NewReader(resp.Body))
	assert.Equal(t, "overview", ev)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, srv.Config.Shutdown(ctx))
	assert.Less(t, time.Since(start), 2*time.Second)
}

// capacityOf is an engine.Capacity with fixed percents by target.
type capacityOf map[string]int

func (c capacityOf) Endpoint(_, target string) (engine.CapacityState, bool) {
	p, ok := c[target]
	return engine.CapacityState{Percent: p, Source: "kubernetes", Why: "2 of 10 endpoints ready"}, ok
}

func TestBuildOverviewSharesFollowTheEffectiveWeights(t *testing.T) {
	f, err := config.Parse("fixture.yaml", []byte(`
zones:
  - apex: example.test
    nameservers: [{name: ns1.example.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
services:
  - name: cap.example.test
    capacity: {source: kubernetes, kubernetes: {service: shop/web}}
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 50}
      - {address: 192.0.2.2, cluster: west, weight: 50}
`))
	require.NoError(t, err)
	snap, err := engine.Compile(&f.Desired, engine.Options{Capacity: capacityOf{"192.0.2.1": 20}})
	require.NoError(t, err)
	o := BuildOverview(snap, HealthReport{})
	assert.Equal(t, map[string]float64{"192.0.2.1": 16.7, "192.0.2.2": 83.3}, shares(o, "cap.example.test."))
	east := service(o, "cap.example.test.").Endpoints[0]
	assert.Equal(t, 50, east.Weight, "the configured weight")
	require.NotNil(t, east.EffectiveWeight)
	assert.InDelta(t, 10, *east.EffectiveWeight, 1e-9)
	assert.Equal(t, &engine.CapacityState{Percent: 20, Source: "kubernetes", Why: "2 of 10 endpoints ready"}, east.Capacity)
	west := service(o, "cap.example.test.").Endpoints[1]
	assert.Equal(t, "none", west.Capacity.Source, "no reading: the configured weight")
}

func TestBuildOverviewListsWhatEachGroupOfClientsOfAGeoServiceGets(t *testing.T) {
	o := BuildOverview(overviewSnap(t, false, nil, nil), HealthReport{})
	geo := service(o, "geo.example.test.")
	require.Len(t, geo.Clients, 2, "the default bucket (with us-east's clients) and us-west's: %+v", geo.Clients)
	assert.Equal(t, ClientSharesOverview{Clients: "clients we cannot locate (and any location without a rule); clients in region us-east", Unlocated: true,
		Shares: map[string]float64{"192.0.2.41": 100}}, geo.Clients[0])
	assert.Equal(t, ClientSharesOverview{Clients: "clients in region us-west", Shares: map[string]float64{"192.0.2.42": 100}}, geo.Clients[1])
	assert.Empty(t, service(o, "w.example.test.").Clients, "a service that does not answer by location has no client groups")
}

func TestBuildOverviewNamesEachEndpointsFamily(t *testing.T) {
	o := BuildOverview(overviewSnap(t, false, nil, nil), HealthReport{})
	fam := map[string]string{}
	for _, e := range service(o, "w.example.test.").Endpoints {
		fam[e.Target] = e.Family
	}
	assert.Equal(t, map[string]string{"192.0.2.1": "A", "192.0.2.2": "A", "192.0.2.3": "A", "2001:db8::1": "AAAA"}, fam)
}

func TestBuildOverviewSaysWhichEndpointsAreProbed(t *testing.T) {
	f, err := config.Parse("fixture.yaml", []byte(`
zones: [{apex: example.test, nameservers: [{name: ns1.example.test, ipv4: [192.0.2.53]}]}]
clusters: [{name: east, region: r1}]
services:
  - name: checked.example.test
    health_check: {kind: tcp, port: 80}
    endpoints: [{address: 192.0.2.1, cluster: east}]
  - name: plain.example.test
    endpoints: [{address: 192.0.2.2, cluster: east}]
`))
	require.NoError(t, err)
	snap, err := engine.Compile(&f.Desired, engine.Options{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		probing bool
		service string
		want    bool
	}{
		{"a service with a health check is probed when the ring probes", true, "checked.example.test.", true},
		{"a service without a health check is not probed", true, "plain.example.test.", false},
		{"nothing is probed when probing is off", false, "checked.example.test.", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := BuildOverview(snap, HealthReport{Probing: tc.probing})
			s := service(o, tc.service)
			require.Len(t, s.Endpoints, 1)
			assert.Equal(t, tc.want, s.Endpoints[0].Probed)
		})
	}
}

func TestBuildOverviewSaysWhatADecisionThatKeptTheStateDid(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rep := HealthReport{Changes: []ChangeEvent{
		{At: at, Subject: "w.example.test. 192.0.2.1", From: "up", To: "up", Reason: "brake"},
		{At: at, Subject: "w.example.test. 192.0.2.1", From: "down", To: "down", Reason: "hold-down"},
		{At: at, Subject: "cluster west", From: "failed-over", To: "failed-over", Reason: "heartbeat-lost"},
		{At: at, Subject: "w.example.test. 192.0.2.1", From: "up", To: "down", Reason: "threshold"},
	}}
	o := BuildOverview(nil, rep)
	require.Len(t, o.Changes, 4)
	assert.Contains(t, o.Changes[0].Held, "held by the brake: still answered")
	assert.Contains(t, o.Changes[1].Held, "recovery held down")
	assert.Contains(t, o.Changes[2].Held, "the hold-down starts over")
	assert.Empty(t, o.Changes[3].Held, "a change of state is not a hold")
}

func TestBuildOverviewNamesTheFamiliesThatFailOpen(t *testing.T) {
	const w = "w.example.test."
	o := BuildOverview(overviewSnap(t, false, []string{w + " 192.0.2.1", w + " 192.0.2.2", w + " 192.0.2.3"}, nil), HealthReport{})
	s := service(o, w)
	assert.Equal(t, []string{"A"}, s.FailOpenFamilies, "every A endpoint is down; the AAAA one is not")
	assert.True(t, s.FailOpen)
	assert.Empty(t, s.NoDataFamilies)
	o = BuildOverview(overviewSnap(t, false, []string{"nd.example.test. 192.0.2.51", "nd.example.test. 192.0.2.52"}, nil), HealthReport{})
	assert.Equal(t, []string{"A"}, service(o, "nd.example.test.").NoDataFamilies)
}
