package app

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/api"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
)

// adminState is the operators' overrides of a running App.
type adminState struct {
	store  *admin.Store
	tokens *api.Tokens
	mu     sync.Mutex
	active string // ids in force at the last publish, to notice expiries
	gauge  *prometheus.GaugeVec
	bad    *prometheus.CounterVec // entries skipped, by source and reason
	broad  func([]byte)           // spreads the state on the ring (nil without ring)
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

// DemoTokenPath is where the demo writes its per-run admin token:
// $XDG_STATE_HOME/meridian/demo-admin-token, else
// ~/.local/state/meridian/demo-admin-token.
func DemoTokenPath() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "meridian", "demo-admin-token"), nil
}

// writeDemoToken writes tok to DemoTokenPath, readable by the user only.
func writeDemoToken(tok string) (string, error) {
	p, err := DemoTokenPath()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(tok+"\n"), 0o600); err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o600); err != nil { // an old file keeps its mode
		return "", err
	}
	return p, os.Rename(tmp, p)
}

// openAdmin loads the admin state and tokens; an unreadable state or token
// file stops the start with the reason.
func (a *App) openAdmin(node string) error {
	f := a.loaded().File
	path, legacy := a.adminStatePath(f.Server.Admin.StateFile)
	a.adopt(path, legacy, "admin overrides")
	st, err := admin.Open(path, node, f.Ring.MaxClockSkew.D())
	if err != nil {
		return err
	}
	ad := &adminState{store: st}
	ad.bad = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "meridian_admin_entries_rejected_total",
		Help: "Override entries skipped because they failed validation, by source (ring, file) and reason (invalid, future, unknown-target).",
	}, []string{"source", "reason"})
	a.reg.MustRegister(ad.bad)
	for _, e := range st.Skipped() {
		ad.bad.WithLabelValues("file", e.Reason).Inc()
		a.log.Error("admin state: an entry of the state file is skipped", "file", path, "id", e.ID, "reason", e.Reason, "err", e.Err)
	}
	if tf := f.Server.Admin.TokenFile; tf != "" {
		if ad.tokens, err = api.LoadTokens(tf); err != nil {
			return err
		}
	} else if a.opts.DemoBackends {
		// The demo (make run, or serve without --config): a fresh token for
		// this run, so the README's demo, drain and force examples work
		// without any setup.
		tok := "demo-" + admin.NewID() + admin.NewID()
		ad.tokens = api.NewTokens(map[string]string{"demo": tok})
		if p, err := writeDemoToken(tok); err != nil {
			a.log.Warn("demo admin token for this run (could not write it to a file)", "err", err, "export", "MERIDIAN_ADMIN_TOKEN="+tok)
		} else {
			a.log.Warn("demo admin token for this run written (mode 600): changes are accepted with it", "export", "MERIDIAN_ADMIN_TOKEN_FILE="+p)
		}
	} else {
		a.log.Warn("changes disabled: set server.admin.token_file to allow drain, force, weight, ring key and demo changes")
	}
	ad.gauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "meridian_admin_overrides",
		Help: "Operator overrides in force, by kind (drain, force-up, force-down, weight).",
	}, []string{"kind"})
	for _, k := range admin.Kinds {
		ad.gauge.WithLabelValues(k)
	}
	a.reg.MustRegister(ad.gauge)
	a.mu.Lock()
	a.admin = ad
	a.mu.Unlock()
	if n := len(st.Active()); n > 0 {
		a.log.Info("admin overrides restored", "file", path, "active", n)
	}
	return nil
}

// applyAdmin returns the desired state to compile with the overrides in
// force, their notes and the health to use.
func (a *App) applyAdmin(eff *config.File, h engine.Health) (admin.Applied, engine.Health) {
	a.mu.Lock()
	ad := a.admin
	a.mu.Unlock()
	if ad == nil {
		return admin.Applied{Desired: &eff.Desired}, h
	}
	ovs := ad.store.Active()
	ids := make([]string, len(ovs))
	counts := map[string]int{}
	for i, o := range ovs {
		ids[i] = o.ID
		counts[o.Kind]++
	}
	ad.mu.Lock()
	ad.active = strings.Join(ids, ",")
	ad.mu.Unlock()
	for _, k := range admin.Kinds {
		ad.gauge.WithLabelValues(k).Set(float64(counts[k]))
	}
	ap := admin.Apply(&eff.Desired, ovs)
	return ap, ap.Health(h)
}

