package model

import (
	"crypto/ed25519"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testKey = FormatPeerKey(make(ed25519.PublicKey, ed25519.PublicKeySize))

func TestRingPeersValidation(t *testing.T) {
	tests := []struct {
		name  string
		ring  Ring
		field string // "" = valid
	}{
		{"a listed prober with its region is valid", Ring{Enabled: true, Region: "r1", Seeds: []string{"10.0.0.1:7946"},
			Peers: []RingPeer{{Name: "p1", Role: PeerProber, Region: "r1", PublicKey: testKey}}}, ""},
		{"seeds without peers are refused (nobody could be trusted)", Ring{Enabled: true, Region: "r1", Seeds: []string{"10.0.0.1:7946"}}, "ring.peers"},
		{"a ring of one needs no peers", Ring{Enabled: true, Region: "r1"}, ""},
		{"a prober without a region is refused", Ring{Enabled: true, Region: "r1", Peers: []RingPeer{{Name: "p1", Role: PeerProber, PublicKey: testKey}}}, "ring.peers[0].region"},
		{"an agent without a cluster is refused", Ring{Enabled: true, Region: "r1", Peers: []RingPeer{{Name: "a1", Role: PeerAgent, PublicKey: testKey}}}, "ring.peers[0].cluster"},
		{"a prober with a cluster is refused", Ring{Enabled: true, Region: "r1", Peers: []RingPeer{{Name: "p1", Role: PeerProber, Region: "r1", Cluster: "c1", PublicKey: testKey}}}, "ring.peers[0].cluster"},
		{"an agent with the admin capability is refused", Ring{Enabled: true, Region: "r1", Peers: []RingPeer{{Name: "a1", Role: PeerAgent, Cluster: "c1", PublicKey: testKey, Admin: true}}}, "ring.peers[0].admin"},
		{"a prober with the admin capability is valid", Ring{Enabled: true, Region: "r1", Peers: []RingPeer{{Name: "p1", Role: PeerProber, Region: "r1", PublicKey: testKey, Admin: true}}}, ""},
		{"an unknown role is refused", Ring{Enabled: true, Region: "r1", Peers: []RingPeer{{Name: "p1", Role: "boss", Region: "r1", PublicKey: testKey}}}, "ring.peers[0].role"},
		{"a key that is not ed25519:BASE64 is refused", Ring{Enabled: true, Region: "r1", Peers: []RingPeer{{Name: "p1", Role: PeerProber, Region: "r1", PublicKey: "ssh-ed25519 AAAA"}}}, "ring.peers[0].public_key"},
		{"a key of the wrong length is refused", Ring{Enabled: true, Region: "r1", Peers: []RingPeer{{Name: "p1", Role: PeerProber, Region: "r1", PublicKey: "ed25519:AAAA"}}}, "ring.peers[0].public_key"},
		{"a name listed twice is refused", Ring{Enabled: true, Region: "r1", Peers: []RingPeer{{Name: "p1", Role: PeerProber, Region: "r1", PublicKey: testKey}, {Name: "p1", Role: PeerProber, Region: "r1", PublicKey: testKey}}}, "ring.peers[1].name"},
		{"a prefix entry needs max_nodes", Ring{Enabled: true, Region: "r1", Peers: []RingPeer{{Name: "east-*", Role: PeerProber, Region: "r1", PublicKey: testKey}}}, "ring.peers[0].max_nodes"},
		{"a prefix entry with max_nodes is valid", Ring{Enabled: true, Region: "r1", Peers: []RingPeer{{Name: "east-*", Role: PeerProber, Region: "r1", MaxNodes: 3, PublicKey: testKey}}}, ""},
		{"max_nodes on an exact name is refused", Ring{Enabled: true, Region: "r1", Peers: []RingPeer{{Name: "p1", Role: PeerProber, Region: "r1", MaxNodes: 3, PublicKey: testKey}}}, "ring.peers[0].max_nodes"},
		{"a * inside a name is refused", Ring{Enabled: true, Region: "r1", Peers: []RingPeer{{Name: "e*st-*", Role: PeerProber, Region: "r1", MaxNodes: 1, PublicKey: testKey}}}, "ring.peers[0].name"},
		{"a clock skew of an hour is refused", Ring{Enabled: true, Region: "r1", MaxClockSkew: Duration(3600e9)}, "ring.max_clock_skew"},
		{"a node name with another placeholder is refused", Ring{Enabled: true, Region: "r1", NodeName: "east-{pod}"}, "ring.node_name"},
		{"seeds with a ring CA and no peers are valid", Ring{Enabled: true, Region: "r1", Seeds: []string{"ring.gslb.example.com:7946"}, CA: []string{"/etc/ca.crt"},
			Credential: RingCredential{CertFile: "/etc/tls.crt", KeyFile: "/etc/tls.key"}}, ""},
		{"a credential without a CA is refused", Ring{Enabled: true, Region: "r1", Credential: RingCredential{CertFile: "/etc/tls.crt"}}, "ring.ca"},
		{"a credential key without its certificate is refused", Ring{Enabled: true, Region: "r1", CA: []string{"/ca"}, Credential: RingCredential{KeyFile: "/etc/tls.key"}}, "ring.credential.cert_file"},
		{"an empty CA file name is refused", Ring{Enabled: true, Region: "r1", CA: []string{" "}}, "ring.ca[0]"},
		{"a revoked serial in openssl's form is valid", Ring{Enabled: true, Region: "r1", CA: []string{"/ca"}, Revoked: []string{"serial:0A:FF"}}, ""},
		{"a revoked entry that is neither a serial nor a fingerprint is refused", Ring{Enabled: true, Region: "r1", CA: []string{"/ca"}, Revoked: []string{"east-1"}}, "ring.revoked[0]"},
		{"a trust domain in upper case is refused", Ring{Enabled: true, Region: "r1", TrustDomain: "GSLB.example.com"}, "ring.trust_domain"},
		{"a trust domain with a final dot is refused", Ring{Enabled: true, Region: "r1", TrustDomain: "gslb.example.com."}, "ring.trust_domain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := minimal()
			d.Ring = tt.ring
			err := Validate(d)
			if tt.field == "" {
				require.NoError(t, err)
				return
			}
			var ve *ValidationError
			require.True(t, errors.As(err, &ve), "%v", err)
			var paths []string
			for _, f := range ve.Fields {
				paths = append(paths, f.Path)
			}
			assert.Contains(t, paths, tt.field)
		})
	}
}

