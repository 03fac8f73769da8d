package admin

import (
	"errors"
	"fmt"
	"strings"

	"github.com/meridian-gslb/meridian/internal/engine"
)

// ErrBelowMinHealthy is wrapped by the error Guard returns: the change
// would leave a service with fewer healthy endpoints than its min_healthy.
var ErrBelowMinHealthy = errors.New("min_healthy")

// Shortfall is one service a change would leave below its min_healthy.
type Shortfall struct {
	Service    string `json:"service"`
	MinHealthy int    `json:"min_healthy"`
	From       string `json:"from,omitempty"` // where min_healthy comes from (config, default, annotation and object)
	Before     int    `json:"before"`         // healthy, answerable endpoints now
	After      int    `json:"after"`          // with the change
}

func (s Shortfall) String() string {
	from := ""
	if s.From != "" {
		from = ", set by " + s.From
	}
	return fmt.Sprintf("service %s would keep %d healthy endpoint(s), below min_healthy %d (now %d)%s",
		strings.TrimSuffix(s.Service, "."), s.After, s.MinHealthy, s.Before, from)
}

// MinHealthy is a service's guard and where it comes from (see
// model.Desired.MinHealthyRule).
type MinHealthy struct {
	N    int
	From string
}

// GuardError is a change refused by the min_healthy rule.
type GuardError struct{ Shortfalls []Shortfall }

func (e *GuardError) Error() string {
	parts := make([]string, len(e.Shortfalls))
	for i, s := range e.Shortfalls {
		parts[i] = s.String()
	}
	return fmt.Sprintf("refused by rule min_healthy: %s; nothing was changed (force: true, CLI --force, does it anyway and is recorded)", strings.Join(parts, "; "))
}

func (e *GuardError) Unwrap() error { return ErrBelowMinHealthy }

// Healthy counts the endpoints of a service that are answerable: not
// down (by the decided health, the config or an override) and not drained.
func Healthy(eps []engine.EndpointStatus) int {
	n := 0
	for _, e := range eps {
		if e.State != engine.Down && !e.Drained {
			n++
		}
	}
	return n
}

// Guard compares the services before and after a change and returns the
// services it would leave below their min_healthy (minOf; N 0 = no guard).
// A service the change does not make worse is never refused: one already
// below its minimum (everything down) does not block an unrelated drain.
// It is pure: the caller compiles before and after with the same inputs.
func Guard(before, after []engine.ServiceStatus, minOf func(service string) MinHealthy) []Shortfall {
	was := make(map[string]int, len(before))
	for _, s := range before {
		was[s.Name] = Healthy(s.Endpoints)
	}
	var out []Shortfall
	for _, s := range after {
		minimum := minOf(s.Name)
		now := Healthy(s.Endpoints)
		prev, ok := was[s.Name]
		if minimum.N <= 0 || !ok || now >= minimum.N || now >= prev {
			continue
		}
		out = append(out, Shortfall{Service: s.Name, MinHealthy: minimum.N, From: minimum.From, Before: prev, After: now})
	}
	return out
}

// Rule is what Override.Forced records: the rule and each shortfall,
// at most MaxForced bytes.
func (e *GuardError) Rule() string {
	parts := make([]string, len(e.Shortfalls))
	for i, s := range e.Shortfalls {
		parts[i] = s.String()
	}
	r := "min_healthy: " + strings.Join(parts, "; ")
	if len(r) > MaxForced {
		r = r[:MaxForced-3] + "..."
	}
	return r
}
