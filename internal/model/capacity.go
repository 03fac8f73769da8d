package model

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Sources of a capacity-aware service's ready fractions.
const (
	CapacitySourceKubernetes = "kubernetes" // the member clusters' EndpointSlices
	CapacitySourcePrometheus = "prometheus" // a PromQL query
)

// CapacitySources lists the allowed capacity sources, in documentation order.
var CapacitySources = []string{CapacitySourceKubernetes, CapacitySourcePrometheus}

// Capacity defaults and limits.
const (
	DefaultCapacityStep              = 0.05
	DefaultCapacityHysteresis        = 0.02
	DefaultCapacityMinChangeInterval = 30 * time.Second
	DefaultCapacityStaleAfter        = 5 * time.Minute
	DefaultCapacityPromInterval      = 30 * time.Second
	DefaultCapacityPromTimeout       = 5 * time.Second
	MaxCapacityQueryLen              = 4096
)

// Capacity makes a service's weights follow its endpoints' ready capacity:
// the weight an endpoint is drawn with is its configured weight × its ready
// fraction (0..1), quantised and changed at most once per
// min_change_interval, through the decision's brake (internal/capacity has
// the rules). Replica division keeps following the configured weights.
type Capacity struct {
	Source     string              `yaml:"source"`     // kubernetes or prometheus (required)
	Kubernetes *CapacityKubernetes `yaml:"kubernetes"` // with source kubernetes: the Service whose EndpointSlices count
	Prometheus *CapacityPrometheus `yaml:"prometheus"` // with source prometheus (required then)
	// MinChangeInterval is the least time between two changes of the
	// service's effective weights (default 30s; 1s..1h).
	MinChangeInterval Duration `yaml:"min_change_interval"`
	// Step quantises the ready fraction to multiples of it (default 0.05,
	// 5 % steps; 0.01..0.5).
	Step float64 `yaml:"step"`
	// Hysteresis: a fraction in use changes only when the reading is more
	// than step/2 + hysteresis away from it (default 0.02; 0..0.5).
	Hysteresis *float64 `yaml:"hysteresis"`
	// StaleAfter: an endpoint without a good reading for this long is
	// counted at fraction 1, its configured weight (default 5m; at least
	// twice the prometheus interval).
	StaleAfter Duration `yaml:"stale_after"`

	// FromObjects is set by the Kubernetes sources (never in the file):
	// each endpoint's fraction comes from the Services behind the
	// annotated object that gives it (meridian.io/capacity).
	FromObjects bool `yaml:"-"`
}

// CapacityKubernetes names the Service whose EndpointSlices measure a
// config-file service's ready fraction in each endpoint's cluster.
type CapacityKubernetes struct {
	// Service is NAMESPACE/NAME of the Service in each endpoint's cluster
	// (required for services of the config file).
	Service string `yaml:"service"`
}

// CapacityPrometheus reads ready fractions from Prometheus.
type CapacityPrometheus struct {
	URL      string   `yaml:"url"`      // base URL of the Prometheus HTTP API, http or https (required)
	Query    string   `yaml:"query"`    // PromQL instant query: one sample 0..1 per endpoint or cluster label (required)
	Interval Duration `yaml:"interval"` // between queries (default 30s; at least 1s)
	Timeout  Duration `yaml:"timeout"`  // per query (default 5s; at most interval)
}

// HysteresisOr returns the hysteresis (default when unset).
func (c *Capacity) HysteresisOr() float64 {
	if c.Hysteresis == nil {
		return DefaultCapacityHysteresis
	}
	return *c.Hysteresis
}

