package cloudflare

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
)

// lbView is what a test reads from one LBSpec: pool names shortened to
// their cluster key.
type lbView struct {
	steering string
	defaults []string
	fallback string
	weights  map[string]float64
	country  map[string][]string
	region   map[string][]string
	ttl      int
	pools    map[string]poolView
}

type poolView struct {
	enabled bool
	origins []string // "address weight" with " off" when disabled
}

func viewOf(t *testing.T, sp LBSpec) lbView {
	t.Helper()
	short := map[string]string{}
	v := lbView{steering: sp.LoadBalancer.SteeringPolicy, ttl: sp.LoadBalancer.TTL, pools: map[string]poolView{}}
	for _, p := range sp.Pools {
		key := mark(p.Description)["cluster"]
		short[p.Name] = key
		pv := poolView{enabled: p.Enabled}
		for _, o := range p.Origins {
			s := o.Address + " " + strconv.FormatFloat(o.Weight, 'f', -1, 64)
			if !o.Enabled {
				s += " off"
			}
			pv.origins = append(pv.origins, s)
		}
		v.pools[key] = pv
	}
	names := func(ns []string) []string {
		out := make([]string, len(ns))
		for i, n := range ns {
			require.Contains(t, short, n, "a pool the load balancer names is one of the service's pools")
			out[i] = short[n]
		}
		return out
	}
	v.defaults = names(sp.LoadBalancer.DefaultPools)
	v.fallback = short[sp.LoadBalancer.FallbackPool]
	if sp.LoadBalancer.PoolWeights != nil {
		v.weights = map[string]float64{}
		for n, w := range sp.LoadBalancer.PoolWeights {
			v.weights[short[n]] = w
		}
	}
	if len(sp.LoadBalancer.CountryPools) > 0 {
		v.country = map[string][]string{}
		for k, ns := range sp.LoadBalancer.CountryPools {
			v.country[k] = names(ns)
		}
	}
	if len(sp.LoadBalancer.RegionPools) > 0 {
		v.region = map[string][]string{}
		for k, ns := range sp.LoadBalancer.RegionPools {
			v.region[k] = names(ns)
		}
	}
	return v
}

