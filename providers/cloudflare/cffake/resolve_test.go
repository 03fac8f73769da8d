package cffake

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
)

// steerEnv seeds pools (one monitor for all, so health can be set) and
// load balancers straight into a fake.
type steerEnv struct {
	t       *testing.T
	srv     *Server
	zone    string
	monitor string
	ids     map[string]string // pool name → id
}

func newSteerEnv(t *testing.T) *steerEnv {
	srv := New(token)
	t.Cleanup(srv.Close)
	m, err := srv.PutMonitor(Monitor{Type: "http", Interval: 60, Timeout: 5})
	require.NoError(t, err)
	return &steerEnv{t: t, srv: srv, zone: srv.AddZone("example.com"), monitor: m.ID, ids: map[string]string{}}
}

// pool adds a monitored pool of origins named after their addresses, with
// the weights given (none: 1 each).
func (e *steerEnv) pool(name string, minimum int, addrs []string, weights ...float64) string {
	e.t.Helper()
	p := Pool{Name: name, Enabled: true, MinimumOrigins: minimum, Monitor: e.monitor}
	for i, a := range addrs {
		w := 1.0
		if i < len(weights) {
			w = weights[i]
		}
		p.Origins = append(p.Origins, Origin{Name: a, Address: a, Enabled: true, Weight: w})
	}
	out, err := e.srv.PutPool(p)
	require.NoError(e.t, err)
	e.ids[name] = out.ID
	return out.ID
}

func (e *steerEnv) lb(lb LoadBalancer) LoadBalancer {
	e.t.Helper()
	lb.Enabled = true
	out, err := e.srv.PutLoadBalancer(e.zone, lb)
	require.NoError(e.t, err)
	return out
}

func (e *steerEnv) down(pool string, addrs ...string) {
	e.t.Helper()
	for _, a := range addrs {
		require.NoError(e.t, e.srv.SetOriginHealth(pool, a, false))
	}
}

func (e *steerEnv) resolve(name string, c Client, rnd *rand.Rand) Answer {
	e.t.Helper()
	a, err := e.srv.Resolve(name, c, rnd)
	require.NoError(e.t, err)
	return a
}

func TestResolveRandomSteeringSharesFollowPoolWeights(t *testing.T) {
	e := newSteerEnv(t)
	eu := e.pool("eu", 1, []string{"192.0.2.1"})
	us := e.pool("us", 1, []string{"192.0.2.2"})
	standby := e.pool("standby", 1, []string{"192.0.2.3"})
	e.lb(LoadBalancer{Name: "app.example.com", SteeringPolicy: "random", DefaultPools: []string{eu, us, standby}, FallbackPool: standby,
		RandomSteering: &RandomSteering{DefaultWeight: 0, PoolWeights: map[string]float64{eu: 0.7, us: 0.3}}})
	rnd := rand.New(rand.NewPCG(14, 2026))
	const draws = 20000
	counts := map[string]int{}
	for range draws {
		a := e.resolve("app.example.com", Client{Country: "DE"}, rnd)
		counts[a.Pool]++
		assert.Equal(t, []string{a.Address}, a.Addresses, "a DNS-only load balancer answers one address")
	}
	share := float64(counts["eu"]) / draws * 100
	t.Logf("eu %.2f%% us %.2f%% standby %d of %d draws", share, float64(counts["us"])/draws*100, counts["standby"], draws)
	assert.InDelta(t, 70, share, 1.5, "70/30 within ±1.5 points")
	assert.Zero(t, counts["standby"], "a pool weighing 0 gets nothing while a weighted one is healthy")

	e.down("eu", "192.0.2.1")
	e.down("us", "192.0.2.2")
	a := e.resolve("app.example.com", Client{}, rnd)
	assert.Equal(t, "standby", a.Pool, "with the weighted pools down the 0-weight standby is drawn")
	assert.False(t, a.FromFallback)
}

func TestResolveOriginWeightsWithinAPool(t *testing.T) {
	e := newSteerEnv(t)
	p := e.pool("eu", 1, []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}, 0.25, 0.75, 0)
	e.lb(LoadBalancer{Name: "app.example.com", DefaultPools: []string{p}, FallbackPool: p})
	rnd := rand.New(rand.NewPCG(1, 2))
	counts := map[string]int{}
	for range 20000 {
		counts[e.resolve("app.example.com", Client{}, rnd).Address]++
	}
	assert.InDelta(t, 25, float64(counts["192.0.2.1"])/200, 1.5)
	assert.Zero(t, counts["192.0.2.3"], "an origin weighing 0 gets no traffic")
}

