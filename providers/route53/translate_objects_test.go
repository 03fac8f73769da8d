package route53

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
)

// idsFor gives every check translate needs an id "hc-<n>" (endpoint checks
// first, then the CALCULATED ones over them), as PrepareObjects does.
func idsFor(views []providers.ServiceView, objs Objects) Objects {
	objs.Checks = map[string]string{}
	for range 2 {
		_, needs := translate(views, testZone, objs)
		for _, s := range needs {
			if objs.Checks[s.key()] == "" {
				objs.Checks[s.key()] = "hc-" + label(s)
			}
		}
	}
	return objs
}

// label names a spec in test output: its address or target, or "calc(<children>)".
func label(s checkSpec) string {
	if s.Type == types.HealthCheckTypeCalculated {
		return "calc(" + strings.Join(s.Children, "+") + ")"
	}
	if s.IP != "" {
		return s.IP
	}
	return s.FQDN
}

func TestTranslateWithObjects(t *testing.T) {
	check := &model.Check{Kind: model.CheckHTTP, Port: 80, Path: "/", Host: "app.example.com", Interval: model.Duration(5 * time.Second), Fall: 3}
	cases := []struct {
		name string
		view providers.ServiceView
		objs Objects
		want []string
	}{
		{
			name: "weighted A sets carry their endpoint's check, an available standby at weight 0 too",
			view: providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, HealthCheck: check, Endpoints: []providers.EndpointView{
				ep("198.51.99.1", "A", "us", 700, true), ep("198.51.99.2", "A", "eu", 0, true),
			}},
			want: []string{
				"app.example.com. 30 A 198.51.99.2 set=eu/198.51.99.2 weight=0 health-check=hc-198.51.99.2",
				"app.example.com. 30 A 198.51.99.1 set=us/198.51.99.1 weight=255 health-check=hc-198.51.99.1",
			},
		},
		{
			name: "with checks an endpoint Meridian decided down or drained loses its weighted set, so Route 53 cannot fall back to it",
			view: providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, HealthCheck: check, Endpoints: []providers.EndpointView{
				ep("198.51.99.1", "A", "us", 700, true), ep("198.51.99.2", "A", "eu", 0, false), ep("198.51.99.3", "A", "ap", 0, false),
			}},
			want: []string{"app.example.com. 30 A 198.51.99.1 set=us/198.51.99.1 weight=255 health-check=hc-198.51.99.1"},
		},
		{
			name: "with checks and Meridian failing open every non-drained endpoint keeps its weighted set and the drained one is out",
			view: providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, HealthCheck: check, FailOpen: true, Endpoints: []providers.EndpointView{
				ep("198.51.99.1", "A", "us", 700, false), ep("198.51.99.2", "A", "eu", 300, false), ep("198.51.99.3", "A", "ap", 0, false),
			}},
			want: []string{
				"app.example.com. 30 A 198.51.99.2 set=eu/198.51.99.2 weight=109 health-check=hc-198.51.99.2",
				"app.example.com. 30 A 198.51.99.1 set=us/198.51.99.1 weight=255 health-check=hc-198.51.99.1",
			},
		},
		{
			name: "with checks and every endpoint drained the weighted sets stay at weight 0 rather than emptying the name",
			view: providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, HealthCheck: check, FailOpen: true, Endpoints: []providers.EndpointView{
				ep("198.51.99.1", "A", "us", 0, false), ep("198.51.99.2", "A", "eu", 0, false),
			}},
			want: []string{
				"app.example.com. 30 A 198.51.99.2 set=eu/198.51.99.2 weight=0 health-check=hc-198.51.99.2",
				"app.example.com. 30 A 198.51.99.1 set=us/198.51.99.1 weight=0 health-check=hc-198.51.99.1",
			},
		},
		{
			name: "the fail-open of one address family keeps only that family's decided-down sets",
			view: providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, HealthCheck: check, FailOpen: true, Endpoints: []providers.EndpointView{
				ep("198.51.99.1", "A", "us", 100, true), ep("198.51.99.2", "A", "eu", 0, false), ep("2001:db7::1", "AAAA", "us", 100, false),
			}},
			want: []string{
				"app.example.com. 30 A 198.51.99.1 set=us/198.51.99.1 weight=255 health-check=hc-198.51.99.1",
				"app.example.com. 30 AAAA 2001:db7::1 set=us/2001:db7::1 weight=255 health-check=hc-2001:db7::1",
			},
		},
		{
			name: "weighted AAAA sets are written like A sets, with their checks",
			view: providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, HealthCheck: check, Endpoints: []providers.EndpointView{
				ep("2001:db7::1", "AAAA", "us", 700, true), ep("2001:db7::2", "AAAA", "eu", 300, true),
			}},
			want: []string{
				"app.example.com. 30 AAAA 2001:db7::2 set=eu/2001:db7::2 weight=109 health-check=hc-2001:db7::2",
				"app.example.com. 30 AAAA 2001:db7::1 set=us/2001:db7::1 weight=255 health-check=hc-2001:db7::1",
			},
		},
		{
			name: "weighted CNAME sets are checked at their target",
			view: providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, HealthCheck: check, Endpoints: []providers.EndpointView{
				ep("a.cdn.example.net.", "CNAME", "us", 100, true), ep("b.cdn.example.net.", "CNAME", "eu", 100, true),
			}},
			want: []string{
				"app.example.com. 30 CNAME b.cdn.example.net. set=eu/b.cdn.example.net. weight=255 health-check=hc-b.cdn.example.net",
				"app.example.com. 30 CNAME a.cdn.example.net. set=us/a.cdn.example.net. weight=255 health-check=hc-a.cdn.example.net",
			},
		},
		{
			name: "a failover set of several endpoints gets the CALCULATED check over theirs",
			view: providers.ServiceView{Name: "api.example.com.", Strategy: model.StrategyFailover, TTL: 20, HealthCheck: check, Failover: [][]int{{0, 1}, {2}}, Endpoints: []providers.EndpointView{
				ep("198.51.99.1", "A", "us", 100, true), ep("198.51.99.2", "A", "us", 100, true), ep("198.51.99.3", "A", "eu", 100, true),
			}},
			want: []string{
				"api.example.com. 20 A 198.51.99.1,198.51.99.2 set=primary failover=PRIMARY health-check=hc-calc(hc-198.51.99.1+hc-198.51.99.2)",
				"api.example.com. 20 A 198.51.99.3 set=secondary failover=SECONDARY health-check=hc-198.51.99.3",
			},
		},
		{
			name: "a service Route 53 cannot check (dns) gets no checks",
			view: providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, HealthCheck: &model.Check{Kind: model.CheckDNS, Port: 53}, Endpoints: []providers.EndpointView{
				ep("198.51.99.1", "A", "us", 100, true),
			}},
			want: []string{"app.example.com. 30 A 198.51.99.1 set=us/198.51.99.1 weight=255"},
		},
		{
			name: "simple sets (roundrobin) get no check",
			view: providers.ServiceView{Name: "rr.example.com.", Strategy: model.StrategyRoundRobin, TTL: 30, HealthCheck: check, Endpoints: []providers.EndpointView{
				ep("198.51.99.1", "A", "us", 1, true), ep("198.51.99.2", "A", "eu", 1, true),
			}},
			want: []string{"rr.example.com. 30 A 198.51.99.1,198.51.99.2"},
		},
		{
			name: "geo with networks and a collection: IP-based sets at the name, geolocation at _geo.<name>",
			view: providers.ServiceView{Name: "geo.example.com.", Strategy: model.StrategyGeo, TTL: 30,
				Geo: &model.GeoPolicy{Rules: []model.GeoRule{{Regions: []string{"office"}, Clusters: []string{"onprem"}}}, Default: []string{"us"}},
				Networks: []model.GeoNetwork{
					{CIDR: "10.1.0.0/16", Region: "office"}, {CIDR: "10.2.0.0/16", Region: "office"},
					{CIDR: "203.0.113.0/24", Country: "DE", Continent: "EU"}, {CIDR: "10.9.0.0/28", Region: "lab"},
				},
				Endpoints: []providers.EndpointView{
					tagged(ep("198.51.99.1", "A", "us", 100, true), "US", "NA", "us-east"),
					tagged(ep("198.51.99.2", "A", "eu", 100, true), "DE", "EU", "eu-central"),
					ep("198.51.99.3", "A", "onprem", 100, true),
				}},
			objs: Objects{ZoneID: "Z1", CIDR: &CIDRObjects{CollectionID: "c-1", Locations: map[string]bool{"office": true, "DE_EU": true}}},
			want: []string{
				"_geo.geo.example.com. 30 A 198.51.99.2 set=geo-continent-EU geo=EU//",
				"_geo.geo.example.com. 30 A 198.51.99.1 set=geo-continent-NA geo=NA//",
				"_geo.geo.example.com. 30 A 198.51.99.2 set=geo-country-DE geo=/DE/",
				"_geo.geo.example.com. 30 A 198.51.99.1 set=geo-country-US geo=/US/",
				"_geo.geo.example.com. 30 A 198.51.99.1 set=geo-default geo=/*/",
				"geo.example.com. 30 A 198.51.99.2 set=ip-DE_EU cidr=c-1/DE_EU",
				"geo.example.com. 0 A  set=ip-default cidr=c-1/* alias=Z1/_geo.geo.example.com. evaluate-health",
				"geo.example.com. 30 A 198.51.99.3 set=ip-office cidr=c-1/office",
			},
		},
		{
			name: "geo with networks but no collection yet stays geolocation",
			view: providers.ServiceView{Name: "geo.example.com.", Strategy: model.StrategyGeo, TTL: 30,
				Networks:  []model.GeoNetwork{{CIDR: "10.1.0.0/16", Region: "office"}},
				Endpoints: []providers.EndpointView{ep("198.51.99.1", "A", "us", 100, true)}},
			want: []string{"geo.example.com. 30 A 198.51.99.1 set=geo-default geo=/*/"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			views := []providers.ServiceView{tc.view}
			objs := tc.objs
			if tc.view.HealthCheck != nil {
				objs = idsFor(views, objs)
			}
			assert.Equal(t, tc.want, strings_(TranslateWith(views, testZone, objs)))
		})
	}
	t.Run("without objects the records are exactly Translate's", func(t *testing.T) {
		v := providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, HealthCheck: check, Endpoints: []providers.EndpointView{ep("198.51.99.1", "A", "us", 100, true)}}
		assert.Equal(t, Translate([]providers.ServiceView{v}, testZone), TranslateWith([]providers.ServiceView{v}, testZone, Objects{}))
	})
}

