// Package placement decides where the replicas of a Kubernetes workload go
// among the member clusters. Everything in it is pure: no goroutines, no I/O,
// no clock (the caller passes now), and results do not depend on the order of
// the inputs.
//
// # Selecting clusters
//
// A placement names its member clusters with a label selector in Kubernetes'
// form ("region=eu,tier!=edge,gpu"), parsed by [ParseSelector] and applied
// to a cluster's labels by [Matches]. The empty selector matches every
// cluster.
//
// # Ranking clusters
//
// [Score] gives every matched [Candidate] a score, and [Rank] orders them by
// it (highest first, ties by cluster name) and keeps at most a given number:
//
//	score = CPU    × free_cpu / max free_cpu
//	      + Memory × free_mem / max free_mem
//	      + GPU    × free_gpu / max free_gpu
//	      + Availability × (1 if Available, else 0)
//	      − Cost   × cost / max cost
//
// where free resources are allocatable minus the requests of the cluster's
// non-terminal scheduled pods, the maxima are taken over the candidates, and
// [ScoreWeights] (zero value = [DefaultScoreWeights]: 1, 1, 1, 2, 1) weigh
// the terms. A term is 0 when its maximum is 0, negative free amounts count
// as 0, and a negative, NaN or infinite cost counts as 0, so a score is never
// NaN. Availability is worth 2 by default, so an unavailable cluster ranks
// below an available one with the same resources and cost, but a nearly
// empty available cluster can rank below a well-provisioned unavailable one;
// callers that must never place on unavailable clusters filter them out
// before ranking.
//
// # Dividing replicas
//
// [Divide] splits a total number of replicas among clusters with the
// Webster / Sainte-Laguë divisor method:
//
//  1. Every cluster first gets its Min.
//  2. Each remaining replica goes, one at a time, to the cluster with the
//     highest quotient Weight / (2s + 1), where s is the number of replicas
//     it holds so far. Clusters with Weight 0 and clusters at their Max
//     (Max 0 = unbounded) take no part.
//  3. Equal quotients go to the smaller Weight, then to the cluster name
//     that sorts first. So 10 replicas at 3:1 give 7 and 3 (the exact
//     quotas are 7.5 and 2.5; the tie goes to the smaller cluster), and
//     7 replicas at 1:1:1 give 3, 2, 2 to clusters a, b, c.
//  4. Replicas that no cluster can take (all at Max, or no positive weight)
//     are returned as unplaced rather than forced anywhere.
//
// Without Min and Max this is exactly Webster apportionment: there is a
// divisor d such that every cluster holds w/d rounded to the nearest
// integer, it is house monotone (one more replica never takes one away from
// anyone) and weight monotone (raising a cluster's weight never lowers its
// share), and with two clusters every share is within ½ of its exact quota
// total × w / Σw.
//
// # Failover of divided workloads
//
// When the failover decision marks a member cluster failed, [Survivors]
// tells which clusters keep a share at time now, so the caller re-divides
// among them:
//
//   - A cluster failed for less than the toleration keeps its share, so a
//     short blip moves nothing. A cluster failed for at least the
//     toleration (or marked failed with no FailedSince) loses it.
//   - A cluster comes back as soon as it is no longer failed; the failover
//     decision already applies its hold-down before clearing Failed.
//   - If every cluster would lose its share, none does: replicas are never
//     removed everywhere.
//   - Survivors also returns the next time its answer can change (the
//     earliest FailedSince + toleration still in the future, zero if none),
//     so the caller can wake up then instead of polling.
package placement