// adminLoop republishes when an override expires.
func (a *App) adminLoop(stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		a.mu.Lock()
		ad := a.admin
		a.mu.Unlock()
		if ad == nil {
			continue
		}
		var ids []string
		for _, o := range ad.store.Active() {
			ids = append(ids, o.ID)
		}
		ad.mu.Lock()
		changed := strings.Join(ids, ",") != ad.active
		ad.mu.Unlock()
		if changed {
			a.log.Info("admin override expired")
			a.adminChanged(false)
		}
	}
}

// adminChanged republishes and, for a local change, spreads the state.
func (a *App) adminChanged(local bool) {
	if err := a.publish(); err != nil {
		a.log.Error("republish after an admin change failed: previous snapshot keeps serving", "err", err)
	}
	a.kubeStatusSoon()
	a.mu.Lock()
	ad := a.admin
	var broad func([]byte)
	if ad != nil {
		broad = ad.broad
	}
	a.mu.Unlock()
	if local && broad != nil {
		broad(ad.store.State().Marshal())
	}
}

// onShared merges another node's admin state from the ring.
func (a *App) onShared(data []byte) {
	a.mu.Lock()
	ad := a.admin
	a.mu.Unlock()
	if ad == nil {
		return
	}
	other, err := admin.Unmarshal(data)
	if err != nil {
		ad.bad.WithLabelValues("ring", admin.RejectInvalid).Inc()
		a.log.Warn("ring: bad admin state from another node", "err", err)
		return
	}
	cur := a.current()
	// Each entry passes the same validation as POST /v1/admin/overrides
	// before it is merged, saved or passed on.
	other, skipped := other.Sanitize(&cur.Desired, time.Now(), cur.Ring.MaxClockSkew.D())
	for _, e := range skipped {
		ad.bad.WithLabelValues("ring", e.Reason).Inc()
		level := slog.LevelWarn
		if e.Reason == admin.RejectUnknownTarget {
			level = slog.LevelDebug // another node's config has a target ours lacks (a reload in flight)
		}
		a.log.Log(context.Background(), level, "ring: an override from another node is skipped", "id", e.ID, "reason", e.Reason, "err", e.Err)
	}
	changed, err := ad.store.Merge(other)
	if err != nil {
		a.log.Error("admin state from the ring not saved", "err", err)
		return
	}
	if changed {
		a.log.Info("admin overrides updated from the ring", "active", len(ad.store.Active()))
		a.adminChanged(true) // pass the merged state on
	}
}

func (a *App) sharedState() []byte {
	a.mu.Lock()
	ad := a.admin
	a.mu.Unlock()
	if ad == nil {
		return nil
	}
	return ad.store.State().Marshal()
}

// adminControl is api.AdminControl over the App.
type adminControl struct{ a *App }

func (c adminControl) List() []admin.Override { return c.a.admin.store.Active() }

func (c adminControl) Add(req admin.Request, who string) (admin.Override, error) {
	o, err := req.Validate(&c.a.current().Desired, time.Now())
	if err != nil {
		return o, err
	}
	o, err = c.a.admin.store.Add(o, who)
	if err != nil {
		return o, err
	}
	c.a.log.Warn("admin override set", "id", o.ID, "kind", o.Kind, "target", o.Target(), "who", who, "reason", o.Reason, "expires", o.Expires)
	c.a.adminChanged(true)
	return o, nil
}

func (c adminControl) Remove(id, who string) (admin.Override, error) {
	o, err := c.a.admin.store.Remove(id)
	if err != nil {
		return o, err
	}
	c.a.log.Warn("admin override removed", "id", o.ID, "kind", o.Kind, "target", o.Target(), "who", who)
	c.a.adminChanged(true)
	return o, nil
}
