package cloudflare

import (
	"context"
	"math/rand/v2"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/cloudflare/cffake"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// newLBEnv is an env whose Provider writes load balancers (mode: required
// or preferred).
func newLBEnv(t *testing.T, mode string, opts Options) *env {
	t.Helper()
	opts.LoadBalancing, opts.OwnerID = mode, ownerID
	opts.Registerer = nil
	return newEnv(t, opts)
}

// pass is one reconciler pass over the zone, as providers.Reconciler makes
// it for a direct-mode zone: PrepareObjects, the records (Desired, plan,
// Apply), CollectObjects.
type pass struct {
	prepare, collect providers.ObjectResult
	plan             plan.Plan
	applied          providers.Result
}

func (e *env) pass(t *testing.T, views []providers.ServiceView) pass {
	t.Helper()
	ps, err := e.tryPass(context.Background(), views, false)
	require.NoError(t, err)
	return ps
}

func (e *env) tryPass(ctx context.Context, views []providers.ServiceView, dryRun bool) (pass, error) {
	var ps pass
	var err error
	if ps.prepare, err = e.p.PrepareObjects(ctx, zoneName, views, dryRun); err != nil {
		return ps, err
	}
	cur, err := e.p.Records(ctx, zoneName)
	if err != nil {
		return ps, err
	}
	ps.plan = plan.Compute(plan.Input{Owner: ownerID, Desired: e.p.Desired(views, zoneName), Current: cur})
	if !dryRun {
		if ps.applied, err = e.p.Apply(ctx, zoneName, ps.plan.Changes); err != nil {
			return ps, err
		}
	}
	ps.collect, err = e.p.CollectObjects(ctx, zoneName, dryRun)
	return ps, err
}

func (ps pass) writes() int { return ps.prepare.Calls + ps.applied.Calls + ps.collect.Calls }

func (ps pass) failed() []providers.ObjectChange {
	var out []providers.ObjectChange
	for _, c := range append(ps.prepare.Changes, ps.collect.Changes...) {
		if c.Err != nil {
			out = append(out, c)
		}
	}
	return out
}

// weighted is a weighted service with one address per cluster.
func weighted(name string, eps ...providers.EndpointView) providers.ServiceView {
	return providers.ServiceView{Name: name, Strategy: model.StrategyWeighted, TTL: 60, Endpoints: eps}
}

// up is an available endpoint with configured weight w.
func up(target, cluster string, w int) providers.EndpointView {
	typ := "A"
	if target[len(target)-1] == '.' {
		typ = "CNAME"
	}
	return providers.EndpointView{Target: target, Type: typ, Cluster: cluster, Weight: w, Available: true, Effective: w}
}

// shares resolves name n times for client c and returns the share of each address.
func (e *env) shares(t *testing.T, name string, c cffake.Client, n int) map[string]float64 {
	t.Helper()
	rnd := rand.New(rand.NewPCG(1, 2))
	counts := map[string]int{}
	for range n {
		a, err := e.srv.Resolve(name, c, rnd)
		require.NoError(t, err)
		counts[a.Address]++
	}
	out := map[string]float64{}
	for k, v := range counts {
		out[k] = float64(v) / float64(n)
	}
	return out
}

func TestLoadBalancingKeepsAWeightedSplit(t *testing.T) {
	e := newLBEnv(t, model.LoadBalancingRequired, Options{})
	views := []providers.ServiceView{weighted("app.example.com.", up("10.0.0.1", "eu", 70), up("10.0.1.1", "us", 30))}
	ps := e.pass(t, views)
	require.Empty(t, ps.failed())
	assert.Equal(t, 3, ps.prepare.Calls, "two pools and a load balancer")
	assert.Empty(t, e.contents(), "no plain records beside the load balancer")

	got := e.shares(t, "app.example.com", cffake.Client{Country: "DE"}, 20000)
	t.Logf("70/30 over 20000 answers: %.4f / %.4f", got["10.0.0.1"], got["10.0.1.1"])
	assert.InDelta(t, 0.70, got["10.0.0.1"], 0.015)
	assert.InDelta(t, 0.30, got["10.0.1.1"], 0.015)

	again := e.pass(t, views)
	assert.Zero(t, again.writes(), "%+v", again)
	assert.Empty(t, again.prepare.Changes)
	assert.Equal(t, 0, e.srv.Calls(http.MethodGet, "/zones/{zone}")-1, "the account is looked up once")
}
