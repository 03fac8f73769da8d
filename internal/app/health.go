package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/api"
	"github.com/meridian-gslb/meridian/internal/failover"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/ring"
)

// maxTimeline is how many decided changes /v1/health keeps.
const maxTimeline = 200

// healthLoop connects the prober, the ring and the decision: local probe
// results become votes on the ring; every node decides from all votes and
// republishes the DNS snapshot when a decided state changes.
type healthLoop struct {
	a      *App
	ring   *ring.Ring
	prober *health.Prober
	wake   chan struct{}
	start  time.Time
	known  atomic.Pointer[map[health.Subject]bool] // subjects of the desired state: votes on others are refused

	mu        sync.Mutex
	published map[health.Subject]health.Status // our last vote per subject
	firstFail map[health.Subject]time.Time     // first failed probe of the current failure run
	hbSeen    map[string]time.Time             // agent heartbeats per cluster
	timeline  []api.ChangeEvent                // newest last

	m healthMetrics
}

type healthMetrics struct {
	endpointState *prometheus.GaugeVec
	clusterState  *prometheus.GaugeVec
	events        *prometheus.CounterVec
	detection     prometheus.Histogram
	decideSeconds prometheus.Histogram
}

func newHealthMetrics(reg prometheus.Registerer) healthMetrics {
	m := healthMetrics{
		endpointState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "meridian_endpoint_up",
			Help: "Decided state of an endpoint: 1 up (or unknown), 0 down.",
		}, []string{"service", "endpoint", "cluster"}),
		clusterState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "meridian_cluster_state",
			Help: "Decided state of a cluster: 1 for the current state label (ready, unreachable, failed-over), 0 for the others.",
		}, []string{"cluster", "state"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_failover_events_total",
			Help: "Decided changes by reason (threshold, confirmation, heartbeat-lost, hold-down, brake, ...) and new state.",
		}, []string{"reason", "to"}),
		detection: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "meridian_failover_detection_seconds",
			Help:    "Time from this node's first failed probe of an endpoint to the decision that took it down.",
			Buckets: []float64{0.5, 1, 2, 3, 5, 8, 13, 20, 30, 60, 120},
		}),
		decideSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "meridian_decision_duration_seconds",
			Help:    "Time to compute one failover decision.",
			Buckets: prometheus.ExponentialBuckets(1e-5, 4, 10),
		}),
	}
	reg.MustRegister(m.endpointState, m.clusterState, m.events, m.detection, m.decideSeconds)
	return m
}

// startHealth starts the ring and the prober when the config enables them.
func (a *App) startHealth(ctx context.Context, wg *sync.WaitGroup) (*healthLoop, error) {
	d := &a.current().Desired
	if !d.Ring.Enabled {
		a.log.Info("probing disabled (ring.enabled is false): health comes from the config only")
		return nil, nil
	}
	h := &healthLoop{a: a, wake: make(chan struct{}, 1), start: time.Now(),
		published: map[health.Subject]health.Status{}, firstFail: map[health.Subject]time.Time{}, hbSeen: map[string]time.Time{},
		m: newHealthMetrics(a.reg)}
	name := a.node
	if name == "" {
		return nil, fmt.Errorf("ring.node_name is empty and the host name is unknown")
	}
	idPath := d.Ring.IdentityFile
	if idPath == "" {
		idPath = filepath.Join(a.state, "ring-identity.pem")
	}
	id, created, err := ring.LoadOrCreateIdentity(idPath)
	if err != nil {
		return nil, err
	}
	if created {
		level := slog.LevelInfo // a ring of one: nobody needs the key
		if len(d.Ring.Seeds) > 0 {
			level = slog.LevelWarn
		}
		a.log.Log(ctx, level, "ring identity created: list this node in every node's ring.peers", "file", idPath,
			"peer", fmt.Sprintf("{name: %s, role: prober, region: %s, public_key: %q}", name, d.Ring.Region, model.FormatPeerKey(id.Public())))
	}
	h.known.Store(ptr(subjectsOf(d)))
	h.prober = health.NewProber(health.ProberOptions{OnResult: h.onResult, Logger: a.log, Metrics: health.NewMetrics(a.reg)})
	r, err := ring.Start(ring.Config{
		NodeName: name, Region: d.Ring.Region, Role: ring.RoleProber,
		Bind: d.Ring.Bind, Advertise: d.Ring.Advertise, Seeds: d.Ring.Seeds,
		KeyFile: d.Ring.KeyFile, Label: d.Ring.Label,
		RequireEncryption: d.Ring.RequireEncryption || a.opts.RequireEncryption,
		RejoinInterval:    d.Ring.RejoinInterval.D(), SummaryInterval: d.Health.Interval.D(),
		Memberlist: d.Ring.Memberlist, Logger: a.log, Metrics: ring.NewMetrics(a.reg),
		OnConfirm:   h.onConfirm,
		OnHeartbeat: h.onHeartbeat,
		OnChange:    h.poke,
		OnShared:    a.onShared,
		SharedState: a.sharedState,
		Identity:    id, Peers: d.Ring.Peers, MaxClockSkew: d.Ring.MaxClockSkew.D(),
		KeyringState: filepath.Join(a.state, "ring-keyring"),
		Known:        func(s health.Subject) bool { return (*h.known.Load())[s] },
	})
	if err != nil {
		return nil, err
	}
	h.ring = r
	a.mu.Lock()
	if a.admin != nil {
		a.admin.broad = r.BroadcastShared
	}
	a.mu.Unlock()
	h.configure(d)
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := h.prober.Run(ctx); err != nil {
			a.log.Error("prober stopped", "err", err)
		}
	}()
	go func() { defer wg.Done(); h.loop(ctx) }()
	a.log.Info("probing enabled", "node", name, "region", d.Ring.Region, "gossip", r.LocalAddr(), "seeds", d.Ring.Seeds,
		"public_key", r.PublicKey(), "peers", len(d.Ring.Peers))
	return h, nil
}

