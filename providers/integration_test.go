package providers_test

// Acceptance scenarios of the provider push, each run against both
// providers: the real adapters (route53.NewFromConfig,
// cloudflare.NewFromConfig) driven by a providers.Reconciler, talking to
// their in-process wire-level fakes. Every measured figure is logged on a
// line starting with FIGURE:
//
//	go test -race -count=1 -v -run Integration ./providers/ | grep FIGURE
//
// Scenario 2 throttles for $PROVIDERS_THROTTLE_SECONDS (default 60, the
// acceptance figure) and dominates the wall time.

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/failover"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/vote"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/cloudflare/cffake"
	"github.com/meridian-gslb/meridian/providers/plan"
	"github.com/meridian-gslb/meridian/providers/route53/route53fake"
)

// Scenario 1: a cluster fails over and the provider reflects it within one
// reconcile.
func TestIntegrationFailoverReachesTheProviderInOneReconcile(t *testing.T) {
	noLeaks(t)
	d := parse(t, configYAML([]svc{
		{name: "app", eps: []ep{{"192.0.2.11", "c1", 100}, {"192.0.2.21", "c2", 100}, {"192.0.2.31", "c3", 100}}},
		{name: "api", strategy: model.StrategyFailover, eps: []ep{{"192.0.2.12", "c1", 0}, {"192.0.2.22", "c2", 0}, {"192.0.2.32", "c3", 0}}},
	}))
	const app, api = "app.example.com.", "api.example.com."
	// Three probers in three regions; every one of them sees c1's
	// endpoints go down.
	probers := []failover.Prober{{Name: "p-east", Region: "us-east"}, {Name: "p-west", Region: "us-west"}, {Name: "p-eu", Region: "eu-west"}}
	votes := func(at time.Time, seq uint64, c1Down bool) []vote.Vote {
		var out []vote.Vote
		for _, s := range d.Services {
			for _, e := range s.Endpoints {
				st := vote.Up
				if c1Down && e.Cluster == "c1" {
					st = vote.Down
				}
				for _, p := range probers {
					out = append(out, vote.Vote{Subject: vote.EndpointSubject(s.Name, e.Address), Prober: p.Name, Region: p.Region, Status: st, ObservedAt: at, Seq: seq})
				}
			}
		}
		return out
	}
	params := failover.ParamsFrom(d)

	for _, kind := range []string{"route53", "cloudflare"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var f fake
			var lastWrite func() time.Time // when the fake saw the last write
			switch kind {
			case "route53":
				h := newRoute53(t, route53fake.Options{}, 0) // the default budget: 2 requests/s
				f = h
				lastWrite = func() time.Time { b := h.fake.Batches(); return b[len(b)-1].End }
			default:
				h := newCloudflare(t, 0)
				f = h
				lastWrite = func() time.Time { c := h.srv.CallTimes(); return c[len(c)-1] }
			}
			z := f.zone(t)
			reg := prometheus.NewRegistry()
			w := &world{}
			rec := reconciler(z, w, (&logBuffer{}).logger(), reg)
			ctx := context.Background()

			before := failover.Decide(failover.Input{Desired: d, Votes: votes(time.Now(), 1, false), Probers: probers, Now: time.Now()}, params)
			w.set(providers.State{Desired: d, Health: before, Changed: before.At})
			res := rec.Sync(ctx, false, false)
			require.NoError(t, res[0].Err)
			require.Empty(t, res[0].Applied.Failed)
			writesBefore := f.writes()

			// The decision: c1 is down (confirmed from three regions).
			now := time.Now()
			decision := failover.Decide(failover.Input{Desired: d, Votes: votes(now, 2, true), Probers: probers, Prev: before, Now: now}, params)
			require.Equal(t, engine.Down, decision.Endpoint(app, "192.0.2.11"), "the decision takes c1's app endpoint out")
			require.Equal(t, engine.Down, decision.Endpoint(api, "192.0.2.12"), "the decision takes c1's api endpoint out")
			require.Equal(t, engine.Up, decision.Endpoint(app, "192.0.2.21"), "c2 stays up")
			w.set(providers.State{Desired: d, Health: decision, Changed: decision.At})

			// ONE reconcile.
			observedBefore := metric(t, reg, "meridian_provider_decision_to_applied_seconds", "provider", kind)
			res = rec.Sync(ctx, false, false)
			require.NoError(t, res[0].Err)
			require.Empty(t, res[0].Applied.Failed)
			applied := lastWrite()
			toApplied := applied.Sub(decision.At)

			switch h := f.(type) {
			case *r53:
				sets := map[string]string{}
				for _, s := range h.fake.Records(h.id) {
					if s.Name == app || s.Name == api {
						sets[s.SetID] = r53Record(s).String()
					}
				}
				assert.Equal(t, map[string]string{
					"c1/192.0.2.11": "app.example.com. 60 A 192.0.2.11 set=c1/192.0.2.11 weight=0",
					"c2/192.0.2.21": "app.example.com. 60 A 192.0.2.21 set=c2/192.0.2.21 weight=255",
					"c3/192.0.2.31": "app.example.com. 60 A 192.0.2.31 set=c3/192.0.2.31 weight=255",
					"primary":       "api.example.com. 60 A 192.0.2.22 set=primary failover=PRIMARY",
					"secondary":     "api.example.com. 60 A 192.0.2.32 set=secondary failover=SECONDARY",
				}, sets, "c1's weighted member carries weight 0 and PRIMARY moved to c2")
				assert.Equal(t, 1, f.writes()-writesBefore, "one ChangeResourceRecordSets")
			case *cf:
				values := map[string][]string{}
				for _, r := range h.srv.Records(h.id) {
					if r.Type == "A" {
						values[r.Name] = append(values[r.Name], r.Content)
					}
				}
				assert.ElementsMatch(t, []string{"192.0.2.21", "192.0.2.31"}, values["app.example.com"], "c1's value left app")
				assert.Equal(t, []string{"192.0.2.22"}, values["api.example.com"], "api answers from c2")
				assert.Empty(t, h.srv.Gaps(), "no name went without records")
			}
			again := rec.Sync(ctx, false, false)
			require.NoError(t, again[0].Err)
			assert.True(t, again[0].Plan.Changes.Empty(), "nothing was left for a second reconcile: %+v", again[0].Plan.Changes)

			t.Logf("FIGURE scenario1 %s decision_to_api_applied=%s (decision At → the fake saw the last write)", kind, toApplied.Round(time.Millisecond))
			t.Logf("FIGURE scenario1 %s reconcile_duration=%s changes=%d write_calls=%d reconciler_metric_decision_to_applied=%.3fs",
				kind, res[0].Duration.Round(time.Millisecond), res[0].Plan.Changes.Len(), f.writes()-writesBefore,
				metric(t, reg, "meridian_provider_decision_to_applied_seconds", "provider", kind)-observedBefore)
			assert.Less(t, toApplied, 5*time.Second, "decision to applied")
		})
	}
}

