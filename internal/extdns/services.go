package extdns

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

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

// Build turns every cluster's records into services (sorted by name) and
// the reasons of the names it leaves out (name → reason); see the package
// doc for the rules. It is pure: records are not modified.
func Build(records map[string][]*Endpoint, opts BuildOptions) (svcs []model.Service, dropped map[string]string) {
	dropped = map[string]string{}
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
		svc, why := service(name, byName[name], opts)
		if why != "" {
			dropped[name] = why
			continue
		}
		svcs = append(svcs, svc)
	}
	return svcs, dropped
}

// owned is a record and the cluster that wrote it.
type owned struct {
	cluster string
	rec     *Endpoint
}

// service is the one weighted service of name from its records (in
// cluster order), or why there is none.
func service(name string, recs []owned, opts BuildOptions) (model.Service, string) {
	svc := model.Service{Name: name, Strategy: model.StrategyWeighted, HealthCheck: opts.HealthCheck}
	var cname, addr bool
	checkSet := false
	for _, o := range recs {
		e := o.rec
		var weight *int
		if v := e.Prop(PropWeight); v != "" {
			if w, err := strconv.Atoi(v); err == nil {
				weight = &w
			}
		}
		if v := e.Prop(PropHealthCheck); v != "" && !checkSet && opts.ParseCheck != nil {
			if c, err := opts.ParseCheck(v); err == nil {
				svc.HealthCheck, checkSet = c, true
			}
		}
		if ttl := int(e.RecordTTL); ttl > 0 && (svc.TTL == 0 || ttl < svc.TTL) {
			svc.TTL = ttl
		}
		for _, t := range e.Targets {
			ep := model.Endpoint{Cluster: o.cluster, Weight: clone(weight)}
			if e.RecordType == TypeCNAME {
				ep.CNAME, cname = t, true
			} else {
				ep.Address, addr = t, true
			}
			svc.Endpoints = append(svc.Endpoints, ep)
		}
	}
	if cname && addr {
		return svc, "mixes CNAME and address records across clusters (a name is either)"
	}
	if cname && !checkSet && svc.HealthCheck != nil && svc.HealthCheck.Kind != model.CheckNone {
		// The default check probes addresses; CNAME endpoints cannot be
		// probed (the model refuses such a check on them).
		svc.HealthCheck = nil
	}
	return svc, ""
}

func clone(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
