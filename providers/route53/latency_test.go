package route53

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/route53/route53fake"
)

// inRegion sets an endpoint's AWS region.
func inRegion(e providers.EndpointView, region string) providers.EndpointView {
	e.CloudRegion = region
	return e
}

func latencyView(check *model.Check, eps ...providers.EndpointView) providers.ServiceView {
	return providers.ServiceView{Name: "near.example.com.", Strategy: model.StrategyLatency, TTL: 30, HealthCheck: check, Endpoints: eps}
}

func TestTranslateLatency(t *testing.T) {
	for _, tc := range []struct {
		name string
		view providers.ServiceView
		want []string
	}{
		{
			name: "one latency set per AWS region with the available endpoints there",
			view: latencyView(nil,
				inRegion(ep("192.0.2.1", "A", "use1", 100, true), "us-east-1"), inRegion(ep("192.0.2.2", "A", "use1b", 100, true), "us-east-1"),
				inRegion(ep("192.0.2.3", "A", "euw1", 100, true), "eu-west-1"), inRegion(ep("2001:db8::1", "AAAA", "euw1", 100, true), "eu-west-1")),
			want: []string{
				"near.example.com. 30 A 192.0.2.3 set=latency-eu-west-1 region=eu-west-1",
				"near.example.com. 30 A 192.0.2.1,192.0.2.2 set=latency-us-east-1 region=us-east-1",
				"near.example.com. 30 AAAA 2001:db8::1 set=latency-eu-west-1 region=eu-west-1",
			},
		},
		{
			name: "a region whose endpoints are all out has no set: Route 53 answers the next nearest",
			view: latencyView(nil,
				inRegion(ep("192.0.2.1", "A", "use1", 0, false), "us-east-1"), inRegion(ep("192.0.2.3", "A", "euw1", 100, true), "eu-west-1")),
			want: []string{"near.example.com. 30 A 192.0.2.3 set=latency-eu-west-1 region=eu-west-1"},
		},
		{
			name: "one endpoint out of a region's two leaves the other",
			view: latencyView(nil,
				inRegion(ep("192.0.2.1", "A", "use1", 0, false), "us-east-1"), inRegion(ep("192.0.2.2", "A", "use1b", 100, true), "us-east-1")),
			want: []string{"near.example.com. 30 A 192.0.2.2 set=latency-us-east-1 region=us-east-1"},
		},
		{
			name: "with everything down every region fails open to its endpoints",
			view: func() providers.ServiceView {
				v := latencyView(nil, inRegion(ep("192.0.2.1", "A", "use1", 100, false), "us-east-1"), inRegion(ep("192.0.2.3", "A", "euw1", 100, false), "eu-west-1"))
				v.FailOpen = true
				return v
			}(),
			want: []string{
				"near.example.com. 30 A 192.0.2.3 set=latency-eu-west-1 region=eu-west-1",
				"near.example.com. 30 A 192.0.2.1 set=latency-us-east-1 region=us-east-1",
			},
		},
		{
			name: "a CNAME service gets the highest-weighted available target of each region",
			view: latencyView(nil,
				inRegion(ep("a.cdn.example.net.", "CNAME", "use1", 100, true), "us-east-1"), inRegion(ep("b.cdn.example.net.", "CNAME", "use1b", 300, true), "us-east-1"),
				inRegion(ep("c.cdn.example.net.", "CNAME", "euw1", 100, true), "eu-west-1")),
			want: []string{
				"near.example.com. 30 CNAME c.cdn.example.net. set=latency-eu-west-1 region=eu-west-1",
				"near.example.com. 30 CNAME b.cdn.example.net. set=latency-us-east-1 region=us-east-1",
			},
		},
		{
			name: "an endpoint whose cluster names no AWS region is left out (check-config refuses it)",
			view: latencyView(nil, ep("192.0.2.9", "A", "dc1", 100, true), inRegion(ep("192.0.2.3", "A", "euw1", 100, true), "eu-west-1")),
			want: []string{"near.example.com. 30 A 192.0.2.3 set=latency-eu-west-1 region=eu-west-1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, strings_(Translate([]providers.ServiceView{tc.view}, testZone)))
		})
	}
}

