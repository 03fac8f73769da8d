package serving

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/capacity"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/failover"
	"github.com/meridian-gslb/meridian/internal/latency"
	"github.com/meridian-gslb/meridian/internal/model"
)

// State is what a Pipeline serves: one immutable value, replaced as a
// whole after every change. Nothing in it is modified once published.
type State struct {
	Loaded    *Loaded            // the config file as loaded
	Effective *config.File       // Loaded.File with the Kubernetes-sourced services merged in
	Served    *model.Desired     // Effective with the operators' overrides applied: what is compiled
	Decision  *failover.Decision // the ring's decided health (nil without ring, or before the first round)
	Capacity  *capacity.State    // ready fractions of capacity-aware services (nil: configured weights)
	Latency   *latency.View      // the RTTs latency services answer by (nil: none measured yet)
	Sites     Sites              // the ring's live sites: names and nameservers of zones[].ring (nil: none known)
	Snapshot  *engine.Snapshot   // the compiled answer tables built from the above

	ReloadedAt time.Time // the last config load, good or bad
	ReloadErr  string    // why the last config load failed ("" when it succeeded)

	overrides string // ids of the overrides in force when Snapshot was built
}

// Sites adds the ring's live sites to a desired state: the names and
// nameservers of zones[].ring (*sites.View, kept by the ring follower).
type Sites interface {
	Apply(d *model.Desired) *model.Desired
}

// KubeSource merges the Kubernetes-sourced services into a file's desired
// state (internal/app's member clusters). A service that does not validate
// is left out and reported on its objects; when the merged whole fails the
// file alone comes back with the error. PrepareNext is called after every
// publish: the source may prepare its next merge's work in advance, off the path
// of the next change (a no-op is fine).
type KubeSource interface {
	Merge(l *Loaded) (*config.File, error)
	PrepareNext()
}

// Options of a Pipeline.
type Options struct {
	Logger  *slog.Logger
	Metrics *Metrics // nil: NewMetrics on a private registry

	// Admin holds the operators' overrides (nil: none; the plugin keeps
	// them in memory). Relay passes a merged ring state on (serve nodes
	// do; an observer originates nothing).
	Admin *admin.Store
	Relay bool

	// Kube merges the Kubernetes sources (nil: the file alone).
	Kube KubeSource

	// Keys gives the DNSSEC signers (internal/zonekeys.Watcher, which
	// reads the key files outside the lock; nil: a zone with a dnssec
	// section is refused).
	Keys Keys

	// Transfers, when set, is called once by New with the pipeline's
	// store and returns the publisher for zones with a transfer section
	// (internal/xfr.NewPublisher: managed serials, a transfer server with
	// AXFR/IXFR, NOTIFY and TSIG). Without it such zones are served with
	// their configured serial (use Accept to refuse them).
	Transfers func(*engine.Store) Publisher

	// Accept is asked about every file before it is used (at start and
	// at each reload): an error refuses the file with that reason.
	Accept func(*Loaded) error

	// Changed is called, outside the pipeline's lock and one call at a
	// time, after every new State (a reload, a Kubernetes change, an
	// override, a decision that changed a state) with the State it last
	// saw. It must not call back into the pipeline's change methods.
	Changed func(prev, next *State)
}

// Pipeline turns inputs into the engine.Store that answers queries.
// Changes are serialized; reads (State, Store) never wait.
type Pipeline struct {
	opts    Options
	log     *slog.Logger
	m       *Metrics
	store   engine.Store
	publish Publisher // made by Options.Transfers (nil: the store publishes alone)

	mu  sync.Mutex // serializes changes
	cur atomic.Pointer[State]

	hookMu sync.Mutex // serializes Changed calls
	hooked *State     // the last State passed to Changed

	pendingMu sync.Mutex
	pending   map[string][]byte // ring admin states with entries on targets we did not have yet

	broadcast atomic.Pointer[func([]byte)] // spreads a local admin change on the ring
	ring      atomic.Pointer[ringAdmin]    // who may change traffic, signatures of overrides (nil: no ring)
	sawRing   atomic.Bool                  // SetRing was called once

}