// foreign are records another tool wrote, at names Meridian never wants.
var foreign = []plan.Record{
	{Name: "www.example.com.", Type: "A", TTL: 3600, Values: []string{"198.51.100.30"}},
	{Name: "docs.example.com.", Type: "CNAME", TTL: 300, Values: []string{"docs.cdn.example.net."}},
	{Name: "example.com.", Type: "TXT", TTL: 300, Values: []string{"v=spf1 -all"}},
	{Name: "_dmarc.example.com.", Type: "TXT", TTL: 300, Values: []string{"v=DMARC1; p=reject"}},
}

func keysOf(recs []plan.Record) []nameType {
	var out []nameType
	for _, r := range recs {
		out = append(out, nameType{r.Name, r.Type})
	}
	return out
}

// Scenario 2: half the requests throttled for a minute while the decision
// keeps changing; once the faults end the zone converges to the desired
// state, with no record duplicated, lost or foreign one touched.
func TestIntegrationThrottlingWhileDecisionsChange(t *testing.T) {
	noLeaks(t)
	window := throttleWindow(t)
	const flipEvery = 3 * time.Second
	var services []svc
	for i := range 20 {
		s := svc{name: fmt.Sprintf("t%02d", i), eps: []ep{
			{fmt.Sprintf("10.1.0.%d", i+1), "c1", 50}, {fmt.Sprintf("10.2.0.%d", i+1), "c2", 30}, {fmt.Sprintf("10.3.0.%d", i+1), "c3", 20},
		}}
		if i%4 == 3 {
			s.strategy = model.StrategyFailover
		}
		services = append(services, s)
	}
	d := parse(t, configYAML(services))

	for _, kind := range []string{"route53", "cloudflare"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var f fake
			var startFaults, endFaults func()
			var throttled func() int
			switch kind {
			case "route53":
				h := newRoute53(t, route53fake.Options{Seed: 42}, 0)
				f = h
				startFaults = func() { h.fake.SetFaults(route53fake.Faults{Throttle: 0.5}) }
				endFaults = func() { h.fake.SetFaults(route53fake.Faults{}) }
				throttled = h.fake.Throttled
			default:
				h := newCloudflare(t, 0)
				f = h
				startFaults = func() {
					now := time.Now()
					h.srv.Inject(cffake.Fault{Status: http.StatusTooManyRequests, RetryAfter: time.Second, Every: 2, From: now, Until: now.Add(window)})
				}
				endFaults = h.srv.ClearFaults
				throttled = func() int { return int(metric(t, h.reg, "meridian_provider_throttles_total")) }
			}
			f.seed(t, foreign...)
			baseline := f.lines()
			foreignBefore := f.raw(keysOf(foreign)...)

			z := f.zone(t)
			reg := prometheus.NewRegistry()
			logs := &logBuffer{}
			dumpOnFailure(t, logs)
			w := &world{}
			w.set(providers.State{Desired: d, Health: downs{}, Changed: time.Now()})
			rec := reconciler(z, w, logs.logger(), reg)
			rec.Debounce, rec.Resync = 200*time.Millisecond, 5*time.Second
			res := rec.Sync(context.Background(), false, false)
			require.NoError(t, res[0].Err)

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); rec.Run(ctx) }()
			stop := func() { cancel(); <-done }
			defer stop()

			// Throttling for the window; meanwhile an endpoint's health flips
			// every few seconds.
			cur := downs{}
			flips := 0
			startFaults()
			tick := time.NewTicker(flipEvery)
			end := time.NewTimer(window)
			lastDecision := time.Now()
		flipping:
			for {
				select {
				case <-end.C:
					break flipping
				case <-tick.C:
				}
				s := d.Services[(flips*7)%len(d.Services)]
				e := s.Endpoints[flips%len(s.Endpoints)]
				next := maps.Clone(cur)
				if k := s.Name + "|" + e.Address; next[k] {
					delete(next, k)
				} else {
					next[k] = true
				}
				cur = next
				lastDecision = time.Now()
				w.set(providers.State{Desired: d, Health: cur, Changed: lastDecision})
				rec.Trigger()
				flips++
			}
			tick.Stop()
			endFaults()
			faultsEnded := time.Now()
			throttles := throttled()

			want := expected(z, d, cur)
			var missing, extra, dups []string
			converged := false
			for time.Since(faultsEnded) < 60*time.Second {
				if missing, extra, dups = compare(f, baseline, want); len(missing)+len(extra)+len(dups) == 0 {
					converged = true
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			convergedAt := time.Now()
			toConverge := convergedAt.Sub(faultsEnded)
			stop()
			require.True(t, converged, "converged within 60s of the faults ending: missing %v, extra %v, duplicated %v", missing, extra, dups)

			final := rec.Sync(context.Background(), false, false)
			require.NoError(t, final[0].Err)
			assert.True(t, final[0].Plan.Changes.Empty(), "a pass after convergence has nothing to do: %+v", final[0].Plan.Changes)
			missing, extra, dups = compare(f, baseline, want)
			assert.Empty(t, missing, "no desired record lost")
			assert.Empty(t, extra, "no record beyond the desired ones and the foreign ones")
			assert.Empty(t, dups, "no record duplicated")
			assert.Equal(t, foreignBefore, f.raw(keysOf(foreign)...), "foreign records untouched")
			assert.Positive(t, throttles, "the fake throttled")
			if h, ok := f.(*cf); ok {
				assert.Empty(t, h.srv.Gaps(), "no name went without records while its values changed")
			}

			calls := f.calls()
			t.Logf("FIGURE scenario2 %s throttle_window=%s decision_flips=%d throttled_requests=%d failed_syncs=%.0f successful_syncs=%.0f",
				kind, window, flips, throttles,
				metric(t, reg, "meridian_provider_syncs_total", "result", "failure"), metric(t, reg, "meridian_provider_syncs_total", "result", "success"))
			t.Logf("FIGURE scenario2 %s calls_total=%d (initial publish included) by_operation: %s", kind, total(calls), ops(calls))
			t.Logf("FIGURE scenario2 %s time_to_converge_after_faults_end=%s last_decision_to_converged=%s records_desired=%d",
				kind, toConverge.Round(10*time.Millisecond), convergedAt.Sub(lastDecision).Round(10*time.Millisecond), len(f.expectLines(want)))
		})
	}
}

