package cloudflare

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// ep is an endpoint view: available with Effective eff when eff > 0.
func ep(target, typ, cluster string, eff int) providers.EndpointView {
	return providers.EndpointView{Target: target, Type: typ, Cluster: cluster, Weight: max(eff, 100), Available: eff > 0, Effective: eff}
}

func rec(name, typ string, ttl uint32, values ...string) plan.Record {
	return plan.Record{Name: name, Type: typ, TTL: ttl, Values: values}
}

func TestTranslate(t *testing.T) {
	down := func(e providers.EndpointView) providers.EndpointView { e.Available, e.Effective = false, 0; return e }
	failOpen := func(e providers.EndpointView) providers.EndpointView {
		e.Available, e.Effective = false, e.Weight
		return e
	}
	proxiedA := rec("app.example.com.", "A", 1, "10.0.0.1")
	proxiedA.Proxied = ptr(true)

	tests := []struct {
		name    string
		views   []providers.ServiceView
		ttl     int
		proxied bool
		want    []plan.Record
	}{
		{
			name: "a weighted service lists every endpoint that carries weight",
			views: []providers.ServiceView{{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, Endpoints: []providers.EndpointView{
				ep("10.0.0.2", "A", "eu", 30), ep("10.0.0.1", "A", "us", 70), down(ep("10.0.0.3", "A", "ap", 100)),
			}}},
			want: []plan.Record{rec("app.example.com.", "A", 30, "10.0.0.1", "10.0.0.2")},
		},
		{
			name: "IPv4 and IPv6 endpoints make an A and an AAAA set",
			views: []providers.ServiceView{{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, Endpoints: []providers.EndpointView{
				ep("10.0.0.1", "A", "us", 100), ep("2001:db8::1", "AAAA", "us", 100),
			}}},
			want: []plan.Record{rec("app.example.com.", "A", 30, "10.0.0.1"), rec("app.example.com.", "AAAA", 30, "2001:db8::1")},
		},
		{
			name: "a service outside the zone is left out",
			views: []providers.ServiceView{
				{Name: "app.other.com.", Strategy: model.StrategyWeighted, TTL: 30, Endpoints: []providers.EndpointView{ep("10.0.0.1", "A", "us", 100)}},
				{Name: "badexample.com.", Strategy: model.StrategyWeighted, TTL: 30, Endpoints: []providers.EndpointView{ep("10.0.0.1", "A", "us", 100)}},
				{Name: "example.com.", Strategy: model.StrategyWeighted, TTL: 30, Endpoints: []providers.EndpointView{ep("10.0.0.9", "A", "us", 100)}},
			},
			want: []plan.Record{rec("example.com.", "A", 30, "10.0.0.9")},
		},
		{
			name:  "the zone's TTL overrides the service's",
			views: []providers.ServiceView{{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, Endpoints: []providers.EndpointView{ep("10.0.0.1", "A", "us", 100)}}},
			ttl:   120,
			want:  []plan.Record{rec("app.example.com.", "A", 120, "10.0.0.1")},
		},
		{
			name:  "an automatic zone TTL is 1",
			views: []providers.ServiceView{{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, Endpoints: []providers.EndpointView{ep("10.0.0.1", "A", "us", 100)}}},
			ttl:   1,
			want:  []plan.Record{rec("app.example.com.", "A", 1, "10.0.0.1")},
		},
		{
			name:    "proxied records carry the flag and the automatic TTL",
			views:   []providers.ServiceView{{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, Endpoints: []providers.EndpointView{ep("10.0.0.1", "A", "us", 100)}}},
			ttl:     300,
			proxied: true,
			want:    []plan.Record{proxiedA},
		},
		{
			name: "round robin lists every available endpoint",
			views: []providers.ServiceView{{Name: "rr.example.com.", Strategy: model.StrategyRoundRobin, TTL: 30, Endpoints: []providers.EndpointView{
				ep("10.0.0.1", "A", "us", 1), ep("10.0.0.2", "A", "eu", 1), down(ep("10.0.0.3", "A", "ap", 1)),
			}}},
			want: []plan.Record{rec("rr.example.com.", "A", 30, "10.0.0.1", "10.0.0.2")},
		},
		{
			name: "failover answers with the primary group while it has an available endpoint",
			views: []providers.ServiceView{{Name: "api.example.com.", Strategy: model.StrategyFailover, TTL: 30, Endpoints: []providers.EndpointView{
				ep("10.0.0.1", "A", "us", 100), down(ep("10.0.0.2", "A", "us", 100)), ep("10.0.0.3", "A", "eu", 100),
			}, Failover: [][]int{{0, 1}, {2}}}},
			want: []plan.Record{rec("api.example.com.", "A", 30, "10.0.0.1")},
		},
		{
			name: "failover moves to the next group when the primary is down",
			views: []providers.ServiceView{{Name: "api.example.com.", Strategy: model.StrategyFailover, TTL: 30, Endpoints: []providers.EndpointView{
				down(ep("10.0.0.1", "A", "us", 100)), down(ep("10.0.0.2", "A", "us", 100)), ep("10.0.0.3", "A", "eu", 100), ep("10.0.0.4", "A", "eu", 100),
			}, Failover: [][]int{{0, 1}, {2, 3}}}},
			want: []plan.Record{rec("api.example.com.", "A", 30, "10.0.0.3", "10.0.0.4")},
		},
		{
			name: "failover with nothing available fails open to the first group",
			views: []providers.ServiceView{{Name: "api.example.com.", Strategy: model.StrategyFailover, TTL: 30, FailOpen: true, Endpoints: []providers.EndpointView{
				failOpen(ep("10.0.0.1", "A", "us", 100)), failOpen(ep("10.0.0.2", "A", "eu", 100)),
			}, Failover: [][]int{{0}, {1}}}},
			want: []plan.Record{rec("api.example.com.", "A", 30, "10.0.0.1")},
		},
		{
			name: "geo answers everyone with the default clusters",
			views: []providers.ServiceView{{Name: "www.example.com.", Strategy: model.StrategyGeo, TTL: 30, Geo: &model.GeoPolicy{Default: []string{"eu"}}, Endpoints: []providers.EndpointView{
				ep("10.0.0.1", "A", "us", 100), ep("10.0.0.2", "A", "eu", 100),
			}}},
			want: []plan.Record{rec("www.example.com.", "A", 30, "10.0.0.2")},
		},
		{
			name: "geo without default clusters answers every available endpoint",
			views: []providers.ServiceView{{Name: "www.example.com.", Strategy: model.StrategyGeo, TTL: 30, Geo: &model.GeoPolicy{}, Endpoints: []providers.EndpointView{
				ep("10.0.0.1", "A", "us", 100), ep("10.0.0.2", "A", "eu", 100), down(ep("10.0.0.3", "A", "ap", 100)),
			}}},
			want: []plan.Record{rec("www.example.com.", "A", 30, "10.0.0.1", "10.0.0.2")},
		},
		{
			name: "geo whose default clusters are down answers the other clusters",
			views: []providers.ServiceView{{Name: "www.example.com.", Strategy: model.StrategyGeo, TTL: 30, Geo: &model.GeoPolicy{Default: []string{"eu"}}, Endpoints: []providers.EndpointView{
				ep("10.0.0.1", "A", "us", 100), down(ep("10.0.0.2", "A", "eu", 100)),
			}}},
			want: []plan.Record{rec("www.example.com.", "A", 30, "10.0.0.1")},
		},
		{
			name: "a CNAME service points at its highest effective target",
			views: []providers.ServiceView{{Name: "docs.example.com.", Strategy: model.StrategyWeighted, TTL: 60, Endpoints: []providers.EndpointView{
				ep("a.cdn.net.", "CNAME", "us", 30), ep("b.cdn.net.", "CNAME", "eu", 70), down(ep("c.cdn.net.", "CNAME", "ap", 900)),
			}}},
			want: []plan.Record{rec("docs.example.com.", "CNAME", 60, "b.cdn.net.")},
		},
		{
			name: "a CNAME service with equal weights points at the first target",
			views: []providers.ServiceView{{Name: "docs.example.com.", Strategy: model.StrategyWeighted, TTL: 60, Endpoints: []providers.EndpointView{
				ep("b.cdn.net.", "CNAME", "us", 50), ep("a.cdn.net.", "CNAME", "eu", 50),
			}}},
			want: []plan.Record{rec("docs.example.com.", "CNAME", 60, "b.cdn.net.")},
		},
		{
			name: "a service whose endpoints are all drained has no record",
			views: []providers.ServiceView{{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, FailOpen: true, Endpoints: []providers.EndpointView{
				down(ep("10.0.0.1", "A", "us", 100)),
			}}},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Translate(tt.views, "Example.com", tt.ttl, tt.proxied))
		})
	}
}
