package serving

import (
	"context"
	"slices"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
)

// activeOverrides are the overrides in force now (none without a store).
func (p *Pipeline) activeOverrides() []admin.Override {
	if p.opts.Admin == nil {
		return nil
	}
	return p.opts.Admin.Active()
}

// Overrides lists the overrides in force.
func (p *Pipeline) Overrides() []admin.Override { return p.activeOverrides() }

// SetBroadcast sets how a local override change reaches the other nodes
// (the ring's BroadcastShared); nil stops spreading.
func (p *Pipeline) SetBroadcast(f func([]byte)) {
	if f == nil {
		p.broadcast.Store(nil)
		return
	}
	p.broadcast.Store(&f)
}

// AddOverride validates req against what is served (the same rules as
// every other source of overrides), stores it, republishes and spreads it.
func (p *Pipeline) AddOverride(req admin.Request, who string) (admin.Override, error) {
	if p.opts.Admin == nil {
		return admin.Override{}, ErrNoAdmin
	}
	if err := p.MayChange(); err != nil {
		return admin.Override{}, err
	}
	o, err := req.Validate(&p.State().Effective.Desired, time.Now())
	if err != nil {
		return o, err
	}
	if err := p.guard(&o, req.Force); err != nil {
		return o, err
	}
	if o, err = p.opts.Admin.Add(o, who); err != nil {
		return o, err
	}
	p.log.Warn("admin override set", "id", o.ID, "kind", o.Kind, "target", o.Target(), "who", who, "reason", o.Reason, "expires", o.Expires, "forced", o.Forced)
	p.AdminChanged(true)
	return o, nil
}

// guard applies the min_healthy rule to a drain or force-down: it compiles
// the current inputs with and without o (admin.Guard compares them) and
// refuses with an *admin.GuardError, unless force, when o would leave a
// service below its minimum; forced, o records what the rule said.
// (Two operators' concurrent changes are each checked against the state
// before the other: the rule is a guard rail, not a lock.)
func (p *Pipeline) guard(o *admin.Override, force bool) error {
	if o.Kind != admin.KindDrain && o.Kind != admin.KindForceDown {
		return nil
	}
	short, err := p.shortOf(p.State(), []admin.Override{*o})
	if err != nil {
		return err
	}
	if len(short) == 0 {
		return nil
	}
	gerr := &admin.GuardError{Shortfalls: short}
	if !force {
		p.m.guard.WithLabelValues("refused").Inc()
		return gerr
	}
	p.m.guard.WithLabelValues("forced").Inc()
	o.Forced = gerr.Rule()
	return nil
}

// shortOf is admin.Guard of the state s against s with extra in force:
// the services extra would leave below their min_healthy.
func (p *Pipeline) shortOf(s *State, extra []admin.Override) ([]admin.Shortfall, error) {
	after, err := p.whatIf(s, extra)
	if err != nil {
		return nil, err
	}
	// after follows the current snapshot: the services it shares have the
	// same state in both, so only those it compiled can fall short.
	changed := after.Recompiled()
	before := make([]engine.ServiceStatus, 0, len(changed))
	byName := make(map[string]*model.Service, len(changed))
	for _, st := range changed {
		if b, ok := s.Snapshot.Service(st.Name); ok {
			before = append(before, b)
		}
		byName[st.Name] = nil
	}
	d := &s.Effective.Desired
	for i := range d.Services {
		if _, ok := byName[d.Services[i].Name]; ok {
			byName[d.Services[i].Name] = &d.Services[i]
		}
	}
	return admin.Guard(before, changed, func(name string) admin.MinHealthy {
		n, from := d.MinHealthyRule(byName[name])
		return admin.MinHealthy{N: n, From: from}
	}), nil
}

// RemoveOverride ends an override, republishes and spreads the change.
func (p *Pipeline) RemoveOverride(id, who string) (admin.Override, error) {
	if p.opts.Admin == nil {
		return admin.Override{}, ErrNoAdmin
	}
	if err := p.MayChange(); err != nil {
		return admin.Override{}, err
	}
	o, err := p.opts.Admin.Remove(id)
	if err != nil {
		return o, err
	}
	p.log.Warn("admin override removed", "id", o.ID, "kind", o.Kind, "target", o.Target(), "who", who)
	p.AdminChanged(true)
	return o, nil
}