func TestLatencyAnswersThroughTheFake(t *testing.T) {
	nearUS := route53fake.Client{Regions: []string{"us-east-1", "eu-west-1", "ap-south-1"}}
	nearEU := route53fake.Client{Regions: []string{"eu-west-1", "us-east-1", "ap-south-1"}}
	nearAP := route53fake.Client{Continent: "AS"} // ranked by the fake's continent table
	view := func(up ...bool) providers.ServiceView {
		return latencyView(httpCheck(80),
			inRegion(ep("198.51.99.31", "A", "use1", 100*b2i(up[0]), up[0]), "us-east-1"),
			inRegion(ep("198.51.99.32", "A", "euw1", 100*b2i(up[1]), up[1]), "eu-west-1"),
			inRegion(ep("198.51.99.33", "A", "aps1", 100*b2i(up[2]), up[2]), "ap-south-1"))
	}
	for _, mode := range []string{model.HealthChecksOff, model.HealthChecksBackstop} {
		t.Run("health_checks "+mode, func(t *testing.T) {
			e := newEnv(t, route53fake.Options{}, Options{Owner: testOwner, HealthChecks: mode})
			e.pass(t, []providers.ServiceView{view(true, true, true)})
			assert.Equal(t, []string{"198.51.99.31"}, e.resolve(t, "near.example.com.", "A", nearUS, nil))
			assert.Equal(t, []string{"198.51.99.32"}, e.resolve(t, "near.example.com.", "A", nearEU, nil))
			assert.Equal(t, []string{"198.51.99.33"}, e.resolve(t, "near.example.com.", "A", nearAP, nil))

			// Meridian decides eu-west-1's endpoint down: its set goes, EU clients get the next nearest.
			pl, _ := e.pass(t, []providers.ServiceView{view(true, false, true)})
			assert.Len(t, pl.Changes.Deletes, 1, "one set deleted")
			assert.Equal(t, []string{"198.51.99.31"}, e.resolve(t, "near.example.com.", "A", nearEU, nil))
			pl, _ = e.pass(t, []providers.ServiceView{view(true, false, true)})
			assert.True(t, pl.Changes.Empty(), "a second pass writes nothing")

			// Back up: the set comes back.
			e.pass(t, []providers.ServiceView{view(true, true, true)})
			assert.Equal(t, []string{"198.51.99.32"}, e.resolve(t, "near.example.com.", "A", nearEU, nil))
			if mode != model.HealthChecksBackstop {
				assert.Empty(t, e.fake.HealthChecks())
				return
			}
			// Every Meridian node down: Route 53's own check takes the region out.
			require.Len(t, e.ours(), 3, "one check per endpoint, attached to its region's set")
			e.setHealth(t, "198.51.99.32", false)
			assert.Equal(t, []string{"198.51.99.31"}, e.resolve(t, "near.example.com.", "A", nearEU, nil), "the unhealthy region is skipped")
		})
	}
}

func TestLatencyRecordsSurviveARealListing(t *testing.T) {
	e := newEnv(t, route53fake.Options{}, Options{})
	v := latencyView(nil, inRegion(ep("192.0.2.1", "A", "use1", 100, true), "us-east-1"))
	e.sync(t, []providers.ServiceView{v})
	got, err := e.p.Records(context.Background(), testZone)
	require.NoError(t, err)
	found := false
	for _, r := range got {
		if r.Name == "near.example.com." && r.Type == "A" {
			found = true
			assert.Equal(t, "near.example.com. 30 A 192.0.2.1 set=latency-us-east-1 region=us-east-1", r.String())
			assert.Equal(t, "latency", r.Policy())
		}
	}
	assert.True(t, found)
	pl, _ := e.sync(t, []providers.ServiceView{v})
	assert.True(t, pl.Changes.Empty(), "what Route 53 lists back equals the plan: nothing to do")
}
