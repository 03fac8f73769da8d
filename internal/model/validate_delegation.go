package model

import (
	"fmt"
	"strings"

	"github.com/miekg/dns"
)

// delegations checks zones[].delegation against the zones and the
// providers section:
//   - provider is one of route53, cloudflare, rfc2136;
//   - parent is a domain name strictly above the zone's apex and not one
//     of Meridian's own zones (Meridian does not serve delegations);
//   - the providers entry of the parent, when there is one, is of the
//     provider named (zone names are unique across the providers) and, for
//     in mode delegate: a direct-mode zone would write the delegated
//     names' answers into the parent;
//   - rfc2136 needs its providers.rfc2136[] entry (server, key); route53
//     and cloudflare imply one with the defaults when there is none.
func (v *validator) delegations(d *Desired, zones map[string]bool) {
	for i := range d.Zones {
		z := &d.Zones[i]
		if z.Delegation == nil {
			continue
		}
		p := fmt.Sprintf("zones[%d].delegation", i)
		kind := z.Delegation.Provider
		switch {
		case strings.TrimSpace(kind) == "":
			v.add(p+".provider", "is required (allowed: %s): the kind of the parent zone's provider", strings.Join(ProviderKinds, ", "))
			kind = ""
		case !oneOf(kind, ProviderKinds):
			v.add(p+".provider", "%q is not allowed (allowed: %s)", kind, strings.Join(ProviderKinds, ", "))
			kind = ""
		}
		parent, ok := v.checkName(p+".parent", z.Delegation.Parent)
		apex, apexOK := v.checkNameQuiet(z.Apex)
		if !ok || !apexOK {
			continue
		}
		if parent == apex || !dns.IsSubDomain(parent, apex) {
			v.add(p+".parent", "%q is not above the zone %q: the parent is the zone that delegates it (here %s)", parent, apex, parentOf(apex))
			continue
		}
		if zones[parent] {
			v.add(p+".parent", "%q is one of Meridian's own zones: Meridian does not serve delegations, so it cannot delegate %s from it", parent, apex)
			continue
		}
		entry, where, mode := providerEntry(d.Providers, parent)
		switch {
		case kind == "":
		case where != "" && entry != kind:
			v.add(p+".provider", "%q does not match: the parent zone %s is configured under %s: set provider: %s", kind, parent, where, entry)
		case where == "" && kind == ProviderRFC2136:
			v.add(p+".parent", "no providers.rfc2136[] entry for zone %s: add one with its server and tsig_key_file (the parent's primary and the key it takes updates with)", parent)
		case where != "" && mode != ModeDelegate:
			v.add(p+".parent", "%s (zone %s) has mode %s: a delegated zone needs mode delegate there (in direct mode the delegated names' answers would be written into the parent)", where, parent, orDefaultString(mode, ModeDirect))
		}
	}
}

// providerEntry finds the providers entry of the canonical zone name:
// its kind, its path (providers.route53[2]) and mode ("" when absent).
func providerEntry(pr Providers, zone string) (kind, path, mode string) {
	for i, z := range pr.Route53 {
		if CanonicalName(z.Zone) == zone {
			return ProviderRoute53, fmt.Sprintf("providers.route53[%d]", i), z.Mode
		}
	}
	for i, z := range pr.Cloudflare {
		if CanonicalName(z.Zone) == zone {
			return ProviderCloudflare, fmt.Sprintf("providers.cloudflare[%d]", i), z.Mode
		}
	}
	for i, z := range pr.RFC2136 {
		if CanonicalName(z.Zone) == zone {
			return ProviderRFC2136, fmt.Sprintf("providers.rfc2136[%d]", i), orDefaultString(z.Mode, ModeDelegate)
		}
	}
	return "", "", ""
}

// parentOf is name without its first label (the root for a TLD).
func parentOf(name string) string {
	if _, rest, ok := strings.Cut(name, "."); ok && rest != "" {
		return rest
	}
	return "."
}
