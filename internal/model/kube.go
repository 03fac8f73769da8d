package model

import (
	"fmt"
	"slices"
	"time"
)

// Kubernetes defaults.
const (
	DefaultKubeResync         = 10 * time.Minute
	DefaultKubeConnectTimeout = 5 * time.Second
	DefaultKubeRetryInterval  = 10 * time.Second
)

func (v *validator) kubeMember(p string, k *KubeMember) {
	switch {
	case k.Kubeconfig == "" && !k.InCluster:
		v.add(p, "needs kubeconfig (a kubeconfig file) or in_cluster: true")
	case k.Kubeconfig != "" && k.InCluster:
		v.add(p+".in_cluster", "cannot be combined with kubeconfig (allowed: one of them)")
	case k.InCluster && k.Context != "":
		v.add(p+".context", "only applies with kubeconfig")
	}
}

func (v *validator) kubernetes(k Kubernetes, zones map[string]bool) {
	p := "kubernetes"
	v.claims(p, k, zones)
	seen := map[string]bool{}
	for i, ns := range k.Namespaces {
		if ns == "" {
			v.add(fmt.Sprintf("%s.namespaces[%d]", p, i), "is empty (omit namespaces to watch all)")
		} else if seen[ns] {
			v.add(fmt.Sprintf("%s.namespaces[%d]", p, i), "duplicate namespace %q", ns)
		}
		seen[ns] = true
	}
	if ms := k.MemberSecrets; ms != nil {
		if ms.Namespace == "" {
			v.add(p+".member_secrets.namespace", "is required: the namespace of the Secrets labelled meridian.io/member=true")
		}
		if ms.Context != "" && ms.Kubeconfig == "" {
			v.add(p+".member_secrets.context", "only applies with kubeconfig")
		}
	}
	if k.Resync != 0 && k.Resync.D() < time.Minute {
		v.add(p+".resync", "%s is too short (at least 1m)", k.Resync)
	}
	if k.ConnectTimeout != 0 && (k.ConnectTimeout.D() < 100*time.Millisecond || k.ConnectTimeout.D() > time.Minute) {
		v.add(p+".connect_timeout", "%s is out of range (allowed 100ms..1m)", k.ConnectTimeout)
	}
	if k.RetryInterval != 0 && k.RetryInterval.D() < 100*time.Millisecond {
		v.add(p+".retry_interval", "%s is too short (at least 100ms)", k.RetryInterval)
	}
	if pr := k.Propagation; pr != nil {
		pp := p + ".propagation"
		if pr.Hub == "" {
			v.add(pp+".hub", "is required: the member cluster that holds the templates")
		}
		if pr.Interval != 0 && pr.Interval.D() < 100*time.Millisecond {
			v.add(pp+".interval", "%s is too short (at least 100ms)", pr.Interval)
		}
		if pr.Toleration < 0 {
			v.add(pp+".toleration", "%s is negative", pr.Toleration)
		}
		for name, w := range map[string]*float64{"cpu": pr.Score.CPU, "memory": pr.Score.Memory, "gpu": pr.Score.GPU, "availability": pr.Score.Availability, "cost": pr.Score.Cost} {
			if w != nil && (*w < 0 || *w > 100) {
				v.add(pp+".score."+name, "%v is out of range (allowed 0..100)", *w)
			}
		}
	}
}

// Propagation defaults.
const (
	DefaultPropagationInterval   = 10 * time.Second
	DefaultPropagationToleration = 60 * time.Second
)

func normalizeKubernetes(k Kubernetes) Kubernetes {
	k.Namespaces = slices.Clone(k.Namespaces)
	k.Claims = normalizeClaims(k.Claims)
	k.UnclaimedNames = orDefaultString(k.UnclaimedNames, UnclaimedOldest)
	if k.MemberSecrets != nil {
		ms := *k.MemberSecrets
		k.MemberSecrets = &ms
	}
	k.Resync = orDefaultDuration(k.Resync, DefaultKubeResync)
	k.ConnectTimeout = orDefaultDuration(k.ConnectTimeout, DefaultKubeConnectTimeout)
	k.RetryInterval = orDefaultDuration(k.RetryInterval, DefaultKubeRetryInterval)
	if k.Propagation != nil {
		pr := *k.Propagation
		pr.Namespaces = slices.Clone(pr.Namespaces)
		pr.Interval = orDefaultDuration(pr.Interval, DefaultPropagationInterval)
		pr.Toleration = orDefaultDuration(pr.Toleration, DefaultPropagationToleration)
		k.Propagation = &pr
	}
	return k
}

// KubeEnabled reports whether any Kubernetes source is configured.
func (d *Desired) KubeEnabled() bool {
	if d.Kubernetes.MemberSecrets != nil {
		return true
	}
	for i := range d.Clusters {
		if d.Clusters[i].Kubernetes != nil {
			return true
		}
	}
	return false
}
