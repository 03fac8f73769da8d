package ringca

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var now = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

func mustCA(t *testing.T, td string) Authority {
	t.Helper()
	a, err := NewAuthority(td, 10*365*24*time.Hour, now.Add(-time.Hour))
	require.NoError(t, err)
	return a
}

func mustIssue(t *testing.T, a Authority, s Scope, validity time.Duration, at time.Time) (Credential, []byte) {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	der, err := a.Issue(s, pub, validity, at)
	require.NoError(t, err)
	k, err := EncodeKey(key)
	require.NoError(t, err)
	c, err := ParseCredential(EncodeCert(der), k)
	require.NoError(t, err)
	return c, der
}

func mustPool(t *testing.T, td string, revoked []string, cas ...Authority) *Pool {
	t.Helper()
	var pems [][]byte
	for _, a := range cas {
		pems = append(pems, EncodeCert(a.Cert.Raw))
	}
	p, err := NewPool(td, pems, revoked)
	require.NoError(t, err)
	return p
}

// rawLeaf signs a leaf by hand, for what Issue refuses to make.
func rawLeaf(t *testing.T, a Authority, uris []string, pub any, notBefore, notAfter time.Time) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(77), Subject: pkix.Name{CommonName: "odd"}, NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature}
	for _, u := range uris {
		pu, err := url.Parse(u)
		require.NoError(t, err)
		tmpl.URIs = append(tmpl.URIs, pu)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.Cert, pub, a.Key)
	require.NoError(t, err)
	return der
}

func TestScopeURIs(t *testing.T) {
	for _, tc := range []struct {
		name, uri string
		want      Scope
		err       string
	}{
		{"a prober site with max nodes reads back", "spiffe://gslb.example.com/prober/us-east/east-*/max-nodes/3",
			Scope{TrustDomain: "gslb.example.com", Role: RoleProber, Region: "us-east", Name: "east-*", MaxNodes: 3}, ""},
		{"a single prober needs no max nodes", "spiffe://gslb.example.com/prober/eu-west/west-1",
			Scope{TrustDomain: "gslb.example.com", Role: RoleProber, Region: "eu-west", Name: "west-1"}, ""},
		{"an agent speaks for a cluster", "spiffe://gslb.example.com/agent/east/agent-east",
			Scope{TrustDomain: "gslb.example.com", Role: RoleAgent, Cluster: "east", Name: "agent-east"}, ""},
		{"a prefix without max nodes is refused", "spiffe://gslb.example.com/prober/us-east/east-*", Scope{}, "needs 1..256"},
		{"max nodes on an exact name is refused", "spiffe://gslb.example.com/prober/us-east/east-1/max-nodes/2", Scope{}, "only goes with a name ending in *"},
		{"another scheme is refused", "https://gslb.example.com/prober/us-east/east-1", Scope{}, "not spiffe://"},
		{"an unknown role is refused", "spiffe://gslb.example.com/boss/us-east/east-1", Scope{}, `role "boss"`},
		{"a query is refused", "spiffe://gslb.example.com/prober/us-east/east-1?x=1", Scope{}, "not spiffe://"},
		{"an upper-case trust domain is refused", "spiffe://GSLB.example.com/prober/us-east/east-1", Scope{}, "lower-case"},
		{"a * inside a name is refused", "spiffe://gslb.example.com/prober/us-east/e*st-*/max-nodes/2", Scope{}, "name"},
		{"a bare * is refused", "spiffe://gslb.example.com/prober/us-east/*/max-nodes/2", Scope{}, "name"},
		{"too many nodes are refused", "spiffe://gslb.example.com/prober/us-east/east-*/max-nodes/999", Scope{}, "needs 1..256"},
		{"a mislabelled fifth segment is refused", "spiffe://gslb.example.com/prober/us-east/east-*/nodes/3", Scope{}, "max-nodes/<n>"},
		{"a percent-encoded star is refused", "spiffe://gslb.example.com/prober/us-east/east-%2A/max-nodes/3", Scope{}, "not spiffe://"},
		{"a percent-encoded region is refused", "spiffe://gslb.example.com/prober/us%2Deast/east-1", Scope{}, "not spiffe://"},
		{"dot segments are refused", "spiffe://gslb.example.com/prober/../east-1", Scope{}, "dot segments"},
		{"an upper-case name is refused (sites would collide by case)", "spiffe://gslb.example.com/prober/us-east/EAST-*/max-nodes/3", Scope{}, "name"},
		{"a prefix without its - is refused (sites would collide by separator)", "spiffe://gslb.example.com/prober/us-east/east*/max-nodes/3", Scope{}, "name"},
		{"a prefix after a dot is refused", "spiffe://gslb.example.com/prober/us-east/east.*/max-nodes/3", Scope{}, "name"},
		{"a site longer than 60 characters is refused", "spiffe://gslb.example.com/prober/us-east/" + strings.Repeat("a", 61) + "-*/max-nodes/3", Scope{}, "name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseURI(tc.uri)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, s)
			assert.Equal(t, tc.uri, s.URI())
		})
	}
}

