package engine

import (
	"fmt"
	"strconv"

	"github.com/meridian-gslb/meridian/internal/model"
)

// Capacity feeds the ready capacity of capacity-aware services
// (services[].capacity) into a compile. Like Health it is read by the
// goroutine that compiles, never on the query path.
type Capacity interface {
	// Endpoint returns the capacity of an endpoint (target: canonical
	// address or CNAME target) of a capacity-aware service; ok is false
	// when nothing is known yet (the engine then draws 100 %).
	Endpoint(service, target string) (c CapacityState, ok bool)
}

// CapacityState is how much of an endpoint's configured weight is drawn.
type CapacityState struct {
	Percent int    `json:"percent"` // ready fraction in use, 0..100 (100: the configured weight)
	Source  string `json:"source"`  // kubernetes, prometheus, or none (no reading: 100)
	Why     string `json:"why"`     // what was read and why this percent is in use
}

// NoCapacity knows nothing: capacity-aware services draw their configured
// weights (100 %).
type NoCapacity struct{}

// Endpoint implements Capacity.
func (NoCapacity) Endpoint(string, string) (CapacityState, bool) { return CapacityState{}, false }

var _ Capacity = NoCapacity{}

// capacityOf is the capacity of an endpoint of ms under c (nil when ms is
// not capacity-aware): unknown endpoints draw 100 %, and a Percent outside
// 0..100 is clamped.
func capacityOf(ms *model.Service, target string, c Capacity) *CapacityState {
	if ms.Capacity == nil {
		return nil
	}
	st, ok := c.Endpoint(ms.Name, target)
	if !ok {
		st = CapacityState{Percent: 100, Source: "none", Why: "no reading yet: the configured weight"}
	}
	st.Percent = min(max(st.Percent, 0), 100)
	return &st
}

// drawWeight is the weight an endpoint is drawn with among the endpoints of
// its service: the configured weight, times the ready percent for a
// capacity-aware service (every endpoint of such a service is scaled, so
// shares are configured weight × ready fraction).
func drawWeight(weight int, c *CapacityState) uint32 {
	if c == nil {
		return uint32(weight)
	}
	return uint32(weight) * uint32(c.Percent)
}

// DrawWeight is the weight the endpoint is drawn with relative to the other
// endpoints of its service: Weight, or Weight × Capacity.Percent for a
// capacity-aware service.
func (e EndpointStatus) DrawWeight() int { return int(drawWeight(e.Weight, e.Capacity)) }

// EffectiveWeight is the configured weight × the ready fraction in use
// (the configured weight when the service is not capacity-aware).
func (e EndpointStatus) EffectiveWeight() float64 {
	if e.Capacity == nil {
		return float64(e.Weight)
	}
	return float64(e.Weight) * float64(e.Capacity.Percent) / 100
}

// capacityWhy tells, for a kept endpoint of a capacity-aware service, how
// its draw weight came about ("" otherwise).
func capacityWhy(st EndpointStatus, strategy string) string {
	cp := st.Capacity
	if cp == nil || strategy == model.StrategyRoundRobin {
		return ""
	}
	return fmt.Sprintf("; effective weight %s = weight %d × ready %d %% (%s: %s)",
		strconv.FormatFloat(st.EffectiveWeight(), 'f', -1, 64), st.Weight, cp.Percent, cp.Source, cp.Why)
}

// capacityNote is the explanation's note on a capacity-aware service.
func capacityNote(ms *model.Service) string {
	return fmt.Sprintf("capacity-aware weights (capacity.source %s): each endpoint is drawn with its configured weight × its ready fraction, "+
		"changed at most once per %s through the decision's brake; replica division keeps the configured weights",
		ms.Capacity.Source, ms.Capacity.MinChangeInterval)
}
