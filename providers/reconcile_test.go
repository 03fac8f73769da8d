package providers

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// memProvider is a minimal in-memory provider for reconciler tests (the
// real adapters are tested against their wire-level fakes).
type memProvider struct {
	mu      sync.Mutex
	records map[plan.Key]plan.Record
	reads   int
	writes  int
}

func (m *memProvider) Name() string { return "mem" }

func (m *memProvider) Records(context.Context, string) ([]plan.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	var out []plan.Record
	for _, r := range m.records {
		out = append(out, r)
	}
	return out, nil
}

func (m *memProvider) Apply(_ context.Context, _ string, cs plan.Changes) (Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes++
	for _, r := range cs.Deletes {
		delete(m.records, r.Key())
	}
	for _, u := range cs.Updates {
		m.records[u.New.Key()] = u.New
	}
	for _, r := range cs.Creates {
		m.records[r.Key()] = r
	}
	return Result{Applied: cs.Len(), Calls: 1}, nil
}

const reconcileConfig = `
zones:
  - apex: gslb.example.com
    nameservers:
      - {name: ns1.gslb.example.com, ipv4: [192.0.2.53], node: n1}
      - {name: ns2.gslb.example.com, ipv4: [192.0.2.54], node: n2}
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
services:
  - name: app.gslb.example.com
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 700}
      - {address: 192.0.2.2, cluster: west, weight: 300}
`

func desired(t *testing.T) *model.Desired {
	f, err := config.Parse("t.yaml", []byte(reconcileConfig))
	require.NoError(t, err)
	return &f.Desired
}

// simple publishes one A record per service with its effective endpoints.
func simple(views []ServiceView, _ string) []plan.Record {
	var out []plan.Record
	for _, v := range views {
		r := plan.Record{Name: v.Name, Type: "A", TTL: v.TTL}
		for _, e := range v.Endpoints {
			if e.Effective > 0 {
				r.Values = append(r.Values, e.Target)
			}
		}
		r.Normalize()
		out = append(out, r)
	}
	return out
}

type downHealth struct{ target string }

func (h downHealth) Endpoint(_, target string) engine.State {
	if target == h.target {
		return engine.Down
	}
	return engine.Unknown
}
func (downHealth) Cluster(string) engine.State { return engine.Unknown }

func TestReconcilerIsIdempotentAndFollowsHealth(t *testing.T) {
	mem := &memProvider{records: map[plan.Key]plan.Record{}}
	d := desired(t)
	var health engine.Health
	r := &Reconciler{
		Zones:  []Zone{{Provider: mem, Zone: "example.com.", Mode: model.ModeDirect, Translate: simple}},
		Owner:  "me",
		State:  func() State { return State{Desired: d, Health: health} },
		Logger: slog.New(slog.DiscardHandler),
	}
	ctx := context.Background()
	res := r.Sync(ctx, false, false)
	require.NoError(t, res[0].Err)
	assert.Equal(t, 2, res[0].Applied.Applied, "record + ownership TXT")
	assert.Equal(t, []string{"192.0.2.1", "192.0.2.2"}, mem.records[plan.Key{Name: "app.gslb.example.com.", Type: "A"}].Values)

	writes := mem.writes
	res = r.Sync(ctx, false, false)
	require.NoError(t, res[0].Err)
	assert.Equal(t, writes, mem.writes, "a second pass with no change makes zero write calls")

	health = downHealth{target: "192.0.2.1"}
	r.Sync(ctx, false, false)
	assert.Equal(t, []string{"192.0.2.2"}, mem.records[plan.Key{Name: "app.gslb.example.com.", Type: "A"}].Values, "the failed endpoint left the record")
}