func TestScopeSitesAndMatches(t *testing.T) {
	s := Scope{Name: "east-*", MaxNodes: 2}
	assert.Equal(t, "east", s.Site())
	assert.True(t, s.Matches("east-meridian-0"))
	assert.False(t, s.Matches("east-"), "the prefix alone names no node")
	assert.False(t, s.Matches("west-1"))
	assert.Equal(t, "p1", Scope{Name: "p1"}.Site())
	assert.Equal(t, "", Scope{Name: "node.example"}.Site(), "a name that is no DNS label has no site")
	assert.Equal(t, "", Scope{Name: strings.Repeat("a", 61)}.Site(), "ns-<site> must stay a label")
	assert.True(t, Scope{Name: "p1"}.Matches("p1"))
	assert.False(t, Scope{Name: "p1"}.Matches("p10"))
}

func TestParseRevoked(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"a serial in openssl's form is normalized", "serial:0A:1B", "serial:a1b"},
		{"a serial in upper case is normalized", "serial:FF00", "serial:ff00"},
		{"a key fingerprint is kept", "sha256:" + string(make64('a')), "sha256:" + string(make64('a'))},
		{"a short fingerprint is refused", "sha256:abcd", ""},
		{"an unknown kind is refused", "md5:abcd", ""},
		{"a serial that is not hex is refused", "serial:xyz", ""},
		{"an empty value is refused", "serial:", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRevoked(tc.in)
			if tc.want == "" {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func make64(c byte) []byte {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return b
}

func TestVerify(t *testing.T) {
	const td = "gslb.example.com"
	ca, other := mustCA(t, td), mustCA(t, td)
	east := Scope{TrustDomain: td, Role: RoleProber, Region: "us-east", Name: "east-*", MaxNodes: 3}
	good, goodDER := mustIssue(t, ca, east, 24*time.Hour, now)
	foreign, _ := mustIssue(t, other, east, 24*time.Hour, now)
	old, _ := mustIssue(t, ca, east, time.Hour, now.Add(-2*time.Hour))
	early, _ := mustIssue(t, ca, east, time.Hour, now.Add(Backdate+5*time.Second))
	tooEarly, _ := mustIssue(t, ca, east, time.Hour, now.Add(Backdate+time.Minute))
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	noURI := rawLeaf(t, ca, nil, pub, now.Add(-time.Hour), now.Add(time.Hour))
	twoURIs := rawLeaf(t, ca, []string{east.URI(), "spiffe://gslb.example.com/prober/eu-west/w"}, pub, now.Add(-time.Hour), now.Add(time.Hour))
	otherRing := rawLeaf(t, ca, []string{"spiffe://other.example.com/prober/us-east/east-1"}, pub, now.Add(-time.Hour), now.Add(time.Hour))
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecdsaLeaf := rawLeaf(t, ca, []string{east.URI()}, &ec.PublicKey, now.Add(-time.Hour), now.Add(time.Hour))
	leaf, err := x509.ParseCertificate(goodDER)
	require.NoError(t, err)

	for _, tc := range []struct {
		name    string
		chain   [][]byte
		pool    *Pool
		reason  string
		wantErr string
	}{
		{"a credential from the ring CA is accepted", good.Chain, mustPool(t, td, nil, ca), "", ""},
		{"a credential from the second of two CAs in overlap is accepted", good.Chain, mustPool(t, td, nil, other, ca), "", ""},
		{"a credential from a foreign CA is refused", foreign.Chain, mustPool(t, td, nil, ca), ReasonForeignCA, "not by a CA of ring.ca"},
		{"an expired credential is refused", old.Chain, mustPool(t, td, nil, ca), ReasonExpired, "valid"},
		{"a credential valid a few seconds from now is accepted within the skew", early.Chain, mustPool(t, td, nil, ca), "", ""},
		{"a credential valid a minute from now is refused", tooEarly.Chain, mustPool(t, td, nil, ca), ReasonExpired, "valid"},
		{"a revoked serial is refused", good.Chain, mustPool(t, td, []string{"serial:" + leaf.SerialNumber.Text(16)}, ca), ReasonRevoked, "ring.revoked"},
		{"a revoked key is refused", good.Chain, mustPool(t, td, []string{Fingerprint(leaf)}, ca), ReasonRevoked, "ring.revoked"},
		{"a credential without a URI is refused", [][]byte{noURI}, mustPool(t, td, nil, ca), ReasonScope, "0 spiffe://"},
		{"a credential with two URIs is refused", [][]byte{twoURIs}, mustPool(t, td, nil, ca), ReasonScope, "2 spiffe://"},
		{"a credential of another ring is refused by the CA's name constraints", [][]byte{otherRing}, mustPool(t, td, nil, ca), ReasonScope, "name constraints"},
		{"a credential for another ring's trust domain is refused", good.Chain, mustPool(t, "other.example.com", nil, ca), ReasonScope, "ring.trust_domain"},
		{"a credential for an ECDSA key is refused", [][]byte{ecdsaLeaf}, mustPool(t, td, nil, ca), ReasonMalformed, "Ed25519"},
		{"a CA certificate is no credential", [][]byte{ca.Cert.Raw}, mustPool(t, td, nil, ca), ReasonMalformed, "is a CA"},
		{"bytes that are no certificate are refused", [][]byte{[]byte("nope")}, mustPool(t, td, nil, ca), ReasonMalformed, "certificate 1"},
		{"an empty chain is refused", nil, mustPool(t, td, nil, ca), ReasonMalformed, "0 certificates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := tc.pool.Verify(tc.chain, now, 10*time.Second)
			if tc.reason == "" {
				require.NoError(t, err)
				assert.Equal(t, east, v.Scope)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tc.reason, Reason(err), err.Error())
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestIntermediateChains(t *testing.T) {
	const td = "gslb.example.com"
	root := mustCA(t, td)
	// An intermediate CA (as Vault or cert-manager with a CA issuer below a root would have).
	ipub, ikey, _ := ed25519.GenerateKey(rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(9), Subject: pkix.Name{CommonName: "intermediate"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	ider, err := x509.CreateCertificate(rand.Reader, tmpl, root.Cert, ipub, root.Key)
	require.NoError(t, err)
	icert, _ := x509.ParseCertificate(ider)
	inter := Authority{Cert: icert, Key: ikey}
	s := Scope{TrustDomain: td, Role: RoleAgent, Cluster: "east", Name: "agent-east"}
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	der, err := inter.Issue(s, pub, time.Hour, now)
	require.NoError(t, err)
	k, _ := EncodeKey(key)
	bundle := append(append(EncodeCert(der), EncodeCert(ider)...), EncodeCert(root.Cert.Raw)...)
	c, err := ParseCredential(bundle, k)
	require.NoError(t, err)
	assert.Len(t, c.Chain, 2, "the root is left out of what is sent, the intermediate stays")
	v, err := mustPool(t, td, nil, root).Verify(c.Chain, now, 0)
	require.NoError(t, err)
	assert.Equal(t, s, v.Scope)
	_, err = mustPool(t, td, []string{Fingerprint(icert)}, root).Verify(c.Chain, now, 0)
	assert.Equal(t, ReasonRevoked, Reason(err), "a revoked intermediate revokes what it signed")

	// The intermediate given in ring.ca instead of in the chain: revoking it
	// still revokes the leaf (the verified path is checked, not what was sent).
	both, err := NewPool(td, [][]byte{EncodeCert(root.Cert.Raw), EncodeCert(ider)}, []string{Fingerprint(icert)})
	require.NoError(t, err)
	_, err = both.Verify(c.Chain[:1], now, 0)
	assert.Equal(t, ReasonRevoked, Reason(err), "a revoked intermediate of ring.ca revokes what it signed")
}

func TestOwnCredentialCheck(t *testing.T) {
	const td = "gslb.example.com"
	ca := mustCA(t, td)
	pool := mustPool(t, td, nil, ca)
	east, _ := mustIssue(t, ca, Scope{TrustDomain: td, Role: RoleProber, Region: "us-east", Name: "east-*", MaxNodes: 2}, time.Hour, now)
	for _, tc := range []struct{ name, node, role, where, err string }{
		{"a node covered by its credential starts", "east-meridian-0", RoleProber, "us-east", ""},
		{"a node in another region is refused", "east-meridian-0", RoleProber, "eu-west", "is for us-east"},
		{"a node under another name is refused", "west-0", RoleProber, "us-east", "does not cover its name"},
		{"an agent with a prober credential is refused", "east-meridian-0", RoleAgent, "us-east", "role prober"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := east.Check(pool, tc.node, tc.role, tc.where, now)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
	_, err := east.Check(mustPool(t, td, nil, mustCA(t, td)), "east-meridian-0", RoleProber, "us-east", now)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "would be refused by its peers")
}

func TestCredentialKeyMustMatch(t *testing.T) {
	const td = "gslb.example.com"
	ca := mustCA(t, td)
	_, der := mustIssue(t, ca, Scope{TrustDomain: td, Role: RoleProber, Region: "r", Name: "n"}, time.Hour, now)
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	k, _ := EncodeKey(otherKey)
	_, err := ParseCredential(EncodeCert(der), k)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "another key")

	_, err = ca.Issue(Scope{TrustDomain: "other.example.com", Role: RoleProber, Region: "r", Name: "n"}, otherKey.Public().(ed25519.PublicKey), time.Hour, now)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "this CA is for ring")
	_, err = ca.Issue(Scope{TrustDomain: td, Role: RoleProber, Region: "r", Name: "n"}, otherKey.Public().(ed25519.PublicKey), 20*365*24*time.Hour, now)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "after the CA itself")
}

func TestTheAdminCapability(t *testing.T) {
	a := mustCA(t, "gslb.example.com")
	pool := mustPool(t, "gslb.example.com", nil, a)
	site := Scope{TrustDomain: "gslb.example.com", Role: RoleProber, Region: "us-east", Name: "east-*", MaxNodes: 2}
	withAdmin := site
	require.NoError(t, withAdmin.SetCapability("admin"))
	pub := func() ed25519.PublicKey { p, _, _ := ed25519.GenerateKey(rand.Reader); return p }
	tests := []struct {
		name   string
		uris   []string
		admin  bool
		reason string // "" = accepted
	}{
		{"a plain prober's credential carries no capability", []string{site.URI()}, false, ""},
		{"a second URI SAN gives the admin capability (within the CA's name constraints)", []string{site.URI(), "meridian://gslb.example.com/capability/admin"}, true, ""},
		{"a capability of another ring is refused", []string{site.URI(), "meridian://other.example.com/capability/admin"}, false, ReasonScope},
		{"a capability URI of another shape is refused", []string{site.URI(), "meridian://gslb.example.com/admin"}, false, ReasonScope},
		{"an unknown capability (a later version's) is ignored", []string{site.URI(), "meridian://gslb.example.com/capability/audit"}, false, ""},
		{"an agent with the admin capability is refused", []string{"spiffe://gslb.example.com/agent/c1/a1", "meridian://gslb.example.com/capability/admin"}, false, ReasonScope},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			der := rawLeaf(t, a, tt.uris, pub(), now.Add(-time.Minute), now.Add(time.Hour))
			v, err := pool.Verify([][]byte{der}, now, 0)
			if tt.reason != "" {
				assert.Equal(t, tt.reason, Reason(err), "%v", err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.admin, v.Scope.Admin)
		})
	}
	t.Run("issue writes the capability and describe shows it", func(t *testing.T) {
		_, der := mustIssue(t, a, withAdmin, time.Hour, now)
		v, err := pool.Verify([][]byte{der}, now, 0)
		require.NoError(t, err)
		assert.True(t, v.Scope.Admin)
		assert.Equal(t, site.URI(), v.Scope.URI(), "the spiffe:// URI is the plain prober's: earlier versions read it as before")
		in, err := Describe(der)
		require.NoError(t, err)
		assert.Equal(t, site.URI()+" +admin", in.Subject)
	})
	t.Run("an unknown capability is refused when issuing", func(t *testing.T) {
		s := site
		assert.ErrorContains(t, s.SetCapability("root"), `capability "root" is not known (allowed: admin)`)
	})
}