func TestEndpointCheck(t *testing.T) {
	a := ep("198.51.99.1", "A", "us", 100, true)
	cases := []struct {
		name   string
		check  *model.Check
		e      providers.EndpointView
		want   string // key, or "" with reason
		failN  int32
		reason string
	}{
		{name: "http at the address with the host as Host header, every 10 s for a 5 s interval",
			check: &model.Check{Kind: "http", Port: 8080, Path: "/healthz", Host: "App.Example.com.", Interval: model.Duration(5 * time.Second), Fall: 3}, e: a,
			want: `HTTP ip=198.51.99.1 fqdn=app.example.com port=8080 path=/healthz search="" every=10`, failN: 3},
		{name: "https with body_contains is HTTPS_STR_MATCH, every 30 s for a 15 s interval",
			check: &model.Check{Kind: "https", Port: 443, Path: "/", Host: "app.example.com", BodyContains: "ok", Interval: model.Duration(15 * time.Second), Fall: 2}, e: a,
			want: `HTTPS_STR_MATCH ip=198.51.99.1 fqdn=app.example.com port=443 path=/ search="ok" every=30`, failN: 2},
		{name: "tcp has no path and no host; fall above 10 is clamped",
			check: &model.Check{Kind: "tcp", Port: 5432, Interval: model.Duration(10 * time.Second), Fall: 25}, e: a,
			want: `TCP ip=198.51.99.1 fqdn= port=5432 path= search="" every=10`, failN: 10},
		{name: "a CNAME endpoint is checked at its target",
			check: &model.Check{Kind: "http", Port: 80, Path: "/", Host: "app.example.com", Interval: model.Duration(time.Minute), Fall: 0},
			e:     ep("lb.example.net.", "CNAME", "us", 100, true),
			want:  `HTTP ip= fqdn=lb.example.net port=80 path=/ search="" every=30`, failN: 1},
		{name: "dns checks have no Route 53 equivalent", check: &model.Check{Kind: "dns", Port: 53}, e: a, reason: "no Route 53 equivalent"},
		{name: "no health_check, no check", e: a, reason: "no health_check"},
		{name: "a body_contains longer than 255 characters cannot be expressed",
			check: &model.Check{Kind: "http", Port: 80, Path: "/", BodyContains: strings.Repeat("x", 256)}, e: a, reason: "255"},
		{name: "an expect_status accepting 401 gets no check, since Route 53 fails on it",
			check: &model.Check{Kind: "http", Port: 80, Path: "/", ExpectStatus: []string{"200-299", "401"}}, e: a, reason: "expect_status 401 accepts codes outside 200-399"},
		{name: "an expect_status range reaching 404 gets no check",
			check: &model.Check{Kind: "https", Port: 443, Path: "/", ExpectStatus: []string{"200-404"}}, e: a, reason: "outside 200-399"},
		{name: "an expect_status accepting 100 gets no check",
			check: &model.Check{Kind: "http", Port: 80, Path: "/", ExpectStatus: []string{"100-299"}}, e: a, reason: "outside 200-399"},
		{name: "an expect_status within 200-399 keeps its check",
			check: &model.Check{Kind: "http", Port: 80, Path: "/", ExpectStatus: []string{"200", "301-302"}, Fall: 1}, e: a,
			want: `HTTP ip=198.51.99.1 fqdn= port=80 path=/ search="" every=30`, failN: 1},
		{name: "the default expect_status 200-399 keeps its check",
			check: &model.Check{Kind: "http", Port: 80, Path: "/", ExpectStatus: []string{model.DefaultExpectStatus}, Fall: 1}, e: a,
			want: `HTTP ip=198.51.99.1 fqdn= port=80 path=/ search="" every=30`, failN: 1},
		{name: "expect_status does not concern tcp checks",
			check: &model.Check{Kind: "tcp", Port: 5432, ExpectStatus: []string{"401"}, Fall: 1}, e: a,
			want: `TCP ip=198.51.99.1 fqdn= port=5432 path= search="" every=30`, failN: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec, reason := endpointCheck(providers.ServiceView{HealthCheck: tc.check}, tc.e)
			if tc.reason != "" {
				assert.Contains(t, reason, tc.reason)
				return
			}
			require.Empty(t, reason)
			assert.Equal(t, tc.want, spec.key())
			assert.Equal(t, tc.failN, spec.Failure)
		})
	}
}

