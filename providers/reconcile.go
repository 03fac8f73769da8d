package providers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// Zone is one provider zone the reconciler keeps equal to the decisions.
type Zone struct {
	Provider Provider
	Zone     string // canonical zone name, e.g. example.com.
	Mode     string // model.ModeDirect or model.ModeDelegate
	// Translate maps the service views to the provider's records (direct
	// mode); adapters provide it.
	Translate func(views []ServiceView, zone string) []plan.Record
}

// State is what the reconciler publishes: the desired state, the decided
// health, and for delegations which ring nodes are live, the effective
// nameservers and the keys of the signed zones.
type State struct {
	Desired *model.Desired
	Health  engine.Health
	Live    func(node string) bool
	// Nameservers returns the effective nameservers of a zone, the input of
	// its delegation (nil: EffectiveNameservers(Live), the configured ones
	// whose ring node is live). A list known at run time goes here.
	Nameservers func(z *model.Zone) []model.Nameserver
	// DNSKEY returns the DNSKEY RRset a signed zone serves, for the DS of
	// its delegation (nil: none known; a signed zone's delegation then
	// fails rather than be written without DS).
	DNSKEY func(apex string) []dns.RR
	// KeepNameserver says, of a nameserver the parent's delegation holds
	// now but the state does not, whether to keep it (KeepUnseen): the
	// ring's nameserver of a site this node has not seen (nil: none kept).
	KeepNameserver func(nsName string) bool
	// Changed is when the decision behind this state was made (for the
	// decision-to-applied metric); zero if unknown.
	Changed time.Time
	// Capacity holds the ready fractions of capacity-aware services (nil:
	// configured weights), the same the engine answers with.
	Capacity engine.Capacity
}

// Reconciler keeps every Zone equal to the current State. It writes only
// while IsWriter reports true.
type Reconciler struct {
	Zones    []Zone
	Owner    string
	State    func() State
	IsWriter func() bool // nil: always
	Debounce time.Duration
	Resync   time.Duration
	Logger   *slog.Logger
	Metrics  *ReconcileMetrics

	trigger chan struct{}
	once    sync.Once
	mu      sync.Mutex
	dirty   bool // a trigger arrived since the last successful sync (so a non-empty plan is not drift)
	status  map[string]*ZoneStatus
	warned  map[string]string // provider+zone → the last warning logged
}

// ZoneResult is the outcome of one zone's sync.
type ZoneResult struct {
	Provider string
	Zone     string
	Plan     plan.Plan
	Applied  Result
	Objects  ObjectResult // load balancers, pools, monitors, health checks... (adapters that are ObjectSyncers)
	Skipped  string       // why nothing was written (dry run, not the writer)
	// Warnings say what the zone's records cannot express that Meridian's
	// own answers do (sticky answers), once per zone and pass.
	Warnings []string
	Err      error
	Duration time.Duration
}

func (r *Reconciler) init() {
	r.once.Do(func() {
		r.trigger = make(chan struct{}, 1)
		if r.Logger == nil {
			r.Logger = slog.Default()
		}
		if r.Metrics == nil {
			r.Metrics = NewReconcileMetrics(nil)
		}
		if r.Debounce <= 0 {
			r.Debounce = model.DefaultProviderDebounce
		}
		if r.Resync <= 0 {
			r.Resync = model.DefaultProviderResync
		}
	})
}

// Trigger asks for a sync after the debounce (a new snapshot). It never blocks.
func (r *Reconciler) Trigger() {
	r.init()
	r.mu.Lock()
	r.dirty = true
	r.mu.Unlock()
	select {
	case r.trigger <- struct{}{}:
	default:
	}
}

// Run syncs on triggers (debounced) and every Resync until ctx is done.
func (r *Reconciler) Run(ctx context.Context) {
	r.init()
	resync := time.NewTicker(r.Resync)
	defer resync.Stop()
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	backoff := time.Duration(0)
	first := time.After(0)
	for {
		periodic := false
		select {
		case <-ctx.Done():
			return
		case <-r.trigger:
			debounce.Reset(r.Debounce)
			continue
		case <-debounce.C:
		case <-first:
		case <-retry.C:
		case <-resync.C:
			periodic = true
		}
		failed := false
		for _, res := range r.Sync(ctx, false, periodic) {
			failed = failed || res.Err != nil
		}
		// A failed sync (throttled past the adapter's retries, a network
		// error) is tried again soon, not at the next resync: a failover
		// must not wait minutes to reach the provider.
		if failed && ctx.Err() == nil {
			backoff = min(max(2*backoff, retryMin), retryMax)
			retry.Reset(backoff)
			r.Logger.Info("provider sync will be retried", "in", backoff)
		} else {
			backoff = 0
		}
	}
}

