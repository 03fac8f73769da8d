package follow

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/failover"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/notify"
	"github.com/meridian-gslb/meridian/internal/report"
	"github.com/meridian-gslb/meridian/internal/ring"
	"github.com/meridian-gslb/meridian/internal/serving"
	"github.com/meridian-gslb/meridian/internal/vote"
)

// MaxTimeline is how many decided changes a Follower keeps for /v1/health.
const MaxTimeline = 200

// Ring is what a Follower reads from the prober ring (*ring.Ring).
type Ring interface {
	Name() string
	Region() string
	PublicKey() string
	Members() []ring.Member    // trusted live members
	AllMembers() []ring.Member // every live member, trusted or not
	Votes() []vote.Vote
}

// Notifier receives notification events (*notify.Notifier). Notify must
// not block: it is called from the decision round.
type Notifier interface {
	Notify(notify.Event)
}

// Follower turns the ring's votes into failover decisions, like every node
// of the ring does: `meridian serve` (a prober) and the CoreDNS plugin (an
// observer) run the same one.
type Follower struct {
	Pipeline *serving.Pipeline
	Ring     Ring
	Logger   *slog.Logger
	Metrics  *Metrics // nil: on a private registry

	// Before runs first in every round with the desired state being
	// decided on (a serve node votes on its agents' heartbeats there).
	Before func(d *model.Desired, now time.Time)
	// FirstFail gives this node's first failed probe of a subject in the
	// current failure run, for meridian_failover_detection_seconds.
	FirstFail func(vote.Subject) (time.Time, bool)
	// Reprobing, when set, gives the endpoints this node is re-probing after
	// a failed probe: answered, they are in doubt (failover.Input.Doubt).
	Reprobing func() map[vote.Subject]bool
	// Probers, when set, is told how many probers counted in each round.
	Probers func(n int)
	// Notifier, when set, is given every decided change worth a
	// notification (ChangeEvent), in the round that decided it.
	Notifier Notifier

	m lazyMetrics

	mu       sync.Mutex
	timeline []report.ChangeEvent // newest last
	due      time.Time            // when time alone changes the last decision (a hold-down ends, a brake's interval passes)
}

// Run decides after each wake, at least every interval, and when a
// hold-down ends or a brake's interval passes (so that a release is not
// late by up to an interval), until ctx is done.
func (f *Follower) Run(ctx context.Context, wake <-chan struct{}, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	due := time.NewTimer(interval)
	defer due.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-tick.C:
		case <-due.C:
		}
		f.Decide(time.Now())
		wait := interval
		if next := f.nextDue(); !next.IsZero() {
			wait = min(wait, max(time.Until(next), time.Millisecond))
		}
		due.Reset(wait)
	}
}

func (f *Follower) nextDue() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.due
}

// Decide runs one round: the failover decision over the ring's trusted
// probers and votes, recorded (log, metrics, timeline) and handed to the
// pipeline, which republishes when a decided state changed.
func (f *Follower) Decide(now time.Time) *failover.Decision {
	st := f.Pipeline.State()
	d := &st.Effective.Desired
	if f.Before != nil {
		f.Before(d, now)
	}
	var probers []failover.Prober
	for _, m := range f.Ring.Members() {
		if m.Role == ring.RoleProber {
			probers = append(probers, failover.Prober{Name: m.Name, Region: m.Region})
		}
	}
	if f.Probers != nil {
		f.Probers(len(probers))
	}
	m := f.metrics()
	t0 := time.Now()
	params := failover.ParamsFrom(d)
	in := failover.Input{Desired: d, Votes: f.Ring.Votes(), Probers: probers, Prev: st.Decision, Now: now}
	if f.Reprobing != nil {
		if r := f.Reprobing(); len(r) > 0 {
			in.Doubt = func(s vote.Subject) bool { return r[s] }
		}
	}
	dec := failover.Decide(in, params)
	m.decideSeconds.Observe(time.Since(t0).Seconds())
	f.record(dec, now, params)
	f.mu.Lock()
	f.due = dec.NextDue(params)
	f.mu.Unlock()
	if err := f.Pipeline.SetDecision(dec); err != nil {
		f.log().Error("republish after a health change failed: previous snapshot keeps serving", "err", err)
	}
	return dec
}

func (f *Follower) log() *slog.Logger { return loggerOr(f.Logger, f.Pipeline) }