func TestTranslateLB(t *testing.T) {
	down := func(e providers.EndpointView) providers.EndpointView { e.Available, e.Effective = false, 0; return e }
	standby := func(e providers.EndpointView) providers.EndpointView { e.Weight, e.Effective = 0, 0; return e }
	promoted := func(e providers.EndpointView) providers.EndpointView { e.Weight, e.Effective = 0, 1; return e }
	tagged := func(e providers.EndpointView, country, continent string) providers.EndpointView {
		e.Country, e.Continent = country, continent
		return e
	}
	tests := []struct {
		name string
		view providers.ServiceView
		opts LBOptions
		want lbView
	}{
		{
			name: "a weighted service draws its pools at random with the clusters' shares",
			view: weighted("app.example.com.", up("10.0.0.1", "eu", 70), up("10.0.0.2", "eu", 35), up("10.0.1.1", "us", 45)),
			want: lbView{steering: "random", defaults: []string{"eu", "us"}, fallback: "us", ttl: 60,
				weights: map[string]float64{"eu": 0.70, "us": 0.30},
				pools: map[string]poolView{
					"eu": {true, []string{"10.0.0.1 1", "10.0.0.2 0.5"}},
					"us": {true, []string{"10.0.1.1 1"}},
				}},
		},
		{
			name: "a small share is rounded to the hundredth but never to zero",
			view: weighted("app.example.com.", up("10.0.0.1", "eu", 1000), up("10.0.1.1", "us", 1)),
			want: lbView{steering: "random", defaults: []string{"eu", "us"}, fallback: "us", ttl: 60,
				weights: map[string]float64{"eu": 1, "us": 0.01},
				pools: map[string]poolView{
					"eu": {true, []string{"10.0.0.1 1"}},
					"us": {true, []string{"10.0.1.1 1"}},
				}},
		},
		{
			name: "a standby cluster is the last pool and the fallback, drawn only when the others are out",
			view: weighted("app.example.com.", standby(up("10.0.9.1", "dr", 0)), up("10.0.0.1", "eu", 50), up("10.0.1.1", "us", 50)),
			want: lbView{steering: "random", defaults: []string{"eu", "us", "dr"}, fallback: "dr", ttl: 60,
				weights: map[string]float64{"eu": 0.5, "us": 0.5, "dr": 0},
				pools: map[string]poolView{
					"dr": {true, []string{"10.0.9.1 1"}},
					"eu": {true, []string{"10.0.0.1 1"}},
					"us": {true, []string{"10.0.1.1 1"}},
				}},
		},
		{
			name: "an endpoint Meridian decided down is a disabled origin and a cluster with none up is a disabled pool",
			view: weighted("app.example.com.", up("10.0.0.1", "eu", 70), down(up("10.0.0.2", "eu", 70)), down(up("10.0.1.1", "us", 30))),
			want: lbView{steering: "random", defaults: []string{"eu", "us"}, fallback: "us", ttl: 60,
				weights: map[string]float64{"eu": 1, "us": 0},
				pools: map[string]poolView{
					"eu": {true, []string{"10.0.0.1 1", "10.0.0.2 0 off"}},
					"us": {false, []string{"10.0.1.1 0 off"}},
				}},
		},
		{
			name: "a standby promoted because every weighted endpoint is down carries its pool's traffic",
			view: weighted("app.example.com.", down(up("10.0.0.1", "a", 70)), promoted(up("10.0.0.2", "a", 0)), down(up("10.0.1.1", "b", 30))),
			want: lbView{steering: "random", defaults: []string{"a", "b"}, fallback: "b", ttl: 60,
				weights: map[string]float64{"a": 1, "b": 0},
				pools: map[string]poolView{
					"a": {true, []string{"10.0.0.1 0 off", "10.0.0.2 1"}},
					"b": {false, []string{"10.0.1.1 0 off"}},
				}},
		},
		{
			name: "a standby beside a weighted endpoint that is up weighs 0 until it is promoted",
			view: weighted("app.example.com.", up("10.0.0.1", "a", 70), standby(up("10.0.0.2", "a", 0)), up("10.0.1.1", "b", 30)),
			want: lbView{steering: "random", defaults: []string{"a", "b"}, fallback: "b", ttl: 60,
				weights: map[string]float64{"a": 0.7, "b": 0.3},
				pools: map[string]poolView{
					"a": {true, []string{"10.0.0.1 1", "10.0.0.2 0"}},
					"b": {true, []string{"10.0.1.1 1"}},
				}},
		},
		{
			name: "origin weights follow the effective weights of the enabled origins, not the configured ones",
			view: weighted("app.example.com.", down(up("10.0.0.1", "eu", 100)), up("10.0.0.2", "eu", 50), up("10.0.0.3", "eu", 25)),
			want: lbView{steering: "random", defaults: []string{"eu"}, fallback: "eu", ttl: 60,
				weights: map[string]float64{"eu": 1},
				pools: map[string]poolView{
					"eu": {true, []string{"10.0.0.1 0 off", "10.0.0.2 1", "10.0.0.3 0.5"}},
				}},
		},
		{
			name: "fail-open enables every endpoint that is not drained",
			view: func() providers.ServiceView {
				v := weighted("app.example.com.", up("10.0.0.1", "eu", 70), up("10.0.1.1", "us", 30), up("10.0.1.2", "us", 30))
				v.FailOpen = true
				for i := range v.Endpoints {
					v.Endpoints[i].Available = false
				}
				v.Endpoints[2].Effective = 0 // drained
				return v
			}(),
			want: lbView{steering: "random", defaults: []string{"eu", "us"}, fallback: "us", ttl: 60,
				weights: map[string]float64{"eu": 0.7, "us": 0.3},
				pools: map[string]poolView{
					"eu": {true, []string{"10.0.0.1 1"}},
					"us": {true, []string{"10.0.1.1 1", "10.0.1.2 0 off"}},
				}},
		},
		{
			name: "a failover service takes the first healthy pool in failover order",
			view: providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyFailover, TTL: 30,
				Endpoints: []providers.EndpointView{up("10.0.1.1", "us", 100), up("10.0.0.1", "eu", 100)},
				Failover:  [][]int{{1}, {0}}},
			want: lbView{steering: "off", defaults: []string{"eu", "us"}, fallback: "us", ttl: 30,
				pools: map[string]poolView{
					"eu": {true, []string{"10.0.0.1 1"}},
					"us": {true, []string{"10.0.1.1 1"}},
				}},
		},
		{
			name: "a cluster in two failover groups gets a pool per group",
			view: providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyFailover, TTL: 30,
				Endpoints: []providers.EndpointView{up("10.0.0.1", "eu", 100), up("10.0.1.1", "us", 100), up("10.0.0.2", "eu", 100)},
				Failover:  [][]int{{0}, {1, 2}}},
			want: lbView{steering: "off", defaults: []string{"eu-1", "us", "eu-2"}, fallback: "eu-2", ttl: 30,
				pools: map[string]poolView{
					"eu-1": {true, []string{"10.0.0.1 1"}},
					"eu-2": {true, []string{"10.0.0.2 1"}},
					"us":   {true, []string{"10.0.1.1 1"}},
				}},
		},
		{
			name: "geo rules become country and region pools, each falling back to the default clusters and then the rest",
			view: providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyGeo, TTL: 30,
				Endpoints: []providers.EndpointView{up("10.0.0.1", "eu", 100), up("10.0.1.1", "us", 100), up("10.0.2.1", "ap", 100)},
				Geo: &model.GeoPolicy{Default: []string{"us"}, Rules: []model.GeoRule{
					{Countries: []string{"CH"}, Clusters: []string{"ap"}},
					{Continents: []string{"EU", "AN"}, Clusters: []string{"eu"}},
				}}},
			want: lbView{steering: "geo", defaults: []string{"us", "eu", "ap"}, fallback: "ap", ttl: 30,
				country: map[string][]string{"CH": {"ap", "us", "eu"}},
				region:  map[string][]string{"WEU": {"eu", "us", "ap"}, "EEU": {"eu", "us", "ap"}},
				pools: map[string]poolView{
					"eu": {true, []string{"10.0.0.1 1"}},
					"us": {true, []string{"10.0.1.1 1"}},
					"ap": {true, []string{"10.0.2.1 1"}},
				}},
		},
		{
			name: "clusters' country and continent tags steer clients no rule names",
			view: providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyGeo, TTL: 30,
				Endpoints: []providers.EndpointView{tagged(up("10.0.0.1", "fra", 100), "DE", "EU"), tagged(up("10.0.1.1", "nyc", 100), "US", "NA")}},
			want: lbView{steering: "geo", defaults: []string{"fra", "nyc"}, fallback: "nyc", ttl: 30,
				country: map[string][]string{"DE": {"fra", "nyc"}, "US": {"nyc", "fra"}},
				region: map[string][]string{"WEU": {"fra", "nyc"}, "EEU": {"fra", "nyc"},
					"WNAM": {"nyc", "fra"}, "ENAM": {"nyc", "fra"}},
				pools: map[string]poolView{
					"fra": {true, []string{"10.0.0.1 1"}},
					"nyc": {true, []string{"10.0.1.1 1"}},
				}},
		},
		{
			name: "country tags are left out when a rule names a continent, which Meridian checks first",
			view: providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyGeo, TTL: 30,
				Endpoints: []providers.EndpointView{tagged(up("10.0.0.1", "fra", 100), "DE", ""), up("10.0.1.1", "nyc", 100)},
				Geo:       &model.GeoPolicy{Rules: []model.GeoRule{{Continents: []string{"EU"}, Clusters: []string{"nyc"}}}}},
			want: lbView{steering: "geo", defaults: []string{"fra", "nyc"}, fallback: "nyc", ttl: 30,
				region: map[string][]string{"WEU": {"nyc", "fra"}, "EEU": {"nyc", "fra"}},
				pools: map[string]poolView{
					"fra": {true, []string{"10.0.0.1 1"}},
					"nyc": {true, []string{"10.0.1.1 1"}},
				}},
		},
		{
			name: "roundrobin weighs every endpoint alike",
			view: providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyRoundRobin, TTL: 30,
				Endpoints: []providers.EndpointView{up("10.0.0.1", "eu", 1), up("10.0.0.2", "eu", 1), up("10.0.1.1", "us", 1), up("10.0.1.2", "us", 1)}},
			want: lbView{steering: "random", defaults: []string{"eu", "us"}, fallback: "us", ttl: 30,
				weights: map[string]float64{"eu": 0.5, "us": 0.5},
				pools: map[string]poolView{
					"eu": {true, []string{"10.0.0.1 1", "10.0.0.2 1"}},
					"us": {true, []string{"10.0.1.1 1", "10.0.1.2 1"}},
				}},
		},
		{
			name: "CNAME endpoints are host-name origins",
			view: weighted("app.example.com.", up("app.eu.cdn.net.", "eu", 100), up("app.us.cdn.net.", "us", 100)),
			want: lbView{steering: "random", defaults: []string{"eu", "us"}, fallback: "us", ttl: 60,
				weights: map[string]float64{"eu": 0.5, "us": 0.5},
				pools: map[string]poolView{
					"eu": {true, []string{"app.eu.cdn.net 1"}},
					"us": {true, []string{"app.us.cdn.net 1"}},
				}},
		},
		{
			name: "the zone's TTL wins over the service's, within Cloudflare's 30 s minimum",
			view: weighted("app.example.com.", up("10.0.0.1", "eu", 100)),
			opts: LBOptions{TTL: 300},
			want: lbView{steering: "random", defaults: []string{"eu"}, fallback: "eu", ttl: 300,
				weights: map[string]float64{"eu": 1}, pools: map[string]poolView{"eu": {true, []string{"10.0.0.1 1"}}}},
		},
		{
			name: "a proxied load balancer has no TTL",
			view: weighted("app.example.com.", up("10.0.0.1", "eu", 100)),
			opts: LBOptions{TTL: 300, Proxied: true},
			want: lbView{steering: "random", defaults: []string{"eu"}, fallback: "eu", ttl: 0,
				weights: map[string]float64{"eu": 1}, pools: map[string]poolView{"eu": {true, []string{"10.0.0.1 1"}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Owner = ownerID
			specs, _ := TranslateLB([]providers.ServiceView{tt.view}, zoneName, tt.opts)
			require.Len(t, specs, 1)
			assert.Equal(t, tt.want, viewOf(t, specs[0]))
			assert.Equal(t, "app.example.com", specs[0].LoadBalancer.Name)
			assert.True(t, ours(specs[0].LoadBalancer.Description, ownerID, "example.com"))
			for _, p := range specs[0].Pools {
				assert.True(t, ours(p.Description, ownerID, "example.com"))
				assert.Regexp(t, regexp.MustCompile(`^meridian-m1-[0-9a-f]{10}-[A-Za-z0-9_-]+$`), p.Name)
			}
		})
	}
}