func TestCallerReferences(t *testing.T) {
	prefix := refPrefix("meridian-prod", "example.com")
	assert.Equal(t, prefix, refPrefix("meridian-prod", "example.com."), "the zone is canonical")
	assert.NotEqual(t, prefix, refPrefix("meridian-prod", "example.org."), "another zone has other references")
	assert.NotEqual(t, prefix, refPrefix("meridian-dev", "example.com."), "another owner too")
	spec, _ := endpointCheck(providers.ServiceView{HealthCheck: &model.Check{Kind: "tcp", Port: 22}}, ep("198.51.99.1", "A", "us", 1, true))
	ref := callerRef(prefix, spec, 3)
	assert.LessOrEqual(t, len(ref), maxCallerRef)
	hash, gen, ok := parseRef(prefix, ref)
	require.True(t, ok)
	assert.Equal(t, spec.hash(), hash)
	assert.Equal(t, 3, gen)
	for _, other := range []string{"console-made", prefix + "short-1", prefix + spec.hash() + "-x", refPrefix("x", "example.com.") + spec.hash() + "-0"} {
		_, _, ok := parseRef(prefix, other)
		assert.False(t, ok, "%q is not ours", other)
	}
}

func TestCIDRLocations(t *testing.T) {
	locs, skipped := cidrLocations([]model.GeoNetwork{
		{CIDR: "10.1.0.0/16", Region: "office"},
		{CIDR: "10.2.0.0/16", Region: "office"},
		{CIDR: "203.0.113.0/24", Country: "DE", Continent: "EU"},
		{CIDR: "2001:db8::/32", Region: "a-very-long-region-name"},
		{CIDR: "10.9.0.0/28", Region: "lab"},
		{CIDR: "2001:db8:1::/56", Region: "lab"},
		{CIDR: "198.51.99.0/24", Region: "eu.west"},
	})
	var names []string
	for _, l := range locs {
		names = append(names, l.Name)
		assert.LessOrEqual(t, len(l.Name), maxLocationName)
		assert.Regexp(t, `^[0-9A-Za-z_-]+$`, l.Name)
	}
	assert.Equal(t, []string{"DE_EU", "a-very-lo-" + digest("place|a-very-long-region-name||")[:6], "eu-west-" + digest("place|eu.west||")[:6], "office"}, names,
		"one location per place, named after it when it fits, else cut and hashed")
	assert.Equal(t, []string{"10.1.0.0/16", "10.2.0.0/16"}, locs[3].CIDRs)
	assert.Equal(t, []string{"10.9.0.0/28", "2001:db8:1::/56"}, skipped, "networks longer than /24 (IPv4) or /48 (IPv6) cannot be held")

	assert.Equal(t, "meridian-prod-example_com", collectionName("prod", "example.com."))
	long := collectionName(strings.Repeat("o", 60), "example.com.")
	assert.Len(t, long, maxCollectionName)
}

