package kube

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/meridian-gslb/meridian/internal/model"
)

// ServiceAddress is what a Service's status says about where it is reached
// from outside the cluster.
type ServiceAddress struct {
	Addrs []netip.Addr // the LoadBalancer ingress IPs, and the addresses of its hostnames
	Port  int          // the Service's first port (a gossip Service has one, UDP and TCP)
}

// Equal reports whether two addresses say the same.
func (a ServiceAddress) Equal(b ServiceAddress) bool {
	return a.Port == b.Port && slices.Equal(a.Addrs, b.Addrs)
}

// ServiceWatch follows one Service's external address (ring.advertise_from,
// ring.dns_addresses_from): at start and at every change of its status.
type ServiceWatch struct {
	Ref      model.ServiceRef
	Host     string // replaces {hostname} in Ref.Service (the pod name)
	Logger   *slog.Logger
	Resolver *net.Resolver // resolves ingress hostnames (an AWS NLB has one); default the system's
	// OnChange is called with the address each time it changes (from Run's
	// goroutine); an empty Addrs means the Service has no external address
	// (yet, or any more).
	OnChange func(ServiceAddress)
	// Client, when set, is used instead of one built from Ref (tests).
	Client kubernetes.Interface
}

// Name is the Service's name, {hostname} replaced.
func (w *ServiceWatch) Name() string {
	return strings.ReplaceAll(w.Ref.Service, model.HostnamePlaceholder, w.Host)
}

// Namespace is the Service's namespace: the configured one, else the pod's
// (the service account's namespace file, else $POD_NAMESPACE), else
// "meridian".
func (w *ServiceWatch) Namespace() string {
	if w.Ref.Namespace != "" {
		return w.Ref.Namespace
	}
	if b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b))
	}
	return LeaseNamespace("", os.Getenv("POD_NAMESPACE"))
}

func (w *ServiceWatch) client() (kubernetes.Interface, error) {
	if w.Client != nil {
		return w.Client, nil
	}
	var cfg *rest.Config
	var err error
	if w.Ref.Kubeconfig != "" {
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: w.Ref.Kubeconfig}, nil).ClientConfig()
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("service %s/%s: kubernetes client: %w", w.Namespace(), w.Name(), err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "meridian"
	return kubernetes.NewForConfig(cfg)
}

// Check says whether the Service's name and namespace are names (the pod
// name {hostname} stands for may make them too long, or a host name under
// hostNetwork may hold dots).
func (w *ServiceWatch) Check() error {
	for what, n := range map[string]string{"service": w.Name(), "namespace": w.Namespace()} {
		if len(n) > 63 || !dnsLabel.MatchString(n) {
			return fmt.Errorf("%s %q (from %q): not a Kubernetes name (a DNS label of at most 63 characters)", what, n, w.Ref.Service)
		}
	}
	return nil
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Get reads the Service's address once.
func (w *ServiceWatch) Get(ctx context.Context) (ServiceAddress, error) {
	if err := w.Check(); err != nil {
		return ServiceAddress{}, err
	}
	c, err := w.client()
	if err != nil {
		return ServiceAddress{}, err
	}
	svc, err := c.CoreV1().Services(w.Namespace()).Get(ctx, w.Name(), metav1.GetOptions{})
	if err != nil {
		return ServiceAddress{}, fmt.Errorf("service %s/%s: %w", w.Namespace(), w.Name(), err)
	}
	return w.address(ctx, svc), nil
}

// retry is how long Run waits after a failed watch.
const retry = 5 * time.Second

// Run watches the Service until ctx is done, calling OnChange at the first
// read and at every change; failures are logged and retried.
func (w *ServiceWatch) Run(ctx context.Context) {
	log := w.Logger.With("service", w.Namespace()+"/"+w.Name())
	if err := w.Check(); err != nil {
		log.Error("service address: not watched", "err", err)
		return
	}
	var last *ServiceAddress
	for ctx.Err() == nil {
		err := w.watch(ctx, func(a ServiceAddress) {
			if last != nil && last.Equal(a) {
				return
			}
			last = &a
			log.Info("service address", "addresses", a.Addrs, "port", a.Port)
			w.OnChange(a)
		})
		if ctx.Err() != nil {
			return
		}
		log.Warn("service address: watch ended; retrying", "err", err, "in", retry)
		select {
		case <-ctx.Done():
		case <-time.After(retry):
		}
	}
}

// watch lists and watches the one Service (a name field selector: RBAC
// may restrict get, list and watch to that name) until the watch ends.
func (w *ServiceWatch) watch(ctx context.Context, seen func(ServiceAddress)) error {
	c, err := w.client()
	if err != nil {
		return err
	}
	sel := fields.OneTermEqualSelector("metadata.name", w.Name()).String()
	svcs := c.CoreV1().Services(w.Namespace())
	list, err := svcs.List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	if len(list.Items) == 1 {
		seen(w.address(ctx, &list.Items[0]))
	} else {
		seen(ServiceAddress{})
	}
	wt, err := svcs.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.ResourceVersion})
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer wt.Stop()
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok = <-wt.ResultChan():
		}
		if !ok {
			return fmt.Errorf("watch closed")
		}
		switch ev.Type {
		case watch.Added, watch.Modified:
			if svc, ok := ev.Object.(*corev1.Service); ok {
				seen(w.address(ctx, svc))
			}
		case watch.Deleted:
			seen(ServiceAddress{})
		case watch.Error:
			return fmt.Errorf("watch: %v", ev.Object)
		}
	}
}

// address reads a Service's status: its ingress IPs, and the addresses
// its ingress hostnames resolve to.
func (w *ServiceWatch) address(ctx context.Context, svc *corev1.Service) ServiceAddress {
	var out ServiceAddress
	if len(svc.Spec.Ports) > 0 {
		out.Port = int(svc.Spec.Ports[0].Port)
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil {
			out.Addrs = append(out.Addrs, a.Unmap())
		}
		if in.Hostname != "" {
			r := w.Resolver
			if r == nil {
				r = net.DefaultResolver
			}
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			ips, err := r.LookupNetIP(rctx, "ip", in.Hostname)
			cancel()
			if err != nil {
				w.Logger.Warn("service address: ingress hostname does not resolve (yet)", "service", svc.Namespace+"/"+svc.Name, "hostname", in.Hostname, "err", err)
			}
			for _, ip := range ips {
				out.Addrs = append(out.Addrs, ip.Unmap())
			}
		}
	}
	slices.SortFunc(out.Addrs, func(a, b netip.Addr) int { return a.Compare(b) })
	out.Addrs = slices.Compact(out.Addrs)
	return out
}
