package capacity

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
)

// EndpointCounts are the endpoints listed by the EndpointSlices of one
// Service (or several, summed), terminating endpoints left out.
type EndpointCounts struct {
	Ready    int // conditions.ready true (or unset) and not terminating
	NotReady int // conditions.ready false and not terminating
	Slices   int // EndpointSlices seen
}

// Add sums two counts.
func (c EndpointCounts) Add(o EndpointCounts) EndpointCounts {
	return EndpointCounts{Ready: c.Ready + o.Ready, NotReady: c.NotReady + o.NotReady, Slices: c.Slices + o.Slices}
}

// FromEndpointCounts is the reading of a Service's EndpointSlices: ready /
// (ready + not ready). A Deployment of 10 with 8 pods failing readiness
// reads 0.2; one scaled from 10 to 2 on purpose reads 1 (its weight is
// configured separately). Slices without any endpoint read 0 (nothing to
// serve); no EndpointSlice at all gives no reading (ok false): Kubernetes
// says nothing about a Service without a selector.
func FromEndpointCounts(c EndpointCounts, at time.Time) (r Reading, ok bool) {
	if c.Slices <= 0 || c.Ready < 0 || c.NotReady < 0 {
		return Reading{}, false
	}
	total := c.Ready + c.NotReady
	r = Reading{At: at, Detail: fmt.Sprintf("%d of %d endpoints ready", c.Ready, total)}
	if total > 0 {
		r.Fraction = float64(c.Ready) / float64(total)
	}
	return r, true
}

// Labels a Prometheus sample is matched by: an endpoint's address or CNAME
// target first, else its cluster's name.
const (
	LabelEndpoint = "endpoint"
	LabelCluster  = "cluster"
)

// MaxSamples bounds the samples one query result may carry.
const MaxSamples = 10000

// Sample is one sample of a Prometheus instant vector.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Problem is a sample that was left out or changed, by reason.
type Problem struct {
	Reason string // ProblemNaN, ProblemNegative, ProblemAboveOne, ProblemDuplicate, ProblemUnmatched, ProblemTooMany
	Detail string
}

// Reasons of a Problem (the label values of the invalid-sample metric).
const (
	ProblemNaN       = "nan"       // NaN or ±Inf: left out
	ProblemNegative  = "negative"  // below 0: left out
	ProblemAboveOne  = "above-one" // above 1 (e.g. more ready than desired during a rollout): used as 1
	ProblemDuplicate = "duplicate" // two samples for one endpoint or cluster: both left out
	ProblemUnmatched = "unmatched" // labels name no endpoint or cluster of the service: ignored
	ProblemTooMany   = "too-many"  // more than MaxSamples: the rest ignored
)

// ProblemReasons lists every Problem reason.
var ProblemReasons = []string{ProblemNaN, ProblemNegative, ProblemAboveOne, ProblemDuplicate, ProblemUnmatched, ProblemTooMany}

// FromSamples matches the samples of one query to the endpoints of svc: a
// sample whose endpoint label is an endpoint's target (address or CNAME
// target, compared in canonical form) is that endpoint's reading; a sample
// whose cluster label names a cluster is the reading of that cluster's
// endpoints without an endpoint sample of their own. Values must be
// numbers 0..1: NaN, infinities and negatives are left out, values above 1
// are used as 1; two samples for the same endpoint (or cluster) leave it
// without a reading. Every left-out or changed sample is a Problem.
func FromSamples(svc Service, samples []Sample, at time.Time) (map[string]Reading, []Problem) {
	var problems []Problem
	if len(samples) > MaxSamples {
		problems = append(problems, Problem{ProblemTooMany, fmt.Sprintf("%d samples, the first %d are used", len(samples), MaxSamples)})
		samples = samples[:MaxSamples]
	}
	targets, clusters := map[string]bool{}, map[string]bool{}
	for _, e := range svc.Endpoints {
		targets[e.Target] = true
		clusters[e.Cluster] = true
	}
	byTarget, byCluster := map[string]Reading{}, map[string]Reading{}
	dupTarget, dupCluster := map[string]bool{}, map[string]bool{}
	for _, s := range samples {
		desc := describe(s.Labels)
		target := canonicalTarget(s.Labels[LabelEndpoint])
		cluster := s.Labels[LabelCluster]
		var into map[string]Reading
		var dup map[string]bool
		var key, label string
		switch {
		case target != "" && targets[target]:
			into, dup, key, label = byTarget, dupTarget, target, LabelEndpoint
		case cluster != "" && clusters[cluster]:
			into, dup, key, label = byCluster, dupCluster, cluster, LabelCluster
		default:
			problems = append(problems, Problem{ProblemUnmatched, desc + ": no endpoint or cluster of " + svc.Name})
			continue
		}
		v := s.Value
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			problems = append(problems, Problem{ProblemNaN, fmt.Sprintf("%s = %v: not a number 0..1", desc, v)})
			continue
		case v < 0:
			problems = append(problems, Problem{ProblemNegative, fmt.Sprintf("%s = %v: below 0", desc, v)})
			continue
		case v > 1:
			problems = append(problems, Problem{ProblemAboveOne, fmt.Sprintf("%s = %v: above 1, used as 1", desc, v)})
			v = 1
		}
		if _, seen := into[key]; seen || dup[key] {
			problems = append(problems, Problem{ProblemDuplicate, desc + ": a second sample for the same " + label + "; both are left out"})
			dup[key] = true
			delete(into, key)
			continue
		}
		into[key] = Reading{Fraction: v, At: at, Detail: fmt.Sprintf("prometheus %s = %s", desc, strconv.FormatFloat(s.Value, 'g', 4, 64))}
	}
	out := map[string]Reading{}
	for _, e := range svc.Endpoints {
		if r, ok := byTarget[e.Target]; ok {
			out[e.Target] = r
		} else if r, ok := byCluster[e.Cluster]; ok && !dupTarget[e.Target] {
			out[e.Target] = r
		}
	}
	return out, problems
}

// canonicalTarget is a label value as an endpoint target: an address in
// its canonical form, else a name in lower case with a trailing dot.
func canonicalTarget(v string) string {
	v = strings.TrimSpace(v)
	if v == "" {
		return ""
	}
	if a, err := netip.ParseAddr(v); err == nil {
		return a.Unmap().String()
	}
	return model.CanonicalName(v)
}

// describe writes a sample's matching labels like PromQL: {cluster="east"}.
func describe(labels map[string]string) string {
	var parts []string
	for _, k := range []string{LabelEndpoint, LabelCluster} {
		if v, ok := labels[k]; ok {
			parts = append(parts, k+"="+truncate(strconv.Quote(v), 80))
		}
	}
	if len(parts) == 0 {
		keys := make([]string, 0, len(labels))
		for k := range labels {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys[:min(len(keys), 4)] {
			parts = append(parts, truncate(k, 32)+"="+truncate(strconv.Quote(labels[k]), 80))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
