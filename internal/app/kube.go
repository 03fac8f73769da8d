package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/failover"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/kube"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/placement"
	"github.com/meridian-gslb/meridian/internal/propagation"
	"k8s.io/client-go/rest"
)

// kubeState is the Kubernetes side of a running App.
type kubeState struct {
	mgr     *kube.Manager
	prop    *propagation.Controller // nil without kubernetes.propagation
	secrets *kube.SecretWatcher     // nil without kubernetes.member_secrets
	dirty   chan struct{}           // a rebuild is wanted (objects or members changed)
	status  chan struct{}           // a status write-back is wanted
	mu      sync.Mutex
	objs    []kube.Object
	res     kube.Result
	dropped map[string]string // last logged dropped reasons, so each is logged once
}

// kubeSources lists the members the config file and the member Secrets
// register. A cluster the file connects to itself ignores its Secret.
func kubeSources(d *model.Desired, secrets []kube.SecretMember) []kube.MemberSource {
	var out []kube.MemberSource
	inFile := map[string]bool{}
	for _, c := range d.Clusters {
		if c.Kubernetes != nil {
			inFile[c.Name] = true
			out = append(out, kube.MemberSource{Cluster: c.Name, Config: *c.Kubernetes, Origin: "config"})
		}
	}
	for _, s := range secrets {
		if !inFile[s.Cluster.Name] {
			out = append(out, s.Source)
		}
	}
	return out
}

// withSecretClusters adds the clusters member Secrets register to the
// file's clusters: a new cluster takes its region and tags from the
// Secret's annotations; a file cluster keeps the file's. Secrets that
// cannot be used are returned as problems.
func withSecretClusters(d *model.Desired, secrets []kube.SecretMember) (clusters []model.Cluster, problems []string) {
	clusters = slices.Clone(d.Clusters)
	idx := map[string]int{}
	for i, c := range clusters {
		idx[c.Name] = i
	}
	for _, s := range secrets {
		marker := &model.KubeMember{Kubeconfig: s.Source.Origin}
		i, ok := idx[s.Cluster.Name]
		switch {
		case ok && clusters[i].Kubernetes != nil:
			problems = append(problems, fmt.Sprintf("%s: cluster %s is connected by the config file; the Secret is ignored", s.Source.Origin, s.Cluster.Name))
		case ok:
			c := clusters[i]
			c.Kubernetes = marker
			if c.Heartbeat == nil {
				c.Heartbeat = &model.Heartbeat{}
			}
			clusters[i] = c
		case s.Cluster.Region == "":
			problems = append(problems, fmt.Sprintf("%s: annotation %s is required for cluster %s, which the config file does not define", s.Source.Origin, kube.AnnoRegion, s.Cluster.Name))
		default:
			c := s.Cluster
			c.Kubernetes = marker
			clusters = append(clusters, c)
		}
	}
	return clusters, problems
}