func TestTranslateLBLeavesOutServicesOfOtherZones(t *testing.T) {
	specs, _ := TranslateLB([]providers.ServiceView{
		weighted("app.other.com.", up("10.0.0.1", "eu", 100)),
		weighted("badexample.com.", up("10.0.0.1", "eu", 100)),
		weighted("example.com.", up("10.0.0.9", "eu", 100)),
	}, zoneName, LBOptions{Owner: ownerID})
	require.Len(t, specs, 1)
	assert.Equal(t, "example.com", specs[0].LoadBalancer.Name)
}

func TestPoolNamesAreValidStableAndUnique(t *testing.T) {
	a := poolName("prod/eu:1", "app.example.com.", "eu.west")
	assert.Regexp(t, `^[A-Za-z0-9_-]+$`, a)
	assert.Equal(t, a, poolName("prod/eu:1", "app.example.com.", "eu.west"), "the same service and cluster always make the same name")
	assert.NotEqual(t, a, poolName("prod/eu:1", "app.example.com.", "eu_west"), "clusters that sanitize alike still differ")
	assert.NotEqual(t, a, poolName("prod/eu:1", "www.example.com.", "eu.west"), "another service's pool differs")
}

func TestMonitorsFollowTheHealthCheck(t *testing.T) {
	check := func(kind string, mod func(*model.Check)) *model.Check {
		c := &model.Check{Kind: kind, Port: 8080, Method: "GET", Path: "/healthz", Host: "app.example.com", ExpectStatus: []string{"200"},
			Interval: model.Duration(5 * time.Second), Timeout: model.Duration(3 * time.Second), Fall: 3, Rise: 2}
		if mod != nil {
			mod(c)
		}
		return c
	}
	svc := func(name string, c *model.Check) providers.ServiceView {
		v := weighted(name, up("10.0.0.1", "eu", 100), up("10.0.1.1", "us", 100))
		v.HealthCheck = c
		return v
	}
	t.Run("an http check becomes a monitor on every pool of the service", func(t *testing.T) {
		specs, warn := TranslateLB([]providers.ServiceView{svc("app.example.com.", check("http", func(c *model.Check) { c.BodyContains = "ok" }))}, zoneName,
			LBOptions{Owner: ownerID, Backstop: true})
		require.Empty(t, warn)
		require.NotNil(t, specs[0].Monitor)
		m := specs[0].Monitor.Monitor
		m.Description = ""
		assert.Equal(t, Monitor{Type: "http", Method: "GET", Path: "/healthz", Header: map[string][]string{"Host": {"app.example.com"}}, Port: 8080,
			Interval: 60, Timeout: 3, ConsecutiveDown: 3, ConsecutiveUp: 2, ExpectedCodes: "200", ExpectedBody: "ok"}, m)
		for _, p := range specs[0].Pools {
			assert.Equal(t, specs[0].Monitor.Key, p.Monitor)
		}
	})
	t.Run("without backstop there is no monitor", func(t *testing.T) {
		specs, _ := TranslateLB([]providers.ServiceView{svc("app.example.com.", check("http", nil))}, zoneName, LBOptions{Owner: ownerID})
		assert.Nil(t, specs[0].Monitor)
		assert.Empty(t, specs[0].Pools[0].Monitor)
	})
	t.Run("a tcp check connects only", func(t *testing.T) {
		specs, _ := TranslateLB([]providers.ServiceView{svc("app.example.com.", check("tcp", func(c *model.Check) {
			c.Method, c.Path, c.Host, c.ExpectStatus = "", "", "", nil
			c.Interval, c.Timeout, c.Fall, c.Rise = model.Duration(2*time.Hour), model.Duration(30*time.Second), 500, 0
		}))}, zoneName, LBOptions{Owner: ownerID, Backstop: true})
		m := specs[0].Monitor.Monitor
		assert.Equal(t, Monitor{Type: "tcp", Method: "connection_established", Port: 8080, Interval: 3600, Timeout: 10, ConsecutiveDown: 100, ConsecutiveUp: 1,
			Description: m.Description}, m, "clamped into Cloudflare's ranges")
	})
	t.Run("a dns check has no monitor and says so", func(t *testing.T) {
		specs, warn := TranslateLB([]providers.ServiceView{svc("app.example.com.", check("dns", nil))}, zoneName, LBOptions{Owner: ownerID, Backstop: true})
		assert.Nil(t, specs[0].Monitor)
		require.Len(t, warn, 1)
		assert.Contains(t, warn[0], "app.example.com.")
		assert.Contains(t, warn[0], "dns")
	})
	t.Run("services with the same check share one monitor, another check is another monitor", func(t *testing.T) {
		c := check("https", nil)
		specs, _ := TranslateLB([]providers.ServiceView{svc("a.example.com.", c), svc("b.example.com.", c),
			svc("c.example.com.", check("https", func(c *model.Check) { c.Path = "/other" }))}, zoneName, LBOptions{Owner: ownerID, Backstop: true})
		require.Len(t, specs, 3)
		assert.Equal(t, specs[0].Monitor.Key, specs[1].Monitor.Key)
		assert.NotEqual(t, specs[0].Monitor.Key, specs[2].Monitor.Key)
	})
	t.Run("a POST check is sent as GET with a warning", func(t *testing.T) {
		specs, warn := TranslateLB([]providers.ServiceView{svc("app.example.com.", check("http", func(c *model.Check) { c.Method = "POST" }))}, zoneName,
			LBOptions{Owner: ownerID, Backstop: true})
		assert.Equal(t, "GET", specs[0].Monitor.Monitor.Method)
		require.Len(t, warn, 1)
		assert.Contains(t, warn[0], "POST")
	})
}

