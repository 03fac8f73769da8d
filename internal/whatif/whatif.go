// Package whatif answers "what would change if": it turns simulated
// failures, drains and weights into operator overrides (the same ones the
// admin API stores, validated the same way) and compares the snapshot the
// pipeline serves with one compiled from the same inputs plus those
// overrides. Nothing here changes what is served; the comparison is pure.
package whatif

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/model"
)

// Kinds of simulated change.
const (
	Fail   = "fail"   // a cluster or an endpoint goes down (a force-down override)
	Drain  = "drain"  // taken out of the answers (a drain override)
	Weight = "weight" // an endpoint's weight replaced (a weight override)
)

// MaxChanges bounds the changes of one simulation.
const MaxChanges = 64

// Change is one simulated change as the CLI and the API take it:
// fail/drain "cluster=NAME" or "endpoint=SERVICE/TARGET", weight
// "SERVICE/TARGET=N".
type Change struct {
	Kind string `json:"kind"`
	Spec string `json:"spec"`
}

func (c Change) String() string { return "--" + c.Kind + " " + c.Spec }

// Request turns c into the admin request it simulates (validated against
// d by Overrides).
func (c Change) Request() (admin.Request, error) {
	bad := func(format string, args ...any) error {
		return admin.FieldError{Field: c.Kind, Msg: fmt.Sprintf("%q ", c.Spec) + fmt.Sprintf(format, args...)}
	}
	if len(c.Spec) > 600 {
		return admin.Request{}, bad("is longer than 600 characters")
	}
	switch c.Kind {
	case Fail, Drain:
		kind := admin.KindForceDown
		if c.Kind == Drain {
			kind = admin.KindDrain
		}
		what, val, _ := strings.Cut(c.Spec, "=")
		switch what {
		case "cluster":
			if val == "" {
				return admin.Request{}, bad("names no cluster (allowed: cluster=NAME or endpoint=SERVICE/TARGET)")
			}
			return admin.Request{Kind: kind, Cluster: val}, nil
		case "endpoint":
			svc, target, ok := strings.Cut(val, "/")
			if !ok || svc == "" || target == "" {
				return admin.Request{}, bad("is not endpoint=SERVICE/TARGET")
			}
			return admin.Request{Kind: kind, Service: svc, Endpoint: target}, nil
		}
		return admin.Request{}, bad("is not cluster=NAME or endpoint=SERVICE/TARGET")
	case Weight:
		ep, w, ok := strings.Cut(c.Spec, "=")
		svc, target, ok2 := strings.Cut(ep, "/")
		if !ok || !ok2 || svc == "" || target == "" {
			return admin.Request{}, bad("is not SERVICE/TARGET=WEIGHT")
		}
		n, err := strconv.Atoi(w)
		if err != nil || n < 0 || n > model.MaxWeight {
			return admin.Request{}, bad("has weight %q (allowed: an integer 0..%d)", w, model.MaxWeight)
		}
		return admin.Request{Kind: admin.KindWeight, Service: svc, Endpoint: target, Weight: &n}, nil
	}
	return admin.Request{}, admin.FieldError{Field: "kind", Msg: fmt.Sprintf("%q is not a simulated change (allowed: fail, drain, weight)", c.Kind)}
}

// Overrides validates every change against d exactly as the admin API
// validates a request and returns the overrides they simulate.
func Overrides(changes []Change, d *model.Desired, now time.Time) ([]admin.Override, error) {
	if len(changes) == 0 {
		return nil, admin.FieldError{Field: "fail", Msg: "give at least one change (fail, drain or weight)"}
	}
	if len(changes) > MaxChanges {
		return nil, admin.FieldError{Field: "fail", Msg: fmt.Sprintf("%d changes is more than %d", len(changes), MaxChanges)}
	}
	out := make([]admin.Override, 0, len(changes))
	for i, c := range changes {
		req, err := c.Request()
		if err != nil {
			return nil, err
		}
		req.Reason = "simulated: " + c.String()
		o, err := req.Validate(d, now)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c, err)
		}
		o.ID, o.Who, o.At = fmt.Sprintf("whatif-%d", i), "simulate", now
		out = append(out, o)
	}
	return out, nil
}