// startKube connects to the member clusters when the config has any.
func (a *App) startKube(ctx context.Context, wg *sync.WaitGroup) {
	l := a.loaded()
	if !l.File.Desired.KubeEnabled() {
		return
	}
	k := &kubeState{dirty: make(chan struct{}, 1), status: make(chan struct{}, 1), dropped: map[string]string{}}
	k.mgr = kube.NewManager(ctx, kube.Options{Logger: a.log, Registry: a.reg, OnChange: func() { poke(k.dirty) }})
	a.mu.Lock()
	a.kube = k
	a.mu.Unlock()
	if ms := l.File.Kubernetes.MemberSecrets; ms != nil {
		w, err := k.mgr.WatchSecrets(ctx, *ms, l.File.Kubernetes.ConnectTimeout.D(), func() { poke(k.dirty) })
		if err != nil {
			a.log.Error("kubernetes: member Secrets cannot be watched; only the config file's members are used", "err", err)
		}
		k.secrets = w
	}
	srcs := kubeSources(&l.File.Desired, k.secrets.Members())
	k.mgr.Configure(l.File.Kubernetes, srcs)
	if pr := l.File.Kubernetes.Propagation; pr != nil {
		k.prop = propagation.New(propEnv{a}, propagation.Options{Hub: pr.Hub, Namespaces: pr.Namespaces,
			Interval: pr.Interval.D(), Toleration: pr.Toleration.D(), Score: scoreWeights(pr.Score), Logger: a.log, Registry: a.reg})
		wg.Add(1)
		go func() { defer wg.Done(); k.prop.Run(ctx) }()
		a.log.Info("workload propagation enabled", "hub", pr.Hub, "toleration", pr.Toleration.D())
	}
	a.log.Info("kubernetes sources enabled", "members", len(srcs))
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer k.mgr.Stop()
		// Debounce: a burst of informer events (start-up lists every
		// object) becomes one rebuild.
		for {
			select {
			case <-ctx.Done():
				return
			case <-k.dirty:
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			a.rebuild("kubernetes change")
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-k.status:
			}
			a.writeKubeStatus()
		}
	}()
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// merge adds the Kubernetes-sourced services to the file's desired state.
// A service that does not validate is left out (and reported on its
// objects); if the merged whole still fails, the file alone is served and
// the error returned.
func (a *App) merge(l *Loaded) (*config.File, error) {
	a.mu.Lock()
	k := a.kube
	a.mu.Unlock()
	if k == nil {
		return l.File, nil
	}
	secrets := k.secrets.Members()
	k.mgr.Configure(l.File.Kubernetes, kubeSources(&l.File.Desired, secrets))
	base := l.File.Desired
	clusters, problems := withSecretClusters(&base, secrets)
	base.Clusters = clusters
	objs := k.mgr.Objects()
	res, err := kube.BuildSafe(objs, &base)
	if err != nil {
		return nil, err
	}
	k.mgr.Observe(res)
	k.mu.Lock()
	k.objs, k.res = objs, res
	for name, why := range res.Dropped {
		if k.dropped[name] != why {
			a.log.Warn("kubernetes: service not served", "service", name, "reason", why)
		}
	}
	for _, p := range problems {
		if k.dropped["secret:"+p] == "" {
			a.log.Error("kubernetes: member Secret not used", "problem", p)
		}
		res.Dropped["secret:"+p] = p
	}
	k.dropped = res.Dropped
	k.mu.Unlock()
	if len(res.Services) == 0 && len(clusters) == len(l.File.Clusters) && len(secrets) == 0 {
		return l.File, nil
	}
	d := base
	d.Services = append(slices.Clone(d.Services), res.Services...)
	nd, err := model.Normalize(&d)
	if err != nil {
		return l.File, fmt.Errorf("kubernetes services do not merge with the config file: %w", err)
	}
	f := *l.File
	f.Desired = *nd
	return &f, nil
}

// rebuild merges the Kubernetes sources again and publishes the result.
func (a *App) rebuild(trigger string) {
	a.reloadMu.Lock()
	defer a.reloadMu.Unlock()
	l := a.loaded()
	eff, err := a.merge(l)
	if err != nil {
		a.log.Error("kubernetes merge failed: the previous state keeps serving", "trigger", trigger, "err", err)
		return
	}
	a.mu.Lock()
	prev := a.eff
	a.eff = eff
	h := a.health
	a.mu.Unlock()
	if err := a.publish(); err != nil {
		a.mu.Lock()
		a.eff = prev
		a.mu.Unlock()
		a.log.Error("kubernetes rebuild failed to compile: the previous state keeps serving", "trigger", trigger, "err", err)
		return
	}
	if h != nil {
		h.configure(&eff.Desired)
	}
	if k := a.kubeState(); k != nil && k.prop != nil {
		k.prop.Poke()
	}
	a.log.Debug("kubernetes sources merged", "trigger", trigger, "services", len(eff.Services), "generation", a.store.Load().Generation())
	a.kubeStatusSoon()
}

// kubeStatusSoon asks for a status write-back; it never blocks.
func (a *App) kubeStatusSoon() {
	a.mu.Lock()
	k := a.kube
	a.mu.Unlock()
	if k != nil {
		poke(k.status)
	}
}

// writeKubeStatus writes meridian.io/status on every watched object.
func (a *App) writeKubeStatus() {
	a.mu.Lock()
	k, d := a.kube, a.decision
	a.mu.Unlock()
	snap := a.store.Load()
	if k == nil || snap == nil {
		return
	}
	k.mu.Lock()
	objs, res := k.objs, k.res
	k.mu.Unlock()
	timeline := map[health.Subject]failover.Timeline{}
	clusters := map[string]failover.ClusterState{}
	if d != nil {
		for _, e := range d.Endpoints {
			timeline[e.Subject] = e.Timeline
		}
		for _, c := range d.Clusters {
			clusters[c.Name] = c
		}
	}
	svcs := map[string]kube.ServiceView{}
	desired := snap.Desired()
	order := map[string][]string{}
	for _, s := range desired.Services {
		if s.Failover != nil {
			order[s.Name] = s.Failover.Order
		}
	}
	for _, s := range snap.Services() {
		v := kube.ServiceView{Strategy: s.Strategy, Order: order[s.Name]}
		for _, e := range s.Endpoints {
			ev := kube.EndpointView{Cluster: e.Cluster, Target: e.Target, Weight: e.Weight, State: e.State.String(),
				Drained: e.Drained, Available: e.State.String() != "down" && !e.Drained}
			if tl, ok := timeline[health.EndpointSubject(s.Name, e.Target)]; ok {
				ev.Since, ev.Reason = tl.Since, tl.Reason
			}
			if c, ok := clusters[e.Cluster]; ok && c.Since.After(ev.Since) && c.State != failover.Unknown {
				ev.Since, ev.Reason = c.Since, "cluster "+strings.ToLower(c.State.String())+": "+c.Reason
			}
			v.Endpoints = append(v.Endpoints, ev)
		}
		svcs[s.Name] = v
	}
	st := kube.Statuses(objs, res, func(name string) (kube.ServiceView, bool) { v, ok := svcs[name]; return v, ok })
	if failed := k.mgr.WriteStatus(st, res.Problems); failed > 0 {
		time.AfterFunc(2*time.Second, a.kubeStatusSoon)
	}
}