func TestResolveNeverAnswersAnOriginOfWeightZero(t *testing.T) {
	t.Run("a pool whose healthy origins all weigh 0 is passed over", func(t *testing.T) {
		e := newSteerEnv(t)
		zero := e.pool("zero", 1, []string{"192.0.2.1", "192.0.2.2"}, 0, 0)
		next := e.pool("next", 1, []string{"192.0.2.3"})
		e.lb(LoadBalancer{Name: "app.example.com", SteeringPolicy: "off", DefaultPools: []string{zero, next}, FallbackPool: next})
		rnd := rand.New(rand.NewPCG(9, 9))
		for range 200 {
			a := e.resolve("app.example.com", Client{}, rnd)
			assert.Equal(t, "next", a.Pool)
			assert.False(t, a.FromFallback)
		}
	})
	t.Run("a pool whose only weighted origin is down is passed over", func(t *testing.T) {
		e := newSteerEnv(t)
		mixed := e.pool("mixed", 1, []string{"192.0.2.1", "192.0.2.2"}, 1, 0)
		next := e.pool("next", 1, []string{"192.0.2.3"})
		e.lb(LoadBalancer{Name: "app.example.com", SteeringPolicy: "off", DefaultPools: []string{mixed, next}, FallbackPool: next})
		e.down("mixed", "192.0.2.1")
		assert.Equal(t, "next", e.resolve("app.example.com", Client{}, rand.New(rand.NewPCG(9, 9))).Pool,
			"the weight-0 origin left in the pool gets nothing")
	})
	t.Run("a fallback pool of weight-0 origins gives no answer", func(t *testing.T) {
		e := newSteerEnv(t)
		zero := e.pool("zero", 1, []string{"192.0.2.1"}, 0)
		e.lb(LoadBalancer{Name: "app.example.com", SteeringPolicy: "off", DefaultPools: []string{zero}, FallbackPool: zero})
		_, err := e.srv.Resolve("app.example.com", Client{}, rand.New(rand.NewPCG(9, 9)))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "weight above 0")
	})
}