// configure points the prober at the endpoints and heartbeats of d and
// forgets votes on subjects d no longer has.
func (h *healthLoop) configure(d *model.Desired) {
	var targets []health.Target
	keep := subjectsOf(d)
	h.known.Store(&keep)
	if err := h.ring.SetPeers(d.Ring.Peers); err != nil {
		h.a.log.Error("ring.peers not applied: the previous peers stay trusted", "err", err)
	}
	for i := range d.Services {
		s := &d.Services[i]
		for _, e := range s.Endpoints {
			if e.Address == "" {
				continue
			}
			sub := health.EndpointSubject(s.Name, e.Address)
			if s.HealthCheck == nil || s.HealthCheck.Kind == model.CheckNone {
				continue
			}
			targets = append(targets, health.Target{Subject: sub, Addr: netip.MustParseAddr(e.Address), Check: s.HealthCheck})
		}
	}
	var hbs []health.HeartbeatTarget
	for i := range d.Clusters {
		c := &d.Clusters[i]
		switch {
		case c.Heartbeat != nil && c.Heartbeat.URL != "":
			hbs = append(hbs, health.HeartbeatTarget{Cluster: c.Name, HB: c.Heartbeat})
		case c.Heartbeat != nil && c.Kubernetes != nil && h.a.kubeManager() != nil:
			// A Kubernetes member: its kube-apiserver's /readyz, through
			// its own credentials, is the heartbeat.
			hbs = append(hbs, health.HeartbeatTarget{Cluster: c.Name, HB: c.Heartbeat,
				Poll: h.a.kubeManager().Poller(c.Name), PollID: "kubernetes member " + c.Name + " /readyz"})
		}
	}
	h.prober.SetTargets(targets)
	h.prober.SetHeartbeats(hbs)
	h.ring.Prune(func(s health.Subject) bool { return keep[s] }, 24*time.Hour)
	h.mu.Lock()
	for s := range h.published {
		if !keep[s] {
			delete(h.published, s)
			delete(h.firstFail, s)
		}
	}
	h.mu.Unlock()
	h.poke()
}

// subjectsOf lists what votes may be about: every address endpoint of
// every service, and every cluster.
func subjectsOf(d *model.Desired) map[health.Subject]bool {
	keep := map[health.Subject]bool{}
	for i := range d.Services {
		for _, e := range d.Services[i].Endpoints {
			if e.Address != "" {
				keep[health.EndpointSubject(d.Services[i].Name, e.Address)] = true
			}
		}
	}
	for _, c := range d.Clusters {
		keep[health.ClusterSubject(c.Name)] = true
	}
	return keep
}

func ptr[T any](v T) *T { return &v }

// poke asks the loop to decide again soon. It never blocks.
func (h *healthLoop) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// onResult turns a local probe result into a vote (only when our view
// changes; the ring's summaries keep unchanged votes fresh) and asks other
// regions to confirm a fresh local down.
func (h *healthLoop) onResult(res health.Result) {
	h.mu.Lock()
	if res.Err != nil {
		if _, ok := h.firstFail[res.Subject]; !ok {
			h.firstFail[res.Subject] = res.At
		}
	} else {
		delete(h.firstFail, res.Subject)
	}
	if res.Status == health.Unknown {
		h.mu.Unlock()
		return
	}
	prev, had := h.published[res.Subject]
	changed := !had || prev != res.Status
	if changed {
		h.published[res.Subject] = res.Status
	}
	h.mu.Unlock()
	if !changed {
		return
	}
	h.ring.Publish(res.Subject, res.Status, res.At)
	if res.Status == health.Down && !res.Subject.IsCluster() {
		h.a.log.Info("local probe says down: asking other regions to confirm", "service", res.Subject.Service, "endpoint", res.Subject.Target, "err", res.Err)
		h.ring.Confirm(res.Subject)
	}
	h.poke()
}

