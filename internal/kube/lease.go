package kube

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/meridian-gslb/meridian/internal/model"
)

// ElectionOptions configure an Elector.
type ElectionOptions struct {
	Cluster string       // member cluster holding the Lease; "" means Hub
	Hub     MemberSource // the kubernetes.member_secrets hub, used when Cluster is ""

	Namespace string // Lease namespace
	Name      string // Lease name
	Identity  string // this node (the ring node name or the host name)

	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	ConnectTimeout                            time.Duration // building the hub's client (member_secrets hub)

	// OnLead runs (on its own goroutine) each time this node starts
	// leading; ctx ends when it stops leading.
	OnLead func(ctx context.Context)
	Logger *slog.Logger
}

// ElectionStatus is the writer election as GET /v1/kube shows it.
type ElectionStatus struct {
	Enabled  bool       `json:"enabled"`          // false: every node writes
	Identity string     `json:"identity"`         // this node in the Lease
	Leader   string     `json:"leader"`           // the Lease holder this node saw last ("" while unknown)
	Leading  bool       `json:"leading"`          // this node writes status and propagates
	Lease    string     `json:"lease"`            // CLUSTER/NAMESPACE/NAME
	Since    *time.Time `json:"since,omitempty"`  // when Leader was first seen holding it
	Reason   string     `json:"reason,omitempty"` // the last failure reaching the Lease ("" after a success)
}

// LeaseNamespace is the Lease's namespace: the configured one, else the
// namespace Meridian runs in (POD_NAMESPACE), else "meridian".
func LeaseNamespace(configured, podNamespace string) string {
	switch {
	case configured != "":
		return configured
	case podNamespace != "":
		return podNamespace
	}
	return model.DefaultLeaseNamespace
}

// Elector holds or follows the writer Lease of one hub. A nil *Elector
// means no election: this node always writes.
type Elector struct {
	opts    ElectionOptions
	mg      *Manager
	log     *slog.Logger
	leader  prometheus.Gauge
	changes prometheus.Counter

	// client reaches the hub (the member's or member_secrets hub's
	// client; tests set a fake).
	client func() (kubernetes.Interface, error)

	mu      sync.Mutex
	leading bool
	holder  string
	since   time.Time
	reason  string
}

// NewElector returns an Elector; Run takes part in the election.
func (mg *Manager) NewElector(opts ElectionOptions, reg prometheus.Registerer) *Elector {
	if opts.Logger == nil {
		opts.Logger = mg.log
	}
	e := &Elector{opts: opts, mg: mg, log: opts.Logger,
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "meridian_kube_leader",
			Help: "1 while this node holds the Kubernetes writer Lease (it writes status and propagates), else 0.",
		}),
		changes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "meridian_kube_leader_transitions_total",
			Help: "Changes of the Kubernetes writer Lease holder this node saw (including its own start and loss of leadership).",
		}),
	}
	if reg != nil {
		reg.MustRegister(e.leader, e.changes)
	}
	e.client = func() (kubernetes.Interface, error) {
		cfg, err := e.config()
		if err != nil {
			return nil, err
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("lease client: %w", err)
		}
		return cs, nil
	}
	return e
}