func (f *Follower) metrics() *Metrics { return f.m.get(f.Metrics) }

// record logs every change once, counts it and keeps it for the timeline.
func (f *Follower) record(d *failover.Decision, now time.Time, p failover.Params) {
	m := f.metrics()
	for _, c := range d.Changes {
		kv := []any{"reason", c.Reason, "from", c.From.String(), "to", c.To.String(), "voters", c.Voters}
		if c.Subject.IsCluster() {
			kv = append(kv, "cluster", c.Subject.Target)
		} else {
			kv = append(kv, "service", c.Subject.Service, "endpoint", c.Subject.Target)
		}
		switch {
		case c.From == failover.Unknown && (c.To == failover.Up || c.To == failover.Ready):
			f.log().Debug("health decision: first verdict", kv...) // start-up: one per endpoint
		case c.StateChanged():
			f.log().Warn("health decision changed", kv...)
		default:
			f.log().Info("health decision held", kv...)
		}
		m.events.WithLabelValues(c.Reason, c.To.String()).Inc()
		if c.Reason == failover.ReasonHoldDown && !c.StateChanged() {
			if held := heldUntil(d, c.Subject); !held.IsZero() {
				m.holds.Observe(held.Sub(c.At).Seconds()) // a hold-down starting
			}
		}
		if c.To == failover.Down && c.StateChanged() && f.FirstFail != nil {
			if ff, ok := f.FirstFail(c.Subject); ok {
				m.detection.Observe(now.Sub(ff).Seconds())
			}
		}
		if e, ok := ChangeEvent(c); ok && f.Notifier != nil {
			f.Notifier.Notify(e)
		}
		f.mu.Lock()
		f.timeline = append(f.timeline, report.ChangeEvent{At: c.At, Subject: c.Subject.String(), From: c.From.String(), To: c.To.String(), Reason: c.Reason, Voters: c.Voters})
		if len(f.timeline) > MaxTimeline {
			f.timeline = slices.Delete(f.timeline, 0, len(f.timeline)-MaxTimeline)
		}
		f.mu.Unlock()
	}
	m.endpointState.Reset()
	m.holdDown.Reset()
	doubt, returning := 0, 0
	for i, e := range d.Endpoints {
		if e.Doubt {
			doubt++
		}
		if d.EndpointReturning(i) {
			returning++
		}
		v := 1.0
		if e.State == failover.Down {
			v = 0
		}
		m.endpointState.WithLabelValues(e.Subject.Service, e.Subject.Target, e.Cluster).Set(v)
		m.holdDown.WithLabelValues(e.Subject.Service, e.Subject.Target, e.Cluster).Set(e.HoldDown(p, e.State == failover.Down).Seconds())
	}
	m.doubt.Set(float64(doubt))
	m.returning.Set(float64(returning))
	for _, c := range d.Clusters {
		for _, st := range []failover.State{failover.Ready, failover.Unreachable, failover.FailedOver} {
			v := 0.0
			if c.State == st {
				v = 1
			}
			m.clusterState.WithLabelValues(c.Name, st.String()).Set(v)
		}
	}
}

// heldUntil is the end of the hold-down of subject s in d (zero: not held).
func heldUntil(d *failover.Decision, s vote.Subject) time.Time {
	if s.IsCluster() {
		c, _ := d.LookupCluster(s.Target)
		return c.HeldUntil
	}
	e, _ := d.LookupEndpoint(s.Service, s.Target)
	return e.HeldUntil
}

// Timeline returns the decided changes kept, newest first.
func (f *Follower) Timeline() []report.ChangeEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]report.ChangeEvent, 0, len(f.timeline))
	for i := len(f.timeline) - 1; i >= 0; i-- {
		out = append(out, f.timeline[i])
	}
	return out
}

