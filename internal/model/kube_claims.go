package model

import (
	"fmt"
	"slices"
	"strings"
)

// Claim gives names to namespaces: only objects in these namespaces, in any
// member cluster (namespace team-a in east and team-a in west are the same
// tenant), serve the names it covers. The rules are in internal/kube/claims.
type Claim struct {
	Namespaces []string `yaml:"namespaces"` // namespaces that may serve the names (required)
	Names      []string `yaml:"names"`      // exact names; the only way to allow a zone apex or a nameserver name
	Suffixes   []string `yaml:"suffixes"`   // every name strictly below each suffix (not the suffix itself)
}

// kubernetes.unclaimed_names values.
const (
	UnclaimedOldest = "oldest" // the namespace whose object claimed the name first owns it
	UnclaimedRefuse = "refuse" // a name no claim covers is not served from Kubernetes
)

// UnclaimedModes lists the kubernetes.unclaimed_names values.
var UnclaimedModes = []string{UnclaimedOldest, UnclaimedRefuse}

// maxNamespaceLen is the longest Kubernetes namespace name (a DNS label).
const maxNamespaceLen = 63

// isNamespace reports whether s is a Kubernetes namespace name (RFC 1123
// label: lower-case letters, digits and hyphens, at most 63, starting and
// ending with a letter or digit).
func isNamespace(s string) bool {
	if s == "" || len(s) > maxNamespaceLen || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-':
		default:
			return false
		}
	}
	return true
}

func (v *validator) claims(p string, k Kubernetes, zones map[string]bool) {
	v.checkOneOf(p+".unclaimed_names", k.UnclaimedNames, UnclaimedModes)
	if k.StatusAnnotation != nil && *k.StatusAnnotation && !k.StatusWritebackEnabled() {
		v.add(p+".status_annotation", "needs status_writeback (it is false): set status_writeback: true or status_annotation: false")
	}
	for i, c := range k.Claims {
		cp := fmt.Sprintf("%s.claims[%d]", p, i)
		if len(c.Namespaces) == 0 {
			v.add(cp+".namespaces", "is required: the namespaces (in any member cluster) that may serve these names")
		}
		seen := map[string]bool{}
		for j, ns := range c.Namespaces {
			switch {
			case !isNamespace(ns):
				v.add(fmt.Sprintf("%s.namespaces[%d]", cp, j), "%q is not a namespace name (lower-case letters, digits and hyphens, at most %d; no wildcards)", ns, maxNamespaceLen)
			case seen[ns]:
				v.add(fmt.Sprintf("%s.namespaces[%d]", cp, j), "duplicate namespace %q", ns)
			}
			seen[ns] = true
		}
		if len(c.Names)+len(c.Suffixes) == 0 {
			v.add(cp, "needs names or suffixes (allowed: names: [app.gslb.example.com], suffixes: [team-a.gslb.example.com])")
		}
		for _, f := range []struct {
			field string
			list  []string
		}{{"names", c.Names}, {"suffixes", c.Suffixes}} {
			for j, n := range f.list {
				np := fmt.Sprintf("%s.%s[%d]", cp, f.field, j)
				name, ok := v.checkName(np, n)
				if ok && zoneOf(zones, name) == "" {
					v.add(np, "%q is outside every zone (zones: %s)", name, strings.Join(sortedKeys(zones), ", "))
				}
			}
		}
	}
}

func normalizeClaims(in []Claim) []Claim {
	if in == nil {
		return nil
	}
	out := make([]Claim, len(in))
	for i, c := range in {
		out[i] = Claim{Namespaces: slices.Clone(c.Namespaces), Names: canonicalNames(c.Names), Suffixes: canonicalNames(c.Suffixes)}
	}
	return out
}

func canonicalNames(in []string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, n := range in {
		out[i] = CanonicalName(n)
	}
	return out
}
