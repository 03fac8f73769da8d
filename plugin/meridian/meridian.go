// Package meridian is the CoreDNS plugin that answers Meridian's global
// services from inside CoreDNS. It loads the same YAML as `meridian serve`
// and feeds its answers through the same pipeline (internal/serving: file,
// overrides, decided health, DNSSEC signers, engine.Store): there is no
// second implementation of answering or of what feeds it. With `ring` it
// joins the prober ring as an observer: it follows the probers' decisions
// and the operators' overrides (drain, force, weight) exactly as a serve
// node does. It serves zone transfers through CoreDNS's transfer plugin
// (transfer.go). Its scope is written down in docs/adr/0010-plugin-scope.md:
// Kubernetes sources are refused at start, with the section named, because
// a serve node does them; so is zones[].transfer, whose allow-list and key
// the Corefile's transfer and tsig plugins replace.
package meridian

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/fall"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/follow"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/ring"
	"github.com/meridian-gslb/meridian/internal/serving"
	"github.com/meridian-gslb/meridian/internal/xfr"
	"github.com/meridian-gslb/meridian/internal/zonekeys"
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

	queries queryCounters
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started atomic.Bool // Start finished (set after every field below)

	pipe     *serving.Pipeline
	ring     *ring.Ring       // nil without ring
	trust    *ring.Keeper     // nil without ring: ring.peers, ring.ca and ring.revoked followed
	follower *follow.Follower // nil without ring
	notify   notifications    // NOTIFY through CoreDNS's transfer plugin (transfer.go)
}

// pipelineMetrics are the pipeline's metrics, registered once per process
// as coredns_meridian_...: CoreDNS may start several instances (server
// blocks, Corefile reloads).
var pipelineMetrics = sync.OnceValue(func() *serving.Metrics {
	return serving.NewMetrics(prometheus.WrapRegistererWithPrefix(plugin.Namespace+"_", prometheus.DefaultRegisterer))
})

// followMetrics are the ring followers' metrics, registered once per
// process like pipelineMetrics.
var followMetrics = sync.OnceValue(func() *follow.Metrics {
	return follow.NewMetrics(prometheus.WrapRegistererWithPrefix(plugin.Namespace+"_", prometheus.DefaultRegisterer))
})