// A push that fails on a transient error (throttled past the adapter's
// retries) is retried once the provider is back, without waiting for the
// next decision or for the periodic resync (5 minutes by default): a
// failover that hit a throttling burst must not stay unpublished that long.
func TestIntegrationFailedPushIsRetriedBeforeTheNextResync(t *testing.T) {
	noLeaks(t)
	d := parse(t, configYAML([]svc{{name: "app", eps: []ep{{"192.0.2.11", "c1", 0}, {"192.0.2.21", "c2", 0}}}}))
	const grace = 10 * time.Second
	for _, kind := range []string{"route53", "cloudflare"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var f fake
			var breakIt, fixIt func()
			switch kind {
			case "route53":
				h := newRoute53(t, route53fake.Options{}, 0)
				h.opts.Backoff, h.opts.MaxBackoff = 20*time.Millisecond, 100*time.Millisecond // give up fast
				f = h
				breakIt = func() { h.fake.SetFaults(route53fake.Faults{Throttle: 1}) }
				fixIt = func() { h.fake.SetFaults(route53fake.Faults{}) }
			default:
				h := newCloudflare(t, 0)
				f = h
				// 5 throttled attempts: the adapter's 1 + 4 retries, 1 s apart.
				breakIt = func() {
					h.srv.Inject(cffake.Fault{Status: http.StatusTooManyRequests, RetryAfter: time.Second, Times: 5})
				}
				fixIt = h.srv.ClearFaults
			}
			baseline := f.lines()
			z := f.zone(t)
			reg := prometheus.NewRegistry()
			logs := &logBuffer{}
			dumpOnFailure(t, logs)
			w := &world{}
			w.set(providers.State{Desired: d, Health: downs{}})
			rec := reconciler(z, w, logs.logger(), reg)
			rec.Debounce = 200 * time.Millisecond // Resync: the default
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); rec.Run(ctx) }()
			defer func() { cancel(); <-done }()
			converged := func(want []plan.Record) func() bool {
				return func() bool { m, e, _ := compare(f, baseline, want); return len(m)+len(e) == 0 }
			}
			require.Eventually(t, converged(expected(z, d, downs{})), 10*time.Second, 20*time.Millisecond, "the first pass publishes")

			breakIt()
			down := downs{"app.example.com.|192.0.2.11": true}
			w.set(providers.State{Desired: d, Health: down, Changed: time.Now()})
			rec.Trigger()
			require.Eventually(t, func() bool { return metric(t, reg, "meridian_provider_syncs_total", "result", "failure") > 0 },
				30*time.Second, 20*time.Millisecond, "the push of the decision fails")
			fixIt()
			fixed := time.Now()
			ok := assert.Eventually(t, converged(expected(z, d, down)), grace, 50*time.Millisecond,
				"the decision reaches the provider within %s of it recovering, with no new trigger (Resync is %s)", grace, model.DefaultProviderResync)
			took := "not within " + grace.String()
			if ok {
				took = time.Since(fixed).Round(10 * time.Millisecond).String()
			}
			t.Logf("FIGURE retry %s failed_syncs=%.0f provider_back_to_decision_applied=%s write_calls=%d",
				kind, metric(t, reg, "meridian_provider_syncs_total", "result", "failure"), took, f.writes())
		})
	}
}

