package cffake

import (
	"fmt"
	"net"
	"strconv"
)

// The monitor's view of origins: what CheckHealth (health.go) records and
// Resolve consults, and what tests set and read without sockets.

// healthKey names an origin: (pool id, origin name).
type healthKey struct{ pool, origin string }

// originState is the monitor's view of one origin.
type originState struct {
	down          bool // the zero value is healthy
	checks        int
	passes, fails int // in a row
	lastErr       string
}

// HealthState is an origin's health as the fake's monitor sees it.
type HealthState struct {
	Up              bool   // healthy (true before any result)
	Checks          int    // results applied (checks and SetOriginHealth calls)
	ConsecutiveUp   int    // passed checks in a row
	ConsecutiveDown int    // failed checks in a row
	LastError       string // why the last check failed ("" when it passed)
}

// SetOriginHealth sets the monitor's last result for the origins of a pool
// (by pool name) named origin or at address origin (or "address:port"), as
// if a check had just passed or failed that many times in a row: for unit
// tests without sockets. The pool must have a monitor: without one, health
// is not consulted.
func (s *Server) SetOriginHealth(poolName, origin string, up bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.poolByName(poolName)
	if p == nil {
		return fmt.Errorf("cffake: no pool %q", poolName)
	}
	if p.Monitor == "" {
		return fmt.Errorf("cffake: pool %q has no monitor, so its origins' health is not consulted", poolName)
	}
	n := 0
	for _, o := range p.Origins {
		if matchOrigin(o, origin) {
			n++
			st := &originState{down: !up, checks: 1}
			if old := s.health[healthKey{p.ID, o.Name}]; old != nil {
				st.checks = old.checks + 1
			}
			if up {
				st.passes = 1
			} else {
				st.fails, st.lastErr = 1, "set down by SetOriginHealth"
			}
			s.health[healthKey{p.ID, o.Name}] = st
		}
	}
	if n == 0 {
		return fmt.Errorf("cffake: pool %q has no origin %q", poolName, origin)
	}
	return nil
}

// OriginHealth returns the monitor state of the first origin of a pool (by
// pool name) named origin or at address origin (or "address:port"); false
// when there is no such origin.
func (s *Server) OriginHealth(poolName, origin string) (HealthState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.poolByName(poolName)
	if p == nil {
		return HealthState{}, false
	}
	for _, o := range p.Origins {
		if matchOrigin(o, origin) {
			st := s.health[healthKey{p.ID, o.Name}]
			if st == nil {
				return HealthState{Up: true}, true
			}
			return HealthState{Up: !st.down, Checks: st.checks, ConsecutiveUp: st.passes, ConsecutiveDown: st.fails, LastError: st.lastErr}, true
		}
	}
	return HealthState{}, false
}

// keepHealth drops the results a pool update made stale: all of them when
// the monitor changed, else those of origins gone or moved. Callers hold
// s.mu.
func (s *Server) keepHealth(prev, p *Pool) {
	for k := range s.health {
		if k.pool != p.ID {
			continue
		}
		var was Origin
		for _, o := range prev.Origins {
			if o.Name == k.origin {
				was = o
			}
		}
		if prev.Monitor != p.Monitor || !hasOrigin(p, was) {
			delete(s.health, k)
		}
	}
}

// forgetPool drops a deleted pool's results. Callers hold s.mu.
func (s *Server) forgetPool(id string) {
	for k := range s.health {
		if k.pool == id {
			delete(s.health, k)
		}
	}
}

// hasOrigin reports whether p still has o (same name, address and port).
func hasOrigin(p *Pool, o Origin) bool {
	for _, x := range p.Origins {
		if x.Name == o.Name && x.Address == o.Address && x.Port == o.Port && o.Name != "" {
			return true
		}
	}
	return false
}

func matchOrigin(o Origin, s string) bool {
	return o.Name == s || o.Address == s || net.JoinHostPort(o.Address, strconv.Itoa(o.Port)) == s
}