// Leading reports whether this node writes now.
func (e *Elector) Leading() bool {
	if e == nil {
		return true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading
}

// Status is the election's state for reports.
func (e *Elector) Status() ElectionStatus {
	if e == nil {
		return ElectionStatus{Leading: true}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st := ElectionStatus{Enabled: true, Identity: e.opts.Identity, Leader: e.holder, Leading: e.leading, Lease: e.lease(), Reason: e.reason}
	if !e.since.IsZero() {
		since := e.since
		st.Since = &since
	}
	return st
}

func (e *Elector) lease() string {
	c := e.opts.Cluster
	if c == "" {
		c = e.opts.Hub.Cluster
	}
	return c + "/" + e.opts.Namespace + "/" + e.opts.Name
}

// Run takes part in the election until ctx ends, then releases the Lease
// if it holds it (so a rolling update hands over at once).
func (e *Elector) Run(ctx context.Context) {
	for ctx.Err() == nil {
		cs, err := e.client()
		if err == nil {
			err = e.runOnce(ctx, cs)
		}
		if err != nil {
			e.setReason(err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(e.opts.RetryPeriod):
		}
	}
}

// config is the hub's client configuration: the member's once it is
// Ready, or the member_secrets hub's.
func (e *Elector) config() (*rest.Config, error) {
	if e.opts.Cluster == "" {
		return e.opts.Hub.restConfig(e.opts.ConnectTimeout)
	}
	cfg, ok := e.mg.Config(e.opts.Cluster)
	if !ok {
		return nil, fmt.Errorf("cluster %s holding the Lease is not Ready", e.opts.Cluster)
	}
	return cfg, nil
}

// runOnce campaigns and, once leading, renews until the Lease is lost or
// ctx ends.
func (e *Elector) runOnce(ctx context.Context, cs kubernetes.Interface) error {
	lock := &reportingLock{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.opts.Namespace, Name: e.opts.Name},
		Client:     cs.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.opts.Identity},
	}, e: e}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   e.opts.LeaseDuration,
		RenewDeadline:   e.opts.RenewDeadline,
		RetryPeriod:     e.opts.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            e.lease(),
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: e.started,
			OnStoppedLeading: e.stopped,
			OnNewLeader:      e.observed,
		},
	})
	if err != nil {
		return fmt.Errorf("kubernetes.leader_election: %w", err)
	}
	le.Run(ctx)
	return nil
}

func (e *Elector) started(ctx context.Context) {
	e.mu.Lock()
	e.leading = true
	e.mu.Unlock()
	e.leader.Set(1)
	e.log.Info("kubernetes: this node leads: it writes status and propagates", "lease", e.lease(), "identity", e.opts.Identity)
	if e.opts.OnLead != nil {
		e.opts.OnLead(ctx)
	}
}

// stopped runs whenever a campaign ends, leading or not.
func (e *Elector) stopped() {
	e.mu.Lock()
	was := e.leading
	e.leading = false
	e.mu.Unlock()
	e.leader.Set(0)
	if was {
		e.log.Warn("kubernetes: this node stopped leading: it no longer writes status or propagates", "lease", e.lease(), "identity", e.opts.Identity)
	}
}

func (e *Elector) observed(identity string) {
	e.mu.Lock()
	changed := identity != e.holder
	if changed {
		e.holder, e.since = identity, time.Now()
	}
	e.mu.Unlock()
	if changed {
		e.changes.Inc()
		e.log.Info("kubernetes: writer Lease holder", "lease", e.lease(), "leader", identity, "self", identity == e.opts.Identity)
	}
}

// setReason records the last failure reaching the Lease and logs each new
// one once ("" clears it).
func (e *Elector) setReason(reason string) {
	e.mu.Lock()
	changed := reason != e.reason
	e.reason = reason
	e.mu.Unlock()
	if changed && reason != "" {
		e.log.Warn("kubernetes: the writer Lease cannot be reached; this node does not write while it does not hold it", "lease", e.lease(), "reason", reason)
	}
}

// reportingLock records the Lease API's failures for Status and the log
// (client-go's elector only logs them through klog).
type reportingLock struct {
	resourcelock.Interface
	e *Elector
}

func (l *reportingLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r, b, err := l.Interface.Get(ctx)
	if apierrors.IsNotFound(err) {
		return r, b, err // the first campaign creates it
	}
	return r, b, l.report("get", err)
}

func (l *reportingLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.report("create", l.Interface.Create(ctx, ler))
}

func (l *reportingLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	return l.report("update", l.Interface.Update(ctx, ler))
}

func (l *reportingLock) report(op string, err error) error {
	if err != nil {
		l.e.setReason(op + ": " + Reason(err))
	} else {
		l.e.setReason("")
	}
	return err
}

// maxFieldManager is the API server's limit on a field manager's length.
const maxFieldManager = 128

// StatusFieldManager is the field manager of one node's meridian.io/status
// patches, "meridian/NODE", so managedFields shows which node wrote (with
// the writer election, the leader). Server-side applies of propagation
// keep the one manager "meridian": their ownership must not move.
func StatusFieldManager(node string) string {
	m := "meridian/" + node
	if node == "" {
		m = "meridian"
	}
	if len(m) > maxFieldManager {
		m = m[:maxFieldManager]
	}
	return m
}
