package model

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/big"
	"net/netip"
	"regexp"
	"strings"
)

// HostnamePlaceholder in ring.node_name is replaced by the host name, so
// the replicas of one Deployment get names that one ring.peers prefix
// entry matches (node_name: "east-{hostname}" with a peer "east-*").
const HostnamePlaceholder = "{hostname}"

// NodeNameFor is the ring node name: ring.node_name with {hostname} replaced
// by host, or host when node_name is empty.
func (r Ring) NodeNameFor(host string) string {
	if r.NodeName == "" {
		return host
	}
	return strings.ReplaceAll(r.NodeName, HostnamePlaceholder, host)
}

// PeerKeyPrefix starts every ring public key in the config.
const PeerKeyPrefix = "ed25519:"

// MaxNodeName is the longest ring node name (it travels in every message).
const MaxNodeName = 128

// ParsePeerKey decodes "ed25519:BASE64" into an Ed25519 public key.
func ParsePeerKey(s string) (ed25519.PublicKey, error) {
	b64, ok := strings.CutPrefix(strings.TrimSpace(s), PeerKeyPrefix)
	if !ok {
		return nil, fmt.Errorf("%q is not a ring public key (allowed: %sBASE64, as printed by `meridian ring identity`)", s, PeerKeyPrefix)
	}
	k, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("ring public key is not base64: %w", err)
	}
	if len(k) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("ring public key is %d bytes (allowed: %d, an Ed25519 public key)", len(k), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(k), nil
}

// FormatPeerKey writes k the way ParsePeerKey reads it.
func FormatPeerKey(k ed25519.PublicKey) string {
	return PeerKeyPrefix + base64.StdEncoding.EncodeToString(k)
}

// IsPrefix reports whether the entry lists a name prefix ("east-*").
func (p RingPeer) IsPrefix() bool { return strings.HasSuffix(p.Name, "*") }

// Matches reports whether the node called name is this peer: the same
// name, or a name that starts with the prefix of a "prefix*" entry.
func (p RingPeer) Matches(name string) bool {
	if prefix, ok := strings.CutSuffix(p.Name, "*"); ok {
		return strings.HasPrefix(name, prefix) && len(name) > len(prefix)
	}
	return p.Name == name
}

// LookupPeer returns the entry of peers that matches name: an exact name
// first, else the longest matching prefix.
func LookupPeer(peers []RingPeer, name string) (RingPeer, bool) {
	best, found := RingPeer{}, false
	for _, p := range peers {
		if !p.Matches(name) {
			continue
		}
		if p.Name == name {
			return p, true
		}
		if !found || len(p.Name) > len(best.Name) {
			best, found = p, true
		}
	}
	return best, found
}

func (v *validator) peers(p string, r Ring) {
	names := map[string]bool{}
	for i, pe := range r.Peers {
		pp := fmt.Sprintf("%s.peers[%d]", p, i)
		switch {
		case pe.Name == "" || pe.Name == "*":
			v.add(pp+".name", "is required (a ring node name, or a prefix ending in * such as east-*)")
		case len(pe.Name) > MaxNodeName:
			v.add(pp+".name", "is longer than %d characters", MaxNodeName)
		case strings.Contains(strings.TrimSuffix(pe.Name, "*"), "*"):
			v.add(pp+".name", "%q: * is allowed only at the end (a prefix)", pe.Name)
		case names[pe.Name]:
			v.add(pp+".name", "%q is listed twice", pe.Name)
		}
		names[pe.Name] = true
		switch {
		case pe.IsPrefix() && (pe.MaxNodes < 1 || pe.MaxNodes > 256):
			v.add(pp+".max_nodes", "%d is out of range: a name ending in * needs it (allowed 1..256: how many of its nodes may be live at once, e.g. replicas + maxSurge)", pe.MaxNodes)
		case !pe.IsPrefix() && pe.MaxNodes != 0:
			v.add(pp+".max_nodes", "only goes with a name ending in * (a prefix)")
		}
		v.checkOneOf(pp+".role", pe.Role, []string{PeerProber, PeerAgent})
		switch pe.Role {
		case PeerProber:
			if pe.Region == "" {
				v.add(pp+".region", "is required for a prober (the region it probes from; it cannot vote as another region)")
			}
			if pe.Cluster != "" {
				v.add(pp+".cluster", "only goes with role agent")
			}
		case PeerAgent:
			if pe.Cluster == "" {
				v.add(pp+".cluster", "is required for an agent (the one cluster whose heartbeat it may send)")
			}
			if pe.Admin {
				v.add(pp+".admin", "only goes with role prober (an agent sends the heartbeat of its cluster, nothing else)")
			}
		}
		if _, err := ParsePeerKey(pe.PublicKey); err != nil {
			v.add(pp+".public_key", "%v", err)
		}
	}
	if r.Enabled && len(r.Seeds) > 0 && len(r.Peers) == 0 && len(r.CA) == 0 {
		v.add(p+".peers", "or ring.ca is required with seeds: list every node whose messages this node accepts (`meridian ring identity` prints the entry of a node), or trust the ring CA that signed their credentials (`meridian ring ca init`); a node that has the gossip key but is neither cannot change decisions")
	}
	v.ringCA(p, r)
	v.ringSources(p, r)
	if r.MaxClockSkew != 0 && (r.MaxClockSkew.D() < 1e9 || r.MaxClockSkew.D() > 300e9) {
		v.add(p+".max_clock_skew", "%s is out of range (allowed 1s..5m)", r.MaxClockSkew)
	}
	if len(r.NodeName) > MaxNodeName {
		v.add(p+".node_name", "is longer than %d characters", MaxNodeName)
	}
	if rest := strings.ReplaceAll(r.NodeName, HostnamePlaceholder, ""); strings.ContainsAny(rest, "{}") {
		v.add(p+".node_name", "%q: the only placeholder allowed is %s", r.NodeName, HostnamePlaceholder)
	}
}