func (h *healthLoop) onConfirm(s health.Subject, from string) {
	if h.prober.ConfirmNow(s) {
		h.a.log.Debug("confirming", "subject", s.String(), "asked_by", from)
	}
}

func (h *healthLoop) onHeartbeat(cluster, _ string, at time.Time) {
	h.mu.Lock()
	if at.After(h.hbSeen[cluster]) {
		h.hbSeen[cluster] = at
	}
	h.mu.Unlock()
}

// agentHeartbeats votes on clusters whose liveness comes from `meridian agent`.
func (h *healthLoop) agentHeartbeats(d *model.Desired, now time.Time) {
	for _, c := range d.Clusters {
		if c.Heartbeat == nil || !c.Heartbeat.Agent || c.Heartbeat.URL != "" {
			continue
		}
		grace := c.Heartbeat.Grace.D()
		h.mu.Lock()
		seen := h.hbSeen[c.Name]
		h.mu.Unlock()
		st := health.Up
		switch {
		case !seen.IsZero() && now.Sub(seen) <= grace:
		case now.Sub(h.start) <= grace:
			continue // not long enough up to call it missing
		default:
			st = health.Down
		}
		h.onResult(health.Result{Subject: health.ClusterSubject(c.Name), Status: st, At: now, Kind: "agent"})
	}
}

func (h *healthLoop) loop(ctx context.Context) {
	d := &h.a.current().Desired
	tick := time.NewTicker(min(d.Health.Interval.D()/2, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := h.ring.Shutdown(); err != nil {
				h.a.log.Warn("ring shutdown", "err", err)
			}
			return
		case <-h.wake:
		case <-tick.C:
		}
		h.decide(time.Now())
	}
}

// decide runs the failover decision and republishes the snapshot when a
// decided state changed.
func (h *healthLoop) decide(now time.Time) {
	a := h.a
	cur := a.current()
	h.agentHeartbeats(&cur.Desired, now)
	var probers []failover.Prober
	for _, m := range h.ring.Members() {
		if m.Role == ring.RoleProber {
			probers = append(probers, failover.Prober{Name: m.Name, Region: m.Region})
		}
	}
	a.mu.Lock()
	prev := a.decision
	a.mu.Unlock()
	t0 := time.Now()
	d := failover.Decide(failover.Input{Desired: &cur.Desired, Votes: h.ring.Votes(), Probers: probers, Prev: prev, Now: now}, failover.ParamsFrom(&cur.Desired))
	h.m.decideSeconds.Observe(time.Since(t0).Seconds())
	h.record(d, now)
	a.setDecision(d)
}

// record logs every change once, counts it and keeps it for the timeline.
func (h *healthLoop) record(d *failover.Decision, now time.Time) {
	for _, c := range d.Changes {
		kv := []any{"reason", c.Reason, "from", c.From.String(), "to", c.To.String(), "voters", c.Voters}
		if c.Subject.IsCluster() {
			kv = append(kv, "cluster", c.Subject.Target)
		} else {
			kv = append(kv, "service", c.Subject.Service, "endpoint", c.Subject.Target)
		}
		switch {
		case c.From == failover.Unknown && (c.To == failover.Up || c.To == failover.Ready):
			h.a.log.Debug("health decision: first verdict", kv...) // start-up: one per endpoint
		case c.StateChanged():
			h.a.log.Warn("health decision changed", kv...)
		default:
			h.a.log.Info("health decision held", kv...)
		}
		h.m.events.WithLabelValues(c.Reason, c.To.String()).Inc()
		h.mu.Lock()
		if c.To == failover.Down && c.StateChanged() {
			if ff, ok := h.firstFail[c.Subject]; ok {
				h.m.detection.Observe(now.Sub(ff).Seconds())
			}
		}
		h.timeline = append(h.timeline, api.ChangeEvent{At: c.At, Subject: c.Subject.String(), From: c.From.String(), To: c.To.String(), Reason: c.Reason, Voters: c.Voters})
		if len(h.timeline) > maxTimeline {
			h.timeline = slices.Delete(h.timeline, 0, len(h.timeline)-maxTimeline)
		}
		h.mu.Unlock()
	}
	h.m.endpointState.Reset()
	for _, e := range d.Endpoints {
		v := 1.0
		if e.State == failover.Down {
			v = 0
		}
		h.m.endpointState.WithLabelValues(e.Subject.Service, e.Subject.Target, e.Cluster).Set(v)
	}
	for _, c := range d.Clusters {
		for _, st := range []failover.State{failover.Ready, failover.Unreachable, failover.FailedOver} {
			v := 0.0
			if c.State == st {
				v = 1
			}
			h.m.clusterState.WithLabelValues(c.Name, st.String()).Set(v)
		}
	}
}

