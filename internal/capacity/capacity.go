package capacity

import (
	"cmp"
	"slices"
	"time"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
)

// Source names of a State, as in engine.CapacityState.Source.
const (
	SourceNone = "none" // no good reading (none yet, or stale): 100 %
)

// Reasons a wanted change is held (EndpointState.Held).
const (
	HeldInterval = "interval" // the service changed less than min_change_interval ago
	HeldBrake    = "brake"    // it would move more than the brake allows in one change
)

// Reading is one good observation of an endpoint's ready fraction.
type Reading struct {
	Fraction float64   // 0..1 (the sources validate and clamp)
	Detail   string    // what was read, e.g. "8 of 10 endpoints ready"
	At       time.Time // when it was read
}

// Key names an endpoint of a service.
type Key struct {
	Service string // canonical service name
	Target  string // canonical address or CNAME target
}

// Endpoint is one endpoint of a capacity-aware service.
type Endpoint struct {
	Target  string
	Cluster string
	Weight  int // configured (after operator overrides), 0..1000
}

// Service is one capacity-aware service as Decide sees it.
type Service struct {
	Name              string
	Source            string     // model.CapacitySource*
	Endpoints         []Endpoint // config order
	Step              float64    // quantum of the fraction (0.05)
	Hysteresis        float64    // extra distance before the level moves (0.02)
	MinChangeInterval time.Duration
	StaleAfter        time.Duration
}

// Services lists the capacity-aware services of a normalized Desired, in
// config order.
func Services(d *model.Desired) []Service {
	var out []Service
	for i := range d.Services {
		s := &d.Services[i]
		c := s.Capacity
		if c == nil {
			continue
		}
		svc := Service{Name: s.Name, Source: c.Source, Step: c.Step, Hysteresis: c.HysteresisOr(),
			MinChangeInterval: c.MinChangeInterval.D(), StaleAfter: c.StaleAfter.D()}
		for _, e := range s.Endpoints {
			svc.Endpoints = append(svc.Endpoints, Endpoint{Target: e.Target(), Cluster: e.Cluster, Weight: e.WeightOr()})
		}
		out = append(out, svc.withDefaults())
	}
	return out
}

func (s Service) withDefaults() Service {
	if s.Step <= 0 || s.Step > 1 {
		s.Step = model.DefaultCapacityStep
	}
	if s.Hysteresis < 0 {
		s.Hysteresis = 0
	}
	if s.StaleAfter <= 0 {
		s.StaleAfter = model.DefaultCapacityStaleAfter
	}
	return s
}

// Params are the decision's brake and interval (failover.ParamsFrom).
type Params struct {
	Brake    float64       // largest share of a service's answers one change may move (default 0.5; 1 = off)
	Interval time.Duration // a change held by the brake applies this long after (default 5s)
}

func (p Params) withDefaults() Params {
	if p.Brake <= 0 {
		p.Brake = model.DefaultBrake
	}
	if p.Interval <= 0 {
		p.Interval = model.DefaultInterval
	}
	return p
}

// Input is everything one call of Decide looks at. Decide does not modify it.
type Input struct {
	Services []Service
	Readings map[Key]Reading // the latest good reading per endpoint
	Missing  map[Key]string  // why an endpoint has no fresh reading now (shown while it is stale)
	Prev     *State          // the previous result; nil on the first call
	Now      time.Time
}

// State is the ready fraction in use for every endpoint of every
// capacity-aware service. It is immutable once Decide returns it and safe
// for concurrent readers.
type State struct {
	At       time.Time
	Services []ServiceState // sorted by name
	Changes  []Change       // what this call changed or started holding
	// Changed: some endpoint's engine.CapacityState differs from Prev (a
	// recompile is due); true without Prev.
	Changed bool
}

// ServiceState is one capacity-aware service.
type ServiceState struct {
	Name       string
	Source     string
	Step       float64         // the service's quantum
	LastChange time.Time       // the last call that changed a fraction in use (zero: none yet)
	Fallback   bool            // every weighted endpoint wants 0 %: configured weights (rule 3)
	Endpoints  []EndpointState // config order
}

// EndpointState is one endpoint of a capacity-aware service.
type EndpointState struct {
	Target    string
	Cluster   string
	Weight    int       // configured
	Percent   int       // in use, 0..100
	Wanted    int       // what the reading asks for (rules 1-3); differs from Percent while held
	Held      string    // HeldInterval or HeldBrake while a wanted change waits; "" otherwise
	HeldSince time.Time // when the current hold began
	HeldUntil time.Time // the earliest call that may apply it (zero when not held)
	Since     time.Time // when Percent last changed (first seen for a new endpoint)
	Reading   Reading   // the reading behind Wanted (zero when none)
	Stale     bool      // no good reading, or older than stale_after: wanted 100 %
	Missing   string    // why there is no fresh reading (Input.Missing), shown while Stale
}

// Change is one thing a call did to an endpoint.
type Change struct {
	Service, Target, Cluster string
	From, To                 int    // percent; From == To for a hold starting
	Reason                   string // "reading", "stale", "fallback", "brake" (a braked change applied), or Held* for a hold starting
	At                       time.Time
}

var _ engine.Capacity = (*State)(nil)

// Endpoint implements engine.Capacity.
func (s *State) Endpoint(service, target string) (engine.CapacityState, bool) {
	svc, ok := s.Lookup(service)
	if !ok {
		return engine.CapacityState{}, false
	}
	for i := range svc.Endpoints {
		if e := &svc.Endpoints[i]; e.Target == target {
			return e.engineState(svc), true
		}
	}
	return engine.CapacityState{}, false
}

// Lookup returns the state of a service.
func (s *State) Lookup(service string) (ServiceState, bool) {
	if s == nil {
		return ServiceState{}, false
	}
	i, ok := slices.BinarySearchFunc(s.Services, service, func(x ServiceState, name string) int { return cmp.Compare(x.Name, name) })
	if !ok {
		return ServiceState{}, false
	}
	return s.Services[i], true
}
