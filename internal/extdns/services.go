package extdns

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/meridian-gslb/meridian/internal/model"
)

// BuildOptions are what Build reads besides the records.
type BuildOptions struct {
	// Clusters are the configured cluster names: records of another
	// cluster are not served.
	Clusters map[string]bool
	// Taken reports the names (canonical, with the final dot) that the
	// config file or a Kubernetes source defines: they stay theirs.
	Taken func(name string) bool
	// HealthCheck is the services' check when no record sets
	// webhook/meridian-health-check (nil: not probed).
	HealthCheck *model.Check
	// ParseCheck reads webhook/meridian-health-check (nil: ignored).
	ParseCheck func(string) (*model.Check, error)
	// Check refuses a record the current rules would not accept (Rules.Check:
	// the zones, the tenancy policy and tenant_targets may have changed
	// since it was stored, or it came from the state file); nil: none.
	Check func(*Endpoint) error
}

// Build turns every cluster's records into services (sorted by name), the
// reasons of the names it leaves out (dropped: name → reason) and of the
// names it serves without some of their records (partial: name → reason);
// see the package doc for the rules. It is pure: records are not modified.
func Build(records map[string][]*Endpoint, opts BuildOptions) (svcs []model.Service, dropped, partial map[string]string) {
	dropped, partial = map[string]string{}, map[string]string{}
	byName := map[string][]owned{}
	for _, cluster := range slices.Sorted(maps.Keys(records)) {
		for _, e := range records[cluster] {
			if e.RecordType != TypeA && e.RecordType != TypeAAAA && e.RecordType != TypeCNAME {
				continue
			}
			name := model.CanonicalName(e.DNSName)
			switch {
			case !opts.Clusters[cluster]:
				dropped[name] = fmt.Sprintf("written by cluster %q, which is not in clusters", cluster)
			case opts.Taken != nil && opts.Taken(name):
				dropped[name] = "defined by the config file or a Kubernetes source (they win)"
			case opts.Check != nil && opts.Check(e) != nil:
				dropped[name] = fmt.Sprintf("a %s record of cluster %q is refused by the current config: %v", e.RecordType, cluster, opts.Check(e))
			default:
				byName[name] = append(byName[name], owned{cluster, e})
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		svc, notes := service(name, byName[name], opts)
		if len(notes) > 0 {
			partial[name] = strings.Join(notes, "; ")
		}
		if _, ok := dropped[name]; ok {
			// Some records of the name are left out (see above) and the
			// rest is served: say so as a partial name, not a missing one.
			partial[name] = strings.Join(append([]string{dropped[name]}, notes...), "; ")
			delete(dropped, name)
		}
		svcs = append(svcs, svc)
	}
	return svcs, dropped, partial
}

// owned is a record and the cluster that wrote it.
type owned struct {
	cluster string
	rec     *Endpoint
}

// service is the one weighted service of name from its records (in
// cluster order), and notes on the records it leaves out. What one
// cluster writes never removes another's targets from the name:
//   - addresses win over CNAMEs: when any cluster writes an address, the
//     CNAME records of the name are left out (a name is either);
//   - a target written twice is served once, as the first writer's (in
//     cluster order);
//   - the health check is the first cluster's (in cluster order) that
//     sets one; a cluster that sets another is noted;
//   - the TTL is the smallest of the records' (a shorter TTL only makes
//     resolvers ask again sooner, which failover wants).
func service(name string, recs []owned, opts BuildOptions) (model.Service, []string) {
	svc := model.Service{Name: name, Strategy: model.StrategyWeighted, HealthCheck: opts.HealthCheck}
	addr := slices.ContainsFunc(recs, func(o owned) bool { return o.rec.RecordType != TypeCNAME })
	var notes []string
	checkFrom, checkProp := "", ""
	seen := map[string]string{} // target → the cluster it is served for
	for _, o := range recs {
		e := o.rec
		if addr && e.RecordType == TypeCNAME {
			notes = append(notes, fmt.Sprintf("the CNAME of cluster %q is not served: other records of the name are addresses (a name is either)", o.cluster))
			continue
		}
		var weight *int
		if v := e.Prop(PropWeight); v != "" {
			if w, err := strconv.Atoi(v); err == nil {
				weight = &w
			}
		}
		if v := e.Prop(PropHealthCheck); v != "" && opts.ParseCheck != nil {
			switch c, err := opts.ParseCheck(v); {
			case err != nil:
			case checkFrom == "":
				svc.HealthCheck, checkFrom, checkProp = c, o.cluster, v
			case v != checkProp:
				notes = append(notes, fmt.Sprintf("cluster %q's health check %q is not used: cluster %q's %q is", o.cluster, v, checkFrom, checkProp))
			}
		}
		if ttl := int(e.RecordTTL); ttl > 0 && (svc.TTL == 0 || ttl < svc.TTL) {
			svc.TTL = ttl
		}
		for _, t := range e.Targets {
			key := strings.ToLower(t)
			if first, ok := seen[key]; ok {
				if first != o.cluster {
					notes = append(notes, fmt.Sprintf("%s of cluster %q is served once, as cluster %q's", t, o.cluster, first))
				}
				continue
			}
			seen[key] = o.cluster
			ep := model.Endpoint{Cluster: o.cluster, Weight: clone(weight)}
			if e.RecordType == TypeCNAME {
				ep.CNAME = t
			} else {
				ep.Address = t
			}
			svc.Endpoints = append(svc.Endpoints, ep)
		}
	}
	if !addr && checkFrom == "" && svc.HealthCheck != nil && svc.HealthCheck.Kind != model.CheckNone {
		// The default check probes addresses; CNAME endpoints cannot be
		// probed (the model refuses such a check on them).
		svc.HealthCheck = nil
	}
	return svc, notes
}

func clone(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