// AdminChanged republishes and, for a change this node makes or merges,
// spreads the whole state.
func (p *Pipeline) AdminChanged(spread bool) {
	if err := p.Republish(); err != nil {
		p.log.Error("republish after an admin change failed: previous snapshot keeps serving", "err", err)
	}
	if b := p.broadcast.Load(); spread && b != nil {
		p.signEntries()
		(*b)(p.opts.Admin.State().Marshal())
	}
}

// SharedState is this node's admin state for the ring's push/pull syncs.
func (p *Pipeline) SharedState() []byte {
	if p.opts.Admin == nil {
		return nil
	}
	p.signEntries()
	return p.opts.Admin.State().Marshal()
}

// OnShared merges another node's admin state from the ring (the ring has
// checked that the node that sent it has the admin capability). Each entry
// passes the same validation as POST /v1/admin/overrides, then the checks
// of its writer (signature, capability, who bound to it), the min_healthy
// rule and the caps, before it is merged, saved or passed on; every
// refusal is counted in meridian_admin_entries_rejected_total.
func (p *Pipeline) OnShared(data []byte) {
	if p.opts.Admin == nil {
		return
	}
	other, err := admin.Unmarshal(data)
	if err != nil {
		p.m.rejected.WithLabelValues("ring", admin.RejectInvalid).Inc()
		p.log.Warn("ring: bad admin state from another node", "err", err)
		return
	}
	if p.ring.Load() == nil && p.sawRing.Load() {
		return // the ring stopped
	}
	if p.ring.Load() == nil {
		p.keepPending(data) // the ring started and delivered before SetRing: checked once it is set
		return
	}
	cur := p.State().Effective
	other, refused := other.Sanitize(&cur.Desired, time.Now(), cur.Ring.MaxClockSkew.D())
	if slices.ContainsFunc(refused, func(e admin.EntryError) bool { return e.Reason == admin.RejectUnknownTarget }) {
		p.keepPending(data) // merged again once our config has the target
	}
	other, bad := p.checkWriters(other)
	refused = append(refused, bad...)
	other, bad = p.guardRing(other)
	refused = append(refused, bad...)
	changed, bad, err := p.opts.Admin.Merge(other)
	refused = append(refused, bad...)
	p.logRefused(refused)
	if err != nil {
		p.log.Error("admin state from the ring not saved", "err", err)
		return
	}
	if changed {
		p.log.Info("admin overrides updated from the ring", "active", len(p.opts.Admin.Active()))
		p.AdminChanged(p.opts.Relay) // pass the merged state on
	}
}

// maxPending bounds the ring states kept for a retry after a reload.
const maxPending = 32

// keepPending remembers a ring admin state that had entries on targets
// this node's config does not have (yet): the ring passes a state on only
// once, so after the next reload or Kubernetes merge it is merged again.
func (p *Pipeline) keepPending(data []byte) {
	p.pendingMu.Lock()
	defer p.pendingMu.Unlock()
	if p.pending == nil {
		p.pending = map[string][]byte{}
	}
	if len(p.pending) >= maxPending {
		clear(p.pending)
	}
	p.pending[string(data)] = data
}

// retryPending merges the kept ring states again (the config changed).
func (p *Pipeline) retryPending() {
	p.pendingMu.Lock()
	kept := p.pending
	p.pending = nil
	p.pendingMu.Unlock()
	for _, data := range kept {
		p.OnShared(data)
	}
}

// ExpireOverrides republishes when an override in force has expired since
// the last publish; it reports whether it did.
func (p *Pipeline) ExpireOverrides() bool {
	if p.opts.Admin == nil || overrideIDs(p.opts.Admin.Active()) == p.State().overrides {
		return false
	}
	p.log.Info("admin override expired")
	p.AdminChanged(false)
	return true
}

// RunExpiry calls ExpireOverrides every interval until ctx is done.
func (p *Pipeline) RunExpiry(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.ExpireOverrides()
		}
	}
}
