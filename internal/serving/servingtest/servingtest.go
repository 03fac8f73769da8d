// Package servingtest holds the helpers the tests of the pipeline's
// packages share (follow, shift/runner, kube/merge, whatif): a small config
// with one service in two clusters, loading it, building a pipeline and
// reading the answers it serves. Only tests import it.
package servingtest

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/failover"
	"github.com/meridian-gslb/meridian/internal/serving"
)

// BaseConfig serves app.gslb.test from two clusters, east (192.0.2.1) and
// west (192.0.2.2), in the zone gslb.test.
const BaseConfig = `
zones:
  - apex: gslb.test
    soa: {serial: 7, minimum: 20}
    nameservers: [{name: ns1.gslb.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
services:
  - name: app.gslb.test
    endpoints:
      - {address: 192.0.2.1, cluster: east}
      - {address: 192.0.2.2, cluster: west}
`

// Load loads a config text as serving.Load does, failing the test on an error.
func Load(t testing.TB, text string) *serving.Loaded {
	t.Helper()
	l, err := serving.Load("test.yaml", []byte(text), "")
	require.NoError(t, err)
	return l
}

// New builds a pipeline on l; a nil Metrics or Logger in opts gets a
// private registry or a discarding logger.
func New(t testing.TB, l *serving.Loaded, opts serving.Options) *serving.Pipeline {
	t.Helper()
	if opts.Metrics == nil {
		opts.Metrics = serving.NewMetrics(prometheus.NewRegistry())
	}
	if opts.Logger == nil {
		opts.Logger = Discard()
	}
	p, err := serving.New(l, opts)
	require.NoError(t, err)
	return p
}

// Answers returns the A records the pipeline's snapshot gives for name.
func Answers(t testing.TB, p *serving.Pipeline, name string) map[string]bool {
	t.Helper()
	return SnapshotAnswers(t, p.Store().Load(), name)
}

// SnapshotAnswers returns the A records snap gives for name: enough draws
// that every address in the answer set shows up.
func SnapshotAnswers(t testing.TB, snap *engine.Snapshot, name string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	require.NotNil(t, snap)
	for range 64 {
		var r engine.Result
		snap.Lookup(name, dns.TypeA, engine.Client{}, &r)
		for _, rr := range r.Answer {
			if a, ok := rr.(*dns.A); ok {
				out[a.A.String()] = true
			}
		}
	}
	return out
}

// Shares draws n A answers of name from p's served snapshot and returns
// the percent of them each address got (first record of each reply).
func Shares(t testing.TB, p *serving.Pipeline, name string, n int) map[string]float64 {
	t.Helper()
	snap := p.State().Snapshot
	require.NotNil(t, snap)
	hits := map[string]int{}
	for range n {
		var r engine.Result
		snap.Lookup(name, dns.TypeA, engine.Client{}, &r)
		if len(r.Answer) > 0 {
			if a, ok := r.Answer[0].(*dns.A); ok {
				hits[a.A.String()]++
			}
		}
	}
	out := map[string]float64{}
	for a, h := range hits {
		out[a] = 100 * float64(h) / float64(n)
	}
	return out
}

// MemoryAdmin is an admin store kept in memory, for node.
func MemoryAdmin(t testing.TB, node string) *admin.Store {
	t.Helper()
	s, err := admin.Open("", node, 0)
	require.NoError(t, err)
	return s
}

// Discard is a logger that writes nothing.
func Discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// DecisionDown is the decision p's state would get now with the endpoints
// at targets down by their probes (set by hand: the decision's own rules
// are internal/failover's tests), for tests of what a probe-down endpoint
// does to the answers (fail-open, for one) apart from an operator's down.
func DecisionDown(t testing.TB, p *serving.Pipeline, targets ...string) *failover.Decision {
	t.Helper()
	st := p.State()
	require.NotNil(t, st, "the pipeline has a state")
	in := failover.Input{Desired: &st.Effective.Desired, Now: time.Now(), Prev: st.Decision}
	d := failover.Decide(in, failover.ParamsFrom(&st.Effective.Desired))
	for i := range d.Endpoints {
		if slices.Contains(targets, d.Endpoints[i].Subject.Target) {
			d.Endpoints[i].State = failover.Down
		}
	}
	d.StatesChanged = true
	return d
}