// kubeManager returns the Kubernetes manager, nil without Kubernetes sources.
func (a *App) kubeManager() *kube.Manager {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.kube == nil {
		return nil
	}
	return a.kube.mgr
}

// KubeReport is GET /v1/kube.
type KubeReport struct {
	Members  []kube.MemberStatus `json:"members"`
	Services map[string][]string `json:"services"`          // Kubernetes-sourced service -> objects behind it
	Dropped  map[string]string   `json:"dropped,omitempty"` // names not served, and why
	Problems map[string][]string `json:"problems,omitempty"`
}

func (a *App) kubeReport() any {
	a.mu.Lock()
	k, d := a.kube, a.decision
	a.mu.Unlock()
	rep := KubeReport{Services: map[string][]string{}, Problems: map[string][]string{}}
	if k == nil {
		return rep
	}
	offline := map[string]failover.ClusterState{}
	if d != nil {
		for _, c := range d.Clusters {
			if c.Monitored && c.State != failover.Ready && c.State != failover.Unknown {
				offline[c.Name] = c
			}
		}
	}
	for _, m := range k.mgr.Members() {
		if c, ok := offline[m.Cluster]; ok && (m.State == kube.StateReady || strings.HasPrefix(m.Reason, "unreachable")) {
			// The ring decided its heartbeat is lost past the grace.
			m.State, m.Reason, m.Since = kube.StateOffline, "heartbeat lost: "+c.Reason, c.Since
		}
		rep.Members = append(rep.Members, m)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for name, refs := range k.res.Sources {
		for _, r := range refs {
			rep.Services[name] = append(rep.Services[name], r.String())
		}
	}
	rep.Dropped = k.res.Dropped
	for ref, ps := range k.res.Problems {
		rep.Problems[ref.String()] = ps
	}
	return rep
}

func (a *App) kubeState() *kubeState {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.kube
}

// propagation returns the propagation controller, nil when it is off.
func (a *App) propagation() *propagation.Controller {
	if k := a.kubeState(); k != nil {
		return k.prop
	}
	return nil
}

func scoreWeights(s model.ScoreWeights) placement.ScoreWeights {
	w := placement.DefaultScoreWeights
	for _, f := range []struct {
		from *float64
		to   *float64
	}{{s.CPU, &w.CPU}, {s.Memory, &w.Memory}, {s.GPU, &w.GPU}, {s.Availability, &w.Availability}, {s.Cost, &w.Cost}} {
		if f.from != nil {
			*f.to = *f.from
		}
	}
	return w
}

// propEnv is the propagation controller's view of the App.
type propEnv struct{ a *App }

func (e propEnv) Config(cluster string) (*rest.Config, bool) {
	if m := e.a.kubeManager(); m != nil {
		return m.Config(cluster)
	}
	return nil, false
}

func (e propEnv) Clusters() map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, c := range e.a.current().Clusters {
		if c.Kubernetes != nil {
			out[c.Name] = c.Labels
		}
	}
	return out
}

func (e propEnv) Health() []placement.ClusterHealth {
	e.a.mu.Lock()
	d := e.a.decision
	e.a.mu.Unlock()
	var out []placement.ClusterHealth
	if d == nil {
		return nil
	}
	for _, c := range d.Clusters {
		h := placement.ClusterHealth{Cluster: c.Name}
		if c.State == failover.FailedOver {
			h.Failed, h.FailedSince = true, c.Since
		}
		out = append(out, h)
	}
	return out
}

func (e propEnv) TrafficWeights(hostname string) map[string]int {
	name := model.CanonicalName(hostname)
	for _, s := range e.a.current().Services {
		if s.Name != name {
			continue
		}
		out := map[string]int{}
		for _, ep := range s.Endpoints {
			w := model.DefaultWeight
			if ep.Weight != nil {
				w = *ep.Weight
			}
			out[ep.Cluster] += w
		}
		return out
	}
	return nil
}
