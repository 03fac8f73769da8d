// Package capacity decides the ready fraction each endpoint of a
// capacity-aware service (services[].capacity) is drawn with: its effective
// weight is its configured weight × that fraction.
//
// [Decide] is one pure function from (the capacity-aware services, the
// latest good reading of each endpoint, the previous State, now) to a
// [State]. It starts no goroutines, reads no clock and does no I/O; the same
// input gives the same State. A *State implements engine.Capacity, so the
// caller passes it to engine.Compile, and recompiles only when
// State.Changed is true. The caller feeds each State back as Input.Prev;
// that is the only memory the rules keep. Readings come from the edges:
// [FromEndpointCounts] (a member cluster's EndpointSlices) and
// [FromSamples] (a Prometheus instant vector), each validating what it is
// given.
//
// # Rules
//
// The numbers are the defaults (services[].capacity.*, decision.brake and
// health.interval).
//
//  1. Reading. An endpoint's reading counts while now - At <= StaleAfter
//     (5m). Without one (none yet, or stale) it is counted at 100 %: its
//     configured weight. A source that fails keeps its last good reading
//     (the caller's job), so a failed query changes nothing until the
//     reading goes stale.
//
//  2. Quantising with hysteresis. The fraction in use is a multiple of Step
//     (5 %) or 100 %. It moves to the level nearest the reading only when
//     the reading is more than Step/2 + Hysteresis (2.5 + 2 = 4.5 points)
//     away from the level in use, so a reading wobbling around a boundary
//     does not flip the level. A stale reading wants exactly 100 %.
//
//  3. Everything at 0. When every endpoint with a configured weight above 0
//     wants 0 %, they all want 100 % instead (ServiceState.Fallback): the
//     configured weights, as without capacity. Zero ready everywhere says
//     nothing about where to send clients, and health (not capacity) takes
//     endpoints out. And a service never draws all its weighted endpoints
//     at 0 %: when the fractions in use would be, the wanted ones apply at
//     once, whatever rules 4 and 5 hold (reason "fallback").
//
//  4. Minimum change interval. The fractions of one service change at most
//     once per MinChangeInterval (30s), counted from the last call that
//     changed one; the first change of a service applies at once. Wanted
//     changes that must wait are held with reason "interval".
//
//  5. Brake. One change may move at most Brake (0.5) of the service's
//     answers: the total variation distance between the shares before and
//     after (share = configured weight × fraction / the sum over the
//     service). Wanted changes apply in config order while they fit; the
//     rest are held with reason "brake" and applied at the first call at
//     least one Interval (5s) after, whatever the budget and the minimum
//     change interval (the remainder belongs to the change that was
//     braked). Brake 1 turns it off.
//
//  6. Zero is not down. An endpoint at 0 % keeps its health, and the engine
//     draws it like a weight-0 standby: answered only when no endpoint of
//     its group (failover group, geo bucket) with ready capacity is
//     available, and by fail-open. Capacity never moves a failover service
//     to its next group.
//
//  7. Replica division keeps the configured weights. The propagation
//     controller divides replicas by the configured traffic weights, never
//     by these fractions: fewer replicas would mean fewer ready endpoints,
//     a lower weight, and fewer replicas again.
//
// Each node decides from its own readings (its member informers, its
// queries); nothing of this is gossiped.
package capacity
