// Package failover decides which endpoints and clusters are down.
//
// [Decide] is one pure function from (desired state, gossiped votes, live
// probers, previous decision, now) to a [Decision]: the decided state of every
// endpoint of every service and of every cluster, what changed, and which
// probers were ignored. It starts no goroutines, reads no clock, does no I/O,
// and its result does not depend on the order of its inputs: every node of
// the ring that holds the same gossip (the same votes, the same membership,
// the same config and the same previous decision) and decides at the same
// Now computes the same Decision. Nodes that decide at slightly different
// times may disagree for at most the time it takes a vote to cross a
// freshness or hold-down boundary; the next call converges them.
//
// A *Decision implements engine.Health, so the caller passes it straight to
// engine.Compile, and recompiles only when Decision.StatesChanged is true.
// The caller feeds each Decision back as Input.Prev of the next call; that
// is the only state the rules keep.
//
// # Rules
//
// Defaults come from the config (health.interval, decision.*) through
// [ParamsFrom]; the numbers below are the defaults.
//
//  1. Freshness. A vote counts only if it is fresh, now - ObservedAt <=
//     FreshVotes × Interval (3 × 5s = 15s), its prober is a live member of
//     the ring (Input.Probers), and it says Up or Down. Of several votes of
//     one prober on one subject the highest Seq (then the latest ObservedAt,
//     then Down) wins. A prober's region is the ring's, not the vote's.
//
//  2. Outliers (Outliers, default on). A prober is ignored for this call if
//     it says Down on more than half of the endpoints it has fresh votes on,
//     and on more than half of the endpoints where at least one other prober
//     voted too (at least two such endpoints) it says Down while a strict
//     majority of the other probers say Up. All its votes are ignored,
//     heartbeat votes included; it counts again as soon as it agrees.
//     Ignored probers are listed in Decision.Outliers, and an
//     "outlier-ignored" Change names the endpoints where its Down vote was
//     overruled when it starts being ignored.
//
//  3. Quorum. The counted votes of an endpoint give a verdict:
//     Down when a strict majority says Down and the Down votes come from at
//     least min(MinRegions, regions in the ring) regions (2); Up when a
//     strict majority says Up. If there are no counted votes, or they come
//     from fewer regions than that, the decision is frozen: state, reason,
//     holds and brake stay as they are. A tie, or a Down majority from too
//     few regions, also keeps the state ("endpoint down in one region only
//     stays up") and cancels a running brake; a running hold-down keeps its
//     clock but is only released by an Up verdict. A new endpoint is
//     Unknown (in the answers) until its first verdict.
//
//  4. Hold-down. A Down endpoint that gets an Up verdict stays Down for
//     HoldFor(failures), counted from the first call of the Up verdict; it
//     comes back at the first call with an Up verdict after that. The
//     ladder is adaptive: a first failure (after a quiet FlapWindow) is held
//     FirstHoldDown (3s); the second is held HoldDownMin doubled, each
//     further failure doubles it up to HoldDown and then on up to
//     HoldDownMax (3s, 10s, 20s, 30s, 60s, 120s, 240s, 300s).
//     A Down verdict during the hold ends it and counts as a new failure
//     (the next hold is one rung longer); a tie or a freeze keeps its clock
//     (probers coming back one by one pass through ties), and the release
//     waits for an Up verdict. Failures reset once the endpoint has been up
//     for FlapWindow (60s) since its last release, so a flapping endpoint
//     climbs the ladder and one that failed once long ago starts at its
//     foot. An endpoint seen for the first time is not held.
//
//  5. Fail-open is not done here. When every endpoint of a name is down the
//     engine answers with all of them (when_all_down: fail-open, the
//     default) or with no data; this package reports the truth and leaves
//     the answer to the engine.
//
//  6. Brake. Per service, removals (Up or Unknown to Down) are limited to
//     Brake (0.5) × the weight the service was serving before this call
//     (endpoints not Down, not drained or set down in the config, and not in
//     a failed-over cluster). Removals apply in config order while they fit;
//     the rest stay in the answers with reason "brake" and BrakeSince set,
//     and are applied at the first call at least one Interval (5s) after
//     the brake started if the removal is still wanted. A held removal
//     waits for its Interval even if it would fit earlier; a freeze keeps
//     it; an Up verdict or a tie drops it. Endpoints that were not serving
//     are removed at once. When every endpoint of a service has weight 0
//     each counts as 1; otherwise weight-0 endpoints never hold the brake.
//     Brake 1 turns the brake off. Cluster fail-overs are not braked.
//
//  7. Cluster heartbeats. Votes about a cluster subject say whether the
//     prober saw the cluster's heartbeat within its grace (Up) or not
//     (Down). A cluster without heartbeat config is always Ready. The
//     quorum of rule 3 moves it to FailedOver (reason "heartbeat-lost",
//     with the confirming voters), which takes all of its endpoints out of
//     the answers. Any counted Down vote short of that makes it Unreachable,
//     which has no traffic effect; counted votes that all say Up make it
//     Ready again. A FailedOver cluster comes back only after the hold-down
//     of rule 4 (same doubling); it comes back Unreachable if some probers
//     still miss the heartbeat.
//
//  8. Determinism. Votes and probers are indexed and sorted before use;
//     outputs are sorted: endpoints by service then target, clusters and
//     outliers by name, voters by name, changes by subject (clusters first)
//     then reason. Maps are used only for lookups.
//
// # Changes and reasons
//
// Decision.Changes lists what one call did. A Change with From == To is a
// hold event: hold-down starting ("hold-down"), a failure during hold-down
// ("threshold" or "confirmation"), the brake holding a removal ("brake"),
// or outliers ignored ("outlier-ignored"). A Down verdict is "confirmation"
// when its Down votes come from two or more regions and "threshold"
// otherwise; an Up verdict is "threshold". Releases after hold-down and
// removals applied after the brake carry "hold-down" and "brake". A
// cluster's move to Unreachable is "unconfirmed", and a cluster whose
// heartbeat config is removed becomes Ready with "no-heartbeat".
package failover