// report builds GET /v1/health.
func (h *healthLoop) report() api.HealthReport {
	a := h.a
	a.mu.Lock()
	d := a.decision
	a.mu.Unlock()
	cur := a.current()
	now := time.Now()
	fresh := time.Duration(cur.Desired.Decision.FreshVotes) * cur.Desired.Health.Interval.D()
	rep := api.HealthReport{Node: h.ring.Name(), Region: h.ring.Region(), Probing: true, PublicKey: h.ring.PublicKey()}
	for _, m := range h.ring.AllMembers() {
		if !m.Trusted {
			rep.Untrusted = append(rep.Untrusted, api.UntrustedMember{Name: m.Name, Addr: m.Addr, Role: m.Role})
		}
	}
	votes := map[health.Subject][]api.VoteInfo{}
	lastVote := map[string]time.Time{}
	for _, v := range h.ring.Votes() {
		age := now.Sub(v.ObservedAt)
		votes[v.Subject] = append(votes[v.Subject], api.VoteInfo{Prober: v.Prober, Region: v.Region, Status: v.Status.String(), AgeSeconds: age.Seconds(), Fresh: age <= fresh})
		if v.ObservedAt.After(lastVote[v.Prober]) {
			lastVote[v.Prober] = v.ObservedAt
		}
	}
	admin := adminStates(&cur.Desired)
	outliers := map[string]bool{}
	if d != nil {
		rep.DecidedAt = d.At
		for _, o := range d.Outliers {
			outliers[o.Prober] = true
		}
		for _, e := range d.Endpoints {
			eh := api.EndpointHealth{Service: e.Subject.Service, Target: e.Subject.Target, Cluster: e.Cluster, State: e.State.String(),
				Admin: admin[e.Subject], Since: e.Since, Reason: e.Reason, Voters: e.Voters, Failures: e.Failures, Braked: e.Braked(), Votes: votes[e.Subject]}
			if e.Held() {
				t := e.HeldUntil
				eh.HeldUntil = &t
			}
			rep.Endpoints = append(rep.Endpoints, eh)
		}
		for _, c := range d.Clusters {
			ch := api.ClusterHealth{Name: c.Name, State: c.State.String(), Monitored: c.Monitored, Since: c.Since, Reason: c.Reason,
				Voters: c.Voters, Votes: votes[health.ClusterSubject(c.Name)]}
			if c.Held() {
				t := c.HeldUntil
				ch.HeldUntil = &t
			}
			rep.Clusters = append(rep.Clusters, ch)
		}
	}
	for _, m := range h.ring.Members() {
		ph := api.ProberHealth{Name: m.Name, Region: m.Region, Role: m.Role, Addr: m.Addr, Outlier: outliers[m.Name]}
		if t, ok := lastVote[m.Name]; ok {
			age := now.Sub(t).Seconds()
			ph.LastVoteAgeSecond = &age
		}
		rep.Probers = append(rep.Probers, ph)
	}
	h.mu.Lock()
	for i := len(h.timeline) - 1; i >= 0; i-- {
		rep.Changes = append(rep.Changes, h.timeline[i])
	}
	h.mu.Unlock()
	return rep
}

// ringKeys adapts the ring to api.KeyControl.
type ringKeys struct{ r *ring.Ring }

func (k ringKeys) Keys() (string, []string) { return k.r.Keys() }

func (k ringKeys) KeyOp(op, key string) error {
	b, err := ring.ParseKey(key)
	if err != nil {
		return err
	}
	switch op {
	case ring.KeyInstall, ring.KeyUse, ring.KeyRemove:
	default:
		return fmt.Errorf("op %q is not allowed (allowed: install, use, remove)", op)
	}
	return k.r.KeyOp(op, b)
}

// adminStates returns the config's own verdicts: endpoints set down or
// drained, directly or through their cluster.
func adminStates(d *model.Desired) map[health.Subject]string {
	clusters := map[string]model.Cluster{}
	for _, c := range d.Clusters {
		clusters[c.Name] = c
	}
	out := map[health.Subject]string{}
	for _, s := range d.Services {
		for _, e := range s.Endpoints {
			target := e.Address
			if e.CNAME != "" {
				target = e.CNAME
			}
			c := clusters[e.Cluster]
			switch {
			case e.State == model.StateDown || c.State == model.StateDown:
				out[health.EndpointSubject(s.Name, target)] = "down"
			case e.Drain || c.Drain:
				out[health.EndpointSubject(s.Name, target)] = "drained"
			}
		}
	}
	return out
}
