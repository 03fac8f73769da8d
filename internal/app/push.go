package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/api"
	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/follow"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/serving"
	"github.com/meridian-gslb/meridian/providers"
)

// PushOptions of `meridian push`.
type PushOptions struct {
	ConfigPath string
	DryRun     bool
	Health     *api.HealthReport // decided health from a running node (nil: the config's own states)
	Out        io.Writer
	Logger     *slog.Logger
}

// Push syncs every provider zone of the config once (or, with DryRun, only
// prints the plans) and reports whether every zone succeeded.
func Push(ctx context.Context, o PushOptions) error {
	l, err := serving.Load(o.ConfigPath, nil, "")
	if err != nil {
		return err
	}
	d := &l.File.Desired
	if !d.HasProviderZones() {
		return fmt.Errorf("%s: no providers configured (providers.route53 / providers.cloudflare / providers.rfc2136, zones[].delegation)", o.ConfigPath)
	}
	keys, err := servedKeys(d)
	if err != nil {
		return err
	}
	a := &App{log: o.Logger, reg: prometheus.NewRegistry()}
	zones, err := buildZones(ctx, d, a)
	if err != nil {
		return err
	}
	var h engine.Health = engine.NoHealth{}
	if o.Health != nil {
		h = follow.ReportHealth(*o.Health)
	}
	rec := &providers.Reconciler{Zones: zones, Owner: d.Providers.OwnerID, Logger: o.Logger,
		State: func() providers.State { return providers.State{Desired: d, Health: h, DNSKEY: keys} }}
	failed := 0
	for _, res := range rec.Sync(ctx, o.DryRun, false) {
		printPlan(o.Out, res)
		if res.Err != nil || len(res.Applied.Failed) > 0 {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d zone(s) failed", failed)
	}
	return nil
}

// servedKeys reads the public keys of the signed zones of d (the .key
// files: no secret is needed to compute a DS) and returns each zone's
// DNSKEY RRset, as a running node serves it.
func servedKeys(d *model.Desired) (func(apex string) []dns.RR, error) {
	keys := map[string][]dns.RR{}
	for _, z := range d.Zones {
		if z.DNSSEC == nil {
			continue
		}
		files, err := dnssec.ZoneKeyFiles(z.Apex, z.DNSSEC.KeyFiles, z.DNSSEC.KeyDirectory)
		if err != nil {
			return nil, fmt.Errorf("zone %s: %w", z.Apex, err)
		}
		for _, f := range files {
			k, err := dnssec.ReadPublicKey(f)
			if err != nil {
				return nil, fmt.Errorf("zone %s: dnssec key %s: %w", z.Apex, f, err)
			}
			keys[z.Apex] = append(keys[z.Apex], k.DNSKEY)
		}
	}
	return func(apex string) []dns.RR { return keys[apex] }, nil
}

func printPlan(w io.Writer, res providers.ZoneResult) {
	c := res.Plan.Changes
	fmt.Fprintf(w, "%s %s: %d create, %d update, %d delete, %d conflict", res.Provider, res.Zone, len(c.Creates), len(c.Updates), len(c.Deletes), len(res.Plan.Conflicts))
	if n := len(res.Objects.Changes); n > 0 {
		fmt.Fprintf(w, ", %d object change(s)", n)
	}
	switch {
	case res.Err != nil:
		fmt.Fprintf(w, " — FAILED: %v\n", res.Err)
	case res.Skipped != "":
		fmt.Fprintf(w, " (%s: nothing written)\n", res.Skipped)
	default:
		fmt.Fprintf(w, " — applied %d in %d write calls\n", res.Applied.Applied, res.Applied.Calls)
	}
	for _, r := range c.Creates {
		fmt.Fprintf(w, "  + %s\n", r)
	}
	for _, u := range c.Updates {
		fmt.Fprintf(w, "  ~ %s\n    → %s\n", u.Old, u.New)
	}
	for _, r := range c.Deletes {
		fmt.Fprintf(w, "  - %s\n", r)
	}
	for _, oc := range res.Objects.Changes {
		sign := map[string]string{"create": "+", "update": "~", "delete": "-"}[oc.Op]
		if oc.Err != nil {
			fmt.Fprintf(w, "  x %s %s: %v\n", oc.Op, oc, oc.Err)
			continue
		}
		fmt.Fprintf(w, "  %s %s\n", sign, oc)
	}
	if res.Objects.Notice != "" {
		fmt.Fprintf(w, "  note: %s\n", res.Objects.Notice)
	}
	for _, warning := range res.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warning)
	}
	for _, cf := range res.Plan.Conflicts {
		fmt.Fprintf(w, "  ! %s: %s\n", cf.Key, cf.Reason)
	}
	for _, f := range res.Applied.Failed {
		fmt.Fprintf(w, "  x %s %s: %v\n", f.Op, f.Key, f.Err)
	}
}
