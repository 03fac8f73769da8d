package model

import (
	"fmt"
	"regexp"
	"slices"
	"time"
)

// Kubernetes defaults.
const (
	DefaultKubeResync         = 10 * time.Minute
	DefaultKubeConnectTimeout = 5 * time.Second
	DefaultKubeRetryInterval  = 10 * time.Second
	DefaultKubeStatusQPS      = 100 // status writes per second per member
	DefaultKubeStatusBurst    = 200
	// DefaultClaimReleaseAfter is kubernetes.claim_release_after.
	DefaultClaimReleaseAfter = time.Hour
	// DefaultMaxHostnamesPerObject is kubernetes.max_hostnames_per_object.
	DefaultMaxHostnamesPerObject = 100
	// DefaultMaxHostnamesPerNamespace is kubernetes.max_hostnames_per_namespace.
	DefaultMaxHostnamesPerNamespace = 1000
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
		v.memberSecrets(p+".member_secrets", ms)
	}
	if k.Resync != 0 && k.Resync.D() < time.Minute {
		v.add(p+".resync", "%s is too short (at least 1m)", k.Resync)
	}
	if k.ConnectTimeout != 0 && (k.ConnectTimeout.D() < 100*time.Millisecond || k.ConnectTimeout.D() > time.Minute) {
		v.add(p+".connect_timeout", "%s is out of range (allowed 100ms..1m)", k.ConnectTimeout)
	}
	if k.StatusQPS != 0 && (k.StatusQPS < 1 || k.StatusQPS > 1000) {
		v.add(p+".status_qps", "%d is out of range (allowed 1..1000 status writes per second per member)", k.StatusQPS)
	}
	if k.StatusBurst != 0 && (k.StatusBurst < 1 || k.StatusBurst > 5000) {
		v.add(p+".status_burst", "%d is out of range (allowed 1..5000)", k.StatusBurst)
	}
	if k.ClaimReleaseAfter != 0 && (k.ClaimReleaseAfter.D() < time.Minute || k.ClaimReleaseAfter.D() > 720*time.Hour) {
		v.add(p+".claim_release_after", "%s is out of range (allowed 1m..720h; default %s)", k.ClaimReleaseAfter, DefaultClaimReleaseAfter)
	}
	if k.MaxHostnamesPerObject != 0 && (k.MaxHostnamesPerObject < 1 || k.MaxHostnamesPerObject > 10000) {
		v.add(p+".max_hostnames_per_object", "%d is out of range (allowed 1..10000; default %d)", k.MaxHostnamesPerObject, DefaultMaxHostnamesPerObject)
	}
	if k.MaxHostnamesPerNamespace != 0 && (k.MaxHostnamesPerNamespace < 1 || k.MaxHostnamesPerNamespace > 100000) {
		v.add(p+".max_hostnames_per_namespace", "%d is out of range (allowed 1..100000; default %d)", k.MaxHostnamesPerNamespace, DefaultMaxHostnamesPerNamespace)
	}
	if k.RetryInterval != 0 && k.RetryInterval.D() < 100*time.Millisecond {
		v.add(p+".retry_interval", "%s is too short (at least 100ms)", k.RetryInterval)
	}
	if pr := k.Propagation; pr != nil {
		v.propagation(p+".propagation", pr)
	}
	v.mcs(p+".mcs", k.MCS, zones)
}

// memberSecrets checks kubernetes.member_secrets (at path p).
func (v *validator) memberSecrets(p string, ms *MemberSecrets) {
	if ms.Namespace == "" {
		v.add(p+".namespace", "is required: the namespace of the Secrets labelled meridian.io/member=true")
	}
	if ms.Context != "" && ms.Kubeconfig == "" {
		v.add(p+".context", "only applies with kubeconfig")
	}
}