// Report is GET /v1/health: the decision with the votes behind it, the
// probers and the timeline.
func (f *Follower) Report() report.HealthReport {
	st := f.Pipeline.State()
	cur := st.Effective
	now := time.Now()
	fresh := time.Duration(cur.Desired.Decision.FreshVotes) * cur.Desired.Health.Interval.D()
	params := failover.ParamsFrom(&cur.Desired)
	r := f.Ring
	rep := report.HealthReport{Node: r.Name(), Region: r.Region(), Probing: true, PublicKey: r.PublicKey()}
	for _, m := range r.AllMembers() {
		if !m.Trusted {
			rep.Untrusted = append(rep.Untrusted, report.UntrustedMember{Name: m.Name, Addr: m.Addr, Role: m.Role})
		}
	}
	votes := map[vote.Subject][]report.VoteInfo{}
	lastVote := map[string]time.Time{}
	for _, v := range r.Votes() {
		age := now.Sub(v.ObservedAt)
		votes[v.Subject] = append(votes[v.Subject], report.VoteInfo{Prober: v.Prober, Region: v.Region, Status: v.Status.String(), AgeSeconds: age.Seconds(), Fresh: age <= fresh})
		if v.ObservedAt.After(lastVote[v.Prober]) {
			lastVote[v.Prober] = v.ObservedAt
		}
	}
	adminSt := AdminStates(&cur.Desired)
	outliers := map[string]bool{}
	if d := st.Decision; d != nil {
		rep.DecidedAt = d.At
		for _, o := range d.Outliers {
			outliers[o.Prober] = true
		}
		for i, e := range d.Endpoints {
			eh := report.EndpointHealth{Service: e.Subject.Service, Target: e.Subject.Target, Cluster: e.Cluster, State: e.State.String(),
				Admin: adminSt[e.Subject], Since: e.Since, Reason: e.Reason, Voters: e.Voters, Failures: e.Failures, Braked: e.Braked(), Votes: votes[e.Subject],
				HoldDownSeconds: e.HoldDown(params, e.State == failover.Down).Seconds(), InDoubt: e.Doubt, Returning: d.EndpointReturning(i)}
			if e.Held() {
				t := e.HeldUntil
				eh.HeldUntil = &t
			}
			rep.Endpoints = append(rep.Endpoints, eh)
		}
		for _, c := range d.Clusters {
			ch := report.ClusterHealth{Name: c.Name, State: c.State.String(), Monitored: c.Monitored, Since: c.Since, Reason: c.Reason,
				Voters: c.Voters, Votes: votes[vote.ClusterSubject(c.Name)]}
			if c.Held() {
				t := c.HeldUntil
				ch.HeldUntil = &t
			}
			rep.Clusters = append(rep.Clusters, ch)
		}
	}
	for _, m := range r.Members() {
		ph := report.ProberHealth{Name: m.Name, Region: m.Region, Role: m.Role, Addr: m.Addr, Outlier: outliers[m.Name]}
		if t, ok := lastVote[m.Name]; ok {
			age := now.Sub(t).Seconds()
			ph.LastVoteAgeSecond = &age
		}
		rep.Probers = append(rep.Probers, ph)
	}
	rep.Changes = f.Timeline()
	return rep
}

// ConfigReport is GET /v1/health without a ring: the config's own states.
func ConfigReport(st *serving.State) report.HealthReport {
	rep := report.HealthReport{Probing: false}
	snap := st.Snapshot
	if snap == nil {
		return rep
	}
	rep.DecidedAt = snap.Built()
	for _, s := range snap.Services() {
		for _, e := range s.Endpoints {
			reason := "config"
			if e.Drained {
				reason = "drained"
			}
			rep.Endpoints = append(rep.Endpoints, report.EndpointHealth{Service: s.Name, Target: e.Target, Cluster: e.Cluster, State: e.State.String(), Reason: reason, Since: snap.Built()})
		}
	}
	return rep
}

// AdminStates returns the config's own verdicts: endpoints set down or
// drained, directly or through their cluster.
func AdminStates(d *model.Desired) map[vote.Subject]string {
	clusters := map[string]model.Cluster{}
	for _, c := range d.Clusters {
		clusters[c.Name] = c
	}
	out := map[vote.Subject]string{}
	for _, s := range d.Services {
		for _, e := range s.Endpoints {
			target := e.Target()
			c := clusters[e.Cluster]
			switch {
			case e.State == model.StateDown || c.State == model.StateDown:
				out[vote.EndpointSubject(s.Name, target)] = "down"
			case e.Drain || c.Drain:
				out[vote.EndpointSubject(s.Name, target)] = "drained"
			}
		}
	}
	return out
}

// The ring is what the followers and the pipeline's override checks read.
var (
	_ Ring              = (*ring.Ring)(nil)
	_ RTTRing           = (*ring.Ring)(nil)
	_ SitesRing         = (*ring.Ring)(nil)
	_ serving.RingAdmin = (*ring.Ring)(nil)
)
