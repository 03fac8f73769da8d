package kube

import (
	"slices"
	"strings"

	"github.com/meridian-gslb/meridian/internal/kube/claims"
)

// conflictLog is what Observe saw last.
type conflictLog struct {
	refused map[string]string   // object|name -> refusal message
	owners  map[string][]string // name -> owning namespaces
}

// Observe logs and counts the hostname decisions of a Build: each new
// refusal once (a warning naming the object, the name and the owners), the
// number of refusals now by kind (meridian_kube_hostname_conflicts), the
// names over the hostname limits (meridian_kube_hostnames_over_limit), the
// size of the ledger of first claimants (meridian_kube_first_claims), and
// each change of a name's owners (a warning and
// meridian_kube_hostname_owner_changes_total). Call it with every Result
// that is served; it is safe for concurrent use.
func (mg *Manager) Observe(r Result) {
	counts := map[string]int{}
	refused := map[string]string{}
	var fresh []Refusal
	var refs []ObjectRef
	mg.mu.Lock()
	defer mg.mu.Unlock()
	for ref, rs := range r.Refused {
		for _, f := range rs {
			counts[f.Kind]++
			key := ref.String() + "|" + f.Hostname
			refused[key] = f.Msg
			if mg.seen.refused[key] != f.Msg {
				fresh = append(fresh, f)
				refs = append(refs, ref)
			}
		}
	}
	for _, k := range claims.Kinds {
		mg.m.conflicts.WithLabelValues(k).Set(float64(counts[k]))
	}
	for _, l := range Limits {
		mg.m.overLimit.WithLabelValues(l).Set(float64(r.OverLimit[l]))
	}
	mg.m.firstClaims.Set(float64(len(r.First)))
	for i, f := range fresh {
		mg.log.Warn("kubernetes: hostname claim refused: the object is not served for this name",
			"object", refs[i].String(), "hostname", f.Hostname, "kind", f.Kind, "owners", strings.Join(f.Owners, ","), "reason", f.Msg)
	}
	for name, owners := range r.Owners {
		prev, ok := mg.seen.owners[name]
		if ok && len(prev) > 0 && len(owners) > 0 && !slices.Equal(prev, owners) {
			mg.m.ownerChanges.Inc()
			mg.log.Warn("kubernetes: the namespaces owning a name changed", "hostname", name,
				"from", strings.Join(prev, ","), "to", strings.Join(owners, ","))
		}
	}
	mg.seen = conflictLog{refused: refused, owners: r.Owners}
}