// Retry delays after a failed sync (doubling).
const (
	retryMin = 2 * time.Second
	retryMax = time.Minute
)

// Sync reconciles every zone once. With dryRun nothing is written. With
// periodic, a non-empty plan without a trigger since the last sync is
// counted as drift.
func (r *Reconciler) Sync(ctx context.Context, dryRun, periodic bool) []ZoneResult {
	r.init()
	st := r.State()
	r.mu.Lock()
	wasDirty := r.dirty
	r.dirty = false
	r.mu.Unlock()
	var views []ServiceView
	viewsOnce := func() []ServiceView {
		if views == nil {
			views = ServicesWithCapacity(st.Desired, st.Health, st.Capacity)
		}
		return views
	}
	out := make([]ZoneResult, 0, len(r.Zones))
	allOK := true
	for _, z := range r.Zones {
		res := r.syncZone(ctx, z, st, viewsOnce, dryRun)
		if res.Err == nil && !dryRun && res.Skipped == "" {
			if periodic && !wasDirty && res.Plan.Changes.Len() > 0 {
				r.Metrics.Drift.WithLabelValues(res.Provider, z.Zone).Add(float64(res.Plan.Changes.Len()))
				r.Logger.Warn("provider drift repaired on resync", "provider", res.Provider, "zone", z.Zone, "changes", res.Plan.Changes.Len())
			}
			if !st.Changed.IsZero() && res.Applied.Applied > 0 {
				r.Metrics.DecisionToApplied.WithLabelValues(res.Provider).Observe(time.Since(st.Changed).Seconds())
			}
		}
		if res.Err != nil {
			allOK = false
		}
		out = append(out, res)
	}
	if !allOK {
		r.mu.Lock()
		r.dirty = r.dirty || wasDirty // try again on the next pass
		r.mu.Unlock()
	}
	return out
}

// syncZone reconciles one zone: the provider's objects prepared, the
// records planned and applied, the objects no longer used collected. With
// dryRun it only plans.
func (r *Reconciler) syncZone(ctx context.Context, z Zone, st State, views func() []ServiceView, dryRun bool) (res ZoneResult) {
	start := time.Now()
	res = ZoneResult{Provider: z.Provider.Name(), Zone: z.Zone}
	labels := []string{res.Provider, z.Zone}
	if !dryRun && r.IsWriter != nil && !r.IsWriter() {
		res.Skipped = "not the elected writer"
		return res
	}
	defer func() { r.record(res) }()
	defer r.recoverSync(&res, labels)
	objects, _ := z.Provider.(ObjectSyncer)
	if z.Mode == model.ModeDelegate {
		objects = nil
	} else {
		w := StickyWarning(res.Provider, z.Zone, views())
		if w != "" {
			res.Warnings = append(res.Warnings, w)
		}
		r.warnOnce(res.Provider, z.Zone, w, dryRun)
	}
	if objects != nil {
		o, err := objects.PrepareObjects(ctx, z.Zone, views(), dryRun)
		r.objectsDone(&res, o, dryRun)
		if err != nil {
			res.Err = fmt.Errorf("%s zone %s: prepare %s: %w", res.Provider, z.Zone, objectKinds(o), err)
			r.fail(res, labels)
			return res
		}
	}
	if res.Err = r.planRecords(ctx, z, st, views, &res); res.Err != nil {
		r.fail(res, labels)
		return res
	}
	if dryRun {
		if objects != nil {
			o, err := objects.CollectObjects(ctx, z.Zone, true)
			r.objectsDone(&res, o, true)
			if err != nil {
				res.Err = fmt.Errorf("%s zone %s: plan deletes of %s: %w", res.Provider, z.Zone, objectKinds(o), err)
				return res
			}
		}
		res.Skipped = "dry run"
		res.Duration = time.Since(start)
		return res
	}
	if res.Err = r.applyPlan(ctx, z, &res); res.Err == nil {
		res.Err = r.collectObjects(ctx, z, objects, &res)
	}
	if res.Err != nil {
		r.fail(res, labels)
		return res
	}
	res.Duration = time.Since(start)
	r.Metrics.Syncs.WithLabelValues(res.Provider, z.Zone, "success").Inc()
	r.Metrics.LastSync.WithLabelValues(labels...).SetToCurrentTime()
	return res
}