// ringSources checks where the ring takes its advertised and DNS addresses from.
func (v *validator) ringSources(p string, r Ring) {
	if r.AdvertiseFrom != nil {
		v.serviceRef(p+".advertise_from", *r.AdvertiseFrom)
	}
	if r.DNSAddressesFrom != nil {
		v.serviceRef(p+".dns_addresses_from", *r.DNSAddressesFrom)
		if len(r.DNSAddresses) > 0 {
			v.add(p+".dns_addresses_from", "cannot be combined with dns_addresses (allowed: one of them)")
		}
	}
	for i, a := range r.DNSAddresses {
		if ip, err := netip.ParseAddr(a); err != nil || ip.Zone() != "" || ip.IsUnspecified() || ip.IsMulticast() {
			v.add(fmt.Sprintf("%s.dns_addresses[%d]", p, i), "%q is not a unicast IPv4 or IPv6 address", a)
		}
	}
}

func (v *validator) serviceRef(p string, s ServiceRef) {
	name := strings.ReplaceAll(s.Service, HostnamePlaceholder, "x")
	if s.Service == "" || len(name) > 63 || !dnsLabel.MatchString(name) {
		v.add(p+".service", "%q is not a Service name (a DNS label; {hostname} is replaced by the pod name)", s.Service)
	}
	if s.Namespace != "" && (len(s.Namespace) > 63 || !dnsLabel.MatchString(s.Namespace)) {
		v.add(p+".namespace", "%q is not a namespace name", s.Namespace)
	}
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ringCA checks the ring's CA, credential and revocation fields. The files
// are read by the ring when it starts (and again when they change).
func (v *validator) ringCA(p string, r Ring) {
	if r.TrustDomain != "" && !validTrustDomain(r.TrustDomain) {
		v.add(p+".trust_domain", "%q is not a lower-case DNS name without a final dot (e.g. gslb.example.com): the ring's name in its credentials' spiffe:// URIs", r.TrustDomain)
	}
	for i, f := range r.CA {
		if strings.TrimSpace(f) == "" {
			v.add(fmt.Sprintf("%s.ca[%d]", p, i), "is empty (a PEM file of ring CA certificates)")
		}
	}
	c := r.Credential
	switch {
	case c.KeyFile != "" && c.CertFile == "":
		v.add(p+".credential.cert_file", "is required with key_file (the certificate of that key)")
	case c.CertFile != "" && len(r.CA) == 0:
		v.add(p+".ca", "is required with credential: the CA certificates this node checks its peers' credentials (and its own) with")
	}
	for i, e := range r.Revoked {
		if _, err := ParseRevoked(e); err != nil {
			v.add(fmt.Sprintf("%s.revoked[%d]", p, i), "%v", err)
		}
	}
}

// validTrustDomain reports whether td is a lower-case DNS name without a final dot.
func validTrustDomain(td string) bool {
	if td == "" || len(td) > 253 || td != strings.ToLower(td) {
		return false
	}
	for l := range strings.SplitSeq(td, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
				return false
			}
		}
	}
	return true
}

// DefaultTrustDomain is ring.trust_domain when unset: the first zone's
// apex without its final dot.
func (d *Desired) DefaultTrustDomain() string {
	if d.Ring.TrustDomain != "" {
		return d.Ring.TrustDomain
	}
	if len(d.Zones) == 0 {
		return ""
	}
	return strings.ToLower(strings.TrimSuffix(d.Zones[0].Apex, "."))
}

// ParseRevoked normalizes one ring.revoked entry: "serial:HEX" (a
// certificate's serial number, as `meridian ring ca issue` and openssl
// print it, colons allowed) or "sha256:HEX" (64 hex digits: the SHA-256 of
// a key's SubjectPublicKeyInfo, as `meridian ring ca issue` prints it).
func ParseRevoked(s string) (string, error) {
	kind, val, ok := strings.Cut(strings.TrimSpace(s), ":")
	val = strings.ToLower(strings.ReplaceAll(val, ":", ""))
	bad := fmt.Errorf("%q is not serial:HEX (a certificate serial) or sha256:HEX (64 hex digits, a key fingerprint)", s)
	if !ok || val == "" {
		return "", bad
	}
	if _, err := hex.DecodeString(strings.Repeat("0", len(val)%2) + val); err != nil {
		return "", bad
	}
	switch kind {
	case "serial":
		n, _ := new(big.Int).SetString(val, 16)
		return "serial:" + n.Text(16), nil
	case "sha256":
		if len(val) != 64 {
			return "", bad
		}
		return "sha256:" + val, nil
	}
	return "", bad
}