func TestLookupPeer(t *testing.T) {
	peers := []RingPeer{{Name: "east-*"}, {Name: "east-1"}, {Name: "east-eu-*"}}
	tests := []struct{ name, node, want string }{
		{"an exact name wins over a prefix", "east-1", "east-1"},
		{"the longest prefix wins", "east-eu-7", "east-eu-*"},
		{"a shorter prefix covers the rest", "east-x", "east-*"},
		{"the prefix alone is not a name it covers", "east-", ""},
		{"an unlisted name is not found", "west-1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ok := LookupPeer(peers, tt.node)
			assert.Equal(t, tt.want != "", ok)
			assert.Equal(t, tt.want, p.Name)
		})
	}
}

func TestNodeNameFor(t *testing.T) {
	assert.Equal(t, "host1", Ring{}.NodeNameFor("host1"), "empty: the host name")
	assert.Equal(t, "east-host1", Ring{NodeName: "east-{hostname}"}.NodeNameFor("host1"))
	assert.Equal(t, "fixed", Ring{NodeName: "fixed"}.NodeNameFor("host1"))
}

func TestDefaultTrustDomainIsTheFirstApex(t *testing.T) {
	d := minimal()
	d.Zones[0].Apex = "GSLB.Example.com."
	assert.Equal(t, "gslb.example.com", d.DefaultTrustDomain())
	d.Ring.TrustDomain = "ring.example.net"
	assert.Equal(t, "ring.example.net", d.DefaultTrustDomain())
}
