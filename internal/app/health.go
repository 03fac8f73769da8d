package app

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/follow"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/ring"
	"github.com/meridian-gslb/meridian/internal/serving"
	"github.com/meridian-gslb/meridian/internal/vote"
)

// probing is the health side of a serve node: the prober, the ring, the
// voter that turns probe results into votes and the follower that turns
// votes into decisions (internal/serving).
type probing struct {
	a        *App
	ring     *ring.Ring
	prober   *health.Prober
	voter    *follow.Voter
	follower *follow.Follower
	trust    *ring.Keeper            // ring.peers, ring.ca, ring.revoked and the credential, followed on reloads and on disk
	rtts     health.RTTs             // this prober's smoothed RTT per endpoint (latency strategy)
	latency  *follow.LatencyFollower // RTT summaries -> the latency view
	latWake  chan struct{}           // new RTT summaries: update the view now
	// sitesWake: the membership changed, update the ring's sites (zones[].ring).
	sitesWake chan struct{}
	sites     *follow.SitesFollower // the ring's sites, and which this node has seen
	wake      chan struct{}
	// probes is the probing view of the effective state: its subjects
	// (votes on others are refused), the endpoints of latency services
	// (their RTTs are gossiped) and the targets, kept from one state to
	// the next (a change costs what changed).
	probes     follow.Probes
	cfgMu      sync.Mutex
	targetsSet bool // the prober has had the targets once (configure); under cfgMu
}

// startProbing starts the ring and the prober when the config enables them.
func (a *App) startProbing(*serving.Loaded) error {
	d := &a.current().Desired
	if !d.Ring.Enabled {
		a.log.Info("probing disabled (ring.enabled is false): health comes from the config only")
		return nil
	}
	if a.node == "" {
		return fmt.Errorf("ring.node_name is empty and the host name is unknown")
	}
	cfg, err := a.ringConfig(d)
	if err != nil {
		return err
	}
	p := &probing{a: a, wake: make(chan struct{}, 1), latWake: make(chan struct{}, 1), sitesWake: make(chan struct{}, 1)}
	p.probes.Update(d)
	p.voter = &follow.Voter{Logger: a.log, Poke: p.poke, Start: time.Now()}
	p.prober = health.NewProber(health.ProberOptions{OnResult: p.onResult, OnSuspect: p.voter.OnSuspect, Logger: a.log, Metrics: health.NewMetrics(a.reg)})
	p.hookRing(&cfg)
	r, err := ring.Start(cfg)
	if err != nil {
		return err
	}
	p.ring, p.voter.Ring = r, r
	if err := a.announceDNS(d, r); err != nil {
		_ = r.Shutdown()
		return err
	}
	p.trust = &ring.Keeper{Ring: r, Logger: a.log}
	p.trust.Started(d.DefaultTrustDomain(), d.Ring)
	a.goBackground(func(ctx context.Context) { p.trust.Run(ctx, ring.DefaultTrustCheck) })
	fm := a.followMetrics
	p.follower = &follow.Follower{Pipeline: a.pipe, Ring: r, Logger: a.log, Metrics: fm,
		Before: p.voter.AgentHeartbeats, FirstFail: p.voter.FirstFail, Reprobing: p.voter.Reprobing}
	if a.decided != nil {
		p.follower.Notifier = a.decided // every node decides; the writer notifies
	}
	p.latency = &follow.LatencyFollower{Pipeline: a.pipe, Ring: r, Logger: a.log, Metrics: fm}
	sitesF := &follow.SitesFollower{Pipeline: a.pipe, Ring: r, Logger: a.log}
	p.sites = sitesF
	a.pipe.SetBroadcast(r.BroadcastShared)
	a.pipe.SetRing(r)
	a.probing.Store(p)
	p.configure(d)
	p.run(d, cfg.Credential != nil)
	return nil
}

// ringIdentity loads this node's ring key, creating it on first start.
// With ring.credential the credential's key is the identity: none is made.
func (a *App) ringIdentity(d *model.Desired) (ring.Identity, error) {
	if d.Ring.Credential.CertFile != "" && d.Ring.IdentityFile == "" {
		return ring.Identity{}, nil
	}
	idPath := d.Ring.IdentityFile
	if idPath == "" {
		idPath = filepath.Join(a.state, "ring-identity.pem")
	}
	id, created, err := ring.LoadOrCreateIdentity(idPath)
	if err != nil {
		return id, err
	}
	if created {
		level := slog.LevelInfo // a ring of one: nobody needs the key
		if len(d.Ring.Seeds) > 0 {
			level = slog.LevelWarn
		}
		a.log.Log(context.Background(), level, "ring identity created: list this node in every node's ring.peers", "file", idPath,
			"peer", fmt.Sprintf("{name: %s, role: prober, region: %s, public_key: %q}", a.node, d.Ring.Region, model.FormatPeerKey(id.Public())))
	}
	return id, nil
}

// configure points the prober at the endpoints and heartbeats of d and
// forgets votes on subjects d no longer has. The subjects and targets are
// looked at again only for the services that changed (follow.Probes), and
// the prober is given the targets that changed.
func (p *probing) configure(d *model.Desired) {
	p.cfgMu.Lock() // the prober takes the changes in the order of the updates
	ch := p.probes.Update(d)
	switch {
	case !p.targetsSet:
		p.prober.SetTargets(p.probes.Targets())
		p.targetsSet = true
	case ch.TargetsChanged:
		p.prober.ChangeTargets(ch.Untargeted, ch.Retargeted)
	}
	p.cfgMu.Unlock()
	p.rtts.Forget(p.probes.Known)
	p.trust.Update(d.DefaultTrustDomain(), d.Ring)
	var poll follow.Poller
	if p.a.kube != nil {
		poll = p.a.kube.mgr.Poller
	}
	p.prober.SetHeartbeats(follow.Heartbeats(d, poll))
	p.ring.Prune(p.probes.Known, 24*time.Hour)
	p.voter.Forget(p.probes.Known)
	p.poke()
}

// onResult is the prober's OnResult: the probe's duration feeds the
// smoothed RTT, then the voter.
func (p *probing) onResult(res health.Result) {
	p.rtts.Observe(res)
	if res.Err == nil && p.probes.Measured(res.Subject) {
		p.ring.RTTChanged() // a moved site is told at once, not at the next round
	}
	p.voter.OnResult(res)
}

// latencyRTTs gives the ring the smoothed RTTs to gossip: those of the
// endpoints of latency services only.
func (p *probing) latencyRTTs() map[vote.Subject]health.RTT {
	if !p.probes.AnyMeasured() {
		return nil
	}
	all := p.rtts.Snapshot()
	for s := range all {
		if !p.probes.Measured(s) {
			delete(all, s)
		}
	}
	return all
}

// poke asks the follower to decide again soon. It never blocks.
func (p *probing) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *probing) onConfirm(s vote.Subject, from string) {
	if p.prober.ConfirmNow(s) {
		p.a.log.Debug("confirming", "subject", s.String(), "asked_by", from)
	}
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
