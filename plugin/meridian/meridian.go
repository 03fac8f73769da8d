// Package meridian is the CoreDNS plugin that answers Meridian's global
// services from inside CoreDNS. It loads the same YAML as `meridian serve`
// and answers through internal/engine: there is no second implementation
// of answering. With `ring` it joins the prober ring as an observer and
// follows the probers' decisions.
package meridian

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/fall"
	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/failover"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/ring"
)

var log = clog.NewWithPlugin(pluginName)

// Meridian is the plugin.
type Meridian struct {
	Next       plugin.Handler
	Zones      []string
	ConfigPath string
	GeoIP      string // overrides geo.mmdb
	Ring       bool
	Fall       fall.F

	store   engine.Store
	queries queryCounters
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu       sync.Mutex
	file     *config.File
	locator  *geo.Locator
	decision *failover.Decision
	ring     *ring.Ring
}

// Start loads the config (an error stops CoreDNS from starting, naming the
// file and line), then watches it and, with ring, follows the decisions.
func (m *Meridian) Start() error {
	f, loc, err := config.Prepare(m.ConfigPath, nil, m.GeoIP)
	if err != nil {
		return fmt.Errorf("meridian: %w", err)
	}
	m.file, m.locator = f, loc
	if err := m.publish(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	sl := slogFor()
	if w, err := config.NewWatcher(m.ConfigPath, sl); err != nil {
		log.Warningf("config file watching disabled: %v", err)
	} else {
		m.wg.Add(1)
		go func() { defer m.wg.Done(); w.Run(ctx, m.reload) }()
	}
	if m.Ring {
		if err := m.startRing(ctx); err != nil {
			cancel()
			m.wg.Wait()
			return err
		}
	}
	log.Infof("serving %d services from %s", len(f.Services), m.ConfigPath)
	return nil
}

// Stop ends the watcher and leaves the ring.
func (m *Meridian) Stop() error {
	if m.cancel != nil {
		m.cancel()
	}
	m.wg.Wait()
	return nil
}

func (m *Meridian) publish() error {
	m.mu.Lock()
	f, loc, d := m.file, m.locator, m.decision
	m.mu.Unlock()
	var h engine.Health = engine.NoHealth{}
	if d != nil {
		h = d
	}
	snap, err := m.store.Publish(&f.Desired, engine.Options{Locator: loc, Health: h})
	if err != nil {
		return fmt.Errorf("meridian: compile %s: %w", m.ConfigPath, err)
	}
	generation.Set(float64(snap.Generation()))
	return nil
}

// reload swaps in a changed config file; an invalid one keeps the current snapshot.
func (m *Meridian) reload() {
	f, loc, err := config.Prepare(m.ConfigPath, nil, m.GeoIP)
	if err == nil {
		m.mu.Lock()
		prevFile, prevLoc := m.file, m.locator
		m.file, m.locator = f, loc
		m.mu.Unlock()
		if err = m.publish(); err != nil {
			m.mu.Lock()
			m.file, m.locator = prevFile, prevLoc
			m.mu.Unlock()
		}
	}
	if err != nil {
		reloads.WithLabelValues("failure").Inc()
		log.Errorf("config reload failed, previous config keeps serving: %v", err)
		return
	}
	reloads.WithLabelValues("success").Inc()
	m.mu.Lock()
	r := m.ring
	m.mu.Unlock()
	if r != nil {
		if err := r.SetPeers(f.Ring.Peers); err != nil {
			log.Errorf("ring.peers not applied, the previous peers stay trusted: %v", err)
		}
	}
	log.Infof("config reloaded: %s", m.ConfigPath)
}

// startRing joins the ring as an observer (it neither probes nor votes) and
// decides from the probers' votes, like every prober does.
func (m *Meridian) startRing(ctx context.Context) error {
	d := &m.file.Desired
	if d.Ring.Region == "" {
		return fmt.Errorf("meridian: %s: ring.region is required for the ring property", m.ConfigPath)
	}
	host, _ := os.Hostname()
	name := d.Ring.NodeNameFor(host + "-coredns")
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	r, err := ring.Start(ring.Config{
		NodeName: name, Region: d.Ring.Region, Role: ring.RoleObserver,
		Bind: d.Ring.Bind, Advertise: d.Ring.Advertise, Seeds: d.Ring.Seeds, KeyFile: d.Ring.KeyFile,
		Label: d.Ring.Label, RequireEncryption: d.Ring.RequireEncryption,
		RejoinInterval: d.Ring.RejoinInterval.D(), Memberlist: d.Ring.Memberlist,
		Logger: slogFor(), OnChange: poke,
		// An observer originates nothing, so its own key is a fresh one; it
		// checks every vote against the probers listed in ring.peers.
		Peers: d.Ring.Peers, MaxClockSkew: d.Ring.MaxClockSkew.D(),
		SummaryInterval: d.Health.Interval.D(), // the probers' summary period: how long one counts as live
	})
	if err != nil {
		return fmt.Errorf("meridian: ring: %w", err)
	}
	m.ring = r
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer r.Shutdown()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-wake:
			case <-t.C:
			}
			m.decide(r)
		}
	}()
	return nil
}

func (m *Meridian) decide(r *ring.Ring) {
	m.mu.Lock()
	f, prev := m.file, m.decision
	m.mu.Unlock()
	var probers []failover.Prober
	for _, mem := range r.Members() {
		if mem.Role == ring.RoleProber {
			probers = append(probers, failover.Prober{Name: mem.Name, Region: mem.Region})
		}
	}
	ringMembers.Set(float64(len(probers)))
	d := failover.Decide(failover.Input{Desired: &f.Desired, Votes: r.Votes(), Probers: probers, Prev: prev, Now: time.Now()}, failover.ParamsFrom(&f.Desired))
	m.mu.Lock()
	m.decision = d
	m.mu.Unlock()
	for _, c := range d.Changes {
		if c.StateChanged() && !(c.From == failover.Unknown && c.To == failover.Up) {
			log.Infof("decision: %s %s -> %s (%s)", c.Subject, c.From, c.To, c.Reason)
		}
	}
	if d.StatesChanged {
		if err := m.publish(); err != nil {
			log.Errorf("republish after a health change failed: %v", err)
		}
	}
}
