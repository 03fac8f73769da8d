package ringca

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
)

// Reasons a credential is refused; the ring counts them in
// meridian_ring_messages_rejected_total{type="credential",reason}.
const (
	ReasonMalformed = "malformed"  // not a certificate chain, or no usable key in it
	ReasonExpired   = "expired"    // outside its validity (expired, or not valid yet beyond the clock skew)
	ReasonRevoked   = "revoked"    // its serial or key fingerprint is in ring.revoked
	ReasonForeignCA = "foreign-ca" // not signed by a CA of ring.ca
	ReasonScope     = "scope"      // its URI SAN is missing, not ours (trust domain) or does not cover the node
)

// Error is a refused credential with its reason.
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Reason + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func refuse(reason, format string, args ...any) *Error {
	return &Error{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// Reason returns the reason of a refusal made by this package ("" for other errors).
func Reason(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// Verified is what a checked credential says.
type Verified struct {
	Scope       Scope
	Key         ed25519.PublicKey
	NotAfter    time.Time
	NotBefore   time.Time
	Serial      string   // the leaf's serial, "serial:" + lower-case hex
	Fingerprint string   // the leaf's key, "sha256:" + hex of its SubjectPublicKeyInfo
	Hash        [32]byte // SHA-256 of the leaf certificate (DER)
}

// Pool is the trust of one ring: its CAs (several during a CA rotation),
// its trust domain and the revoked serials and keys. Immutable.
type Pool struct {
	trustDomain string
	roots       *x509.CertPool
	cas         []*x509.Certificate
	revoked     map[string]bool
}

// ParseRevoked normalizes one ring.revoked entry (model.ParseRevoked).
func ParseRevoked(s string) (string, error) { return model.ParseRevoked(s) }

// NewPool returns the trust of the ring called trustDomain: the CA
// certificates in caPEM (PEM, one or more per entry) and the revoked
// entries (see ParseRevoked).
func NewPool(trustDomain string, caPEM [][]byte, revoked []string) (*Pool, error) {
	if err := validTrustDomain(trustDomain); err != nil {
		return nil, err
	}
	p := &Pool{trustDomain: trustDomain, roots: x509.NewCertPool(), revoked: map[string]bool{}}
	for i, b := range caPEM {
		certs, err := parseCerts(b)
		if err != nil {
			return nil, fmt.Errorf("CA %d: %w", i+1, err)
		}
		for _, c := range certs {
			if !c.IsCA {
				return nil, fmt.Errorf("CA %d: certificate %q is not a CA (basic constraints)", i+1, c.Subject.CommonName)
			}
			p.roots.AddCert(c)
			p.cas = append(p.cas, c)
		}
	}
	if len(p.cas) == 0 {
		return nil, errors.New("no CA certificate")
	}
	for _, r := range revoked {
		n, err := ParseRevoked(r)
		if err != nil {
			return nil, fmt.Errorf("revoked: %w", err)
		}
		p.revoked[n] = true
	}
	return p, nil
}

// TrustDomain is the ring's name in the credentials' URIs.
func (p *Pool) TrustDomain() string { return p.trustDomain }

// CAs are the trusted CA certificates.
func (p *Pool) CAs() []*x509.Certificate { return slices.Clone(p.cas) }

// Revoked reports whether a serial or fingerprint (normalized) is revoked.
func (p *Pool) Revoked(entry string) bool { return p.revoked[entry] }

// Verify checks a credential's chain (DER, the leaf first, then any
// intermediates) at now: signed by one of the pool's CAs, within its
// validity (a NotBefore up to skew ahead of now is accepted: the issuer's
// clock may run ahead), not revoked, and with exactly one URI SAN that is a
// valid scope of this ring. The key must be Ed25519.
func (p *Pool) Verify(chain [][]byte, now time.Time, skew time.Duration) (Verified, error) {
	certs, key, err := parseChain(chain)
	if err != nil {
		return Verified{}, err
	}
	leaf := certs[0]
	v := Verified{Key: key, NotAfter: leaf.NotAfter, NotBefore: leaf.NotBefore, Serial: "serial:" + leaf.SerialNumber.Text(16),
		Fingerprint: Fingerprint(leaf), Hash: sha256.Sum256(chain[0])}
	chains, err := p.verifyPaths(certs, now, skew)
	if err != nil {
		return v, err
	}
	if err := p.checkRevoked(chains); err != nil {
		return v, err
	}
	s, err := LeafScope(leaf)
	if err != nil {
		return v, err
	}
	if s.TrustDomain != p.trustDomain {
		return v, refuse(ReasonScope, "for ring %q, this ring is %q (ring.trust_domain)", s.TrustDomain, p.trustDomain)
	}
	v.Scope = s
	return v, nil
}

// parseChain parses a chain of one to four DER certificates, the leaf
// first, and returns them with the leaf's key, which must be Ed25519.
func parseChain(chain [][]byte) ([]*x509.Certificate, ed25519.PublicKey, error) {
	if len(chain) == 0 || len(chain) > 4 {
		return nil, nil, refuse(ReasonMalformed, "a chain of %d certificates (allowed: 1..4, the leaf first)", len(chain))
	}
	certs := make([]*x509.Certificate, len(chain))
	for i, der := range chain {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, nil, refuse(ReasonMalformed, "certificate %d: %v", i+1, err)
		}
		certs[i] = c
	}
	key, ok := certs[0].PublicKey.(ed25519.PublicKey)
	if !ok {
		return nil, nil, refuse(ReasonMalformed, "a %s key (allowed: Ed25519)", certs[0].PublicKeyAlgorithm)
	}
	return certs, key, nil
}

// verifyPaths checks that the leaf (certs[0], not a CA) chains to one of
// the pool's CAs through the given intermediates at now (a NotBefore up to
// skew ahead of now counts as reached), and returns every path found.
func (p *Pool) verifyPaths(certs []*x509.Certificate, now time.Time, skew time.Duration) ([][]*x509.Certificate, error) {
	leaf := certs[0]
	at := now
	if leaf.NotBefore.After(now) && leaf.NotBefore.Sub(now) <= skew {
		at = leaf.NotBefore
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	if leaf.IsCA {
		return nil, refuse(ReasonMalformed, "certificate %q is a CA, not a node's credential", leaf.Subject.CommonName)
	}
	chains, err := leaf.Verify(x509.VerifyOptions{Roots: p.roots, Intermediates: inter, CurrentTime: at, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	if err != nil {
		return nil, chainError(err, leaf, now)
	}
	return chains, nil
}

// chainError names why a leaf's chain failed to verify: expired, issued by
// a foreign CA, or outside the CA's name constraints.
func chainError(err error, leaf *x509.Certificate, now time.Time) error {
	var inv x509.CertificateInvalidError
	var ua x509.UnknownAuthorityError
	switch {
	case errors.As(err, &inv) && inv.Reason == x509.Expired:
		return refuse(ReasonExpired, "valid %s to %s, now is %s", leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	case errors.As(err, &ua):
		return refuse(ReasonForeignCA, "issued by %q, not by a CA of ring.ca", leaf.Issuer.String())
	case errors.As(err, &inv) && inv.Reason == x509.CANotAuthorizedForThisName:
		return refuse(ReasonScope, "the CA's name constraints do not allow it: %v", err)
	}
	return refuse(ReasonForeignCA, "%v", err)
}

// checkRevoked refuses a credential when any certificate of any path to a
// CA is revoked: a revoked intermediate (or one given in ring.ca) revokes
// what it signed.
func (p *Pool) checkRevoked(chains [][]*x509.Certificate) error {
	for _, chain := range chains {
		for _, c := range chain {
			if p.revoked["serial:"+c.SerialNumber.Text(16)] || p.revoked[Fingerprint(c)] {
				return refuse(ReasonRevoked, "certificate %q (serial %s, key %s) is in ring.revoked", c.Subject.CommonName, c.SerialNumber.Text(16), Fingerprint(c))
			}
		}
	}
	return nil
}

// LeafScope reads a certificate's scope from its one spiffe:// URI SAN
// and its capabilities from its meridian:// ones (an unknown capability is
// ignored: a later version's), without checking anything else (a cheap
// check before a chain's).
func LeafScope(c *x509.Certificate) (Scope, error) {
	var uris, caps []string
	for _, u := range c.URIs {
		switch u.Scheme {
		case "spiffe":
			uris = append(uris, u.String())
		case capScheme:
			caps = append(caps, u.String())
		}
	}
	if len(uris) != 1 {
		return Scope{}, refuse(ReasonScope, "%d spiffe:// URI SANs (allowed: exactly 1, spiffe://<ring>/<role>/<region or cluster>/<name>)", len(uris))
	}
	s, err := ParseURI(uris[0])
	if err != nil {
		return Scope{}, refuse(ReasonScope, "%v", err)
	}
	for _, raw := range caps {
		u, err := url.Parse(raw)
		name, ok := "", false
		if err == nil {
			name, ok = strings.CutPrefix(u.Path, capPath)
		}
		switch {
		case !ok || u.Host != s.TrustDomain || name == "" || strings.Contains(name, "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
			return Scope{}, refuse(ReasonScope, "capability URI %q: not %s://%s%s<capability>", raw, capScheme, s.TrustDomain, capPath)
		case name == CapabilityAdmin:
			s.Admin = true
		}
	}
	if err := s.Validate(); err != nil {
		return Scope{}, refuse(ReasonScope, "%v", err)
	}
	return s, nil
}

// Fingerprint is "sha256:" + the hex SHA-256 of c's SubjectPublicKeyInfo.
func Fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// KeyFingerprint is Fingerprint for a bare Ed25519 public key.
func KeyFingerprint(k ed25519.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// parseCerts reads every CERTIFICATE block of a PEM bundle; other blocks
// (a private key beside it) are skipped.
func parseCerts(b []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(out)+1, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	return out, nil
}

// ParseCertificates reads every certificate of a PEM bundle.
func ParseCertificates(b []byte) ([]*x509.Certificate, error) { return parseCerts(b) }

// Info is what a certificate says, for people (`meridian ring ca show`).
type Info struct {
	Subject     string // its spiffe:// URI (and " +capability" for each it carries), else its common name
	Serial      string // "serial:HEX", as ring.revoked takes it
	Fingerprint string // "sha256:HEX" of its key, as ring.revoked takes it
	NotBefore   time.Time
	NotAfter    time.Time
}

// Describe reads a certificate (DER) for people.
func Describe(der []byte) (Info, error) {
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return Info{}, err
	}
	in := Info{Subject: "CN=" + c.Subject.CommonName, Serial: "serial:" + c.SerialNumber.Text(16), Fingerprint: Fingerprint(c), NotBefore: c.NotBefore, NotAfter: c.NotAfter}
	for _, u := range c.URIs {
		if u.Scheme == "spiffe" {
			in.Subject = u.String()
		}
	}
	if s, err := LeafScope(c); err == nil {
		in.Subject = s.String()
	}
	if c.IsCA {
		in.Subject += " (CA)"
	}
	return in, nil
}
