package kube

import (
	"fmt"
	"strings"

	"github.com/meridian-gslb/meridian/internal/model"
)

// The hostname limits, as counted in Result.OverLimit.
const (
	LimitObject    = "object"    // kubernetes.max_hostnames_per_object
	LimitNamespace = "namespace" // kubernetes.max_hostnames_per_namespace
)

// Limits lists the hostname limits, for metrics.
var Limits = []string{LimitObject, LimitNamespace}

// LimitPrefix starts every problem of a hostname limit.
const LimitPrefix = "hostname limit: "

// limitShown is how many refused names a limit's problem lists.
const limitShown = 3

// limit applies the hostname limits to the valid objects of sorted (oldest
// first) and returns the names each may serve. An object serves at most
// max_hostnames_per_object of its names, the first in sorted order; the
// objects of one namespace (the same tenant in every cluster) serve at
// most max_hostnames_per_namespace distinct names together, those of its
// oldest objects first. A name over a limit is refused on that object (a
// problem, so an Event and meridian.io/status say so) and claims nothing;
// the object's other names, and every other object, are served as
// without it. Pure and deterministic, like Build.
func (r *Result) limit(sorted []*Object, k model.Kubernetes) func(*Object) []string {
	perObject, perNamespace := k.MaxHostnamesPerObject, k.MaxHostnamesPerNamespace
	if perObject <= 0 {
		perObject = model.DefaultMaxHostnamesPerObject
	}
	if perNamespace <= 0 {
		perNamespace = model.DefaultMaxHostnamesPerNamespace
	}
	limited := map[*Object][]string{}
	perNS := map[string]map[string]bool{} // namespace -> names it serves
	for _, o := range sorted {
		if !o.Valid {
			continue
		}
		hs := o.Settings.Hostnames // sorted, unique
		cut := false
		if len(hs) > perObject {
			r.problem(o.Ref, fmt.Sprintf("%s%s lists %d names; an object serves at most %d (kubernetes.max_hostnames_per_object): the first %d in sorted order are served, the other %d are not (%s)",
				LimitPrefix, AnnoHostname, len(hs), perObject, perObject, len(hs)-perObject, shown(hs[perObject:])))
			r.OverLimit[LimitObject] += len(hs) - perObject
			hs, cut = hs[:perObject], true
		}
		mine := perNS[o.Ref.Namespace]
		if mine == nil {
			mine = map[string]bool{}
			perNS[o.Ref.Namespace] = mine
		}
		var kept, over []string
		for _, h := range hs {
			switch {
			case mine[h]:
				kept = append(kept, h)
			case len(mine) < perNamespace:
				mine[h] = true
				kept = append(kept, h)
			default:
				over = append(over, h)
			}
		}
		if len(over) > 0 {
			r.problem(o.Ref, fmt.Sprintf("%snamespace %s serves at most %d names in all (kubernetes.max_hostnames_per_namespace), those of its oldest objects first: %d of this object's names are not served (%s)",
				LimitPrefix, o.Ref.Namespace, perNamespace, len(over), shown(over)))
			r.OverLimit[LimitNamespace] += len(over)
			hs, cut = kept, true
		}
		if cut {
			limited[o] = hs
			r.Limited[o.Ref] = hs
		}
	}
	return func(o *Object) []string {
		if hs, ok := limited[o]; ok {
			return hs
		}
		return o.Settings.Hostnames
	}
}

// shown lists the first few of names.
func shown(names []string) string {
	if len(names) <= limitShown {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:limitShown], ", ") + fmt.Sprintf(" and %d more", len(names)-limitShown)
}

// hostnamesOf is the names o may serve after the limits of r (and, for
// an object with NameTargets, under a served zone).
func (r *Result) hostnamesOf(o Object) []string {
	if hs, ok := r.Limited[o.Ref]; ok {
		return hs
	}
	if hs, ok := r.Scoped[o.Ref]; ok {
		return hs
	}
	return o.Settings.Hostnames
}
