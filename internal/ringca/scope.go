// Package ringca reads and checks ring credentials: X.509 certificates for
// a node's Ed25519 key, signed by the ring's CA, whose SPIFFE-style URI SAN
// states what the node may speak for (ADR 0016):
//
//	spiffe://<trust domain>/prober/<region>/<name>
//	spiffe://<trust domain>/prober/<region>/<prefix>*/max-nodes/<n>
//	spiffe://<trust domain>/agent/<cluster>/<name>
//
// A prober credential may carry capabilities in a second URI SAN each,
// beside the spiffe:// one (nodes of earlier versions, which read only the
// spiffe:// URI, accept the credential as a plain prober's):
//
//	meridian://<trust domain>/capability/admin
//
// admin is the capability to change traffic over the ring: overrides
// written by the node are accepted by its peers only with it.
//
// A name ending in * covers the replicas of one site sharing the
// credential (at most n of them live at once count). The package is pure:
// it parses, verifies and issues, and reads files only in LoadCredential
// and LoadPool. The ring (internal/ring) keeps what it learned.
package ringca

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Roles a credential may grant (the same words as ring.peers[].role).
const (
	RoleProber = "prober"
	RoleAgent  = "agent"
)

// MaxNodesLimit bounds max_nodes, as ring.peers[].max_nodes.
const MaxNodesLimit = 256

// Scope is what a credential allows its holder to speak for.
type Scope struct {
	TrustDomain string // the ring's name, e.g. gslb.example.com
	Role        string // prober or agent
	Region      string // a prober's region: it cannot vote as another
	Cluster     string // an agent's one cluster: the only heartbeat it may send
	Name        string // a node name, or a prefix ending in * ("east-*")
	MaxNodes    int    // with a prefix: how many of its nodes may be live at once (1..256)
	Admin       bool   // the admin capability (probers only): its overrides are accepted over the ring
}

// Capabilities a credential may carry (CapabilityURI).
const (
	CapabilityAdmin = "admin"
	capScheme       = "meridian"
	capPath         = "/capability/"
)

// Capabilities lists what the scope carries beyond its role.
func (s Scope) Capabilities() []string {
	if s.Admin {
		return []string{CapabilityAdmin}
	}
	return nil
}

// CapabilityURIs are the URI SANs stating the scope's capabilities.
func (s Scope) CapabilityURIs() []string {
	var out []string
	for _, c := range s.Capabilities() {
		out = append(out, capScheme+"://"+s.TrustDomain+capPath+c)
	}
	return out
}

// SetCapability adds capability c (as `meridian ring ca issue
// --capability` takes it); an error names the allowed ones.
func (s *Scope) SetCapability(c string) error {
	if c != CapabilityAdmin {
		return fmt.Errorf("capability %q is not known (allowed: %s)", c, CapabilityAdmin)
	}
	s.Admin = true
	return nil
}

// IsPrefix reports whether the scope names a prefix ("east-*").
func (s Scope) IsPrefix() bool { return strings.HasSuffix(s.Name, "*") }

// Matches reports whether the node called name is covered by the scope.
func (s Scope) Matches(name string) bool {
	if prefix, ok := strings.CutSuffix(s.Name, "*"); ok {
		return strings.HasPrefix(name, prefix) && len(name) > len(prefix)
	}
	return s.Name == name
}

// MaxSite is the longest site name: ns-<site> must stay a DNS label.
const MaxSite = 60

// Site is the site a scope stands for: a prefix name without its "-*"
// ("east-*" gives east), an exact name as it is ("p1"), when that is a DNS
// label of at most MaxSite characters; else "" (no site: its nodes serve no
// names under <site>.ring.<zone> and announce no nameserver).
func (s Scope) Site() string { return SiteOf(s.Name) }

// SiteOf is Scope.Site for a name or prefix.
func SiteOf(name string) string {
	site := strings.TrimSuffix(name, "-*")
	if len(site) > MaxSite || !siteLabel.MatchString(site) {
		return ""
	}
	return site
}

var siteLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// URI is the scope as the certificate's URI SAN states it.
func (s Scope) URI() string {
	where := s.Region
	if s.Role == RoleAgent {
		where = s.Cluster
	}
	u := "spiffe://" + s.TrustDomain + "/" + s.Role + "/" + where + "/" + s.Name
	if s.IsPrefix() {
		u += "/max-nodes/" + strconv.Itoa(s.MaxNodes)
	}
	return u
}

// String is the URI, with the capabilities after it ("... +admin").
func (s Scope) String() string {
	out := s.URI()
	for _, c := range s.Capabilities() {
		out += " +" + c
	}
	return out
}

