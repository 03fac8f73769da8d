package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/meridian-gslb/meridian/internal/api"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/serving"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/apicall"
	"github.com/meridian-gslb/meridian/providers/cloudflare"
	"github.com/meridian-gslb/meridian/providers/rfc2136"
	"github.com/meridian-gslb/meridian/providers/route53"
)

// startProviders runs the writer election and the reconciler for the
// configured provider zones (nothing when there are none). Building the
// zones may need the providers' APIs (zone id lookups); a transient failure
// is retried in the background so that DNS serving never waits for it.
func (a *App) startProviders(*serving.Loaded) error {
	d := &a.current().Desired
	if !d.HasProviderZones() {
		return nil
	}
	metrics := providers.NewReconcileMetrics(a.reg)
	a.goBackground(func(ctx context.Context) {
		var zones []providers.Zone
		for {
			var err error
			zones, err = buildZones(ctx, d, a)
			if err == nil {
				break
			}
			if !errors.Is(err, providers.ErrTransient) {
				a.log.Error("provider sync disabled: fix the providers section and restart", "err", err)
				return
			}
			a.log.Warn("provider setup failed; retrying in 30s", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(30 * time.Second):
			}
		}
		rec := &providers.Reconciler{
			Zones:    zones,
			Owner:    d.Providers.OwnerID,
			State:    a.providerState,
			Debounce: d.Providers.Debounce.D(),
			Resync:   d.Providers.ResyncInterval.D(),
			Logger:   a.log,
			Metrics:  metrics,
		}
		rec.IsWriter = a.writer.Writer
		a.writer.OnChange(func(w bool) {
			metrics.Writer.Set(b2f(w))
			if w {
				rec.Trigger()
			}
		})
		a.reconciler.Store(rec)
		a.pipe.Store().Subscribe(func(*engine.Snapshot) { rec.Trigger() })
		a.log.Info("provider sync enabled", "zones", len(zones), "owner", d.Providers.OwnerID)
		rec.Run(ctx)
	})
	return nil
}

// providerZones is the status of every provider zone for the status page
// (nil while provider sync is off or still setting up).
func (a *App) providerZones() []api.ProviderOverview {
	rec := a.reconciler.Load()
	if rec == nil {
		return nil
	}
	var out []api.ProviderOverview
	for _, z := range rec.Status() {
		po := api.ProviderOverview{Provider: z.Provider, Zone: z.Zone, Error: z.Error, Notice: z.Notice}
		if !z.LastSync.IsZero() {
			t := z.LastSync.UTC()
			po.LastSync = &t
		}
		out = append(out, po)
	}
	return out
}

// providerState is what the reconciler publishes now.
func (a *App) providerState() providers.State {
	cur := a.pipe.State()
	st := providers.State{Desired: cur.Served} // drains and forced states of operators included
	if snap := a.pipe.Store().Load(); snap != nil {
		st.DNSKEY = snap.DNSKEY // the keys served: the DS written names them
	}
	if cur.Capacity != nil {
		st.Capacity = cur.Capacity // capacity-aware weights, as answered
	}
	if d := cur.Decision; d != nil {
		st.Health = d
		st.Changed = d.At
	} else {
		st.Health = engine.NoHealth{}
	}
	if h := a.probing.Load(); h != nil {
		live := map[string]bool{}
		for _, m := range h.ring.Members() {
			live[m.Name] = true
		}
		st.Live = func(n string) bool { return live[n] }
		st.KeepNameserver = h.sites.KeepNameserver(cur.Served)
	}
	return st
}

// buildZones creates one providers.Zone per configured provider zone.
func buildZones(ctx context.Context, d *model.Desired, a *App) ([]providers.Zone, error) {
	var zones []providers.Zone
	for _, z := range d.Providers.Route53 {
		pz, err := newRoute53Zone(ctx, z, d.Providers.OwnerID, a)
		if err != nil {
			return nil, fmt.Errorf("providers.route53 zone %s: %w", z.Zone, err)
		}
		zones = append(zones, pz)
	}
	for _, z := range d.Providers.Cloudflare {
		pz, err := newCloudflareZone(ctx, z, d.Providers.OwnerID, a)
		if err != nil {
			return nil, fmt.Errorf("providers.cloudflare zone %s: %w", z.Zone, err)
		}
		zones = append(zones, pz)
	}
	for _, z := range d.Providers.RFC2136 {
		p, err := rfc2136.NewFromConfig(z, rfc2136.Options{Logger: a.log, Metrics: apicall.NewMetrics(a.reg), Registerer: a.reg})
		if err != nil {
			return nil, fmt.Errorf("providers.rfc2136 zone %s: %w", z.Zone, err)
		}
		mode := z.Mode
		if mode == "" { // not normalized: the default
			mode = model.ModeDelegate
		}
		zones = append(zones, providers.Zone{Provider: p, Zone: z.Zone, Mode: mode, Translate: rfc2136.Translate})
	}
	return zones, nil
}

func newRoute53Zone(ctx context.Context, z model.Route53Zone, owner string, a *App) (providers.Zone, error) {
	p, err := route53.NewFromConfig(ctx, z, route53.Options{Owner: owner, Logger: a.log, Metrics: apicall.NewMetrics(a.reg)})
	if err != nil {
		return providers.Zone{}, err
	}
	return providers.Zone{Provider: p, Zone: z.Zone, Mode: z.Mode, Translate: p.Desired}, nil
}

func newCloudflareZone(ctx context.Context, z model.CloudflareZone, owner string, a *App) (providers.Zone, error) {
	p, err := cloudflare.NewFromConfig(ctx, z, cloudflare.Options{Logger: a.log, Metrics: apicall.NewMetrics(a.reg),
		OwnerID: owner, Registerer: a.reg})
	if err != nil {
		return providers.Zone{}, err
	}
	return providers.Zone{Provider: p, Zone: z.Zone, Mode: z.Mode, Translate: p.Desired}, nil
}