func TestResolveSteering(t *testing.T) {
	tests := []struct {
		name     string
		client   Client
		lb       func(ids map[string]string) LoadBalancer
		down     map[string][]string // pool → origins down
		disabled string              // a pool to disable
		minEU    int                 // minimum_origins of pool eu (0: 1)
		pool     string
		fallback bool
	}{
		{"off answers from the first pool while it is healthy", Client{}, offLB, nil, "", 0, "eu", false},
		{"off moves to the next pool when the first one's origins are down", Client{}, offLB, map[string][]string{"eu": {"192.0.2.1", "192.0.2.2"}}, "", 0, "us", false},
		{"off keeps a pool with enough healthy origins", Client{}, offLB, map[string][]string{"eu": {"192.0.2.1"}}, "", 0, "eu", false},
		{"a pool under minimum_origins is unhealthy", Client{}, offLB, map[string][]string{"eu": {"192.0.2.1"}}, "", 2, "us", false},
		{"a disabled pool is skipped", Client{}, offLB, nil, "eu", 0, "us", false},
		{"the fallback pool answers when no pool is healthy", Client{}, offLB, map[string][]string{"eu": {"192.0.2.1", "192.0.2.2"}, "us": {"192.0.2.3"}}, "", 0, "last", true},
		{"the fallback pool answers even when it is unhealthy itself", Client{}, offLB, map[string][]string{"eu": {"192.0.2.1", "192.0.2.2"}, "us": {"192.0.2.3"}, "last": {"192.0.2.9"}}, "", 0, "last", true},
		{"a German client gets the Western Europe pool", Client{Country: "DE"}, geoLB, nil, "", 0, "eu", false},
		{"a Japanese client gets the Northeast Asia pool", Client{Country: "JP"}, geoLB, nil, "", 0, "asia", false},
		{"a Polish client is Eastern Europe and falls to the default pools", Client{Country: "PL"}, geoLB, nil, "", 0, "us", false},
		{"a Californian client gets the Western North America pool", Client{Country: "US", Subdivision: "CA"}, geoLB, nil, "", 0, "us-west", false},
		{"a US client without a state is Eastern North America", Client{Country: "US"}, geoLB, nil, "", 0, "us", false},
		{"a country pool beats the region pool", Client{Country: "FR"}, geoLB, nil, "", 0, "fr", false},
		{"a client of unknown country gets the default pools", Client{}, geoLB, nil, "", 0, "us", false},
		{"geo falls to the region pool when the country pool is down", Client{Country: "FR"}, geoLB, map[string][]string{"fr": {"192.0.2.8"}}, "", 0, "eu", false},
		{"geo falls to the default pools when the region pool is down", Client{Country: "DE"}, geoLB, map[string][]string{"eu": {"192.0.2.1", "192.0.2.2"}}, "", 0, "us", false},
		{"an empty steering policy with region pools is geo", Client{Country: "DE"}, func(ids map[string]string) LoadBalancer {
			lb := geoLB(ids)
			lb.SteeringPolicy = ""
			return lb
		}, nil, "", 0, "eu", false},
		{"an empty steering policy without them is off", Client{Country: "DE"}, func(ids map[string]string) LoadBalancer {
			lb := offLB(ids)
			lb.SteeringPolicy = ""
			return lb
		}, nil, "", 0, "eu", false},
		{"dynamic_latency is answered as off", Client{}, func(ids map[string]string) LoadBalancer {
			lb := offLB(ids)
			lb.SteeringPolicy = "dynamic_latency"
			return lb
		}, nil, "", 0, "eu", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newSteerEnv(t)
			e.pool("eu", max(1, tt.minEU), []string{"192.0.2.1", "192.0.2.2"})
			e.pool("us", 1, []string{"192.0.2.3"})
			e.pool("us-west", 1, []string{"192.0.2.4"})
			e.pool("asia", 1, []string{"192.0.2.5"})
			e.pool("fr", 1, []string{"192.0.2.8"})
			e.pool("last", 1, []string{"192.0.2.9"})
			for pool, addrs := range tt.down {
				e.down(pool, addrs...)
			}
			if tt.disabled != "" {
				p := e.srv.Pools()
				for _, x := range p {
					if x.Name == tt.disabled {
						x.Enabled = false
						e.srv.mu.Lock()
						_, err := e.srv.storePool(e.srv.acct.pools[x.ID], x)
						e.srv.mu.Unlock()
						require.Nil(t, err)
					}
				}
			}
			lb := e.lb(tt.lb(e.ids))
			rnd := rand.New(rand.NewPCG(7, 7))
			for range 50 {
				a := e.resolve("app.example.com", tt.client, rnd)
				assert.Equal(t, tt.pool, a.Pool)
				assert.Equal(t, tt.fallback, a.FromFallback)
				assert.Equal(t, lb.ID, a.LoadBalancer)
				assert.Equal(t, "LB", a.Type)
				assert.Equal(t, 30, a.TTL)
			}
		})
	}
}

func offLB(ids map[string]string) LoadBalancer {
	return LoadBalancer{Name: "app", SteeringPolicy: "off", DefaultPools: []string{ids["eu"], ids["us"]}, FallbackPool: ids["last"]}
}

func geoLB(ids map[string]string) LoadBalancer {
	return LoadBalancer{Name: "app", SteeringPolicy: "geo", DefaultPools: []string{ids["us"], ids["eu"]}, FallbackPool: ids["last"],
		RegionPools:  map[string][]string{"WEU": {ids["eu"]}, "NEAS": {ids["asia"]}, "WNAM": {ids["us-west"]}},
		CountryPools: map[string][]string{"FR": {ids["fr"]}}}
}