// Start loads the config (an error stops CoreDNS from starting, naming the
// file and line, or the section the plugin does not serve), then watches
// it and, with ring, follows the ring's decisions and overrides.
func (m *Meridian) Start() error {
	l, err := serving.Load(m.ConfigPath, nil, m.GeoIP)
	if err != nil {
		return fmt.Errorf("meridian: %w", err)
	}
	followMetrics() // registered with the pipeline's, ring or not
	keys := zonekeys.New(zonekeys.Options{Logger: slogFor()})
	opts := serving.Options{Logger: slogFor(), Metrics: pipelineMetrics(), Accept: m.scope, Changed: m.changed, Keys: keys}
	if m.notify.to != nil {
		// Secondaries transfer the zones through CoreDNS's transfer plugin:
		// a zone whose content changes gets the next serial, as on a serve
		// node with zones[].transfer, so that they see every change.
		opts.Transfers = func(st *engine.Store) serving.Publisher { return xfr.NewSerialPublisher(st, slogFor()) }
	}
	if m.Ring {
		// The ring's overrides, kept in memory: a restarted plugin gets
		// them back from the probers' push/pull within seconds.
		if opts.Admin, err = admin.Open("", m.nodeName(l), l.File.Ring.MaxClockSkew.D()); err != nil {
			return fmt.Errorf("meridian: %w", err)
		}
	}
	if m.pipe, err = serving.New(l, opts); err != nil {
		return fmt.Errorf("meridian: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.startNotify(ctx)
	m.wg.Add(1)
	go func() { defer m.wg.Done(); keys.Run(ctx, m.pipe.Republish) }()
	if w, err := config.NewWatcher(m.ConfigPath, slogFor()); err != nil {
		log.Warningf("config file watching disabled: %v", err)
	} else {
		m.wg.Add(1)
		go func() { defer m.wg.Done(); w.Run(ctx, m.reload) }()
	}
	if m.Ring {
		if err := m.startRing(ctx, l); err != nil {
			cancel()
			m.wg.Wait()
			return err
		}
		// An override set with --for ends here when it ends on the serve
		// nodes (they do not announce an expiry).
		m.wg.Add(1)
		go func() { defer m.wg.Done(); m.pipe.RunExpiry(ctx, time.Second) }()
	}
	if len(l.File.Notifications.Receivers) > 0 {
		log.Infof("notifications: not sent from the plugin; the serve nodes' elected writer sends them (one message per change)")
	}
	if l.File.HasProviderZones() {
		log.Infof("providers and zone delegations: not pushed from the plugin; the serve nodes' elected writer pushes them")
	}
	log.Infof("serving %d services from %s", len(l.File.Services), m.ConfigPath)
	m.started.Store(true)
	return nil
}

// Ready is what CoreDNS's ready plugin asks: the config is loaded and, with
// ring, this observer has met the ring (ring.Ring.Settled: it met a
// trusted node, or its seeds name no other node), so it answers from the
// probers' decisions rather than from the config alone. Once ready it
// stays ready, as CoreDNS's kubernetes plugin does after its first sync: a
// ring lost later shows in the log and in coredns_meridian_ring_probers,
// and Kubernetes does not take every CoreDNS pod out of its Service for
// it.
func (m *Meridian) Ready() bool {
	if !m.started.Load() {
		return false
	}
	return m.ring == nil || m.ring.Settled()
}

// Stop ends the watcher and leaves the ring.
func (m *Meridian) Stop() error {
	m.started.Store(false)
	if m.cancel != nil {
		m.cancel()
	}
	m.wg.Wait()
	return nil
}

func (m *Meridian) nodeName(l *serving.Loaded) string {
	host, _ := os.Hostname()
	return l.File.Ring.NodeNameFor(host + "-coredns")
}

// scope refuses what the plugin does not serve, naming the section and
// why, so that nothing in the file is silently ignored.
func (m *Meridian) scope(l *serving.Loaded) error {
	d := &l.File.Desired
	var errs []error
	for i, c := range d.Clusters {
		if c.Kubernetes != nil {
			errs = append(errs, fmt.Errorf("clusters[%d].kubernetes (cluster %s): the CoreDNS plugin does not watch member clusters; run `meridian serve` for Kubernetes-sourced services", i, c.Name))
		}
	}
	if d.Kubernetes.MemberSecrets != nil {
		errs = append(errs, errors.New("kubernetes.member_secrets: the CoreDNS plugin does not watch member clusters; run `meridian serve` for Kubernetes-sourced services"))
	}
	if d.Kubernetes.Propagation != nil {
		errs = append(errs, errors.New("kubernetes.propagation: the CoreDNS plugin does not propagate workloads; run `meridian serve` for it"))
	}
	for i, s := range d.Services {
		if s.Capacity != nil {
			errs = append(errs, fmt.Errorf("services[%d].capacity (service %s): the CoreDNS plugin does not read ready fractions; run `meridian serve` for capacity-aware weights", i, s.Name))
		}
	}
	for i, z := range d.Zones {
		if z.Transfer != nil {
			errs = append(errs, fmt.Errorf("zones[%d].transfer (zone %s): in CoreDNS, who may transfer a zone and with which key is configured in the Corefile: remove this section from the plugin's config and add CoreDNS's transfer plugin (`transfer { to ADDRESS... }`, with the tsig plugin for TSIG); the plugin serves the zone's AXFR/IXFR through it (`meridian serve` reads this section itself)", i, z.Apex))
		}
	}
	if d.Catalog != nil {
		errs = append(errs, errors.New("catalog: the CoreDNS plugin does not serve a catalog zone; run `meridian serve` for it (or list the zones on each secondary)"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: not served by the CoreDNS plugin (see plugin/meridian/README.md, Scope): %w", m.ConfigPath, errors.Join(errs...))
	}
	return nil
}

// reload swaps in a changed config file; an invalid one (or one outside
// the plugin's scope) keeps the current snapshot.
func (m *Meridian) reload() {
	l, err := serving.Load(m.ConfigPath, nil, m.GeoIP)
	if _, err = m.pipe.Reload(l, err); err != nil {
		log.Errorf("config reload failed, previous config keeps serving: %v", err)
		return
	}
	if m.trust != nil {
		m.trust.Update(l.File.Desired.DefaultTrustDomain(), observerTrust(l.File.Ring))
	}
	log.Infof("config reloaded: %s", m.ConfigPath)
}

// startRing joins the ring as an observer (it neither probes nor votes nor
// originates overrides) and decides from the probers' votes, like every
// prober does, through the same follower.
func (m *Meridian) startRing(ctx context.Context, l *serving.Loaded) error {
	d := &l.File.Desired
	if d.Ring.Region == "" {
		return fmt.Errorf("meridian: %s: ring.region is required for the ring property", m.ConfigPath)
	}
	wake, latWake, sitesWake := make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{}, 1)
	poke := func() {
		for _, c := range []chan struct{}{wake, sitesWake} {
			select {
			case c <- struct{}{}:
			default:
			}
		}
	}
	cfg, err := ring.FromConfig(d, m.nodeName(l), ring.RoleObserver)
	if err != nil {
		return fmt.Errorf("meridian: %w", err)
	}
	cfg.Logger, cfg.OnChange = slogFor(), poke
	// Overrides set on any serve node: validated like the admin API's, then
	// applied (an observer never passes them on). An observer originates
	// nothing, so its own key is a fresh one; it checks every vote against
	// the probers listed in ring.peers or by credential.
	cfg.OnShared = m.pipe.OnShared
	cfg.OnRTT = func() {
		select {
		case latWake <- struct{}{}:
		default:
		}
	}
	r, err := ring.Start(cfg)
	if err != nil {
		return fmt.Errorf("meridian: ring: %w", err)
	}
	m.ring = r
	// ring.peers, ring.ca and ring.revoked follow reloads and the CA files.
	m.pipe.SetRing(r) // overrides from the ring are checked against their writers
	m.trust = &ring.Keeper{Ring: r, Logger: slogFor()}
	m.trust.Started(d.DefaultTrustDomain(), observerTrust(d.Ring))
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.trust.Run(ctx, ring.DefaultTrustCheck)
	}()
	m.runFollowers(ctx, r, wake, latWake, sitesWake)
	return nil
}

// runFollowers starts the followers of the ring's decisions, RTT summaries
// and sites, each woken by its channel; the decisions' follower leaves the
// ring when ctx ends.
func (m *Meridian) runFollowers(ctx context.Context, r *ring.Ring, wake, latWake, sitesWake <-chan struct{}) {
	m.follower = &follow.Follower{Pipeline: m.pipe, Ring: r, Logger: slogFor(), Metrics: followMetrics(),
		Probers: func(n int) { ringMembers.Set(float64(n)) }}
	lat := &follow.LatencyFollower{Pipeline: m.pipe, Ring: r, Logger: slogFor(), Metrics: followMetrics()}
	sitesF := &follow.SitesFollower{Pipeline: m.pipe, Ring: r, Logger: slogFor()}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		sitesF.Run(ctx, sitesWake, 5*time.Second)
	}()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		lat.Run(ctx, latWake, time.Second)
	}()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer r.Shutdown()
		m.follower.Run(ctx, wake, time.Second)
	}()
}

// observerTrust is the ring section as an observer follows it: it
// originates nothing, so it needs no credential of its own.
func observerTrust(r model.Ring) model.Ring {
	r.Credential = model.RingCredential{}
	return r
}