// recoverSync, deferred by syncZone, turns a panic on an odd provider
// answer into the failure of this zone's pass, not of the process: it is
// counted, logged and retried like any failure.
func (r *Reconciler) recoverSync(res *ZoneResult, labels []string) {
	if p := recover(); p != nil {
		r.Metrics.Panics.WithLabelValues(labels...).Inc()
		res.Err = fmt.Errorf("%s zone %s: sync panicked: %v", res.Provider, res.Zone, p)
		r.Logger.Error("provider sync panicked: recovered", "provider", res.Provider, "zone", res.Zone, "panic", p, "stack", string(debug.Stack()))
		r.Metrics.Syncs.WithLabelValues(res.Provider, res.Zone, "failure").Inc()
	}
}

// planRecords computes res.Plan: the zone's desired records (the
// delegations of a delegate zone, else the translated services) against
// the records the provider holds; conflicts are counted and logged.
func (r *Reconciler) planRecords(ctx context.Context, z Zone, st State, views func() []ServiceView, res *ZoneResult) error {
	var desired []plan.Record
	if z.Mode == model.ModeDelegate {
		ns := st.Nameservers
		if ns == nil {
			ns = EffectiveNameservers(st.Live)
		}
		var err error
		desired, err = Delegation(z.Zone, DelegatedZones(st.Desired, res.Provider, z.Zone, ns, st.DNSKEY))
		if err != nil {
			return fmt.Errorf("%s zone %s: delegation: %w", res.Provider, z.Zone, err)
		}
	} else {
		desired = z.Translate(views(), z.Zone)
	}
	current, err := z.Provider.Records(ctx, z.Zone)
	if err != nil {
		return fmt.Errorf("%s zone %s: read records: %w", res.Provider, z.Zone, err)
	}
	if z.Mode == model.ModeDelegate {
		desired = KeepUnseen(desired, current, st.KeepNameserver)
	}
	res.Plan = plan.Compute(plan.Input{Owner: r.Owner, Desired: desired, Current: current})
	r.Metrics.Conflicts.WithLabelValues(res.Provider, z.Zone).Set(float64(len(res.Plan.Conflicts)))
	for _, c := range res.Plan.Conflicts {
		r.Logger.Warn("provider record not written: not ours", "provider", res.Provider, "zone", z.Zone, "record", c.Key.String(), "reason", c.Reason)
	}
	return nil
}

// applyPlan applies res.Plan's changes (if any) into res.Applied, counting
// and logging what the provider applied and refused.
func (r *Reconciler) applyPlan(ctx context.Context, z Zone, res *ZoneResult) error {
	if res.Plan.Changes.Empty() {
		return nil
	}
	var err error
	res.Applied, err = z.Provider.Apply(ctx, z.Zone, res.Plan.Changes)
	for _, f := range res.Applied.Failed {
		r.Logger.Error("provider refused a change", "provider", res.Provider, "zone", z.Zone, "op", f.Op, "record", f.Key.String(), "err", f.Err)
	}
	r.Metrics.Changes.WithLabelValues(res.Provider, z.Zone, "applied").Add(float64(res.Applied.Applied))
	r.Metrics.Changes.WithLabelValues(res.Provider, z.Zone, "failed").Add(float64(len(res.Applied.Failed)))
	if err != nil {
		return fmt.Errorf("%s zone %s: apply %d changes: %w", res.Provider, z.Zone, res.Plan.Changes.Len(), err)
	}
	r.Logger.Info("provider synced", "provider", res.Provider, "zone", z.Zone, "creates", len(res.Plan.Changes.Creates),
		"updates", len(res.Plan.Changes.Updates), "deletes", len(res.Plan.Changes.Deletes), "failed", len(res.Applied.Failed), "calls", res.Applied.Calls)
	return nil
}