// Scenario 3: records owned by someone else are never modified.
func TestIntegrationForeignRecordsAreNeverModified(t *testing.T) {
	noLeaks(t)
	d := parse(t, configYAML([]svc{
		{name: "app", eps: []ep{{"192.0.2.11", "c1", 0}, {"192.0.2.21", "c2", 0}}},    // (a) taken, no ownership TXT
		{name: "api", eps: []ep{{"192.0.2.12", "c1", 0}, {"192.0.2.22", "c2", 0}}},    // (b) owned by someone else
		{name: "free", eps: []ep{{"192.0.2.13", "c1", 0}, {"192.0.2.23", "c2", 0}}},   // free: Meridian writes it
		{name: "verify", eps: []ep{{"192.0.2.14", "c1", 0}, {"192.0.2.24", "c2", 0}}}, // a foreign TXT at the name: Meridian adds its A only
	}))
	seeded := []plan.Record{
		// (a) a record at a name Meridian wants, without an ownership TXT.
		{Name: "app.example.com.", Type: "A", TTL: 300, Values: []string{"198.51.100.10"}},
		// (b) a record with another installation's ownership TXT.
		{Name: "api.example.com.", Type: "A", TTL: 300, Values: []string{"198.51.100.20"}},
		{Name: plan.OwnerName("api.example.com."), Type: "TXT", TTL: 300, Values: []string{plan.OwnerValue("someone-else", []string{"A"})}},
		// (c) unrelated records, one of them at a name Meridian claims for another type.
		{Name: "verify.example.com.", Type: "TXT", TTL: 300, Values: []string{"site-verification=abc123"}},
	}
	seeded = append(seeded, foreign...)
	watched := append(keysOf(seeded), nameType{plan.OwnerName("app.example.com."), "TXT"}, nameType{"example.com.", "NS"}, nameType{"example.com.", "SOA"})

	for _, kind := range []string{"route53", "cloudflare"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var f fake
			if kind == "route53" {
				f = newRoute53(t, route53fake.Options{}, 100)
			} else {
				f = newCloudflare(t, 0)
			}
			f.seed(t, seeded...)
			before := f.raw(watched...)
			baseline := f.lines()
			z := f.zone(t)
			w := &world{}
			w.set(providers.State{Desired: d})
			rec := reconciler(z, w, (&logBuffer{}).logger(), nil)

			for pass := 1; pass <= 2; pass++ {
				res := rec.Sync(context.Background(), false, false)
				require.NoError(t, res[0].Err, "pass %d", pass)
				assert.Empty(t, res[0].Applied.Failed, "pass %d", pass)
				conflicts := map[string]string{}
				for _, c := range res[0].Plan.Conflicts {
					conflicts[c.Key.Name] = c.Reason
				}
				assert.Contains(t, conflicts, "app.example.com.", "pass %d: (a) is a conflict", pass)
				assert.Contains(t, conflicts["api.example.com."], `owner "someone-else"`, "pass %d: (b) is a conflict naming its owner", pass)
				assert.Len(t, conflicts, 2, "pass %d: only (a) and (b) conflict: %v", pass, conflicts)
				t.Logf("FIGURE scenario3 %s pass=%d conflicts=%d changes=%d write_calls_total=%d", kind, pass, len(res[0].Plan.Conflicts), res[0].Plan.Changes.Len(), f.writes())
			}
			assert.Equal(t, before, f.raw(watched...), "foreign records byte-identical (values, TTL, ids)")

			// What Meridian did write: free and verify, nothing else.
			var want []plan.Record
			for _, r := range expected(z, d, nil) {
				if n := strings.TrimPrefix(r.Name, plan.OwnerPrefix); n == "free.example.com." || n == "verify.example.com." {
					want = append(want, r)
				}
			}
			missing, extra, dups := compare(f, baseline, want)
			assert.Empty(t, missing, "Meridian wrote its free names")
			assert.Empty(t, extra, "and nothing else")
			assert.Empty(t, dups)
		})
	}
}