// New builds the first State from l and publishes it. An error (a file the
// front end does not accept, a zone key that cannot be read) stops the
// start with the reason.
func New(l *Loaded, opts Options) (*Pipeline, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	p := &Pipeline{opts: opts, log: opts.Logger, m: opts.Metrics}
	if p.m == nil {
		p.m = NewMetrics(newPrivateRegistry())
	}
	if opts.Transfers != nil {
		p.publish = opts.Transfers(&p.store)
	}
	if a := opts.Admin; a != nil {
		for _, e := range a.Skipped() {
			p.m.rejected.WithLabelValues("file", e.Reason).Inc()
			p.log.Error("admin state: an entry of the state file is skipped", "file", a.Path(), "id", e.ID, "reason", e.Reason, "err", e.Err)
		}
	}
	if err := p.accept(l); err != nil {
		return nil, err
	}
	eff, err := p.merge(l)
	if err != nil {
		return nil, err
	}
	if err := p.loadKeys(l); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.publishLocked(&State{Loaded: l, Effective: eff, ReloadedAt: time.Now()}); err != nil {
		return nil, err
	}
	p.hooked = p.cur.Load()
	p.m.lastOK.SetToCurrentTime()
	return p, nil
}

// Logger is the pipeline's logger (for the followers that feed it).
func (p *Pipeline) Logger() *slog.Logger { return p.log }

// Admin is the store of the operators' overrides (nil: none kept here).
func (p *Pipeline) Admin() *admin.Store { return p.opts.Admin }

// Store is what the DNS front end answers from.
func (p *Pipeline) Store() *engine.Store { return &p.store }

// Transfers is the publisher Options.Transfers made (nil without it); the
// DNS front end takes the transfer server from it.
func (p *Pipeline) Transfers() Publisher { return p.publish }

// State is what is served now (never nil after New).
func (p *Pipeline) State() *State { return p.cur.Load() }

func (p *Pipeline) accept(l *Loaded) error {
	if p.opts.Accept == nil {
		return nil
	}
	return p.opts.Accept(l)
}

func (p *Pipeline) merge(l *Loaded) (*config.File, error) {
	if p.opts.Kube == nil {
		return l.File, nil
	}
	return p.opts.Kube.Merge(l)
}

// Reload replaces the config file. A file that is refused or does not
// compile leaves the previous State serving; the error says why and is
// kept in State.ReloadErr. prev is the State before the call. The new
// file's key files are read before the lock is taken.
func (p *Pipeline) Reload(l *Loaded, loadErr error) (prev *State, err error) {
	err = loadErr
	if err == nil {
		err = p.accept(l)
	}
	if err == nil {
		err = p.loadKeys(l)
	}
	p.mu.Lock()
	prev = p.cur.Load()
	var eff *config.File
	if err == nil {
		// The services the file did not change keep the previous values:
		// no second copy of them while both are live, and the engine
		// shares their compiled form (see model.ShareUnchanged).
		n := model.ShareUnchanged(&l.File.Desired, &prev.Loaded.File.Desired)
		p.log.Debug("config reload: unchanged services shared", "shared", n, "services", len(l.File.Services))
		eff, err = p.merge(l)
	}
	if err == nil {
		next := *prev
		next.Loaded, next.Effective, next.ReloadedAt, next.ReloadErr = l, eff, time.Now(), ""
		err = p.publishLocked(&next)
	}
	if err != nil {
		failed := *prev
		failed.ReloadedAt, failed.ReloadErr = time.Now(), err.Error()
		p.cur.Store(&failed)
		p.mu.Unlock()
		p.m.reloads.WithLabelValues("failure").Inc()
		return prev, err
	}
	p.mu.Unlock()
	p.m.reloads.WithLabelValues("success").Inc()
	p.m.lastOK.SetToCurrentTime()
	p.changed()
	p.retryPending()
	p.prepareNext()
	return prev, nil
}

