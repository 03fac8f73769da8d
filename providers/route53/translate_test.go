package route53

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// ep is an endpoint view; Effective is given, as providers.Services would
// have computed it.
func ep(target, typ, cluster string, effective int, available bool) providers.EndpointView {
	return providers.EndpointView{Target: target, Type: typ, Cluster: cluster, Weight: max(effective, 100), Effective: effective, Available: available}
}

// tagged sets an endpoint's cluster tags.
func tagged(e providers.EndpointView, country, continent, region string) providers.EndpointView {
	e.Country, e.Continent, e.Region = country, continent, region
	return e
}

func strings_(rs []plan.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}

func TestTranslate(t *testing.T) {
	const zone = "example.com."
	cases := []struct {
		name string
		view providers.ServiceView
		want []string
	}{
		{
			name: "weighted 70/30 keeps its shares on Route 53's 0..255 scale",
			view: providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, Endpoints: []providers.EndpointView{
				ep("192.0.2.1", "A", "us", 700, true), ep("192.0.2.2", "A", "eu", 300, true),
			}},
			want: []string{
				"app.example.com. 30 A 192.0.2.2 set=eu/192.0.2.2 weight=109",
				"app.example.com. 30 A 192.0.2.1 set=us/192.0.2.1 weight=255",
			},
		},
		{
			name: "a failed endpoint keeps its set with weight 0",
			view: providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, Endpoints: []providers.EndpointView{
				ep("192.0.2.1", "A", "us", 0, false), ep("192.0.2.2", "A", "eu", 300, true),
			}},
			want: []string{
				"app.example.com. 30 A 192.0.2.2 set=eu/192.0.2.2 weight=255",
				"app.example.com. 30 A 192.0.2.1 set=us/192.0.2.1 weight=0",
			},
		},
		{
			name: "a tiny weight next to a large one stays at 1, never 0",
			view: providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, Endpoints: []providers.EndpointView{
				ep("192.0.2.1", "A", "us", 1000, true), ep("192.0.2.2", "A", "eu", 1, true),
			}},
			want: []string{
				"app.example.com. 30 A 192.0.2.2 set=eu/192.0.2.2 weight=1",
				"app.example.com. 30 A 192.0.2.1 set=us/192.0.2.1 weight=255",
			},
		},
		{
			name: "a dual-stack weighted service gets A and AAAA sets, each scaled on its own",
			view: providers.ServiceView{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 60, Endpoints: []providers.EndpointView{
				ep("192.0.2.1", "A", "us", 100, true), ep("2001:db8::1", "AAAA", "us", 50, true), ep("2001:db8::2", "AAAA", "eu", 25, true),
			}},
			want: []string{
				"app.example.com. 60 A 192.0.2.1 set=us/192.0.2.1 weight=255",
				"app.example.com. 60 AAAA 2001:db8::2 set=eu/2001:db8::2 weight=128",
				"app.example.com. 60 AAAA 2001:db8::1 set=us/2001:db8::1 weight=255",
			},
		},
		{
			name: "a weighted CNAME service gets one weighted CNAME set per target",
			view: providers.ServiceView{Name: "docs.example.com.", Strategy: model.StrategyWeighted, TTL: 30, Endpoints: []providers.EndpointView{
				ep("docs-us.cdn.example.net.", "CNAME", "us", 100, true), ep("docs-eu.cdn.example.net.", "CNAME", "eu", 100, true),
			}},
			want: []string{
				"docs.example.com. 30 CNAME docs-eu.cdn.example.net. set=eu/docs-eu.cdn.example.net. weight=255",
				"docs.example.com. 30 CNAME docs-us.cdn.example.net. set=us/docs-us.cdn.example.net. weight=255",
			},
		},
		{
			name: "failover puts the first group in PRIMARY and the next in SECONDARY",
			view: providers.ServiceView{Name: "api.example.com.", Strategy: model.StrategyFailover, TTL: 20, Failover: [][]int{{0, 1}, {2}, {3}}, Endpoints: []providers.EndpointView{
				ep("192.0.2.1", "A", "us", 100, true), ep("192.0.2.2", "A", "us", 100, true), ep("192.0.2.3", "A", "eu", 100, true), ep("192.0.2.4", "A", "ap", 100, true),
			}},
			want: []string{
				"api.example.com. 20 A 192.0.2.1,192.0.2.2 set=primary failover=PRIMARY",
				"api.example.com. 20 A 192.0.2.3 set=secondary failover=SECONDARY",
			},
		},
		{
			name: "failover moves PRIMARY to the next group when the first is down",
			view: providers.ServiceView{Name: "api.example.com.", Strategy: model.StrategyFailover, TTL: 20, Failover: [][]int{{0, 1}, {2}, {3}}, Endpoints: []providers.EndpointView{
				ep("192.0.2.1", "A", "us", 0, false), ep("192.0.2.2", "A", "us", 0, false), ep("192.0.2.3", "A", "eu", 100, true), ep("192.0.2.4", "A", "ap", 100, true),
			}},
			want: []string{
				"api.example.com. 20 A 192.0.2.3 set=primary failover=PRIMARY",
				"api.example.com. 20 A 192.0.2.4 set=secondary failover=SECONDARY",
			},
		},
		{
			name: "failover keeps only the available endpoints of the answering group",
			view: providers.ServiceView{Name: "api.example.com.", Strategy: model.StrategyFailover, TTL: 20, Failover: [][]int{{0, 1}, {2}}, Endpoints: []providers.EndpointView{
				ep("192.0.2.1", "A", "us", 0, false), ep("192.0.2.2", "A", "us", 100, true), ep("192.0.2.3", "A", "eu", 0, false),
			}},
			want: []string{
				"api.example.com. 20 A 192.0.2.2 set=primary failover=PRIMARY",
			},
		},
		{
			name: "failover with nothing available fails open to the first group",
			view: providers.ServiceView{Name: "api.example.com.", Strategy: model.StrategyFailover, TTL: 20, FailOpen: true, Failover: [][]int{{0, 1}, {2}}, Endpoints: []providers.EndpointView{
				ep("192.0.2.1", "A", "us", 100, false), ep("192.0.2.2", "A", "us", 100, false), ep("192.0.2.3", "A", "eu", 100, false),
			}},
			want: []string{
				"api.example.com. 20 A 192.0.2.1,192.0.2.2 set=primary failover=PRIMARY",
			},
		},
		{
			name: "a failover CNAME service is one simple CNAME to the answering group's best target",
			view: providers.ServiceView{Name: "www.example.com.", Strategy: model.StrategyFailover, TTL: 20, Failover: [][]int{{0}, {1}}, Endpoints: []providers.EndpointView{
				ep("us.cdn.example.net.", "CNAME", "us", 10, true), ep("eu.cdn.example.net.", "CNAME", "eu", 500, true),
			}},
			want: []string{"www.example.com. 20 CNAME us.cdn.example.net."},
		},
		{
			name: "a roundrobin CNAME service is one simple CNAME to the highest effective target",
			view: providers.ServiceView{Name: "www.example.com.", Strategy: model.StrategyRoundRobin, TTL: 20, Endpoints: []providers.EndpointView{
				ep("us.cdn.example.net.", "CNAME", "us", 0, false), ep("eu.cdn.example.net.", "CNAME", "eu", 1, true),
			}},
			want: []string{"www.example.com. 20 CNAME eu.cdn.example.net."},
		},
		{
			name: "roundrobin is one simple set without the failed endpoints",
			view: providers.ServiceView{Name: "rr.example.com.", Strategy: model.StrategyRoundRobin, TTL: 30, Endpoints: []providers.EndpointView{
				ep("192.0.2.1", "A", "us", 1, true), ep("192.0.2.2", "A", "eu", 0, false), ep("192.0.2.3", "A", "ap", 1, true),
			}},
			want: []string{"rr.example.com. 30 A 192.0.2.1,192.0.2.3"},
		},
		{
			name: "roundrobin with everything failed fails open to every endpoint",
			view: providers.ServiceView{Name: "rr.example.com.", Strategy: model.StrategyRoundRobin, TTL: 30, FailOpen: true, Endpoints: []providers.EndpointView{
				ep("192.0.2.1", "A", "us", 1, false), ep("192.0.2.2", "A", "eu", 1, false),
			}},
			want: []string{"rr.example.com. 30 A 192.0.2.1,192.0.2.2"},
		},
		{
			name: "geo rules become country and continent sets next to a default one",
			view: providers.ServiceView{Name: "www.example.com.", Strategy: model.StrategyGeo, TTL: 30,
				Geo: &model.GeoPolicy{Default: []string{"us"}, Rules: []model.GeoRule{
					{Countries: []string{"FR", "DE"}, Continents: []string{"EU"}, Clusters: []string{"eu"}},
					{Countries: []string{"FR"}, Continents: []string{"AS"}, Clusters: []string{"ap"}},
				}},
				Endpoints: []providers.EndpointView{
					ep("192.0.2.1", "A", "us", 100, true), ep("192.0.2.2", "A", "eu", 100, true), ep("192.0.2.3", "A", "ap", 100, true),
				}},
			want: []string{
				"www.example.com. 30 A 192.0.2.3 set=geo-continent-AS geo=AS//",
				"www.example.com. 30 A 192.0.2.2 set=geo-continent-EU geo=EU//",
				"www.example.com. 30 A 192.0.2.2 set=geo-country-DE geo=/DE/",
				"www.example.com. 30 A 192.0.2.2 set=geo-country-FR geo=/FR/",
				"www.example.com. 30 A 192.0.2.1 set=geo-default geo=/*/",
			},
		},
		{
			name: "a geo rule whose clusters are down answers with the default clusters",
			view: providers.ServiceView{Name: "www.example.com.", Strategy: model.StrategyGeo, TTL: 30,
				Geo: &model.GeoPolicy{Default: []string{"us"}, Rules: []model.GeoRule{{Continents: []string{"EU"}, Clusters: []string{"eu"}}}},
				Endpoints: []providers.EndpointView{
					ep("192.0.2.1", "A", "us", 100, true), ep("192.0.2.2", "A", "eu", 0, false), ep("192.0.2.3", "A", "ap", 100, true),
				}},
			want: []string{
				"www.example.com. 30 A 192.0.2.1 set=geo-continent-EU geo=EU//",
				"www.example.com. 30 A 192.0.2.1 set=geo-default geo=/*/",
			},
		},
		{
			name: "geo falls back to every available endpoint when the default clusters are down too",
			view: providers.ServiceView{Name: "www.example.com.", Strategy: model.StrategyGeo, TTL: 30,
				Geo: &model.GeoPolicy{Default: []string{"us"}, Rules: []model.GeoRule{{Continents: []string{"EU"}, Clusters: []string{"eu"}}}},
				Endpoints: []providers.EndpointView{
					ep("192.0.2.1", "A", "us", 0, false), ep("192.0.2.2", "A", "eu", 0, false), ep("192.0.2.3", "A", "ap", 100, true),
				}},
			want: []string{
				"www.example.com. 30 A 192.0.2.3 set=geo-continent-EU geo=EU//",
				"www.example.com. 30 A 192.0.2.3 set=geo-default geo=/*/",
			},
		},
		{
			name: "geo with everything down fails open to every endpoint",
			view: providers.ServiceView{Name: "www.example.com.", Strategy: model.StrategyGeo, TTL: 30, FailOpen: true,
				Geo: &model.GeoPolicy{Rules: []model.GeoRule{{Countries: []string{"JP"}, Clusters: []string{"ap"}}}},
				Endpoints: []providers.EndpointView{
					ep("192.0.2.1", "A", "us", 100, false), ep("192.0.2.3", "A", "ap", 100, false),
				}},
			want: []string{
				"www.example.com. 30 A 192.0.2.1,192.0.2.3 set=geo-country-JP geo=/JP/",
				"www.example.com. 30 A 192.0.2.1,192.0.2.3 set=geo-default geo=/*/",
			},
		},
		{
			name: "geo regions cannot be expressed and are left out, rules and tags alike",
			view: providers.ServiceView{Name: "www.example.com.", Strategy: model.StrategyGeo, TTL: 30,
				Geo: &model.GeoPolicy{Rules: []model.GeoRule{{Regions: []string{"eu-west"}, Clusters: []string{"eu"}}}},
				Endpoints: []providers.EndpointView{
					tagged(ep("192.0.2.1", "A", "us", 100, true), "", "", "us-east"), tagged(ep("192.0.2.2", "A", "eu", 100, true), "", "", "eu-west"),
				}},
			want: []string{"www.example.com. 30 A 192.0.2.1,192.0.2.2 set=geo-default geo=/*/"},
		},
		{
			name: "geo cluster tags add country and continent sets where no rule answers",
			view: providers.ServiceView{Name: "www.example.com.", Strategy: model.StrategyGeo, TTL: 30,
				Geo: &model.GeoPolicy{Rules: []model.GeoRule{{Continents: []string{"NA"}, Clusters: []string{"us"}}}},
				Endpoints: []providers.EndpointView{
					tagged(ep("192.0.2.1", "A", "us", 100, true), "US", "NA", "us-east"),
					tagged(ep("192.0.2.2", "A", "de", 100, true), "DE", "EU", "eu-central"),
				}},
			want: []string{
				"www.example.com. 30 A 192.0.2.2 set=geo-continent-EU geo=EU//",
				"www.example.com. 30 A 192.0.2.1 set=geo-continent-NA geo=NA//",
				"www.example.com. 30 A 192.0.2.2 set=geo-country-DE geo=/DE/",
				"www.example.com. 30 A 192.0.2.1,192.0.2.2 set=geo-default geo=/*/",
			},
		},
		{
			name: "services outside the zone are left out",
			view: providers.ServiceView{Name: "app.example.org.", Strategy: model.StrategyWeighted, TTL: 30, Endpoints: []providers.EndpointView{
				ep("192.0.2.1", "A", "us", 100, true),
			}},
			want: []string{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Translate([]providers.ServiceView{tc.view}, zone)
			assert.Equal(t, tc.want, strings_(got))
			for _, r := range got {
				assert.Equal(t, tc.view.TTL, r.TTL, "every set carries the service TTL: %s", r)
			}
		})
	}
}

