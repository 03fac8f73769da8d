package admin

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/shift"
)

// Shift is a kind shift override's spec and where it stands. The spec is
// fixed when the shift is created; the progress changes as it advances,
// rolls back, pauses and resumes (each change a new version of the entry).
type Shift struct {
	Spec     shift.Spec     `json:"spec"`
	Progress shift.Progress `json:"progress"`
}

// Percent is the share of the service's traffic the target gets now.
func (s Shift) Percent() int { return s.Spec.Percent(s.Progress) }

// Describe is the human note for the status page and explain.
func (s Shift) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "shifting to %s: %d%%", s.Spec.To, s.Percent())
	if s.Progress.Step >= 0 {
		fmt.Fprintf(&b, " (step %d of %d, steps %s every %s)", s.Progress.Step+1, len(s.Spec.Steps), shift.FormatSteps(s.Spec.Steps), s.Spec.Every)
	}
	switch {
	case s.Progress.Done:
		b.WriteString(", complete")
	case s.Progress.Paused:
		b.WriteString(", paused")
		if s.Progress.Reason != "" {
			b.WriteString(" (" + s.Progress.Reason + ")")
		}
	}
	return b.String()
}

// Defaults of a shift request.
const DefaultShiftEvery = 5 * time.Minute

// shift builds the spec r asks for, started at now.
func (r Request) shift(now time.Time) (*Shift, error) {
	spec := shift.Spec{To: r.To, Steps: r.Steps, Every: DefaultShiftEvery, AbortIf: strings.TrimSpace(r.AbortIf)}
	if spec.Steps == nil {
		spec.Steps = slices.Clone(shift.DefaultSteps)
	}
	if r.Every != "" {
		d, err := time.ParseDuration(r.Every)
		if err != nil {
			return nil, FieldError{"every", fmt.Sprintf("%q is not a duration (allowed: %s..%s, e.g. 5m)", r.Every, shift.MinEvery, shift.MaxEvery)}
		}
		spec.Every = d
	}
	if r.MaxFailures != nil {
		spec.MaxFailures = *r.MaxFailures
	}
	return &Shift{Spec: spec, Progress: shift.Start(now)}, nil
}

// validateShift checks a kind shift override: a service (no cluster, no
// endpoint), a valid spec and progress and, with d, a weighted service
// with endpoints in the target cluster and outside it.
func (o *Override) validateShift(d *model.Desired) error {
	switch {
	case o.Kind != KindShift:
		return FieldError{"shift", "only goes with kind shift"}
	case o.Shift == nil:
		return FieldError{"to", "is required with kind shift"}
	case o.Cluster != "" || o.Endpoint != "":
		return FieldError{"service", "kind shift takes a service and a target cluster (to), not cluster/endpoint"}
	case o.Service == "":
		return FieldError{"service", "is required with kind shift"}
	case len(o.Service) > 255:
		return FieldError{"service", "is longer than 255 characters"}
	case o.Weight != nil:
		return FieldError{"weight", "only goes with kind weight"}
	}
	if err := o.Shift.Spec.Validate(); err != nil {
		return FieldError{err.(shift.FieldError).Field, err.(shift.FieldError).Msg}
	}
	if err := o.Shift.Spec.ValidProgress(o.Shift.Progress); err != nil {
		return FieldError{err.(shift.FieldError).Field, err.(shift.FieldError).Msg}
	}
	if d == nil {
		return nil
	}
	if !slices.ContainsFunc(d.Clusters, func(c model.Cluster) bool { return c.Name == o.Shift.Spec.To }) {
		return FieldError{"to", fmt.Sprintf("%q is not a cluster (allowed: %s)", o.Shift.Spec.To, strings.Join(clusterNames(d), ", "))}
	}
	svc := model.CanonicalName(o.Service)
	i := slices.IndexFunc(d.Services, func(s model.Service) bool { return s.Name == svc })
	if i < 0 {
		return FieldError{"service", fmt.Sprintf("%q is not a service", o.Service)}
	}
	if o.Shift.Spec.AbortIf != "" && d.Shift.PrometheusURL == "" {
		return FieldError{"abort_if", "needs shift.prometheus_url in the config (the Prometheus the guard queries)"}
	}
	s := d.Services[i]
	if s.Strategy != "" && s.Strategy != model.StrategyWeighted {
		return FieldError{"service", fmt.Sprintf("%s has strategy %s: a shift moves weighted traffic (allowed: strategy weighted)", svc, s.Strategy)}
	}
	in := slices.ContainsFunc(s.Endpoints, func(e model.Endpoint) bool { return e.Cluster == o.Shift.Spec.To })
	out := slices.ContainsFunc(s.Endpoints, func(e model.Endpoint) bool { return e.Cluster != o.Shift.Spec.To })
	if !in || !out {
		return FieldError{"to", fmt.Sprintf("%s needs endpoints in %s and in another cluster to shift between them", svc, o.Shift.Spec.To)}
	}
	o.Service = svc
	return nil
}

// applyShift rewrites the weights of eps (a clone) so that the endpoints
// in cluster to get pct % of the weight and the others the rest, each
// side in proportion to its current weights (0 stays 0: a backup). At
// 100 % the others are weight 0, answered only when the target is down;
// at 0 % the target is.
func applyShift(eps []model.Endpoint, to string, pct int) {
	base := model.Endpoint.WeightOr
	var sumIn, sumOut, nIn, nOut int
	for _, e := range eps {
		if e.Cluster == to {
			sumIn += base(e)
			nIn++
		} else {
			sumOut += base(e)
			nOut++
		}
	}
	budget := model.MaxWeight
	for j := range eps {
		share, sum, n := pct, sumIn, nIn
		if eps[j].Cluster != to {
			share, sum, n = 100-pct, sumOut, nOut
		}
		w := 0
		switch {
		case share == 0:
		case sum == 0: // every endpoint on this side is a backup: split evenly
			w = max(1, budget*share/100/n)
		case base(eps[j]) > 0:
			w = max(1, budget*share/100*base(eps[j])/sum)
		}
		eps[j].Weight = &w
	}
}