var k8sName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// SplitServiceRef splits NAMESPACE/NAME and checks both are Kubernetes
// names (DNS labels, at most 63 characters).
func SplitServiceRef(ref string) (namespace, name string, err error) {
	ns, n, ok := strings.Cut(ref, "/")
	switch {
	case !ok:
		return "", "", fmt.Errorf("%q is not NAMESPACE/NAME (e.g. shop/web)", ref)
	case len(ns) > 63 || !k8sName.MatchString(ns):
		return "", "", fmt.Errorf("%q: namespace %q is not a Kubernetes name (lower-case letters, digits and hyphens, at most 63)", ref, ns)
	case len(n) > 63 || !k8sName.MatchString(n):
		return "", "", fmt.Errorf("%q: service %q is not a Kubernetes name (lower-case letters, digits and hyphens, at most 63)", ref, n)
	}
	return ns, n, nil
}

func (v *validator) capacity(p string, c *Capacity, strategy string) {
	switch {
	case c.Source == "":
		v.add(p+".source", "is required (allowed: %s)", strings.Join(CapacitySources, ", "))
	default:
		v.checkOneOf(p+".source", c.Source, CapacitySources)
	}
	if strategy == StrategyRoundRobin {
		v.add(p, "does not apply to strategy roundrobin, which answers equal shares (allowed with weighted, failover, geo)")
	}
	switch c.Source {
	case CapacitySourceKubernetes:
		if c.Prometheus != nil {
			v.add(p+".prometheus", "only applies with source prometheus (source is kubernetes)")
		}
		switch {
		case c.Kubernetes != nil && c.Kubernetes.Service != "":
			if _, _, err := SplitServiceRef(c.Kubernetes.Service); err != nil {
				v.add(p+".kubernetes.service", "%v", err)
			}
		case !c.FromObjects:
			v.add(p+".kubernetes.service", "is required with source kubernetes: NAMESPACE/NAME of the Service whose EndpointSlices count in each endpoint's cluster (e.g. shop/web)")
		}
	case CapacitySourcePrometheus:
		if c.Kubernetes != nil {
			v.add(p+".kubernetes", "only applies with source kubernetes (source is prometheus)")
		}
		if c.Prometheus == nil {
			v.add(p+".prometheus", "is required with source prometheus: url and query")
		} else {
			v.capacityPrometheus(p+".prometheus", c.Prometheus)
		}
	}
	if d := c.MinChangeInterval.D(); d != 0 && (d < time.Second || d > time.Hour) {
		v.add(p+".min_change_interval", "%s is out of range (allowed 1s..1h; default %s)", d, DefaultCapacityMinChangeInterval)
	}
	if s := c.Step; s != 0 && (math.IsNaN(s) || s < 0.01 || s > 0.5) {
		v.add(p+".step", "%v is out of range (allowed 0.01..0.5; default %v)", s, DefaultCapacityStep)
	}
	if h := c.Hysteresis; h != nil && (math.IsNaN(*h) || *h < 0 || *h > 0.5) {
		v.add(p+".hysteresis", "%v is out of range (allowed 0..0.5; default %v)", *h, DefaultCapacityHysteresis)
	}
	if st := c.StaleAfter.D(); st != 0 {
		interval := DefaultCapacityPromInterval
		if c.Prometheus != nil && c.Prometheus.Interval != 0 {
			interval = c.Prometheus.Interval.D()
		}
		switch {
		case st > 24*time.Hour:
			v.add(p+".stale_after", "%s is too long (at most 24h; default %s)", st, DefaultCapacityStaleAfter)
		case c.Source == CapacitySourcePrometheus && st < 2*interval:
			v.add(p+".stale_after", "%s is shorter than two prometheus intervals (%s): one failed query would already be stale", st, 2*interval)
		case st < 10*time.Second:
			v.add(p+".stale_after", "%s is too short (at least 10s; default %s)", st, DefaultCapacityStaleAfter)
		}
	}
}

