package ringca

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/url"
	"time"
)

// Backdate is how far before "now" a certificate issued here starts to be
// valid, so that peers whose clocks run a little behind accept it at once.
const Backdate = time.Minute

// Authority is a ring CA that can issue credentials (`meridian ring ca`).
// Users with cert-manager, Vault or another PKI need none.
type Authority struct {
	Cert *x509.Certificate
	Key  ed25519.PrivateKey
}

// NewAuthority makes a self-signed Ed25519 CA for the ring called
// trustDomain, valid for validity from now. Its name constraints allow only
// URIs of that trust domain, so whatever it signs cannot speak for another
// ring that trusts the same CA by mistake.
func NewAuthority(trustDomain string, validity time.Duration, now time.Time) (Authority, error) {
	if err := validTrustDomain(trustDomain); err != nil {
		return Authority{}, err
	}
	if validity <= 0 {
		return Authority{}, fmt.Errorf("validity %s: must be positive", validity)
	}
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return Authority{}, err
	}
	serial, err := newSerial()
	if err != nil {
		return Authority{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "Meridian ring CA " + trustDomain, Organization: []string{"meridian"}},
		NotBefore:             now.Add(-Backdate),
		NotAfter:              now.Add(validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		URIs:                  []*url.URL{{Scheme: "spiffe", Host: trustDomain}},
		PermittedURIDomains:   []string{trustDomain},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return Authority{}, fmt.Errorf("ring CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return Authority{}, err
	}
	return Authority{Cert: cert, Key: key}, nil
}

// ParseAuthority reads a CA certificate and its PKCS#8 Ed25519 key (PEM).
func ParseAuthority(certPEM, keyPEM []byte) (Authority, error) {
	certs, err := parseCerts(certPEM)
	if err != nil {
		return Authority{}, fmt.Errorf("CA certificate: %w", err)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return Authority{}, fmt.Errorf("CA key: %w", err)
	}
	c := certs[0]
	if !c.IsCA {
		return Authority{}, fmt.Errorf("certificate %q is not a CA", c.Subject.CommonName)
	}
	if pub, ok := c.PublicKey.(ed25519.PublicKey); !ok || !pub.Equal(key.Public()) {
		return Authority{}, fmt.Errorf("CA certificate %q is not for the key beside it", c.Subject.CommonName)
	}
	return Authority{Cert: c, Key: key}, nil
}

// TrustDomain is the ring the CA was made for (its URI SAN), or "".
func (a Authority) TrustDomain() string {
	for _, u := range a.Cert.URIs {
		if u.Scheme == "spiffe" {
			return u.Host
		}
	}
	return ""
}

// Issue signs a credential for pub with scope s, valid for validity from now.
func (a Authority) Issue(s Scope, pub ed25519.PublicKey, validity time.Duration, now time.Time) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if validity <= 0 {
		return nil, fmt.Errorf("validity %s: must be positive", validity)
	}
	if td := a.TrustDomain(); td != "" && td != s.TrustDomain {
		return nil, fmt.Errorf("this CA is for ring %q, not %q", td, s.TrustDomain)
	}
	if end := now.Add(validity); end.After(a.Cert.NotAfter) {
		return nil, fmt.Errorf("validity %s ends %s, after the CA itself (%s): issue a shorter one or rotate the CA", validity, end.UTC().Format(time.RFC3339), a.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	u, err := url.Parse(s.URI())
	if err != nil {
		return nil, err
	}
	uris := []*url.URL{u}
	for _, raw := range s.CapabilityURIs() {
		cu, err := url.Parse(raw)
		if err != nil {
			return nil, err
		}
		uris = append(uris, cu)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: s.Name, Organization: []string{"meridian"}, OrganizationalUnit: []string{s.Role}},
		NotBefore:    now.Add(-Backdate),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		URIs:         uris,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.Cert, pub, a.Key)
	if err != nil {
		return nil, fmt.Errorf("issue %s: %w", s, err)
	}
	return der, nil
}

func newSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// EncodeCert is der as a PEM CERTIFICATE block.
func EncodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// EncodeKey is k as a PEM PKCS#8 PRIVATE KEY block.
func EncodeKey(k ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}
