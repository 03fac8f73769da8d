package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/dnsserver"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/follow"
	"github.com/meridian-gslb/meridian/internal/notify"
	"github.com/meridian-gslb/meridian/internal/serving"
	"github.com/meridian-gslb/meridian/internal/shift"
	"github.com/meridian-gslb/meridian/internal/shift/runner"
	"github.com/meridian-gslb/meridian/internal/whatif"
	"github.com/meridian-gslb/meridian/internal/xfr"
	"github.com/meridian-gslb/meridian/internal/zonekeys"
)

// startPipeline opens the persisted state (overrides, zone serials), builds
// the serving pipeline and publishes the first snapshot.
func (a *App) startPipeline(l *serving.Loaded) error {
	f := l.File
	path, legacy := a.adminStatePath(f.Server.Admin.StateFile)
	a.adopt(path, legacy, "admin overrides")
	store, err := admin.Open(path, a.node, f.Ring.MaxClockSkew.D())
	if err != nil {
		return err
	}
	if err := a.openTokens(f.Server.Admin.TokenFile); err != nil {
		return err
	}
	if v := os.Getenv("MERIDIAN_SERIAL_STATE"); v != "" {
		a.log.Warn("MERIDIAN_SERIAL_STATE is no longer read: set server.serial_state_file instead", "value", v)
	}
	spath, slegacy := a.serialStatePath(f.Server.SerialStateFile)
	a.adopt(spath, slegacy, "zone serials")
	serials, err := xfr.OpenSerials(spath)
	if err != nil {
		a.log.Warn("zone serial state unreadable: serials restart from the Unix time", "file", spath, "err", err)
	}
	a.followMetrics = follow.NewMetrics(a.reg) // registered with the pipeline's, ring or not
	simulations, shiftMetrics := whatif.NewMetrics(a.reg), runner.NewMetrics(a.reg)
	keys := zonekeys.New(zonekeys.Options{Logger: a.log, TSIG: true})
	opts := serving.Options{
		Logger: a.log, Metrics: serving.NewMetrics(a.reg),
		Admin: store, Relay: true,
		Keys: keys,
		Transfers: func(st *engine.Store) serving.Publisher {
			return xfr.NewPublisher(st, keys, serials, xfr.Options{Logger: a.log, Registerer: a.reg, Ready: a.ready})
		},
		Changed: a.changed,
	}
	opts.Kube = a.mergeSource()
	if a.pipe, err = serving.New(l, opts); err != nil {
		return err
	}
	if n := len(store.Active()); n > 0 {
		a.log.Info("admin overrides restored", "file", path, "active", n)
	}
	a.simulator = &whatif.Simulator{Source: a.pipe, Metrics: simulations}
	a.goBackground(func(ctx context.Context) { keys.Run(ctx, a.pipe.Republish) })
	a.goBackground(func(ctx context.Context) { a.pipe.RunExpiry(ctx, time.Second) })
	a.shifts = &runner.Runner{Pipeline: a.pipe, Notify: shiftNotifier{a}, Active: a.writer.Writer, Metrics: shiftMetrics}
	a.goBackground(a.shifts.Run)
	return nil
}

// transferServer is the transfer server of the pipeline's publisher (nil,
// transfers REFUSED, without one).
func transferServer(p *serving.Pipeline) dnsserver.Transfers {
	if x, ok := p.Transfers().(*xfr.Publisher); ok {
		return x.Server()
	}
	return nil
}

// shiftNotifier sends shift events to the status page's timeline (the
// follower's, while probing runs) and, when this node took the step, to
// the notification receivers.
type shiftNotifier struct{ a *App }

func (n shiftNotifier) ShiftEvent(ev shift.Event) {
	if p := n.a.probing.Load(); p != nil && p.follower != nil {
		p.follower.ShiftEvent(ev)
	}
	if !ev.Observed { // another node's step: that node notified it
		n.a.Notify(shiftNotification(ev))
	}
}

// shiftNotification is the notification of one shift step: a rollback is
// a warning (PagerDuty triggers), every other step information.
func shiftNotification(ev shift.Event) notify.Event {
	if ev.Action == "rollback" {
		return notify.RollbackEvent(ev.Service, fmt.Sprintf("%d%%", ev.From), fmt.Sprintf("%d%%", ev.Percent), ev.Reason, ev.At)
	}
	summary := fmt.Sprintf("shift of %s to %s: %s, %d%% -> %d%%", ev.Service, ev.To, ev.Action, ev.From, ev.Percent)
	if ev.Reason != "" {
		summary += " (" + ev.Reason + ")"
	}
	return notify.ShiftEvent(ev.Service, summary, ev.At)
}

// adminStatePath is where overrides persist: server.admin.state_file,
// else admin.json in the state directory. legacy is the older default
// (beside the config file, or the temp dir for the demo), adopted once.
func (a *App) adminStatePath(configured string) (path, legacy string) {
	if configured != "" {
		return configured, ""
	}
	legacy = filepath.Join(os.TempDir(), "meridian-demo-admin.json")
	if a.opts.ConfigPath != "" {
		legacy = filepath.Join(filepath.Dir(a.opts.ConfigPath), "meridian-admin.json")
	}
	return filepath.Join(a.state, "admin.json"), legacy
}

// serialStatePath is server.serial_state_file, else serials.json in the
// state directory; legacy is the older default beside the config file.
func (a *App) serialStatePath(configured string) (path, legacy string) {
	if configured != "" {
		return configured, ""
	}
	if a.opts.ConfigPath != "" {
		legacy = filepath.Join(filepath.Dir(a.opts.ConfigPath), "meridian-serials.json")
	}
	return filepath.Join(a.state, "serials.json"), legacy
}

// adminControl is api.AdminControl over the pipeline's overrides.
type adminControl struct {
	p *serving.Pipeline
	r *runner.Runner
}

func (c adminControl) List() []admin.Override { return c.p.Overrides() }
func (c adminControl) Add(req admin.Request, who string) (admin.Override, error) {
	return c.p.AddOverride(req, who)
}
func (c adminControl) Remove(id, who string) (admin.Override, error) {
	return c.p.RemoveOverride(id, who)
}

// shiftControl is api.ShiftControl over the shift runner.
type shiftControl struct{ adminControl }

func (c shiftControl) PauseShift(service, who, reason string) (admin.Override, error) {
	return c.r.PauseShift(service, who, reason)
}
func (c shiftControl) ResumeShift(service, who string) (admin.Override, error) {
	return c.r.ResumeShift(service, who)
}
