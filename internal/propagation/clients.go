package propagation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// clients are one cluster's API clients: dynamic for objects, metadata for
// cheap template scans, discovery and a RESTMapper for kinds found at run
// time (a CRD installed after start is found on the next pass).
type clients struct {
	key    string
	cfg    *rest.Config
	dyn    dynamic.Interface
	meta   metadata.Interface
	disc   discovery.CachedDiscoveryInterface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	reread bool  // the mapper re-read discovery this pass (Run's goroutine only)
	failed error // the member's discovery failed this pass: not asked again until the next
}

// member is a member's clients as of the start of this pass: a member that
// turns Ready mid-pass waits for the next one, so it gets every template in
// dependency order.
func (c *Controller) member(cluster string) (*clients, bool) {
	mc, ok := c.pass[cluster]
	return mc, ok
}

func (c *Controller) clientsFor(cluster string) (*clients, bool) {
	cfg, ok := c.env.Config(cluster)
	if !ok {
		return nil, false
	}
	key := configKey(cfg)
	c.mu.Lock()
	cl := c.clients[cluster]
	c.mu.Unlock()
	if cl != nil && cl.key == key {
		return cl, true
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, false
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, false
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, false
	}
	disc := memory.NewMemCacheClient(dc)
	cl = &clients{key: key, cfg: cfg, dyn: dyn, meta: meta, disc: disc, mapper: restmapper.NewDeferredDiscoveryRESTMapper(disc)}
	c.mu.Lock()
	c.clients[cluster] = cl
	c.mu.Unlock()
	return cl, true
}

// configKey identifies a member's connection: clients are rebuilt when it
// changes (a rotated token, a new endpoint, another identity: impersonation,
// basic auth, exec command or auth provider).
func configKey(cfg *rest.Config) string {
	id := struct {
		Host, APIPath, Token, TokenFile, User, Password string
		CertFile, KeyFile, CAFile, ServerName           string
		CertData, KeyData, CAData                       []byte
		Insecure                                        bool
		Impersonate                                     rest.ImpersonationConfig
		Exec                                            *clientcmdapi.ExecConfig
		AuthProvider                                    *clientcmdapi.AuthProviderConfig
	}{cfg.Host, cfg.APIPath, cfg.BearerToken, cfg.BearerTokenFile, cfg.Username, cfg.Password,
		cfg.CertFile, cfg.KeyFile, cfg.CAFile, cfg.ServerName, cfg.CertData, cfg.KeyData, cfg.CAData, cfg.Insecure,
		cfg.Impersonate, cfg.ExecProvider, cfg.AuthProvider}
	b, _ := json.Marshal(id) // strings, bytes, bools, maps and slices of them: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// notServed: the member does not serve the template's kind as the hub
// does, so it holds no copy of ours.
type notServed struct{ msg string }

func (e notServed) Error() string { return e.msg }

// resource maps a template's kind to the member's resource; a kind the
// member does not serve (its CRD is not installed there) is an error that
// says so. A miss re-reads the member's discovery, once per pass (not
// once per template).
func (cl *clients) resource(gvk schema.GroupVersionKind, ns string) (dynamic.ResourceInterface, error) {
	if cl.failed != nil {
		return nil, cl.failed
	}
	m, err := cl.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if apimeta.IsNoMatchError(err) && !cl.reread {
		cl.reread = true
		cl.mapper.Reset()
		m, err = cl.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if apimeta.IsNoMatchError(err) {
		return nil, notServed{fmt.Sprintf("the cluster does not serve %s %s (install its CRD or API there)", kindName(gvk.GroupKind()), gvk.GroupVersion())}
	}
	if apimeta.IsAmbiguousError(err) {
		return nil, fmt.Errorf("mapping %s: %w", kindName(gvk.GroupKind()), err)
	}
	if err != nil {
		cl.failed = fmt.Errorf("reading the cluster's kinds: %w", err)
		return nil, cl.failed
	}
	// The scope must be the hub's: a namespaced template sent to a member
	// whose kind (another CRD of the same group and kind) is cluster-scoped
	// would be written outside any namespace (the API server drops the
	// namespace), out of reach of the rights that scoped the template.
	root := m.Scope.Name() == apimeta.RESTScopeNameRoot
	switch {
	case root && ns != "":
		return nil, notServed{fmt.Sprintf("the cluster serves %s cluster-scoped, the hub namespaced", kindName(gvk.GroupKind()))}
	case !root && ns == "":
		return nil, notServed{fmt.Sprintf("the cluster serves %s namespaced, the hub cluster-scoped", kindName(gvk.GroupKind()))}
	case root:
		return cl.dyn.Resource(m.Resource), nil
	}
	return cl.dyn.Resource(m.Resource).Namespace(ns), nil
}

// hubKinds discovers the kinds that can hold templates, afresh each pass.
func (c *Controller) hubKinds(hub *clients) []Kind {
	hub.disc.Invalidate()
	lists, err := discovery.ServerPreferredResources(hub.disc)
	// Partial answers (an aggregated API down) still list the rest; said
	// once per distinct problem.
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg != c.discErr && msg != "" {
		c.log.Warn("propagation: hub discovery incomplete; kinds of the failed groups are not scanned", "err", err)
	}
	c.discErr = msg
	return Kinds(lists)
}

// ensureNamespace creates a copy's namespace in a member that lacks it,
// labelled as Meridian's and marked with the template that needed it but
// with no template reference: it is no template's copy, so no template
// deletes it (that would take every object in it), until a Namespace
// template sent to that member adopts it.
func ensureNamespace(ctx context.Context, mc *clients, ns, forRef string) error {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Namespace")
	u.SetName(ns)
	u.SetLabels(map[string]string{LabelPropagated: "true"})
	u.SetAnnotations(map[string]string{AnnoNamespaceFor: forRef})
	_, err := mc.dyn.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).Create(ctx, u, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	return nil
}