func TestPlaceClusters(t *testing.T) {
	v := providers.ServiceView{
		Geo: &model.GeoPolicy{Rules: []model.GeoRule{
			{Countries: []string{"FR"}, Clusters: []string{"paris"}},
			{Regions: []string{"office"}, Clusters: []string{"onprem"}},
			{Continents: []string{"EU"}, Clusters: []string{"eu"}},
		}, Default: []string{"us"}},
		Endpoints: []providers.EndpointView{
			tagged(ep("198.51.99.1", "A", "tokyo", 1, true), "JP", "AS", "ap-northeast"),
		},
	}
	cases := []struct {
		name string
		at   place
		want []string
	}{
		{"a region rule wins over a country rule listed first", place{Region: "office", Country: "FR", Continent: "EU"}, []string{"onprem"}},
		{"a country rule wins over a continent rule", place{Country: "FR", Continent: "EU"}, []string{"paris"}},
		{"a continent rule", place{Country: "DE", Continent: "EU"}, []string{"eu"}},
		{"a cluster's country tag after the rules", place{Country: "JP"}, []string{"tokyo"}},
		{"a cluster's region tag", place{Region: "ap-northeast"}, []string{"tokyo"}},
		{"nothing matches: the default", place{Country: "BR", Continent: "SA"}, []string{"us"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, placeClusters(v, tc.at)) })
	}
}

