package app

import (
	"context"
	"path/filepath"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/ring"
)

// ringConfig is this node's ring configuration from d, with its identity,
// its credential and the address it advertises; hookRing adds the
// callbacks.
func (a *App) ringConfig(d *model.Desired) (ring.Config, error) {
	id, err := a.ringIdentity(d)
	if err != nil {
		return ring.Config{}, err
	}
	cfg, err := ring.FromConfig(d, a.node, ring.RoleProber)
	if err != nil {
		return ring.Config{}, err
	}
	cred, err := ring.LoadCredential(d.Ring)
	if err != nil {
		return ring.Config{}, err
	}
	advertise, err := a.advertiseFrom(d)
	if err != nil {
		return ring.Config{}, err
	}
	cfg.Advertise = advertise
	cfg.RequireEncryption = cfg.RequireEncryption || a.opts.RequireEncryption
	cfg.Identity, cfg.Credential = id, cred
	cfg.KeyringState = filepath.Join(a.state, "ring-keyring")
	return cfg, nil
}

// hookRing connects the ring's callbacks to probing: confirmations go to
// the prober, heartbeats to the voter, membership changes wake the
// follower and the sites, RTT summaries the latency view; shared state
// goes to the pipeline.
func (p *probing) hookRing(cfg *ring.Config) {
	a := p.a
	cfg.Logger, cfg.Metrics = a.log, ring.NewMetrics(a.reg)
	cfg.OnConfirm = p.onConfirm
	cfg.OnHeartbeat = p.voter.OnHeartbeat
	cfg.OnChange = func() { p.poke(); poke(p.sitesWake) }
	cfg.OnShared, cfg.SharedState = a.pipe.OnShared, a.pipe.SharedState
	cfg.Known = p.probes.Known
	cfg.RTTs = p.latencyRTTs
	cfg.OnRTT = func() { poke(p.latWake) }
}

// run starts the prober and the followers in the background, has the ring
// leave on shutdown and logs that probing is enabled (with the node's ring
// credential when it has one).
func (p *probing) run(d *model.Desired, hasCredential bool) {
	a, r := p.a, p.ring
	// The ring leaves after the prober and the follower have stopped (the
	// cleanup stack runs newest first); probing stops before the steps
	// started earlier, so a node going away never votes its own stopped
	// demo backends down.
	a.defer_(func() {
		a.pipe.SetBroadcast(nil)
		a.pipe.SetRing(nil)
		if err := r.Shutdown(); err != nil {
			a.log.Warn("ring shutdown", "err", err)
		}
	})
	a.goBackground(func(ctx context.Context) {
		if err := p.prober.Run(ctx); err != nil {
			a.log.Error("prober stopped", "err", err)
		}
	})
	a.goBackground(func(ctx context.Context) { p.follower.Run(ctx, p.wake, min(d.Health.Interval.D()/2, time.Second)) })
	a.goBackground(func(ctx context.Context) { p.latency.Run(ctx, p.latWake, min(d.Health.Interval.D()/2, time.Second)) })
	a.goBackground(func(ctx context.Context) { p.sites.Run(ctx, p.sitesWake, 5*time.Second) })
	args := []any{"node", a.node, "region", d.Ring.Region, "gossip", r.LocalAddr(), "seeds", d.Ring.Seeds, "public_key", r.PublicKey(), "peers", len(d.Ring.Peers)}
	if hasCredential {
		args = append(args, "credential", r.Credential())
	}
	a.log.Info("probing enabled", args...)
}
