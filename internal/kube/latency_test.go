package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
)

func TestParseLatencyTolerance(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value string
		want  model.Percent
		bad   string
	}{
		{name: "a percentage is read", value: "30%", want: 30},
		{name: "a bare number is a percentage too", value: " 5 ", want: 5},
		{name: "zero keeps only the best", value: "0%", want: 0},
		{name: "above 500% is refused with the range", value: "600%", bad: `meridian.io/latency-tolerance: "600%" is not a tolerance (allowed: a percentage 0%..500%, e.g. 30%)`},
		{name: "a negative tolerance is refused", value: "-1%", bad: "is not a tolerance"},
		{name: "words are refused", value: "loose", bad: "is not a tolerance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, errs := ParseAnnotations(map[string]string{AnnoHostname: "a.gslb.example.com", AnnoLatencyTolerance: tc.value})
			if tc.bad != "" {
				require.Len(t, errs, 1)
				assert.Contains(t, errs[0].Error(), tc.bad)
				assert.Nil(t, s.LatencyTolerance, "a refused value leaves the setting unset")
				return
			}
			require.Empty(t, errs)
			require.NotNil(t, s.LatencyTolerance)
			assert.Equal(t, tc.want, *s.LatencyTolerance)
		})
	}
}

func TestBuildALatencyServiceFromAnnotations(t *testing.T) {
	anno := func(extra map[string]string) map[string]string {
		a := map[string]string{AnnoHostname: "near.gslb.example.com", AnnoStrategy: "latency", AnnoHealthCheck: "tcp:443"}
		for k, v := range extra {
			a[k] = v
		}
		return a
	}
	t.Run("strategy, health check and tolerance make a latency service", func(t *testing.T) {
		r := Build([]Object{
			obj("east", "app", 1, anno(map[string]string{AnnoLatencyTolerance: "30%"}), "198.51.100.1"),
			obj("west", "app", 2, anno(nil), "198.51.100.2"),
		}, base())
		require.Len(t, r.Services, 1, "%v", r.Dropped)
		s := r.Services[0]
		assert.Equal(t, model.StrategyLatency, s.Strategy)
		require.NotNil(t, s.Latency)
		assert.Equal(t, model.Percent(30), *s.Latency.Tolerance)
		assert.Empty(t, r.Problems)
		d := base()
		d.Services = append(d.Services, s)
		out, err := model.Normalize(d)
		require.NoError(t, err)
		assert.InDelta(t, 0.3, out.Services[1].Latency.ToleranceOr(), 1e-9)
	})
	t.Run("without a tolerance the default applies", func(t *testing.T) {
		r := Build([]Object{obj("east", "app", 1, anno(nil), "198.51.100.1")}, base())
		require.Len(t, r.Services, 1)
		assert.Nil(t, r.Services[0].Latency)
	})
	t.Run("two objects that disagree on the tolerance: the older wins, the newer is told", func(t *testing.T) {
		newer := obj("west", "app", 2, anno(map[string]string{AnnoLatencyTolerance: "50%"}), "198.51.100.2")
		r := Build([]Object{obj("east", "app", 1, anno(map[string]string{AnnoLatencyTolerance: "30%"}), "198.51.100.1"), newer}, base())
		require.Len(t, r.Services, 1)
		assert.Equal(t, model.Percent(30), *r.Services[0].Latency.Tolerance)
		assert.Contains(t, r.Problems[newer.Ref][0], `conflict: meridian.io/latency-tolerance "50%" differs from "30%"`)
	})
	t.Run("a tolerance on a weighted service is reported as ignored", func(t *testing.T) {
		o := obj("east", "app", 1, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoLatencyTolerance: "30%"}, "198.51.100.1")
		r := Build([]Object{o}, base())
		require.Len(t, r.Services, 1)
		assert.Nil(t, r.Services[0].Latency)
		assert.Contains(t, r.Problems[o.Ref][0], "meridian.io/latency-tolerance is ignored: the strategy is weighted, not latency")
	})
	t.Run("in a Route 53 zone a cluster without an AWS region refuses the service alone, naming the cluster", func(t *testing.T) {
		b := base()
		b.Providers = model.Providers{OwnerID: "t", Route53: []model.Route53Zone{{Zone: "gslb.example.com"}}}
		o := obj("east", "app", 1, anno(nil), "198.51.100.1")
		r := Build([]Object{o}, b)
		assert.Empty(t, r.Services)
		assert.Contains(t, r.Dropped["near.gslb.example.com."], `cluster "east" names no AWS region, which Route 53 latency records need`)
		b.Clusters[0].CloudRegion = "us-east-1"
		r = Build([]Object{o}, b)
		assert.Len(t, r.Services, 1)
	})
	t.Run("a latency service without a health check is not served, and says why", func(t *testing.T) {
		o := obj("east", "app", 1, map[string]string{AnnoHostname: "near.gslb.example.com", AnnoStrategy: "latency"}, "198.51.100.1")
		r := Build([]Object{o}, base())
		assert.Empty(t, r.Services)
		assert.Contains(t, r.Dropped["near.gslb.example.com."], "health_check: is required with strategy latency")
	})
}
