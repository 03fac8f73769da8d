package model

import "strings"

// KubeMCS configures the Multi-Cluster Services API source
// (kubernetes.mcs): each ServiceExport of a member cluster makes the
// Service it exports a global service named <service>.<namespace>.<zone>.
type KubeMCS struct {
	// Zone is the served zone the exported services are named under
	// (required; one of zones[].apex).
	Zone string `yaml:"zone"`
}

// MCSZone is the canonical zone of the MCS source, "" when it is off
// (kubernetes.mcs absent).
func (k *Kubernetes) MCSZone() string {
	if k.MCS == nil {
		return ""
	}
	return CanonicalName(k.MCS.Zone)
}

// mcs checks kubernetes.mcs (at path p) against the served zones.
func (v *validator) mcs(p string, m *KubeMCS, zones map[string]bool) {
	if m == nil {
		return
	}
	if strings.TrimSpace(m.Zone) == "" {
		v.add(p+".zone", "is required: the served zone (one of zones[].apex) the exported services are named under, as <service>.<namespace>.<zone>")
		return
	}
	if !zones[CanonicalName(m.Zone)] {
		v.add(p+".zone", "%q is not a served zone (allowed: one of zones[].apex: %s)", m.Zone, strings.Join(sortedKeys(zones), ", "))
	}
}

// normalizeMCS copies kubernetes.mcs with its zone canonical.
func normalizeMCS(m *KubeMCS) *KubeMCS {
	if m == nil {
		return nil
	}
	return &KubeMCS{Zone: CanonicalName(m.Zone)}
}