func TestExpectedCodes(t *testing.T) {
	tests := []struct {
		name   string
		expect []string
		codes  string
		follow bool
		ok     bool
	}{
		{"a single code stays that code", []string{"204"}, "204", false, true},
		{"a single redirect code is kept and not followed, as Meridian's checker does not follow it", []string{"301"}, "301", false, true},
		{"a range of one code is that code", []string{"200-200"}, "200", false, true},
		{"a range within one class is that class, not following redirects", []string{"200-299"}, "2xx", false, true},
		{"the 3xx class is matched on the redirect itself, not followed", []string{"300-399"}, "3xx", false, true},
		{"a class given in pieces is that class", []string{"200-249", "250-299"}, "2xx", false, true},
		{"the default 200-399 is 2xx following redirects", []string{"200-399"}, "2xx", true, true},
		{"the 2xx class with some redirect codes is 2xx following redirects", []string{"200-299", "301", "302"}, "2xx", true, true},
		{"nothing given is the default 200-399", nil, "2xx", true, true},
		{"two codes of different classes cannot be expressed", []string{"200", "404"}, "", false, false},
		{"two codes of one class cannot be expressed", []string{"200", "204"}, "", false, false},
		{"a part of a class cannot be expressed", []string{"200-250"}, "", false, false},
		{"a code with redirects but without the whole 2xx class cannot be expressed", []string{"302", "200"}, "", false, false},
		{"2xx with 4xx cannot be expressed", []string{"200-499"}, "", false, false},
		{"an unparsable entry cannot be expressed", []string{"2xx"}, "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			codes, follow, ok := expectedCodes(tt.expect)
			assert.Equal(t, tt.codes, codes)
			assert.Equal(t, tt.follow, follow)
			assert.Equal(t, tt.ok, ok)
		})
	}
}