func TestScaleWeightsKeepsShares(t *testing.T) {
	cases := []struct {
		name string
		eff  []int
	}{
		{"two endpoints 70/30", []int{700, 300}},
		{"three uneven endpoints", []int{1000, 333, 17}},
		{"many equal small weights", []int{1, 1, 1, 1, 1}},
		{"a large spread", []int{1000, 500, 250, 125, 62, 31}},
		{"weights already under 255", []int{200, 100, 50}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := scaleWeights(tc.eff)
			var sumE, sumW float64
			for i := range tc.eff {
				sumE += float64(tc.eff[i])
				sumW += float64(w[i])
				assert.LessOrEqual(t, w[i], int64(255))
				assert.Positive(t, w[i])
			}
			for i := range tc.eff {
				// Rounding moves a weight by at most 0.5 of 255ths.
				want, got := float64(tc.eff[i])/sumE, float64(w[i])/sumW
				assert.InDelta(t, want, got, 0.5*float64(len(w))/sumW+0.001, "share of endpoint %d", i)
			}
			assert.Equal(t, int64(255), w[0], "the largest weight maps to 255")
		})
	}
	assert.Equal(t, []int64{0, 0}, scaleWeights([]int{0, 0}), "all zero stays all zero")
}

func TestTranslateIsDeterministicAndValid(t *testing.T) {
	views := []providers.ServiceView{
		{Name: "b.example.com.", Strategy: model.StrategyRoundRobin, TTL: 5, Endpoints: []providers.EndpointView{ep("192.0.2.9", "A", "us", 1, true), ep("192.0.2.9", "A", "eu", 1, true)}},
		{Name: "a.example.com.", Strategy: model.StrategyWeighted, TTL: 5, Endpoints: []providers.EndpointView{ep("192.0.2.1", "A", "us", 10, true)}},
	}
	first := Translate(views, "Example.COM")
	require.Equal(t, strings_(first), strings_(Translate(views, "example.com.")))
	assert.Equal(t, []string{
		"a.example.com. 5 A 192.0.2.1 set=us/192.0.2.1 weight=255",
		"b.example.com. 5 A 192.0.2.9",
	}, strings_(first), "sorted by name, duplicate values merged")
}
