package kube

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/meridian-gslb/meridian/internal/model"
)

// Labels and annotations of member Secrets.
const (
	LabelMember      = "meridian.io/member"    // "true" on a Secret that registers a member cluster
	AnnoCluster      = "meridian.io/cluster"   // cluster name (default: the Secret's name)
	AnnoRegion       = "meridian.io/region"    // region (required unless the config defines the cluster)
	AnnoCountry      = "meridian.io/country"   // optional ISO country code
	AnnoContinent    = "meridian.io/continent" // optional continent code
	SecretKubeconfig = "kubeconfig"            // data key holding the member's kubeconfig
)

// SecretMember is a member cluster registered by a Secret in the hub.
type SecretMember struct {
	Source  MemberSource
	Cluster model.Cluster // name, region and tags from the annotations
}

// MemberFromSecret reads one member Secret.
func MemberFromSecret(s *corev1.Secret) (SecretMember, error) {
	origin := "secret " + s.Namespace + "/" + s.Name
	name := s.Annotations[AnnoCluster]
	if name == "" {
		name = s.Name
	}
	kc := s.Data[SecretKubeconfig]
	if len(kc) == 0 {
		return SecretMember{}, fmt.Errorf("%s: data.%s is missing or empty (allowed: a kubeconfig for the member, e.g. kubectl create secret generic %s --from-file=%s=member.kubeconfig)", origin, SecretKubeconfig, s.Name, SecretKubeconfig)
	}
	if _, err := inlineKubeconfig(kc); err != nil {
		return SecretMember{}, fmt.Errorf("%s: data.%s: %w", origin, SecretKubeconfig, err)
	}
	c := model.Cluster{Name: name, Region: s.Annotations[AnnoRegion], Country: s.Annotations[AnnoCountry], Continent: s.Annotations[AnnoContinent]}
	if c.Continent != "" && !slices.Contains(model.Continents, c.Continent) {
		return SecretMember{}, fmt.Errorf("%s: annotation %s %q is not a continent code (allowed: %v)", origin, AnnoContinent, c.Continent, model.Continents)
	}
	if c.Country != "" && !isCountryCode(c.Country) {
		return SecretMember{}, fmt.Errorf("%s: annotation %s %q is not an ISO 3166-1 alpha-2 code (e.g. DE)", origin, AnnoCountry, c.Country)
	}
	return SecretMember{Source: MemberSource{Cluster: name, Kubeconfig: kc, Origin: origin}, Cluster: c}, nil
}

// memberFromSecretSafe is MemberFromSecret on the informer's goroutine: a
// panic on this input path becomes a refusal of that Secret, never a crash.
func memberFromSecretSafe(s *corev1.Secret) (m SecretMember, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("secret %s/%s: refused: reading it panicked (%v); nothing from it is used", s.Namespace, s.Name, r)
		}
	}()
	return MemberFromSecret(s)
}

// SecretWatcher watches the member Secrets of a hub cluster.
type SecretWatcher struct {
	log      *slog.Logger
	onChange func()
	events   *eventWriter // Events on refused Secrets
	mu       sync.Mutex
	members  []SecretMember
	errs     map[string]string // secret -> last logged error
}

// WatchSecrets connects to the hub and keeps the member list current;
// onChange is called after every change. A Secret that cannot be used is
// left out, logged and reported by a Warning Event on it (reason
// InvalidMemberSecret). It returns once the watch has started (or failed
// to).
func (mg *Manager) WatchSecrets(ctx context.Context, ms model.MemberSecrets, timeout time.Duration, onChange func()) (*SecretWatcher, error) {
	log := mg.log
	src := MemberSource{Cluster: "hub", Config: model.KubeMember{Kubeconfig: ms.Kubeconfig, Context: ms.Context, InCluster: ms.Kubeconfig == ""}, Origin: "kubernetes.member_secrets"}
	cfg, err := src.restConfig(timeout)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes.member_secrets: client: %w", err)
	}
	w := &SecretWatcher{log: log, onChange: onChange, errs: map[string]string{},
		events: newEventWriter(cs, func(result string) { mg.m.events.WithLabelValues(secretsCluster, result).Inc() })}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ms.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = LabelMember + "=true" }))
	inf := f.Core().V1().Secrets().Informer()
	refresh := func(any) { w.refresh(inf.GetStore()) }
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: refresh, UpdateFunc: func(_, o any) { refresh(o) }, DeleteFunc: refresh}); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	log.Info("kubernetes: watching member Secrets", "namespace", ms.Namespace, "selector", LabelMember+"=true")
	return w, nil
}

func (w *SecretWatcher) refresh(store cache.Store) {
	var out []SecretMember
	seen := map[string]string{}
	errs := map[string]string{}
	refused := map[string]*corev1.Secret{}
	for _, o := range store.List() {
		s, ok := o.(*corev1.Secret)
		if !ok {
			continue
		}
		m, err := memberFromSecretSafe(s)
		key := s.Namespace + "/" + s.Name
		if err == nil && seen[m.Cluster.Name] != "" {
			err = fmt.Errorf("secret %s: cluster %q is already registered by secret %s", key, m.Cluster.Name, seen[m.Cluster.Name])
		}
		if err != nil {
			errs[key] = err.Error()
			refused[key] = s
			continue
		}
		seen[m.Cluster.Name] = key
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Cluster.Name < out[j].Cluster.Name })
	w.mu.Lock()
	var fresh []string
	for k, e := range errs {
		if w.errs[k] != e {
			fresh = append(fresh, k)
		}
	}
	for k := range w.errs {
		if _, ok := errs[k]; !ok {
			w.events.forget(k)
		}
	}
	w.errs, w.members = errs, out
	w.mu.Unlock()
	slices.Sort(fresh)
	for _, k := range fresh {
		w.log.Error("kubernetes: member Secret refused: nothing from it is used", "secret", k, "err", errs[k])
	}
	if len(fresh) > 0 {
		// Off the informer's goroutine: a slow hub must not hold up its
		// notifications.
		go func() {
			for _, k := range fresh {
				if err := w.events.write(context.Background(), k, refused[k], corev1.EventTypeWarning, ReasonInvalidMemberSecret, errs[k]); err != nil {
					w.log.Warn("kubernetes: recording an Event on a member Secret failed", "secret", k, "err", err)
				}
			}
		}()
	}
	w.onChange()
}

// secretsCluster is the cluster label of the Events on member Secrets.
const secretsCluster = "member_secrets"

// Members returns the members the Secrets register now.
func (w *SecretWatcher) Members() []SecretMember {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.members)
}