// collectObjects deletes the provider's objects the applied records no
// longer use (objects nil: none), on a pass without refused record changes
// only: a refused change may leave a record that still refers to an object
// Collect would delete (real Route 53 deletes a health check a record set
// still uses).
func (r *Reconciler) collectObjects(ctx context.Context, z Zone, objects ObjectSyncer, res *ZoneResult) error {
	if objects == nil {
		return nil
	}
	if len(res.Applied.Failed) > 0 {
		r.Logger.Warn("provider objects not collected: some record changes were refused", "provider", res.Provider, "zone", z.Zone, "refused", len(res.Applied.Failed))
		return nil
	}
	o, err := objects.CollectObjects(ctx, z.Zone, false)
	r.objectsDone(res, o, false)
	if err != nil {
		return fmt.Errorf("%s zone %s: delete unused %s: %w", res.Provider, z.Zone, objectKinds(o), err)
	}
	return nil
}

// StickyWarning says which services of zone are sticky (sticky: subnet)
// although the provider's records cannot be: Route 53 and Cloudflare
// answer each query by their own weighted or even rotation, so a client
// network does not keep its answer there. "" when there is none.
func StickyWarning(provider, zone string, views []ServiceView) string {
	var names []string
	for _, v := range views {
		if v.Sticky && dns.IsSubDomain(zone, v.Name) {
			names = append(names, v.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	const show = 5
	list := strings.Join(names[:min(len(names), show)], ", ")
	if len(names) > show {
		list += fmt.Sprintf(" and %d more", len(names)-show)
	}
	return fmt.Sprintf("%s cannot express sticky answers: %s (sticky: subnet) are answered from this zone's records without per-network stickiness; "+
		"only Meridian's own DNS answers (delegate mode) keep a client network on its answer", provider, list)
}

// warnOnce logs a zone's warning when it differs from the last one logged
// for that zone (not for dry runs, whose output carries it); "" forgets it.
func (r *Reconciler) warnOnce(provider, zone, msg string, dryRun bool) {
	if dryRun {
		return
	}
	r.mu.Lock()
	if r.warned == nil {
		r.warned = map[string]string{}
	}
	key := provider + " " + zone
	seen := r.warned[key] == msg
	if msg == "" {
		delete(r.warned, key)
	} else {
		r.warned[key] = msg
	}
	r.mu.Unlock()
	if !seen && msg != "" {
		r.Logger.Warn("provider cannot express a setting", "provider", provider, "zone", zone, "warning", msg)
	}
}

// objectsDone counts and logs the object changes of one ObjectSyncer call
// and adds them to res.
func (r *Reconciler) objectsDone(res *ZoneResult, o ObjectResult, dryRun bool) {
	res.Objects.add(o)
	if dryRun {
		return
	}
	for _, c := range o.Changes {
		result := "applied"
		if c.Err != nil {
			result = "failed"
			r.Logger.Error("provider refused an object change", "provider", res.Provider, "zone", res.Zone, "kind", c.Kind, "object", c.Name, "op", c.Op, "err", c.Err)
		} else {
			r.Logger.Info("provider object changed", "provider", res.Provider, "zone", res.Zone, "kind", c.Kind, "object", c.Name, "op", c.Op, "detail", c.Detail)
		}
		r.Metrics.ObjectChanges.WithLabelValues(res.Provider, res.Zone, c.Kind, result).Inc()
	}
}

// objectKinds names the kinds of object o changed, for error messages
// ("objects" when it changed none).
func objectKinds(o ObjectResult) string {
	var kinds []string
	for _, c := range o.Changes {
		if !slices.Contains(kinds, c.Kind) {
			kinds = append(kinds, c.Kind)
		}
	}
	if len(kinds) == 0 {
		return "objects"
	}
	return strings.Join(kinds, ", ") + " objects"
}

// ZoneStatus is the last sync of one zone, for the status page.
type ZoneStatus struct {
	Provider string    `json:"provider"`
	Zone     string    `json:"zone"`
	LastSync time.Time `json:"last_sync,omitzero"` // last successful sync
	LastTry  time.Time `json:"last_try,omitzero"`  // last sync, successful or not
	Error    string    `json:"error,omitempty"`    // the last sync's error, when it failed
	Notice   string    `json:"notice,omitempty"`   // a standing condition (ObjectResult.Notice)
}

// record keeps res as its zone's status (dry runs aside).
func (r *Reconciler) record(res ZoneResult) {
	if res.Skipped == "dry run" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status == nil {
		r.status = map[string]*ZoneStatus{}
	}
	key := res.Provider + " " + res.Zone
	zs := r.status[key]
	if zs == nil {
		zs = &ZoneStatus{Provider: res.Provider, Zone: res.Zone}
		r.status[key] = zs
	}
	zs.LastTry, zs.Error = time.Now(), ""
	if res.Err != nil {
		zs.Error = res.Err.Error()
	} else {
		zs.LastSync = zs.LastTry
	}
	zs.Notice = res.Objects.Notice
}

// Status returns every zone's last sync, in Zones order; zones not synced
// yet have only Provider and Zone.
func (r *Reconciler) Status() []ZoneStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]ZoneStatus, 0, len(r.Zones))
	for _, z := range r.Zones {
		name := z.Provider.Name()
		if zs := r.status[name+" "+z.Zone]; zs != nil {
			out = append(out, *zs)
		} else {
			out = append(out, ZoneStatus{Provider: name, Zone: z.Zone})
		}
	}
	return out
}