func TestAnExpectStatusCloudflareCannotExpressGetsNoMonitor(t *testing.T) {
	v := weighted("app.example.com.", up("10.0.0.1", "eu", 100), up("10.0.1.1", "us", 100))
	v.HealthCheck = &model.Check{Kind: model.CheckHTTP, Port: 8080, Method: "GET", Path: "/healthz", ExpectStatus: []string{"200", "404"},
		Interval: model.Duration(5 * time.Second), Timeout: model.Duration(3 * time.Second), Fall: 3, Rise: 2}
	specs, warn := TranslateLB([]providers.ServiceView{v}, zoneName, LBOptions{Owner: ownerID, Backstop: true})
	require.Len(t, specs, 1)
	assert.Nil(t, specs[0].Monitor, "a monitor failing a 404 Meridian accepts would take healthy endpoints out")
	for _, p := range specs[0].Pools {
		assert.Empty(t, p.Monitor)
	}
	require.Len(t, warn, 1)
	assert.Contains(t, warn[0], "app.example.com.")
	assert.Contains(t, warn[0], "[200 404]")
}

func TestOwnershipMarks(t *testing.T) {
	tests := []struct {
		name string
		desc string
		want bool
	}{
		{"our mark in our zone is ours", "managed by meridian owner=m1 zone=example.com service=app.example.com", true},
		{"another owner's mark is not ours", "managed by meridian owner=m2 zone=example.com", false},
		{"an owner whose id starts like ours is not ours", "managed by meridian owner=m10 zone=example.com", false},
		{"our mark for another zone is not this zone's", "managed by meridian owner=m1 zone=other.com", false},
		{"a description that only mentions the mark is not ours", "see managed by meridian owner=m1 zone=example.com", false},
		{"no description is not ours", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ours(tt.desc, "m1", "example.com"))
		})
	}
}