// A CNAME is alone at its name: a name someone else holds with a CNAME is
// taken for every type, so a desired A there is a conflict like (a) above,
// not a claim that the provider then refuses on every pass.
func TestIntegrationForeignCNAMEAtAWantedNameIsAConflict(t *testing.T) {
	noLeaks(t)
	d := parse(t, configYAML([]svc{{name: "cdn", eps: []ep{{"192.0.2.15", "c1", 0}}}}))
	seeded := []plan.Record{{Name: "cdn.example.com.", Type: "CNAME", TTL: 300, Values: []string{"cdn.other.example.net."}}}
	for _, kind := range []string{"route53", "cloudflare"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var f fake
			if kind == "route53" {
				f = newRoute53(t, route53fake.Options{}, 100)
			} else {
				f = newCloudflare(t, 0)
			}
			f.seed(t, seeded...)
			baseline := f.lines()
			z := f.zone(t)
			w := &world{}
			w.set(providers.State{Desired: d})
			rec := reconciler(z, w, (&logBuffer{}).logger(), nil)
			for pass := 1; pass <= 2; pass++ {
				res := rec.Sync(context.Background(), false, false)
				require.NoError(t, res[0].Err)
				var conflicts []string
				for _, c := range res[0].Plan.Conflicts {
					conflicts = append(conflicts, c.Key.String())
				}
				var failed []string
				for _, fc := range res[0].Applied.Failed {
					failed = append(failed, fmt.Sprintf("%s %s: %v", fc.Op, fc.Key, fc.Err))
				}
				t.Logf("FIGURE cname-conflict %s pass=%d conflicts=%d refused_changes=%d write_calls_total=%d", kind, pass, len(conflicts), len(failed), f.writes())
				assert.NotEmpty(t, conflicts, "pass %d: the CNAME-held name is reported as a conflict", pass)
				assert.Empty(t, failed, "pass %d: no change the provider refuses, on every pass", pass)
			}
			_, extra, _ := compare(f, baseline, nil)
			assert.Empty(t, extra, "no ownership TXT claiming a name someone else's CNAME holds")
		})
	}
}