func (r *Reconciler) fail(res ZoneResult, labels []string) {
	r.Metrics.Syncs.WithLabelValues(res.Provider, res.Zone, "failure").Inc()
	level := slog.LevelError
	if errors.Is(res.Err, ErrTransient) {
		level = slog.LevelWarn
	}
	r.Logger.Log(context.Background(), level, "provider sync failed: will retry", "provider", res.Provider, "zone", res.Zone, "err", res.Err)
	_ = labels
}

// ReconcileMetrics are the reconciler's metrics (the adapters count API
// calls, throttles, retries and propagation themselves).
type ReconcileMetrics struct {
	Syncs             *prometheus.CounterVec   // meridian_provider_syncs_total{provider,zone,result}
	LastSync          *prometheus.GaugeVec     // meridian_provider_last_sync_timestamp_seconds{provider,zone}
	Changes           *prometheus.CounterVec   // meridian_provider_changes_total{provider,zone,result}
	Drift             *prometheus.CounterVec   // meridian_provider_drift_changes_total{provider,zone}
	Conflicts         *prometheus.GaugeVec     // meridian_provider_conflicts{provider,zone}
	DecisionToApplied *prometheus.HistogramVec // meridian_provider_decision_to_applied_seconds{provider}
	Writer            prometheus.Gauge         // meridian_provider_writer
	ObjectChanges     *prometheus.CounterVec   // meridian_provider_object_changes_total{provider,zone,kind,result}
	Panics            *prometheus.CounterVec   // meridian_provider_panics_total{provider,zone}
}

// NewReconcileMetrics creates the metrics and registers them on reg (nil: not registered).
func NewReconcileMetrics(reg prometheus.Registerer) *ReconcileMetrics {
	m := &ReconcileMetrics{
		Syncs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "meridian_provider_syncs_total",
			Help: "Provider zone syncs by result (success, failure)."}, []string{"provider", "zone", "result"}),
		LastSync: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "meridian_provider_last_sync_timestamp_seconds",
			Help: "Unix time of the last successful sync of a provider zone."}, []string{"provider", "zone"}),
		Changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "meridian_provider_changes_total",
			Help: "Record changes sent to a provider by result (applied, failed)."}, []string{"provider", "zone", "result"}),
		Drift: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "meridian_provider_drift_changes_total",
			Help: "Changes a periodic resync had to make although nothing changed on our side (someone edited our records)."}, []string{"provider", "zone"}),
		Conflicts: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "meridian_provider_conflicts",
			Help: "Desired records not written because the name belongs to someone else (no or another ownership TXT)."}, []string{"provider", "zone"}),
		DecisionToApplied: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "meridian_provider_decision_to_applied_seconds",
			Help: "Time from a health decision to the provider accepting the changes.", Buckets: []float64{0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}}, []string{"provider"}),
		Writer: prometheus.NewGauge(prometheus.GaugeOpts{Name: "meridian_provider_writer",
			Help: "1 while this node is the elected provider writer."}),
		ObjectChanges: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "meridian_provider_object_changes_total",
			Help: "Changes to provider objects other than records (kind: load_balancer, pool, monitor, health_check, cidr_collection) by result (applied, failed)."},
			[]string{"provider", "zone", "kind", "result"}),
		Panics: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "meridian_provider_panics_total",
			Help: "Provider zone syncs that panicked (on an unexpected provider answer) and were recovered; the pass counts as failed and is retried."},
			[]string{"provider", "zone"}),
	}
	if reg != nil {
		reg.MustRegister(m.Syncs, m.LastSync, m.Changes, m.Drift, m.Conflicts, m.DecisionToApplied, m.Writer, m.ObjectChanges, m.Panics)
	}
	return m
}
