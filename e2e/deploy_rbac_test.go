//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/meridian-gslb/meridian/e2e/kubelab"
)

// TestRoleReadsTheSitesServicesByNameOnly applies the Role and RoleBinding
// of deploy/kustomize (the chart renders the same, compared in
// deploy/helm) without the ClusterRole, and reads Services as Meridian's
// service account on a real kube-apiserver: ring.advertise_from and
// ring.dns_addresses_from may get, list and watch their own Services when
// the request selects metadata.name=<name> (the apiserver authorizes such
// a list or watch as a request for that name; client-go's
// cache.NewListWatchFromClient with fields.OneTermEqualSelector sends it on
// both), and nothing else.
func TestRoleReadsTheSitesServicesByNameOnly(t *testing.T) {
	lab := kubelab.Start(t, kubelab.Bins(t), "east")
	m := lab.Member("east")
	m.EnsureNamespace(t, "meridian")
	var role []string
	for doc := range strings.SplitSeq(string(renderRBAC(t)), "\n---\n") {
		if strings.Contains(doc, "\nkind: Role\n") || strings.Contains(doc, "\nkind: RoleBinding\n") {
			role = append(role, doc)
		}
	}
	require.Equal(t, 2, createRBAC(t, m, []byte(strings.Join(role, "\n---\n")), false), "the Role and its binding only")
	for _, name := range []string{"meridian-0-gossip", "meridian-dns", "someone-else"} {
		lbService(t, m, "meridian", name, nil, "192.0.2.10")
	}
	cfg, err := m.RESTConfig(kubelab.TokenUser(m.ServiceAccountToken(t, "meridian", "meridian")))
	require.NoError(t, err)
	sa, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	svcs := sa.CoreV1().Services("meridian")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	byName := func(name string) metav1.ListOptions {
		return metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
	}

	for _, name := range []string{"meridian-0-gossip", "meridian-dns"} {
		got, err := svcs.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, "get %s", name)
		assert.Equal(t, "192.0.2.10", got.Status.LoadBalancer.Ingress[0].IP)
		list, err := svcs.List(ctx, byName(name))
		require.NoError(t, err, "list %s by name", name)
		require.Len(t, list.Items, 1)
		opts := byName(name)
		opts.ResourceVersion = list.ResourceVersion
		w, err := svcs.Watch(ctx, opts)
		require.NoError(t, err, "watch %s by name", name)
		m.SetLoadBalancerIP(t, "meridian", name, "192.0.2.11")
		select {
		case ev := <-w.ResultChan():
			assert.Equal(t, watch.Modified, ev.Type, "the watch sees the new address of %s", name)
		case <-ctx.Done():
			t.Fatalf("watch %s: no event", name)
		}
		w.Stop()
	}

	for _, c := range []struct {
		name string
		call func() error
	}{
		{"a Service of someone else by name", func() error { _, err := svcs.Get(ctx, "someone-else", metav1.GetOptions{}); return err }},
		{"a list without a name", func() error { _, err := svcs.List(ctx, metav1.ListOptions{}); return err }},
		{"a list of another name", func() error { _, err := svcs.List(ctx, byName("someone-else")); return err }},
		{"a watch without a name", func() error { _, err := svcs.Watch(ctx, metav1.ListOptions{}); return err }},
		{"a Service in another namespace", func() error {
			_, err := sa.CoreV1().Services("default").Get(ctx, "meridian-dns", metav1.GetOptions{})
			return err
		}},
	} {
		assert.True(t, apierrors.IsForbidden(c.call()), "%s is forbidden", c.name)
	}
}
