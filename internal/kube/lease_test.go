package kube

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

func TestLeaseNamespace(t *testing.T) {
	tests := []struct {
		name, configured, pod, want string
	}{
		{"the configured namespace wins", "ops", "gslb", "ops"},
		{"else the namespace Meridian runs in", "", "gslb", "gslb"},
		{"else meridian", "", "", "meridian"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, LeaseNamespace(tt.configured, tt.pod))
		})
	}
}

func TestNoElectorAlwaysWrites(t *testing.T) {
	var e *Elector
	assert.True(t, e.Leading())
	assert.Equal(t, ElectionStatus{Leading: true}, e.Status())
}

// testElector is one node of a fake hub's election.
type testElector struct {
	e      *Elector
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan struct{}
	leads  chan struct{} // OnLead was called
}

func startTestElector(t *testing.T, cs kubernetes.Interface, identity string) *testElector {
	ctx, cancel := context.WithCancel(context.Background())
	mg := NewManager(ctx, Options{})
	te := &testElector{reg: prometheus.NewRegistry(), cancel: cancel, done: make(chan struct{}), leads: make(chan struct{}, 4)}
	te.e = mg.NewElector(ElectionOptions{Cluster: "hub", Namespace: "meridian", Name: "meridian-writer", Identity: identity,
		LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond,
		OnLead: func(ctx context.Context) { te.leads <- struct{}{}; <-ctx.Done() }}, te.reg)
	te.e.client = func() (kubernetes.Interface, error) { return cs, nil }
	go func() { defer close(te.done); te.e.Run(ctx) }()
	return te
}

func (te *testElector) stop() {
	te.cancel()
	<-te.done
}

func TestOneOfTwoElectorsLeadsAndTheOtherTakesOverWhenItLeaves(t *testing.T) {
	cs := fake.NewClientset()
	a := startTestElector(t, cs, "node-a")
	var stopOnce sync.Once
	defer stopOnce.Do(a.stop)
	<-a.leads // a is alone: it leads
	require.True(t, a.e.Leading())
	b := startTestElector(t, cs, "node-b")
	defer b.stop()
	require.Eventually(t, func() bool { return b.e.Status().Leader == "node-a" }, 10*time.Second, 20*time.Millisecond, "b sees a holding the Lease")
	assert.False(t, b.e.Leading(), "b follows")
	assert.Equal(t, 0.0, testutil.ToFloat64(b.e.leader))
	assert.Equal(t, 1.0, testutil.ToFloat64(a.e.leader))
	st := a.e.Status()
	assert.Equal(t, ElectionStatus{Enabled: true, Identity: "node-a", Leader: "node-a", Leading: true, Lease: "hub/meridian/meridian-writer", Since: st.Since}, st)

	stopOnce.Do(a.stop) // a shuts down: it releases the Lease
	assert.False(t, a.e.Leading())
	assert.Equal(t, 0.0, testutil.ToFloat64(a.e.leader))
	select {
	case <-b.leads:
	case <-time.After(10 * time.Second):
		t.Fatal("b did not take over the released Lease")
	}
	assert.True(t, b.e.Leading())
	// client-go reports the new leader (OnNewLeader) on its own goroutine,
	// after or before OnStartedLeading: wait for it rather than race it.
	require.Eventually(t, func() bool { return b.e.Status().Leader == "node-b" }, 10*time.Second, 20*time.Millisecond, "b reports itself as the leader")
	require.Eventually(t, func() bool { return testutil.ToFloat64(b.e.changes) == 2 }, 10*time.Second, 20*time.Millisecond, "b saw a, then itself")
	lease, err := cs.CoordinationV1().Leases("meridian").Get(context.Background(), "meridian-writer", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "node-b", *lease.Spec.HolderIdentity)
}

func TestAnElectorThatCannotReachTheHubSaysWhyAndDoesNotLead(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	mg := NewManager(ctx, Options{}) // no member: the hub is not Ready
	e := mg.NewElector(ElectionOptions{Cluster: "hub", Namespace: "meridian", Name: "w", Identity: "n",
		LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}, nil)
	done := make(chan struct{})
	go func() { defer close(done); e.Run(ctx) }()
	defer func() { cancel(); <-done }()
	require.Eventually(t, func() bool { return e.Status().Reason != "" }, 10*time.Second, 20*time.Millisecond)
	assert.Equal(t, "cluster hub holding the Lease is not Ready", e.Status().Reason)
	assert.False(t, e.Leading())
}

func TestStatusFieldManager(t *testing.T) {
	tests := []struct {
		name, node, want string
	}{
		{"a node's patches carry its name", "p1", "meridian/p1"},
		{"without a name it is meridian", "", "meridian"},
		{"a long name is cut to the API server's 128 bytes", strings.Repeat("n", 200), "meridian/" + strings.Repeat("n", 119)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, StatusFieldManager(tt.node))
		})
	}
}