func TestResolvePlainRecordsAndPrecedence(t *testing.T) {
	e := newSteerEnv(t)
	p := e.pool("eu", 1, []string{"192.0.2.1"})
	for _, r := range []Record{
		{Name: "plain.example.com", Type: "A", Content: "198.51.100.1", TTL: 300},
		{Name: "plain.example.com", Type: "A", Content: "198.51.100.2", TTL: 60},
		{Name: "plain.example.com", Type: "AAAA", Content: "2001:db8::1", TTL: 300},
		{Name: "app.example.com", Type: "A", Content: "198.51.100.9", TTL: 300},
		{Name: "off.example.com", Type: "A", Content: "198.51.100.7", TTL: 300},
		{Name: "alias.example.com", Type: "CNAME", Content: "target.example.net", TTL: 300},
		{Name: "specific.example.com", Type: "A", Content: "198.51.100.8", TTL: 300},
	} {
		_, err := e.srv.Put(e.zone, r)
		require.NoError(t, err)
	}
	e.lb(LoadBalancer{Name: "app", DefaultPools: []string{p}, FallbackPool: p})
	off := e.lb(LoadBalancer{Name: "off", DefaultPools: []string{p}, FallbackPool: p})
	e.srv.mu.Lock()
	e.srv.zones[e.zone].lbs[off.ID].Enabled = false
	e.srv.mu.Unlock()
	e.lb(LoadBalancer{Name: "*.example.com", DefaultPools: []string{p}, FallbackPool: p})
	rnd := rand.New(rand.NewPCG(3, 3))

	a := e.resolve("Plain.Example.com.", Client{}, rnd)
	assert.Equal(t, []string{"198.51.100.1", "198.51.100.2", "2001:db8::1"}, a.Addresses, "plain records answer every value")
	assert.Contains(t, a.Addresses, a.Address)
	assert.Equal(t, "A+AAAA", a.Type)
	assert.Equal(t, 60, a.TTL)
	assert.Empty(t, a.Pool)
	seen := map[string]bool{}
	for range 300 {
		seen[e.resolve("plain.example.com", Client{}, rnd).Address] = true
	}
	assert.Len(t, seen, 3, "clients use every value (resolvers rotate)")

	assert.Equal(t, "eu", e.resolve("app.example.com", Client{}, rnd).Pool, "a load balancer takes precedence over a record of its name")
	assert.Equal(t, []string{"198.51.100.7"}, e.resolve("off.example.com", Client{}, rnd).Addresses, "a disabled load balancer leaves the name to its records")
	assert.Equal(t, []string{"198.51.100.8"}, e.resolve("specific.example.com", Client{}, rnd).Addresses, "a specific record beats a wildcard load balancer")
	assert.Equal(t, "eu", e.resolve("other.example.com", Client{}, rnd).Pool, "the wildcard load balancer answers other names")
	alias := e.resolve("alias.example.com", Client{}, rnd)
	assert.Equal(t, "CNAME", alias.Type)
	assert.Equal(t, "target.example.net", alias.Address)

	_, err := e.srv.Resolve("www.example.org", Client{}, rnd)
	assert.True(t, errors.Is(err, ErrNXDomain), "%v", err)
	e.srv.mu.Lock()
	for id, lb := range e.srv.zones[e.zone].lbs {
		if lb.Name == "*.example.com" {
			delete(e.srv.zones[e.zone].lbs, id)
		}
	}
	e.srv.mu.Unlock()
	_, err = e.srv.Resolve("nothing.example.com", Client{}, rnd)
	assert.True(t, errors.Is(err, ErrNXDomain), "%v", err)
}

func TestRegionTable(t *testing.T) {
	for c, want := range map[string]string{"DE": "WEU", "FR": "WEU", "GB": "WEU", "NL": "WEU", "PL": "EEU", "US": "ENAM", "CA": "ENAM",
		"BR": "SSAM", "JP": "NEAS", "SG": "SEAS", "AU": "OC", "IN": "SAS", "ZA": "SAF", "EG": "NAF", "AE": "ME", "MX": "WNAM", "CO": "NSAM"} {
		assert.Equal(t, want, RegionOf(Client{Country: c}), c)
	}
	assert.Equal(t, "WNAM", RegionOf(Client{Country: "US", Subdivision: "wa"}))
	assert.Equal(t, "WNAM", RegionOf(Client{Country: "CA", Subdivision: "BC"}))
	assert.Equal(t, "ENAM", RegionOf(Client{Country: "CA", Subdivision: "QC"}))
	assert.Equal(t, "SAS", RegionOf(Client{Country: "DE", Region: "sas"}), "Region overrides the table")
	assert.Empty(t, RegionOf(Client{Country: "ZZ"}))
	for _, c := range model.Countries() {
		assert.NotEmpty(t, countryRegion[c], "every ISO country has a region: %s", c)
	}
}
