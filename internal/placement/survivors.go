package placement

import "time"

// ClusterHealth is the failover decision's view of one member cluster, as
// used to plan divided workloads.
type ClusterHealth struct {
	Cluster     string
	Failed      bool      // the decision marks it failed over (heartbeat lost, confirmed)
	FailedSince time.Time // when it became failed (zero if not failed)
}

// Survivors returns the clusters that keep a share at time now: every cluster
// except those failed for at least toleration (a cluster failed for less than
// toleration keeps its share, so a short blip moves nothing). A cluster returns
// as soon as it is no longer Failed (the decision itself applies the hold-down
// before clearing Failed). If every cluster would be excluded, none is (replicas are never
// removed everywhere). Also returns the next time the answer can change
// (earliest FailedSince+toleration in the future; zero if none) so a caller can wake then.
//
// keep is in the order of clusters, without duplicates. Clusters without a
// health entry are healthy; entries for clusters not listed are ignored; of
// several entries for one cluster the last counts. A cluster Failed with a
// zero FailedSince counts as failed for longer than any toleration.
func Survivors(clusters []string, health []ClusterHealth, toleration time.Duration, now time.Time) (keep []string, wake time.Time) {
	byName := make(map[string]ClusterHealth, len(health))
	for _, h := range health {
		byName[h.Cluster] = h
	}
	seen := make(map[string]bool, len(clusters))
	all := make([]string, 0, len(clusters))
	keep = make([]string, 0, len(clusters))
	for _, c := range clusters {
		if seen[c] {
			continue
		}
		seen[c] = true
		all = append(all, c)
		h, ok := byName[c]
		if !ok || !h.Failed {
			keep = append(keep, c)
			continue
		}
		if h.FailedSince.IsZero() {
			continue // failed since an unknown time: past any toleration
		}
		until := h.FailedSince.Add(toleration)
		if !until.After(now) {
			continue // failed for at least toleration
		}
		keep = append(keep, c)
		if wake.IsZero() || until.Before(wake) {
			wake = until
		}
	}
	if len(keep) == 0 {
		return all, wake
	}
	return keep, wake
}
