package kube

import (
	"context"
	"log/slog"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meridian-gslb/meridian/internal/model"
)

func gossipService(name string, ingress ...corev1.LoadBalancerIngress) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "meridian"},
		Spec:   corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "gossip-udp", Port: 7946, Protocol: corev1.ProtocolUDP}}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: ingress}}}
}

func TestServiceWatchFollowsTheExternalAddress(t *testing.T) {
	c := fake.NewClientset(gossipService("meridian-0-gossip"))
	var mu sync.Mutex
	var seen []ServiceAddress
	w := &ServiceWatch{Ref: model.ServiceRef{Service: "{hostname}-gossip", Namespace: "meridian"}, Host: "meridian-0", Client: c,
		Logger: slog.New(slog.DiscardHandler), OnChange: func(a ServiceAddress) { mu.Lock(); seen = append(seen, a); mu.Unlock() }}
	assert.Equal(t, "meridian-0-gossip", w.Name())
	got, err := w.Get(context.Background())
	require.NoError(t, err)
	assert.Empty(t, got.Addrs, "no load balancer yet")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 1 }, 5*time.Second, 10*time.Millisecond, "the first read is reported")

	svc := gossipService("meridian-0-gossip", corev1.LoadBalancerIngress{IP: "203.0.113.10"})
	_, err = c.CoreV1().Services("meridian").UpdateStatus(context.Background(), svc, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 2 }, 5*time.Second, 10*time.Millisecond, "the provisioned address is reported")
	mu.Lock()
	assert.Equal(t, ServiceAddress{Addrs: []netip.Addr{netip.MustParseAddr("203.0.113.10")}, Port: 7946}, seen[1])
	mu.Unlock()

	got, err = w.Get(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("203.0.113.10")}, got.Addrs)

	_, err = (&ServiceWatch{Ref: model.ServiceRef{Service: "missing", Namespace: "meridian"}, Client: c, Logger: slog.New(slog.DiscardHandler)}).Get(context.Background())
	assert.ErrorContains(t, err, "meridian/missing")
}