var (
	label   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	segment = regexp.MustCompile(`^[A-Za-z0-9._-]{1,63}$`)
	// A credential's name: lower case (it is a site's DNS label), a prefix
	// only as <label>-* so that no two scopes share a site by case or separator.
	nodeName = regexp.MustCompile(`^([a-z0-9][a-z0-9.-]{0,126}|[a-z0-9]([a-z0-9-]{0,58}[a-z0-9])?-\*)$`)
)

// validTrustDomain checks a trust domain: a DNS name in lower case.
func validTrustDomain(td string) error {
	if td == "" || len(td) > 253 {
		return fmt.Errorf("trust domain %q: 1..253 characters", td)
	}
	for l := range strings.SplitSeq(td, ".") {
		if !label.MatchString(l) {
			return fmt.Errorf("trust domain %q: not a lower-case DNS name (labels of a-z, 0-9 and -)", td)
		}
	}
	return nil
}

// Validate checks every field of the scope.
func (s Scope) Validate() error {
	if err := validTrustDomain(s.TrustDomain); err != nil {
		return err
	}
	switch s.Role {
	case RoleProber:
		if !segment.MatchString(s.Region) {
			return fmt.Errorf("region %q: a prober credential needs one (1..63 characters of A-Z a-z 0-9 . _ -)", s.Region)
		}
		if s.Cluster != "" {
			return fmt.Errorf("cluster %q: only an agent credential names a cluster", s.Cluster)
		}
	case RoleAgent:
		if !segment.MatchString(s.Cluster) {
			return fmt.Errorf("cluster %q: an agent credential needs one (1..63 characters of A-Z a-z 0-9 . _ -)", s.Cluster)
		}
		if s.Region != "" {
			return fmt.Errorf("region %q: only a prober credential names a region", s.Region)
		}
		if s.Admin {
			return fmt.Errorf("capability %s: only a prober credential carries it (an agent sends its cluster's heartbeat, nothing else)", CapabilityAdmin)
		}
	default:
		return fmt.Errorf("role %q is not allowed (allowed: prober, agent)", s.Role)
	}
	switch {
	case !nodeName.MatchString(s.Name):
		return fmt.Errorf("name %q: a node name (1..127 characters of a-z 0-9 . -), or a site's prefix <site>-* such as east-* (the site a DNS label of at most %d characters)", s.Name, MaxSite)
	case s.IsPrefix() && (s.MaxNodes < 1 || s.MaxNodes > MaxNodesLimit):
		return fmt.Errorf("max nodes %d: a name ending in * needs 1..%d (how many of its nodes may be live at once, e.g. replicas + maxSurge)", s.MaxNodes, MaxNodesLimit)
	case !s.IsPrefix() && s.MaxNodes != 0:
		return fmt.Errorf("max nodes %d: only goes with a name ending in * (a prefix)", s.MaxNodes)
	}
	return nil
}

// ParseURI reads a scope from a URI SAN; an error says what is wrong with it.
func ParseURI(raw string) (Scope, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Scope{}, fmt.Errorf("URI %q: %w", raw, err)
	}
	if u.Scheme != "spiffe" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Port() != "" || strings.Contains(raw, "%") {
		return Scope{}, fmt.Errorf("URI %q: not spiffe://<ring>/<role>/<region or cluster>/<name>[/max-nodes/<n>]", raw)
	}
	parts := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
	if slices.Contains(parts, ".") || slices.Contains(parts, "..") {
		return Scope{}, fmt.Errorf("URI %q: dot segments are not allowed", raw)
	}
	if len(parts) != 3 && len(parts) != 5 {
		return Scope{}, fmt.Errorf("URI %q: the path is /<role>/<region or cluster>/<name>[/max-nodes/<n>]", raw)
	}
	s := Scope{TrustDomain: u.Host, Role: parts[0], Name: parts[2]}
	if s.Role == RoleAgent {
		s.Cluster = parts[1]
	} else {
		s.Region = parts[1]
	}
	if len(parts) == 5 {
		if parts[3] != "max-nodes" {
			return Scope{}, fmt.Errorf("URI %q: the path is /<role>/<region or cluster>/<name>/max-nodes/<n>", raw)
		}
		n, err := strconv.Atoi(parts[4])
		if err != nil || strconv.Itoa(n) != parts[4] {
			return Scope{}, fmt.Errorf("URI %q: max-nodes %q is not a number", raw, parts[4])
		}
		s.MaxNodes = n
	}
	if err := s.Validate(); err != nil {
		return Scope{}, fmt.Errorf("URI %q: %w", raw, err)
	}
	return s, nil
}