// Remerge merges the Kubernetes sources again (their objects or members
// changed) and publishes the result; on failure the previous State keeps
// serving.
func (p *Pipeline) Remerge() error {
	p.mu.Lock()
	prev := p.cur.Load()
	eff, err := p.merge(prev.Loaded)
	if err == nil {
		next := *prev
		next.Effective = eff
		err = p.publishLocked(&next)
	}
	p.mu.Unlock()
	if err != nil {
		return err
	}
	p.changed()
	p.retryPending()
	p.prepareNext()
	return nil
}

func (p *Pipeline) prepareNext() {
	if p.opts.Kube != nil {
		p.opts.Kube.PrepareNext()
	}
}

// SetDecision stores a new decision and republishes when a decided state
// changed. A publish that fails keeps the previous snapshot serving (the
// decision is kept for the reports) and returns the error.
func (p *Pipeline) SetDecision(d *failover.Decision) error {
	p.mu.Lock()
	prev := p.cur.Load()
	next := *prev
	next.Decision = d
	var err error
	if d.StatesChanged {
		err = p.publishLocked(&next)
		if err != nil {
			keep := *prev
			keep.Decision = d
			p.cur.Store(&keep)
		}
	} else {
		p.cur.Store(&next)
	}
	p.mu.Unlock()
	if err != nil {
		return err
	}
	if d.StatesChanged {
		p.changed()
	}
	return nil
}

// SetCapacity stores new ready fractions of the capacity-aware services
// and republishes. A publish that fails keeps the previous snapshot
// serving (the fractions are kept for the reports) and returns the error.
func (p *Pipeline) SetCapacity(c *capacity.State) error {
	return p.setInput(func(s *State) { s.Capacity = c })
}

// setInput applies set to the current state and republishes; when the
// publish fails the previous snapshot keeps serving and the new input is
// still kept for the next publish.
func (p *Pipeline) setInput(set func(*State)) error {
	p.mu.Lock()
	prev := p.cur.Load()
	next := *prev
	set(&next)
	err := p.publishLocked(&next)
	if err != nil {
		keep := *prev
		set(&keep)
		p.cur.Store(&keep)
	}
	p.mu.Unlock()
	if err != nil {
		return err
	}
	p.changed()
	return nil
}

// Republish compiles the current inputs again (an override changed or
// expired).
func (p *Pipeline) Republish() error {
	p.mu.Lock()
	next := *p.cur.Load()
	err := p.publishLocked(&next)
	p.mu.Unlock()
	if err != nil {
		return err
	}
	p.changed()
	return nil
}

// changed passes the newest State to Changed, one call at a time, with
// the State passed before: hooks see every change in order, and one that
// runs late sees the newest State, never an older one over a newer.
func (p *Pipeline) changed() {
	if p.opts.Changed == nil {
		return
	}
	p.hookMu.Lock()
	defer p.hookMu.Unlock()
	next := p.cur.Load()
	if next == p.hooked {
		return
	}
	prev := p.hooked
	p.hooked = next
	p.opts.Changed(prev, next)
}

// publishLocked runs the chain on next (Loaded, Effective and Decision
// set): overrides, health, signers and serials, then the store. Only a
// published State becomes current.
func (p *Pipeline) publishLocked(next *State) error {
	ovs := p.activeOverrides()
	ap, opts := next.inputs(ovs)
	snap, err := p.compile(ap.Desired, opts)
	if err != nil {
		return fmt.Errorf("compile: %w", err)
	}
	next.Served, next.Snapshot, next.overrides = ap.Desired, snap, overrideIDs(ovs)
	p.cur.Store(next)
	p.m.snap.Store(snap)
	counts := map[string]int{}
	for _, o := range ovs {
		counts[o.Kind]++
	}
	for _, k := range admin.Kinds {
		p.m.overrides.WithLabelValues(k).Set(float64(counts[k]))
	}
	p.log.Debug("snapshot published", "generation", snap.Generation(), "services", len(next.Served.Services), "shared", snap.SharedServices())
	return nil
}

