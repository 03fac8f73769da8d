// Package latency holds the pure rules of the latency strategy: how the
// probers' smoothed RTTs become the RTT table a snapshot is compiled with
// ([Build], a [View]), and which endpoints answer the clients of one region
// ([Select]). It starts no goroutines, reads no clock and does no I/O; every
// node that holds the same gossip builds the same View at the same now.
//
// # Rules
//
// The numbers below are the defaults (see [DefaultParams]).
//
//  1. Measurement. Each prober keeps, per endpoint, the EWMA (α = 0.5) of
//     its successful probes' durations (internal/health.RTTs); a failed
//     probe changes nothing.
//
//  2. Gossip. A prober sends summaries, never samples (internal/ring): per
//     endpoint the quantised RTT, the sample count and the newest sample's
//     stamp, when the value moved more than 10 % from the last one it sent,
//     else every 6 probe intervals; at most 32 entries per message and 8
//     messages per round (every half interval, or early after a new
//     sample, never within 250 ms of the last round). Receivers check them like
//     votes: only from a listed prober, for its own listed region, RTT in
//     (0, 60 s], stamps not beyond now + max_clock_skew.
//
//  3. Freshness. A measurement counts while its newest sample is at most
//     MaxAge old (18 probe intervals: three refresh periods).
//
//  4. Per region. The RTT of an endpoint from a region is the median of the
//     fresh measurements of that region's probers (the mean of the middle
//     two for an even count).
//
//  5. Hysteresis. The View keeps the RTT it holds for a region and endpoint
//     until the median moves more than Hysteresis (10 %) away from it; only
//     then (or when the endpoint is first measured, or its last measurement
//     goes stale) does the entry change. The snapshot is recompiled only
//     when the View changes, so RTT noise below 10 % never moves an answer.
//
//  6. Regions of clients. A client is answered with the RTTs of a prober
//     region: the region geo.networks places it in, when probers measure
//     from that region; else the first latency.regions entry listing its
//     country or continent; else every region's median (rule 7).
//
//  7. Fallback. For clients of no region the RTT of an endpoint is the
//     median over the regions that measured it.
//
//  8. Selection ([Select]). Among the available endpoints (not down, not
//     drained) — those with a weight > 0, or every available one when all
//     of those are out — the best is the smallest RTT. In tolerance are the
//     measured endpoints with RTT ≤ best × (1 + tolerance) (20 %), and the
//     endpoints no region has measured yet (a new endpoint takes traffic at
//     once; it is ranked as soon as it is measured). An endpoint measured
//     from other regions but not from this one is out: this region's probers
//     do not reach it. When none of the candidates is measured from the
//     region, every one is in (the answer is plain weighted). The answer is
//     drawn by weight among the endpoints in tolerance; when none is
//     available the service fails open as every strategy does.
package latency