func TestWithChecksNoRoutingSetCarriesAnEndpointMeridianDecidedDown(t *testing.T) {
	check := &model.Check{Kind: model.CheckHTTP, Port: 80, Path: "/", Interval: model.Duration(5 * time.Second), Fall: 3}
	down := ep("198.51.99.1", "A", "eu", 0, false)
	geo := &model.GeoPolicy{Rules: []model.GeoRule{{Continents: []string{"EU"}, Clusters: []string{"eu"}}}, Default: []string{"us"}}
	endpoints := []providers.EndpointView{
		tagged(down, "DE", "EU", "eu-central"),
		tagged(ep("198.51.99.2", "A", "us", 100, true), "US", "NA", "us-east"),
		tagged(ep("198.51.99.3", "A", "ap", 100, true), "JP", "AS", "ap-northeast"),
	}
	cases := []struct {
		name string
		view providers.ServiceView
		objs Objects
	}{
		{name: "weighted", view: providers.ServiceView{Strategy: model.StrategyWeighted}},
		{name: "failover with the decided-down endpoint first", view: providers.ServiceView{Strategy: model.StrategyFailover, Failover: [][]int{{0}, {1}, {2}}}},
		{name: "failover with the decided-down endpoint sharing a group", view: providers.ServiceView{Strategy: model.StrategyFailover, Failover: [][]int{{0, 1}, {2}}}},
		{name: "geolocation with a rule and a tag naming its cluster", view: providers.ServiceView{Strategy: model.StrategyGeo, Geo: geo}},
		{name: "IP-based with a network placed on its continent", view: providers.ServiceView{Strategy: model.StrategyGeo, Geo: geo,
			Networks: []model.GeoNetwork{{CIDR: "203.0.113.0/24", Country: "DE", Continent: "EU"}}},
			objs: Objects{ZoneID: "Z1", CIDR: &CIDRObjects{CollectionID: "c-1", Locations: map[string]bool{"DE_EU": true}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.view
			v.Name, v.TTL, v.HealthCheck, v.Endpoints = "app.example.com.", 30, check, endpoints
			views := []providers.ServiceView{v}
			recs := TranslateWith(views, testZone, idsFor(views, tc.objs))
			require.NotEmpty(t, recs)
			for _, r := range recs {
				assert.NotContains(t, r.Values, down.Target, "%s", r)
				if r.SetID != "" && r.Alias == nil {
					assert.NotEmpty(t, r.HealthCheckID, "%s carries a check", r)
				}
			}
		})
	}
}