func TestReconcilerWritesOnlyAsTheWriterAndDryRunWritesNothing(t *testing.T) {
	mem := &memProvider{records: map[plan.Key]plan.Record{}}
	d := desired(t)
	writer := false
	r := &Reconciler{
		Zones:    []Zone{{Provider: mem, Zone: "example.com.", Mode: model.ModeDirect, Translate: simple}},
		Owner:    "me",
		State:    func() State { return State{Desired: d} },
		IsWriter: func() bool { return writer },
		Logger:   slog.New(slog.DiscardHandler),
	}
	res := r.Sync(context.Background(), false, false)
	assert.Equal(t, "not the elected writer", res[0].Skipped)
	assert.Zero(t, mem.reads+mem.writes)
	res = r.Sync(context.Background(), true, false)
	assert.Equal(t, "dry run", res[0].Skipped)
	assert.Equal(t, 2, res[0].Plan.Changes.Len(), "the dry run shows the plan")
	assert.Zero(t, mem.writes)
	writer = true
	r.Sync(context.Background(), false, false)
	assert.Equal(t, 1, mem.writes)
}

func TestPeriodicResyncRepairsAndCountsDrift(t *testing.T) {
	mem := &memProvider{records: map[plan.Key]plan.Record{}}
	d := desired(t)
	r := &Reconciler{
		Zones:   []Zone{{Provider: mem, Zone: "example.com.", Mode: model.ModeDirect, Translate: simple}},
		Owner:   "me",
		State:   func() State { return State{Desired: d} },
		Logger:  slog.New(slog.DiscardHandler),
		Metrics: NewReconcileMetrics(nil),
	}
	r.Sync(context.Background(), false, false)
	// Someone edits our record by hand.
	k := plan.Key{Name: "app.gslb.example.com.", Type: "A"}
	rec := mem.records[k]
	rec.Values = []string{"203.0.113.66"}
	mem.records[k] = rec
	r.Sync(context.Background(), false, true)
	assert.Equal(t, []string{"192.0.2.1", "192.0.2.2"}, mem.records[k].Values)
	assert.Equal(t, 1.0, testutil.ToFloat64(r.Metrics.Drift.WithLabelValues("mem", "example.com.")))
}