// Scenario 4: the process dies in the middle of a large sync; a new process
// (new adapters, new reconciler, a config that dropped services) converges
// with no leftover.
func TestIntegrationRestartMidSyncConverges(t *testing.T) {
	noLeaks(t)
	for _, kind := range []string{"route53", "cloudflare"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var f fake
			var n int             // services in the first config
			var slow, fast func() // per-call delay on, off
			var interrupt func(ctx context.Context, cancel func())
			switch kind {
			case "route53":
				// 700 services = 2,100 record sets: three batches of whole
				// names (≤ 1,000 records each); the process dies after the first.
				n = 700
				h := newRoute53(t, route53fake.Options{}, 20)
				f = h
				slow = func() {
					h.fake.SetFaults(route53fake.Faults{Delay: 300 * time.Millisecond, Ops: []string{route53fake.OpChangeResourceRecordSets}})
				}
				fast = func() { h.fake.SetFaults(route53fake.Faults{}) }
				interrupt = func(ctx context.Context, cancel func()) {
					for ctx.Err() == nil {
						if slices.ContainsFunc(h.fake.Batches(), func(b route53fake.Batch) bool { return b.ChangeID != "" }) {
							cancel()
							return
						}
						time.Sleep(time.Millisecond)
					}
				}
			default:
				// 300 services = 900 records (one request each); the
				// process dies after 400 writes: every ownership TXT (they go
				// first) and a third of the records. A restarted process
				// starts with an empty request window; this test process
				// shares one per token, hence the larger budget.
				n = 300
				h := newCloudflare(t, 5000)
				f = h
				slow = func() { h.srv.Inject(cffake.Fault{Delay: 5 * time.Millisecond}) } // served, then answered late
				fast = h.srv.ClearFaults
				interrupt = func(ctx context.Context, cancel func()) {
					for ctx.Err() == nil {
						if h.srv.WriteCalls() >= 400 {
							cancel()
							return
						}
						time.Sleep(200 * time.Microsecond)
					}
				}
			}
			f.seed(t, foreign...)
			baseline := f.lines()
			foreignBefore := f.raw(keysOf(foreign)...)

			first := parse(t, configYAML(weightedServices("r", 0, n)))
			w := &world{}
			w.set(providers.State{Desired: first})
			rec := reconciler(f.zone(t), w, (&logBuffer{}).logger(), nil)
			slow()
			ctx, cancel := context.WithCancel(context.Background())
			watcher := make(chan struct{})
			go func() { defer close(watcher); interrupt(ctx, cancel) }()
			res := rec.Sync(ctx, false, false)
			cancel()
			<-watcher
			cut := res[0].Err
			require.Error(t, cut, "the first sync was cut short")
			written := len(minus(f.lines(), baseline))
			require.Positive(t, written, "some records were written before the cut")
			require.Less(t, written, len(f.expectLines(expected(rec.Zones[0], first, nil))), "not all of them")
			writesAtCut := f.writes()
			fast()

			// The restart: new adapters, a new reconciler, a config that
			// dropped every fourth service and added 20.
			var kept []svc
			for i, s := range weightedServices("r", 0, n) {
				if i%4 != 3 {
					kept = append(kept, s)
				}
			}
			second := parse(t, configYAML(append(kept, weightedServices("n", 5000, 20)...)))
			z := f.zone(t)
			w2 := &world{}
			w2.set(providers.State{Desired: second})
			rec2 := reconciler(z, w2, (&logBuffer{}).logger(), nil)
			start := time.Now()
			res = rec2.Sync(context.Background(), false, false)
			took := time.Since(start)
			require.NoError(t, res[0].Err)
			require.Empty(t, res[0].Applied.Failed)

			missing, extra, dups := compare(f, baseline, expected(z, second, nil))
			assert.Empty(t, missing, "every desired record is there")
			assert.Empty(t, extra, "no leftover record")
			assert.Empty(t, dups, "no record twice")
			assert.Equal(t, foreignBefore, f.raw(keysOf(foreign)...), "foreign records untouched")

			// Ownership, through a fresh adapter's eyes.
			cur, err := f.zone(t).Provider.Records(context.Background(), zoneName)
			require.NoError(t, err)
			desiredTypes := map[string][]string{}
			for _, r := range z.Translate(providers.Services(second, nil), zoneName) {
				if !slices.Contains(desiredTypes[r.Name], r.Type) {
					desiredTypes[r.Name] = append(desiredTypes[r.Name], r.Type)
				}
			}
			ours := map[string]bool{}
			for _, r := range cur {
				if name, ok := strings.CutPrefix(r.Name, plan.OwnerPrefix); ok && r.Type == "TXT" {
					o, types, _ := plan.ParseOwner(r.Values[0])
					if o == owner {
						ours[name] = true
						assert.Contains(t, desiredTypes, name, "ownership TXT %s matches a desired name", r.Name)
						assert.ElementsMatch(t, desiredTypes[name], types, "ownership TXT %s lists the desired types", r.Name)
					}
				}
			}
			for _, r := range cur {
				if ours[r.Name] {
					assert.Contains(t, desiredTypes[r.Name], r.Type, "owned record %s is desired", r.Key())
				}
			}
			assert.Len(t, ours, len(desiredTypes), "every desired name is owned")

			again := rec2.Sync(context.Background(), false, false)
			require.NoError(t, again[0].Err)
			assert.True(t, again[0].Plan.Changes.Empty(), "nothing left to do: %+v", again[0].Plan.Changes)

			t.Logf("FIGURE scenario4 %s services_first=%d records_written_before_cut=%d write_calls_before_cut=%d cut_error=%q",
				kind, n, written, writesAtCut, cut)
			t.Logf("FIGURE scenario4 %s services_after_restart=%d restart_sync: creates=%d updates=%d deletes=%d write_calls=%d duration=%s",
				kind, len(second.Services), len(res[0].Plan.Changes.Creates), len(res[0].Plan.Changes.Updates), len(res[0].Plan.Changes.Deletes),
				res[0].Applied.Calls, took.Round(time.Millisecond))
		})
	}
}