// prometheusURL checks the base URL of a Prometheus HTTP API (capacity
// queries, shift guards).
func (v *validator) prometheusURL(path, raw string) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		v.add(path, "%q is not an http or https URL with a host (e.g. http://prometheus.monitoring:9090)", raw)
	case u.User != nil:
		v.add(path, "must not carry credentials (user:password@): they would show in logs and reports")
	case u.RawQuery != "" || u.Fragment != "":
		v.add(path, "%q has a query or fragment (allowed: scheme, host, port and a path prefix)", raw)
	}
}

func (v *validator) capacityPrometheus(p string, pr *CapacityPrometheus) {
	if pr.URL == "" {
		v.add(p+".url", "is required: the base URL of the Prometheus HTTP API, e.g. http://prometheus.monitoring:9090")
	} else {
		v.prometheusURL(p+".url", pr.URL)
	}
	q := strings.TrimSpace(pr.Query)
	switch {
	case q == "":
		v.add(p+".query", "is required: a PromQL instant query giving one sample 0..1 per endpoint (label endpoint) or cluster (label cluster)")
	case len(pr.Query) > MaxCapacityQueryLen:
		v.add(p+".query", "is %d bytes long (at most %d)", len(pr.Query), MaxCapacityQueryLen)
	case strings.ContainsFunc(pr.Query, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' }):
		v.add(p+".query", "has control characters (allowed: printable text, new lines and tabs)")
	}
	iv := pr.Interval.D()
	if iv != 0 && (iv < time.Second || iv > time.Hour) {
		v.add(p+".interval", "%s is out of range (allowed 1s..1h; default %s)", iv, DefaultCapacityPromInterval)
	}
	if iv == 0 {
		iv = DefaultCapacityPromInterval
	}
	if to := pr.Timeout.D(); to != 0 && (to < 100*time.Millisecond || to > iv) {
		v.add(p+".timeout", "%s is out of range (allowed 100ms..interval %s; default %s)", to, iv, min(DefaultCapacityPromTimeout, iv))
	}
}

// capacityNamespaces checks that the Service a capacity-aware service reads
// lies in a watched namespace (kubernetes.namespaces), or it would never
// have a reading.
func (v *validator) capacityNamespaces(d *Desired) {
	if len(d.Kubernetes.Namespaces) == 0 {
		return
	}
	for i, s := range d.Services {
		c := s.Capacity
		if c == nil || c.Source != CapacitySourceKubernetes || c.Kubernetes == nil {
			continue
		}
		ns, _, err := SplitServiceRef(c.Kubernetes.Service)
		if err == nil && !slices.Contains(d.Kubernetes.Namespaces, ns) {
			v.add(fmt.Sprintf("services[%d].capacity.kubernetes.service", i), "namespace %q is not watched (kubernetes.namespaces: %s)", ns, strings.Join(d.Kubernetes.Namespaces, ", "))
		}
	}
}

// normalizeCapacity returns a copy of c with its defaults filled.
func normalizeCapacity(c *Capacity) *Capacity {
	if c == nil {
		return nil
	}
	out := *c
	out.MinChangeInterval = orDefaultDuration(out.MinChangeInterval, DefaultCapacityMinChangeInterval)
	if out.Step == 0 {
		out.Step = DefaultCapacityStep
	}
	h := out.HysteresisOr()
	out.Hysteresis = &h
	out.StaleAfter = orDefaultDuration(out.StaleAfter, DefaultCapacityStaleAfter)
	if c.Kubernetes != nil {
		k := *c.Kubernetes
		out.Kubernetes = &k
	}
	if c.Prometheus != nil {
		pr := *c.Prometheus
		pr.URL = strings.TrimRight(pr.URL, "/")
		pr.Interval = orDefaultDuration(pr.Interval, DefaultCapacityPromInterval)
		pr.Timeout = orDefaultDuration(pr.Timeout, min(DefaultCapacityPromTimeout, pr.Interval.D()))
		out.Prometheus = &pr
		out.StaleAfter = Duration(max(out.StaleAfter.D(), 2*pr.Interval.D()))
	}
	return &out
}