func TestRunSyncsOnTriggerAfterTheDebounce(t *testing.T) {
	mem := &memProvider{records: map[plan.Key]plan.Record{}}
	d := desired(t)
	r := &Reconciler{
		Zones:    []Zone{{Provider: mem, Zone: "example.com.", Mode: model.ModeDirect, Translate: simple}},
		Owner:    "me",
		State:    func() State { return State{Desired: d} },
		Debounce: 20 * time.Millisecond,
		Resync:   time.Hour,
		Logger:   slog.New(slog.DiscardHandler),
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.Run(ctx)
	require.Eventually(t, func() bool { mem.mu.Lock(); defer mem.mu.Unlock(); return mem.reads == 1 }, time.Second, 5*time.Millisecond, "first sync at start")
	for range 5 {
		r.Trigger() // a burst of snapshots
	}
	require.Eventually(t, func() bool { mem.mu.Lock(); defer mem.mu.Unlock(); return mem.reads == 2 }, time.Second, 5*time.Millisecond)
	time.Sleep(60 * time.Millisecond)
	mem.mu.Lock()
	defer mem.mu.Unlock()
	assert.Equal(t, 2, mem.reads, "the burst was debounced into one sync")
}

// objectProvider is a memProvider that also keeps objects, logging the
// order of the reconciler's calls.
type objectProvider struct {
	memProvider
	calls    []string
	applyErr error
	refuse   bool // Apply refuses every change (a nil error)
	panics   bool // Apply panics
	notice   string
}

func (o *objectProvider) PrepareObjects(_ context.Context, _ string, views []ServiceView, dryRun bool) (ObjectResult, error) {
	o.calls = append(o.calls, fmt.Sprintf("prepare dry=%v views=%d", dryRun, len(views)))
	return ObjectResult{Changes: []ObjectChange{{Kind: KindPool, Name: "east", Op: "create"}}, Calls: 1, Notice: o.notice}, nil
}

func (o *objectProvider) CollectObjects(_ context.Context, _ string, dryRun bool) (ObjectResult, error) {
	o.calls = append(o.calls, fmt.Sprintf("collect dry=%v", dryRun))
	return ObjectResult{Changes: []ObjectChange{{Kind: KindMonitor, Name: "old", Op: "delete"}}}, nil
}

func (o *objectProvider) Apply(ctx context.Context, zone string, cs plan.Changes) (Result, error) {
	o.calls = append(o.calls, "apply")
	if o.panics {
		panic("runtime error: invalid memory address or nil pointer dereference") // what an unexpected provider answer can lead to
	}
	if o.applyErr != nil {
		return Result{}, o.applyErr
	}
	if o.refuse {
		var res Result
		for _, r := range cs.Creates {
			res.Failed = append(res.Failed, FailedChange{Key: r.Key(), Op: "create", Err: fmt.Errorf("refused")})
		}
		return res, nil
	}
	return o.memProvider.Apply(ctx, zone, cs)
}

func TestObjectsArePreparedBeforeTheRecordsAndCollectedOnlyAfterThemSucceeded(t *testing.T) {
	p := &objectProvider{memProvider: memProvider{records: map[plan.Key]plan.Record{}}, notice: "no load balancing"}
	d := desired(t)
	translated := 0
	r := &Reconciler{
		Zones: []Zone{{Provider: p, Zone: "example.com.", Mode: model.ModeDirect, Translate: func(v []ServiceView, z string) []plan.Record {
			translated++
			p.calls = append(p.calls, "translate")
			return simple(v, z)
		}}},
		Owner:  "me",
		State:  func() State { return State{Desired: d} },
		Logger: slog.New(slog.DiscardHandler),
	}
	ctx := context.Background()

	res := r.Sync(ctx, true, false)
	require.NoError(t, res[0].Err)
	assert.Equal(t, []string{"prepare dry=true views=1", "translate", "collect dry=true"}, p.calls, "a dry run plans objects on both sides of the records and writes nothing")
	assert.Len(t, res[0].Objects.Changes, 2)
	assert.Empty(t, p.records)

	p.calls = nil
	res = r.Sync(ctx, false, false)
	require.NoError(t, res[0].Err)
	assert.Equal(t, []string{"prepare dry=false views=1", "translate", "apply", "collect dry=false"}, p.calls)
	assert.Equal(t, 1.0, testutil.ToFloat64(r.Metrics.ObjectChanges.WithLabelValues("mem", "example.com.", KindPool, "applied")))
	st := r.Status()
	require.Len(t, st, 1)
	assert.Equal(t, "no load balancing", st[0].Notice, "the adapter's notice reaches the status")
	assert.Empty(t, st[0].Error)
	assert.False(t, st[0].LastSync.IsZero())

	p.calls, p.applyErr = nil, fmt.Errorf("boom: %w", ErrTransient)
	d2 := desired(t)
	d2.Services[0].Endpoints[0].Drain = true // something to write
	r.State = func() State { return State{Desired: d2} }
	res = r.Sync(ctx, false, false)
	require.Error(t, res[0].Err)
	assert.Equal(t, []string{"prepare dry=false views=1", "translate", "apply"}, p.calls, "objects the records may still use are not deleted after a failed apply")
	assert.Contains(t, r.Status()[0].Error, "boom")
}

func TestDelegatedZonesHaveNoObjects(t *testing.T) {
	p := &objectProvider{memProvider: memProvider{records: map[plan.Key]plan.Record{}}}
	d := desired(t)
	r := &Reconciler{
		Zones:  []Zone{{Provider: p, Zone: "example.com.", Mode: model.ModeDelegate}},
		Owner:  "me",
		State:  func() State { return State{Desired: d, Live: func(string) bool { return true }} },
		Logger: slog.New(slog.DiscardHandler),
	}
	res := r.Sync(context.Background(), false, false)
	require.NoError(t, res[0].Err)
	assert.Equal(t, []string{"apply"}, p.calls)
}

func TestObjectsAreNotCollectedAfterARefusedRecordChange(t *testing.T) {
	p := &objectProvider{memProvider: memProvider{records: map[plan.Key]plan.Record{}}, refuse: true}
	d := desired(t)
	r := &Reconciler{
		Zones:  []Zone{{Provider: p, Zone: "example.com.", Mode: model.ModeDirect, Translate: simple}},
		Owner:  "me",
		State:  func() State { return State{Desired: d} },
		Logger: slog.New(slog.DiscardHandler),
	}
	res := r.Sync(context.Background(), false, false)
	require.NoError(t, res[0].Err)
	require.NotEmpty(t, res[0].Applied.Failed)
	assert.Equal(t, []string{"prepare dry=false views=1", "apply"}, p.calls, "a refused record may still refer to an object Collect would delete")
}

func TestAPanickingProviderFailsTheZoneNotTheProcess(t *testing.T) {
	p := &objectProvider{memProvider: memProvider{records: map[plan.Key]plan.Record{}}, panics: true}
	d := desired(t)
	r := &Reconciler{
		Zones:  []Zone{{Provider: p, Zone: "example.com.", Mode: model.ModeDirect, Translate: simple}},
		Owner:  "me",
		State:  func() State { return State{Desired: d} },
		Logger: slog.New(slog.DiscardHandler),
	}
	res := r.Sync(context.Background(), false, false)
	require.Error(t, res[0].Err)
	assert.Contains(t, res[0].Err.Error(), "sync panicked")
	assert.Equal(t, 1.0, testutil.ToFloat64(r.Metrics.Panics.WithLabelValues("mem", "example.com.")))
	assert.Contains(t, r.Status()[0].Error, "panicked", "the status page shows it")

	p.panics = false
	res = r.Sync(context.Background(), false, false)
	require.NoError(t, res[0].Err, "the next pass works")
}

// countingHandler counts the warnings logged.
type countingHandler struct {
	mu       sync.Mutex
	warnings []string
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		h.mu.Lock()
		h.warnings = append(h.warnings, r.Message)
		h.mu.Unlock()
	}
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

func TestStickyServicesAreWarnedAboutInDirectZonesOnly(t *testing.T) {
	tests := []struct {
		name   string
		mode   string
		zone   string
		sticky bool
		want   []string // substrings of the one warning; nil = no warning
	}{
		{"a direct zone with a sticky service gets one warning per pass, logged once", model.ModeDirect, "example.com.", true,
			[]string{"mem cannot express sticky answers: app.gslb.example.com. (sticky: subnet)", "without per-network stickiness"}},
		{"a delegated zone is answered by Meridian itself: no warning", model.ModeDelegate, "example.com.", true, nil},
		{"a direct zone without sticky services has no warning", model.ModeDirect, "example.com.", false, nil},
		{"a sticky service outside the zone is not this zone's warning", model.ModeDirect, "other.example.", true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := desired(t)
			if tc.sticky {
				d.Services[0].Sticky = model.StickySubnet
			}
			h := &countingHandler{}
			r := &Reconciler{
				Zones:  []Zone{{Provider: &memProvider{records: map[plan.Key]plan.Record{}}, Zone: tc.zone, Mode: tc.mode, Translate: simple}},
				Owner:  "me",
				State:  func() State { return State{Desired: d, Live: func(string) bool { return true }} },
				Logger: slog.New(h),
			}
			dry := r.Sync(context.Background(), true, false)
			require.Len(t, dry, 1)
			if tc.want == nil {
				assert.Empty(t, dry[0].Warnings)
				r.Sync(context.Background(), false, false)
				assert.Empty(t, h.warnings)
				return
			}
			require.Len(t, dry[0].Warnings, 1, "one warning for the zone, in the dry run's result")
			for _, w := range tc.want {
				assert.Contains(t, dry[0].Warnings[0], w)
			}
			assert.Empty(t, h.warnings, "a dry run prints the warning instead of logging it")
			for range 3 {
				res := r.Sync(context.Background(), false, false)
				require.NoError(t, res[0].Err)
				assert.Len(t, res[0].Warnings, 1)
			}
			assert.Equal(t, []string{"provider cannot express a setting"}, h.warnings, "logged once over three passes")
		})
	}
}