// Scenario 5: 2,000 services (two weighted endpoints each) in one zone.
func TestIntegrationTwoThousandServicesInOneZone(t *testing.T) {
	noLeaks(t)
	const n = 2000
	d := parse(t, configYAML(weightedServices("s", 0, n)))

	t.Run("route53", func(t *testing.T) {
		t.Parallel()
		h := newRoute53(t, route53fake.Options{}, 5) // Route 53's own per-account limit
		baseline := h.lines()
		z := h.zone(t)
		w := &world{}
		w.set(providers.State{Desired: d})
		rec := reconciler(z, w, (&logBuffer{}).logger(), nil)

		start := time.Now()
		res := rec.Sync(context.Background(), false, false)
		took := time.Since(start)
		require.NoError(t, res[0].Err)
		require.Empty(t, res[0].Applied.Failed)
		batches := h.fake.Batches()
		records, changes := 0, 0
		for i, b := range batches {
			assert.Empty(t, b.Err, "batch %d accepted", i)
			assert.LessOrEqual(t, b.Records, route53fake.MaxBatchRecords, "batch %d: records, UPSERT counted twice", i)
			assert.LessOrEqual(t, b.Chars, route53fake.MaxBatchChars, "batch %d: characters, UPSERT counted twice", i)
			records += b.Records
			changes += b.Changes
			t.Logf("FIGURE scenario5 route53 batch=%d changes=%d records=%d chars=%d", i, b.Changes, b.Records, b.Chars)
		}
		assert.Equal(t, 1, h.fake.MaxConcurrentWrites(), "batches never overlap")
		assert.Equal(t, res[0].Plan.Changes.Len(), changes)
		missing, extra, dups := compare(h, baseline, expected(z, d, nil))
		require.Empty(t, missing)
		require.Empty(t, extra)
		require.Empty(t, dups)
		firstCalls := h.calls()

		start = time.Now()
		again := rec.Sync(context.Background(), false, false)
		took2 := time.Since(start)
		require.NoError(t, again[0].Err)
		assert.True(t, again[0].Plan.Changes.Empty())
		assert.Zero(t, again[0].Applied.Calls)
		assert.Equal(t, firstCalls[route53fake.OpChangeResourceRecordSets], h.calls()[route53fake.OpChangeResourceRecordSets], "a second sync makes zero write calls")

		t.Logf("FIGURE scenario5 route53 services=%d record_sets=%d change_calls=%d batches=%d max_records_per_batch=%d max_chars_per_batch=%d first_sync=%s",
			n, changes, firstCalls[route53fake.OpChangeResourceRecordSets], len(batches),
			slices.MaxFunc(batches, func(a, b route53fake.Batch) int { return a.Records - b.Records }).Records,
			slices.MaxFunc(batches, func(a, b route53fake.Batch) int { return a.Chars - b.Chars }).Chars, took.Round(time.Millisecond))
		t.Logf("FIGURE scenario5 route53 first_sync_calls: %s", ops(firstCalls))
		t.Logf("FIGURE scenario5 route53 second_sync write_calls=%d calls: %s duration=%s", again[0].Applied.Calls, ops(subtract(h.calls(), firstCalls)), took2.Round(time.Millisecond))
	})

	t.Run("cloudflare", func(t *testing.T) {
		t.Parallel()
		const budget, period = 1200, 5 * time.Minute
		clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		h := newCloudflare(t, 0) // the default budget: 1,200 per 5 minutes
		h.now, h.sleep = clock.Now, clock.Sleep
		h.srv.SetClock(clock.Now)
		h.srv.RateLimit(budget, period) // Cloudflare's own limit: 429 past it
		baseline := h.lines()
		start := clock.Now()
		realStart := time.Now()
		z := h.zone(t)
		w := &world{}
		w.set(providers.State{Desired: d})
		rec := reconciler(z, w, (&logBuffer{}).logger(), nil)

		res := rec.Sync(context.Background(), false, false)
		require.NoError(t, res[0].Err)
		require.Empty(t, res[0].Applied.Failed)
		simulated := clock.Now().Sub(start)
		missing, extra, dups := compare(h, baseline, expected(z, d, nil))
		require.Empty(t, missing)
		require.Empty(t, extra)
		require.Empty(t, dups)
		firstCalls := h.calls()
		firstWrites := h.writes()

		again := rec.Sync(context.Background(), false, false)
		require.NoError(t, again[0].Err)
		assert.True(t, again[0].Plan.Changes.Empty())
		assert.Equal(t, firstWrites, h.writes(), "a second sync makes zero write calls")

		times := h.srv.CallTimes()
		busiest, at := 0, time.Time{}
		for i, j := 0, 0; i < len(times); i++ {
			for j < len(times) && times[j].Before(times[i].Add(period)) {
				j++
			}
			if j-i > busiest {
				busiest, at = j-i, times[i]
			}
		}
		assert.LessOrEqual(t, busiest, budget, "no 5-minute window holds more than the budget")
		throttles := metric(t, h.reg, "meridian_provider_throttles_total")
		assert.Zero(t, throttles, "Cloudflare never had to answer 429")

		t.Logf("FIGURE scenario5 cloudflare services=%d records=%d first_sync_calls=%d (%s) simulated_duration=%s real_duration=%s",
			n, len(h.srv.Records(h.id)), total(firstCalls), ops(firstCalls), simulated, time.Since(realStart).Round(time.Millisecond))
		t.Logf("FIGURE scenario5 cloudflare busiest_5min_window=%d (budget %d) starting_at=+%s throttled=%.0f second_sync_write_calls=%d total_calls=%d",
			busiest, budget, at.Sub(start), throttles, h.writes()-firstWrites, len(times))
	})
}

// subtract is a − b per operation.
func subtract(a, b map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range a {
		if v-b[k] != 0 {
			out[k] = v - b[k]
		}
	}
	return out
}