// propagation checks kubernetes.propagation (at path pp).
func (v *validator) propagation(pp string, pr *Propagation) {
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
	k.StatusQPS = orDefault(k.StatusQPS, DefaultKubeStatusQPS)
	k.StatusBurst = orDefault(k.StatusBurst, DefaultKubeStatusBurst)
	k.ClaimReleaseAfter = orDefaultDuration(k.ClaimReleaseAfter, DefaultClaimReleaseAfter)
	k.MaxHostnamesPerObject = orDefault(k.MaxHostnamesPerObject, DefaultMaxHostnamesPerObject)
	k.MaxHostnamesPerNamespace = orDefault(k.MaxHostnamesPerNamespace, DefaultMaxHostnamesPerNamespace)
	k.MCS = normalizeMCS(k.MCS)
	le := &k.LeaderElection
	le.LeaseName = orDefaultString(le.LeaseName, DefaultLeaseName)
	le.LeaseDuration = orDefaultDuration(le.LeaseDuration, DefaultLeaseDuration)
	le.RenewDeadline = orDefaultDuration(le.RenewDeadline, DefaultRenewDeadline)
	le.RetryPeriod = orDefaultDuration(le.RetryPeriod, DefaultRetryPeriod)
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

// Leader election defaults.
const (
	DefaultLeaseName      = "meridian-writer"
	DefaultLeaseNamespace = "meridian" // when POD_NAMESPACE is not set
	DefaultLeaseDuration  = 15 * time.Second
	DefaultRenewDeadline  = 10 * time.Second
	DefaultRetryPeriod    = 2 * time.Second
)

// leaseJitter is client-go's leaderelection.JitterFactor: the renew
// deadline must exceed it times the retry period.
const leaseJitter = 1.2

func (v *validator) leaderElection(p string, d *Desired) {
	le := d.Kubernetes.LeaderElection
	if le.Cluster != "" && d.Kubernetes.MemberSecrets == nil {
		ok := false
		for i := range d.Clusters {
			ok = ok || (d.Clusters[i].Name == le.Cluster && d.Clusters[i].Kubernetes != nil)
		}
		if !ok {
			v.add(p+".cluster", "%q is not a cluster with a kubernetes section (without member_secrets it must be one)", le.Cluster)
		}
	}
	if le.LeaseName != "" && (len(le.LeaseName) > 253 || !dnsSubdomain.MatchString(le.LeaseName)) {
		v.add(p+".lease_name", "%q is not a Kubernetes object name (lowercase letters, digits, '-' and '.', at most 253)", le.LeaseName)
	}
	if le.LeaseNamespace != "" && !isNamespace(le.LeaseNamespace) {
		v.add(p+".lease_namespace", "%q is not a namespace name (lowercase letters, digits and '-', at most 63)", le.LeaseNamespace)
	}
	ld, rd, rp := orDefaultDuration(le.LeaseDuration, DefaultLeaseDuration).D(), orDefaultDuration(le.RenewDeadline, DefaultRenewDeadline).D(), orDefaultDuration(le.RetryPeriod, DefaultRetryPeriod).D()
	switch {
	case rp < 100*time.Millisecond:
		v.add(p+".retry_period", "%s is too short (at least 100ms)", rp)
	case float64(rd) <= leaseJitter*float64(rp):
		v.add(p+".renew_deadline", "%s must be longer than 1.2 × retry_period (%s)", rd, rp)
	case ld <= rd:
		v.add(p+".lease_duration", "%s must be longer than renew_deadline (%s)", ld, rd)
	case ld > 5*time.Minute:
		v.add(p+".lease_duration", "%s is too long (at most 5m)", ld)
	}
}

var (
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// LeaderElectionEnabled reports whether the writer election runs: by
// default when anything writes (status write-back or propagation).
func (k *Kubernetes) LeaderElectionEnabled() bool {
	if e := k.LeaderElection.Enabled; e != nil {
		return *e
	}
	return k.StatusWritebackEnabled() || k.Propagation != nil
}

// LeaseCluster is the member cluster holding the Lease: leader_election.cluster,
// else propagation.hub, else the first cluster of the file with a kubernetes
// section; "" means the member_secrets hub.
func (d *Desired) LeaseCluster() string {
	k := &d.Kubernetes
	if k.LeaderElection.Cluster != "" {
		return k.LeaderElection.Cluster
	}
	if k.Propagation != nil && k.Propagation.Hub != "" {
		return k.Propagation.Hub
	}
	for i := range d.Clusters {
		if d.Clusters[i].Kubernetes != nil {
			return d.Clusters[i].Name
		}
	}
	return ""
}
