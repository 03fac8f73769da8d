package app

import (
	"fmt"

	"github.com/meridian-gslb/meridian/internal/notify"
	"github.com/meridian-gslb/meridian/internal/serving"
)

// startNotify starts the notification senders of the notifications
// section (none: a.notifier stays nil and events are dropped). It runs
// before probing, so that the follower's first failover is sent.
func (a *App) startNotify(l *serving.Loaded) error {
	cfg := l.File.Notifications
	if len(cfg.Receivers) == 0 {
		return nil
	}
	n, err := notify.New(cfg, a.node, notify.NewMetrics(a.reg), a.log)
	if err != nil {
		return fmt.Errorf("notifications: %w", err)
	}
	a.notifier = n
	a.defer_(n.Close)
	a.decided = &notify.Gate{Next: n, Keep: notifyHandover}
	a.writer.OnChange(func(w bool) {
		if sent := a.decided.Set(w); sent > 0 {
			a.log.Info("notifications: this node became the ring's writer and sent the changes decided during the handover", "events", sent)
		}
	})
	names := make([]string, len(cfg.Receivers))
	for i, r := range cfg.Receivers {
		names[i] = r.Name + " (" + r.Kind + ")"
	}
	a.log.Info("notifications enabled", "receivers", names)
	if !l.File.Desired.Ring.Enabled {
		a.log.Warn("notifications: ring.enabled is false, so nothing is decided: no failover events are sent (shift events are)")
	}
	return nil
}

// Notify sends e to the configured receivers without blocking (nothing
// without a notifications section). For the producers of shift and
// rollback events, which happen on one node: the writer steps shifts, and
// a pause or resume is the node that was asked. Decided changes go through
// a.decided instead.
func (a *App) Notify(e notify.Event) { a.notifier.Notify(e) }
