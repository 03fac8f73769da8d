package whatif_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/serving"
	"github.com/meridian-gslb/meridian/internal/whatif"
)

const config = `
zones:
  - apex: gslb.test
    nameservers: [{name: ns1.gslb.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east, continent: NA}
  - {name: west, region: us-west, continent: NA}
  - {name: eu, region: eu-west, continent: EU}
services:
  - name: app.gslb.test
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 100}
      - {address: 192.0.2.2, cluster: west, weight: 100}
      - {address: 192.0.2.3, cluster: eu, weight: 200}
  - name: geo.gslb.test
    strategy: geo
    geo:
      rules:
        - {continents: [EU], clusters: [eu]}
    endpoints:
      - {address: 192.0.2.11, cluster: east}
      - {address: 192.0.2.13, cluster: eu}
  - name: other.gslb.test
    endpoints:
      - {address: 192.0.2.21, cluster: eu}
`

func pipeline(t *testing.T) *serving.Pipeline {
	t.Helper()
	l, err := serving.Load("test.yaml", []byte(config), "")
	require.NoError(t, err)
	st, err := admin.Open("", "n1", 0)
	require.NoError(t, err)
	p, err := serving.New(l, serving.Options{Admin: st, Logger: slog.New(slog.DiscardHandler), Metrics: serving.NewMetrics(prometheus.NewRegistry())})
	require.NoError(t, err)
	return p
}

func TestParseChanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change whatif.Change
		want   admin.Request
		err    string
	}{
		{"a failed cluster is a force-down of it", whatif.Change{Kind: "fail", Spec: "cluster=east"}, admin.Request{Kind: admin.KindForceDown, Cluster: "east"}, ""},
		{"a failed endpoint names its service and target", whatif.Change{Kind: "fail", Spec: "endpoint=app.gslb.test/192.0.2.1"},
			admin.Request{Kind: admin.KindForceDown, Service: "app.gslb.test", Endpoint: "192.0.2.1"}, ""},
		{"a drain is a drain", whatif.Change{Kind: "drain", Spec: "cluster=eu"}, admin.Request{Kind: admin.KindDrain, Cluster: "eu"}, ""},
		{"a weight takes service, target and weight", whatif.Change{Kind: "weight", Spec: "app.gslb.test/2001:db8::1=0"},
			admin.Request{Kind: admin.KindWeight, Service: "app.gslb.test", Endpoint: "2001:db8::1", Weight: new(0)}, ""},
		{"a weight out of range is refused with what is allowed", whatif.Change{Kind: "weight", Spec: "a/b=1001"}, admin.Request{}, `weight: "a/b=1001" has weight "1001" (allowed: an integer 0..1000)`},
		{"a fail without cluster= or endpoint= is refused", whatif.Change{Kind: "fail", Spec: "east"}, admin.Request{}, `fail: "east" is not cluster=NAME or endpoint=SERVICE/TARGET`},
		{"an endpoint without a service is refused", whatif.Change{Kind: "drain", Spec: "endpoint=192.0.2.1"}, admin.Request{}, "is not endpoint=SERVICE/TARGET"},
		{"an unknown kind is refused", whatif.Change{Kind: "explode", Spec: "cluster=east"}, admin.Request{}, `kind: "explode" is not a simulated change (allowed: fail, drain, weight)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.change.Request()
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSimulate(t *testing.T) {
	t.Run("failing a cluster moves its share to the others and changes nothing served", func(t *testing.T) {
		p := pipeline(t)
		gen := p.State().Snapshot.Generation()
		r, err := (&whatif.Simulator{Source: p}).Simulate(context.Background(), []whatif.Change{{Kind: "fail", Spec: "cluster=east"}})
		require.NoError(t, err)
		assert.Equal(t, gen, p.State().Snapshot.Generation(), "nothing was published")
		assert.Empty(t, p.Overrides(), "nothing was stored")
		assert.Equal(t, []string{"--fail cluster=east"}, r.Changes)
		require.Len(t, r.Services, 2, "app and geo change; other does not")
		assert.Equal(t, 1, r.Same)

		app := r.Services[0]
		assert.Equal(t, "app.gslb.test.", app.Service)
		require.Len(t, app.Places, 1)
		assert.Equal(t, "everywhere", app.Places[0].Place)
		assert.Equal(t, []whatif.Share{{"east", 25}, {"eu", 50}, {"west", 25}}, app.Places[0].Before)
		assert.Equal(t, []whatif.Share{{"eu", 66.7}, {"west", 33.3}}, app.Places[0].After)
		assert.Len(t, app.Places[0].AnswerBefore, 3)
		assert.Len(t, app.Places[0].AnswerAfter, 2)
		require.Len(t, app.Load, 3)
		assert.Equal(t, whatif.ClusterLoad{Cluster: "east", Before: 25, After: 0, ReadyShare: 25, VsReady: 0}, app.Load[0])
		assert.Equal(t, whatif.ClusterLoad{Cluster: "eu", Before: 50, After: 66.7, ReadyShare: 50, VsReady: 1.33}, app.Load[1])
		assert.Equal(t, whatif.ClusterLoad{Cluster: "west", Before: 25, After: 33.3, ReadyShare: 25, VsReady: 1.33}, app.Load[2])
	})

	t.Run("a geo service is compared at every place its rules and clusters name", func(t *testing.T) {
		p := pipeline(t)
		r, err := (&whatif.Simulator{Source: p}).Simulate(context.Background(), []whatif.Change{{Kind: "fail", Spec: "cluster=east"}})
		require.NoError(t, err)
		g := r.Services[1]
		assert.Equal(t, "geo.gslb.test.", g.Service)
		var names []string
		byName := map[string]whatif.PlaceReport{}
		for _, pl := range g.Places {
			names = append(names, pl.Place)
			byName[pl.Place] = pl
		}
		assert.Equal(t, []string{"default", "continent EU", "region us-east", "continent NA", "region eu-west"}, names)
		assert.Equal(t, []whatif.Share{{"east", 100}}, byName["region us-east"].Before)
		assert.Equal(t, []whatif.Share{{"eu", 100}}, byName["region us-east"].After, "us-east clients go to the next clusters")
		assert.Equal(t, byName["continent EU"].Before, byName["continent EU"].After, "EU clients are not affected")
	})

	t.Run("draining an endpoint or setting a weight is simulated like the override", func(t *testing.T) {
		p := pipeline(t)
		r, err := (&whatif.Simulator{Source: p}).Simulate(context.Background(), []whatif.Change{{Kind: "weight", Spec: "app.gslb.test/192.0.2.3=0"}, {Kind: "drain", Spec: "endpoint=app.gslb.test/192.0.2.2"}})
		require.NoError(t, err)
		require.Len(t, r.Services, 1)
		assert.Equal(t, []whatif.Share{{"east", 100}}, r.Services[0].Places[0].After)
	})

	t.Run("a change naming what the config does not have is refused like the admin API refuses it", func(t *testing.T) {
		p := pipeline(t)
		_, err := (&whatif.Simulator{Source: p}).Simulate(context.Background(), []whatif.Change{{Kind: "fail", Spec: "cluster=mars"}})
		require.ErrorContains(t, err, `--fail cluster=mars: cluster: "mars" is not a cluster (allowed: east, west, eu)`)
		_, err = (&whatif.Simulator{Source: p}).Simulate(context.Background(), nil)
		require.ErrorContains(t, err, "give at least one change")
	})
}

func TestLoadCountsTheComparedFamilyOnly(t *testing.T) {
	l, err := serving.Load("test.yaml", []byte(config+`
  - name: dual.gslb.test
    strategy: roundrobin
    endpoints:
      - {address: 192.0.2.31, cluster: east}
      - {address: "2001:db8::31", cluster: east}
      - {address: 192.0.2.32, cluster: west}
`), "")
	require.NoError(t, err)
	p, err := serving.New(l, serving.Options{Logger: slog.New(slog.DiscardHandler), Metrics: serving.NewMetrics(prometheus.NewRegistry())})
	require.NoError(t, err)
	r, err := (&whatif.Simulator{Source: p}).Simulate(context.Background(), []whatif.Change{{Kind: "fail", Spec: "cluster=east"}})
	require.NoError(t, err)
	var dual whatif.ServiceReport
	for _, s := range r.Services {
		if s.Service == "dual.gslb.test." {
			dual = s
		}
	}
	require.Len(t, dual.Load, 2)
	assert.Equal(t, whatif.ClusterLoad{Cluster: "west", Before: 50, After: 100, ReadyShare: 50, VsReady: 2}, dual.Load[1], "the IPv6 endpoint is not part of the A answers' capacity")
}

func TestCompareStopsWhenTheContextIsDone(t *testing.T) {
	snap := pipeline(t).State().Snapshot
	changes := []whatif.Change{{Kind: "fail", Spec: "cluster=east"}}
	t.Run("a live context compares every service", func(t *testing.T) {
		r, err := whatif.Compare(context.Background(), snap, snap, changes)
		require.NoError(t, err)
		assert.Equal(t, 3, r.Same, "the same snapshot twice: nothing changes")
	})
	t.Run("a done context stops before the next service with its error", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := whatif.Compare(ctx, snap, snap, changes)
		require.ErrorIs(t, err, context.Canceled)
	})
}
