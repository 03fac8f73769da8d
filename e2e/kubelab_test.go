//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/meridian-gslb/meridian/e2e/kubelab"
)

// TestKubeLab: two real kube-apiservers (members east and west) on one etcd;
// objects, kubeconfigs, the errors a misconfigured or unreachable member
// gives, and a member outage.
func TestKubeLab(t *testing.T) {
	lab := kubelab.Start(t, kubelab.Bins(t), "east", "west")
	east, west := lab.Member("east"), lab.Member("west")
	t.Logf("lab start (etcd + 2 kube-apiservers): %s", lab.StartDuration.Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// A LoadBalancer Service in east, with the status no cloud controller sets.
	east.EnsureNamespace(t, "demo")
	_, err := east.Client(t).CoreV1().Services("demo").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	east.SetLoadBalancerIP(t, "demo", "web", "192.0.2.10", "lb.example.test")

	// Read back through a kubeconfig file, as the product would load it.
	admin := kubeconfigClient(t, east.Kubeconfig(t, kubelab.AdminUser))
	svc, err := admin.CoreV1().Services("demo").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, svc.Status.LoadBalancer.Ingress, 2)
	require.Equal(t, "192.0.2.10", svc.Status.LoadBalancer.Ingress[0].IP)
	require.Equal(t, "lb.example.test", svc.Status.LoadBalancer.Ingress[1].Hostname)
	require.NotEmpty(t, svc.Spec.ClusterIP)

	// Members are separate clusters: west has no such Service.
	_, err = west.Client(t).CoreV1().Services("demo").Get(ctx, "web", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "west sees east's service: %v", err)

	// An Ingress and its status.
	pathType := networkingv1.PathTypePrefix
	_, err = east.Client(t).NetworkingV1().Ingresses("demo").Create(ctx, &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			Host: "web.example.test",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pathType, Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}},
				}}},
			}},
		}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	east.SetIngressLoadBalancerIP(t, "demo", "web", "192.0.2.20")
	ing, err := admin.NetworkingV1().Ingresses("demo").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "192.0.2.20", ing.Status.LoadBalancer.Ingress[0].IP)

	// A service-account token: authenticated, allowed only what RBAC grants.
	token := east.ServiceAccountToken(t, "demo", "reader")
	reader := kubeconfigClient(t, east.Kubeconfig(t, kubelab.TokenUser(token)))
	_, err = reader.CoreV1().Services("demo").List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "unbound SA: want 403, got %v", err)
	east.BindClusterRole(t, "demo", "reader", "view")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := reader.CoreV1().Services("demo").List(ctx, metav1.ListOptions{})
		assert.NoError(c, err, "SA bound to view lists services")
	}, 10*time.Second, 100*time.Millisecond)
	// east's token means nothing to west (other issuer and key).
	_, err = kubeconfigClient(t, west.Kubeconfig(t, kubelab.TokenUser(token))).CoreV1().Services("demo").List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsUnauthorized(err), "east's token at west: want 401, got %v", err)

	// An expired client cert: TLS succeeds, the apiserver answers 401.
	_, err = kubeconfigClient(t, east.Kubeconfig(t, kubelab.ExpiredAdminUser)).CoreV1().Services("demo").List(ctx, metav1.ListOptions{})
	logErrChain(t, "expired client cert", err)
	require.True(t, apierrors.IsUnauthorized(err), "expired cert: want 401, got %v", err)
	var status *apierrors.StatusError
	require.ErrorAs(t, err, &status)
	require.EqualValues(t, 401, status.ErrStatus.Code)

	// A kubeconfig that trusts the wrong CA: the client rejects the server.
	_, err = kubeconfigClient(t, east.Kubeconfig(t, kubelab.WrongCAAdminUser)).CoreV1().Services("demo").List(ctx, metav1.ListOptions{})
	logErrChain(t, "wrong CA", err)
	var unknownCA x509.UnknownAuthorityError
	require.ErrorAs(t, err, &unknownCA, "wrong CA: %v", err)
	var verifyErr *tls.CertificateVerificationError
	require.ErrorAs(t, err, &verifyErr)
	var urlErr *url.Error
	require.ErrorAs(t, err, &urlErr)
	// Another member's CA is just as wrong.
	_, err = kubeconfigClient(t, east.Kubeconfig(t, kubelab.KubeUser{CommonName: "x", ServerCAPEM: west.CAPEM})).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	require.ErrorAs(t, err, &unknownCA, "west's CA for east: %v", err)

	// West goes down: connection refused, on the same port until it is back.
	westAdmin := kubeconfigClient(t, west.Kubeconfig(t, kubelab.AdminUser))
	_, err = westAdmin.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	require.NoError(t, err)
	begin := time.Now()
	require.NoError(t, west.Stop())
	t.Logf("west stopped in %s", time.Since(begin).Round(time.Millisecond))
	_, err = westAdmin.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	logErrChain(t, "apiserver stopped", err)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	var opErr *net.OpError
	require.ErrorAs(t, err, &opErr)
	// East is unaffected.
	_, err = admin.CoreV1().Services("demo").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)

	begin = time.Now()
	require.NoError(t, west.Start())
	t.Logf("west back (readyz) in %s", time.Since(begin).Round(time.Millisecond))
	_, err = westAdmin.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	require.NoError(t, err, "same kubeconfig (port, CA) after restart")
	// Its data survived (it lives in etcd).
	_, err = kubeconfigClient(t, west.Kubeconfig(t, kubelab.AdminUser)).CoreV1().ServiceAccounts("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)

	// An abrupt crash and restart.
	require.NoError(t, west.Kill())
	require.NoError(t, west.Start())
}

func kubeconfigClient(t *testing.T, path string) kubernetes.Interface {
	t.Helper()
	_, err := os.Stat(path)
	require.NoError(t, err)
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	cfg.Timeout = 20 * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return c
}

// logErrChain logs the Go types along err's Unwrap chain.
func logErrChain(t *testing.T, what string, err error) {
	t.Helper()
	var types []string
	for e := err; e != nil; {
		types = append(types, fmt.Sprintf("%T", e))
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			e = u.Unwrap()
		case interface{ Unwrap() []error }:
			if errs := u.Unwrap(); len(errs) > 0 {
				e = errs[0]
			} else {
				e = nil
			}
		default:
			e = nil
		}
	}
	t.Logf("%s: %v\n\tchain: %s", what, err, strings.Join(types, " -> "))
	if err == nil {
		t.Errorf("%s: want an error", what)
	}
}
