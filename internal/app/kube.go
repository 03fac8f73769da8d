package app

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"

	"github.com/meridian-gslb/meridian/internal/coalesce"
	"github.com/meridian-gslb/meridian/internal/failover"
	"github.com/meridian-gslb/meridian/internal/kube"
	"github.com/meridian-gslb/meridian/internal/kube/merge"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/placement"
	"github.com/meridian-gslb/meridian/internal/propagation"
	"github.com/meridian-gslb/meridian/internal/serving"
)

// mergeWindow is how long after a Kubernetes merge the changes that arrive
// are gathered into the next one (package coalesce).
const mergeWindow = 100 * time.Millisecond

// kubeParts is the Kubernetes side of a running App.
type kubeParts struct {
	mgr    *kube.Manager
	src    *merge.Kube             // the pipeline's Kubernetes stage
	prop   *propagation.Controller // nil without kubernetes.propagation
	lead   *kube.Elector           // nil without kubernetes.leader_election: every node writes
	dirty  chan struct{}           // a merge is wanted (objects or members changed)
	status chan struct{}           // a status write-back is wanted
}

// statusSoon asks for a status write-back; it never blocks.
func (k *kubeParts) statusSoon() { poke(k.status) }

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// startKube connects to the member clusters when the config has any.
func (a *App) startKube(l *serving.Loaded) error {
	if !l.File.Desired.KubeEnabled() {
		return nil
	}
	k := &kubeParts{dirty: make(chan struct{}, 1), status: make(chan struct{}, 1)}
	k.mgr = kube.NewManager(a.ctx, kube.Options{Logger: a.log, Registry: a.reg, OnChange: func() { poke(k.dirty) },
		FieldManager: kube.StatusFieldManager(a.node), OnEndpointSlices: a.pokeCapacity})
	first, err := kube.OpenFirstClaims(filepath.Join(a.state, kube.FirstClaimsFile), a.log)
	if err != nil {
		return err
	}
	k.src = &merge.Kube{Manager: k.mgr, Logger: a.log, First: first, OnRelease: func() { poke(k.dirty) }}
	if ms := l.File.Kubernetes.MemberSecrets; ms != nil {
		w, err := k.mgr.WatchSecrets(a.ctx, *ms, l.File.Kubernetes.ConnectTimeout.D(), func() { poke(k.dirty) })
		if err != nil {
			a.log.Error("kubernetes: member Secrets cannot be watched; only the config file's members are used", "err", err)
		}
		k.src.Secrets = w
	}
	if pr := l.File.Kubernetes.Propagation; pr != nil {
		// Made here, before the pipeline's hooks can poke it; run by
		// startKubeLoops.
		k.prop = propagation.New(propEnv{a}, propagation.Options{Hub: pr.Hub, Namespaces: pr.Namespaces,
			Interval: pr.Interval.D(), Toleration: pr.Toleration.D(), Score: scoreWeights(pr.Score), Logger: a.log, Registry: a.reg})
	}
	if kc := l.File.Kubernetes; kc.LeaderElectionEnabled() {
		k.lead = a.newElector(&l.File.Desired, k)
		k.src.Election = k.lead
	}
	srcs := merge.MemberSources(&l.File.Desired, k.src.Secrets.Members())
	k.mgr.Configure(l.File.Kubernetes, srcs)
	a.kube = k
	a.goBackground(func(ctx context.Context) { <-ctx.Done(); k.mgr.Stop() })
	a.log.Info("kubernetes sources enabled", "members", len(srcs))
	return nil
}

// startKubeLoops merges the member clusters' changes, writes the status
// back and runs propagation.
func (a *App) startKubeLoops(l *serving.Loaded) error {
	k := a.kube
	if k == nil {
		return nil
	}
	if k.prop != nil {
		if k.lead == nil {
			a.goBackground(k.prop.Run)
		} // else the elector runs it while this node leads
		a.log.Info("workload propagation enabled", "hub", l.File.Kubernetes.Propagation.Hub, "toleration", l.File.Kubernetes.Propagation.Toleration.D(), "elected", k.lead != nil)
	}
	if k.lead != nil {
		a.goBackground(k.lead.Run)
		a.log.Info("kubernetes writer election enabled: only the Lease holder writes status and propagates", "lease", k.lead.Status().Lease, "identity", a.node)
	}
	// A change after a quiet period is merged at once; the changes during a
	// merge or in the window after it become one following merge, so a
	// burst of informer events (start-up lists every object) is a merge
	// per window.
	a.goBackground(func(ctx context.Context) {
		coalesce.Run(ctx, k.dirty, mergeWindow, time.After, func() {
			if err := a.pipe.Remerge(); err != nil {
				a.log.Error("kubernetes merge failed: the previous state keeps serving", "err", err)
				return
			}
			a.log.Debug("kubernetes sources merged", "services", len(a.current().Services), "generation", a.pipe.State().Snapshot.Generation())
		})
	})
	a.goBackground(func(ctx context.Context) {
		for {
			select {
			case <-ctx.Done():
				return
			case <-k.status:
			}
			if !k.lead.Leading() {
				continue // the leader writes; a new leader starts with a write-back
			}
			st, problems := k.src.Statuses(a.pipe.State())
			if failed := k.mgr.WriteStatus(st, problems); failed > 0 {
				time.AfterFunc(2*time.Second, k.statusSoon)
			}
		}
	})
	k.statusSoon()
	return nil
}

// newElector makes the writer election of the hub d names (the Lease's
// cluster); its leader writes status and runs propagation.
func (a *App) newElector(d *model.Desired, k *kubeParts) *kube.Elector {
	le, kc := d.Kubernetes.LeaderElection, d.Kubernetes
	opts := kube.ElectionOptions{Cluster: d.LeaseCluster(),
		Namespace: kube.LeaseNamespace(le.LeaseNamespace, os.Getenv("POD_NAMESPACE")), Name: le.LeaseName, Identity: a.node,
		LeaseDuration: le.LeaseDuration.D(), RenewDeadline: le.RenewDeadline.D(), RetryPeriod: le.RetryPeriod.D(),
		ConnectTimeout: kc.ConnectTimeout.D(), Logger: a.log,
		OnLead: func(ctx context.Context) {
			k.statusSoon()
			if k.prop != nil {
				k.prop.Run(ctx)
			}
		}}
	if opts.Cluster == "" && kc.MemberSecrets != nil {
		ms := kc.MemberSecrets
		opts.Hub = kube.MemberSource{Cluster: "member_secrets", Config: model.KubeMember{Kubeconfig: ms.Kubeconfig, Context: ms.Context, InCluster: ms.Kubeconfig == ""}, Origin: "kubernetes.member_secrets"}
	}
	return k.mgr.NewElector(opts, a.reg)
}

func (a *App) kubeReport() any { return a.kube.src.Report(a.pipe.State().Decision) }

// decision is the ring's current decision (nil without one).
func (a *App) decision() *failover.Decision { return a.pipe.State().Decision }

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

func (e propEnv) Config(cluster string) (*rest.Config, bool) { return e.a.kube.mgr.Config(cluster) }

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
	return placementHealth(e.a.decision())
}

func (e propEnv) TrafficWeights(hostname string) map[string]int {
	return trafficWeights(&e.a.current().Desired, hostname)
}