// inputs is what a compile of s's inputs with the overrides ovs takes:
// the served desired state and the engine options (health, notes,
// capacity, latency). Publishing and a what-if (WhatIf) share it.
func (s *State) inputs(ovs []admin.Override) (admin.Applied, engine.Options) {
	var h engine.Health = engine.NoHealth{}
	if s.Decision != nil {
		h = s.Decision
	}
	d := &s.Effective.Desired
	if s.Sites != nil {
		d = s.Sites.Apply(d)
	}
	ap := admin.Apply(d, ovs)
	opts := engine.Options{Locator: s.Loaded.Locator, Health: ap.Health(h), Notes: ap.Notes}
	opts.Latency = s.Latency
	if s.Capacity != nil {
		opts.Capacity = s.Capacity
	}
	return ap, opts
}

// WhatIf compiles the current inputs with the overrides in force plus
// extra, without publishing anything: the snapshot the pipeline would
// serve (unsigned) if extra were set now.
func (p *Pipeline) WhatIf(extra []admin.Override) (*engine.Snapshot, error) {
	return p.whatIf(p.State(), extra)
}

// SimulationBase is the served state a what-if simulation starts from
// (whatif.Source): the served snapshot, the effective desired state, the
// ids of the overrides in force, and a compile of that same state with
// extra overrides.
func (p *Pipeline) SimulationBase() (*engine.Snapshot, *model.Desired, string, func([]admin.Override) (*engine.Snapshot, error)) {
	s := p.State()
	compile := func(extra []admin.Override) (*engine.Snapshot, error) { return p.whatIf(s, extra) }
	return s.Snapshot, &s.Effective.Desired, overrideIDs(p.activeOverrides()), compile
}

func (p *Pipeline) whatIf(s *State, extra []admin.Override) (*engine.Snapshot, error) {
	ap, opts := s.inputs(append(p.activeOverrides(), extra...))
	opts.Previous = s.Snapshot // shares the services the extra overrides leave as they are
	snap, err := engine.Compile(ap.Desired, opts)
	if err != nil {
		return nil, fmt.Errorf("what-if compile: %w", err)
	}
	return snap, nil
}

// compile publishes d with the DNSSEC signers of its signed zones and, for
// zones with transfers, managed serials. It reads no file: the keys come
// from Options.Keys.
func (p *Pipeline) compile(d *model.Desired, opts engine.Options) (*engine.Snapshot, error) {
	signers, err := p.signers(d)
	if err != nil {
		return nil, err
	}
	opts.Signers = signers
	// Only the pipeline publishes to its store, under its lock: the
	// current snapshot is the one this compile follows. The services whose
	// inputs did not change are shared with it, not compiled again.
	opts.Previous = p.store.Load()
	if p.publish == nil {
		return p.store.Publish(d, opts)
	}
	return p.publish.Publish(d, opts)
}

func overrideIDs(ovs []admin.Override) string {
	ids := make([]string, len(ovs))
	for i, o := range ovs {
		ids[i] = o.ID
	}
	return strings.Join(ids, ",")
}

// ErrNoAdmin is returned by the override calls of a pipeline without an
// admin store.
var ErrNoAdmin = errors.New("overrides are not kept by this process")

// SetLatency stores the RTT view latency services are compiled with and
// republishes. A publish that fails keeps the previous snapshot serving (the
// view is kept for the next publish) and returns the error.
func (p *Pipeline) SetLatency(v *latency.View) error {
	return p.setInput(func(s *State) { s.Latency = v })
}

// SetSites stores the ring's sites and, when a zone serves names from them
// (zones[].ring), republishes. A publish that fails keeps the previous
// snapshot serving.
func (p *Pipeline) SetSites(v Sites) error {
	p.mu.Lock()
	prev := p.cur.Load()
	if !slices.ContainsFunc(prev.Effective.Zones, func(z model.Zone) bool { return z.Ring != nil }) {
		next := *prev
		next.Sites = v // kept for a reload that adds a ring section
		p.cur.Store(&next)
		p.mu.Unlock()
		return nil
	}
	p.mu.Unlock()
	return p.setInput(func(s *State) { s.Sites = v })
}
