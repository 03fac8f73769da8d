package placement

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
)

// ParseSelector parses a label selector in Kubernetes' form, equality based
// ("k=v,k2!=v2,k3" where k3 alone means the label exists, "!k4" that it does
// not) or set based ("k in (a,b)"). The empty string selects every cluster.
// The error names the selector.
func ParseSelector(s string) (labels.Selector, error) {
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("placement: invalid cluster selector %q: %w", s, err)
	}
	return sel, nil
}

// Matches reports whether a cluster with the given labels is selected by sel.
// A nil selector matches nothing.
func Matches(sel labels.Selector, clusterLabels map[string]string) bool {
	if sel == nil {
		return false
	}
	return sel.Matches(labels.Set(clusterLabels))
}
