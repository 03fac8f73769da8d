package ringca

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/meridian-gslb/meridian/internal/secretfile"
)

// Credential is this node's own certificate chain and key.
type Credential struct {
	Chain [][]byte // DER, the leaf first, then intermediates; what the node sends
	Leaf  *x509.Certificate
	Key   ed25519.PrivateKey
}

// ParseCredential reads a credential from PEM: the certificate chain from
// certPEM (the leaf first; a CA certificate that signs the chain's last
// one is left out, receivers have it) and the PKCS#8 Ed25519 key from
// keyPEM, which must belong to the leaf.
func ParseCredential(certPEM, keyPEM []byte) (Credential, error) {
	certs, err := parseCerts(certPEM)
	if err != nil {
		return Credential{}, err
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return Credential{}, err
	}
	leaf := certs[0]
	pub, ok := leaf.PublicKey.(ed25519.PublicKey)
	if !ok {
		return Credential{}, fmt.Errorf("certificate %q: a %s key (allowed: Ed25519)", leaf.Subject.CommonName, leaf.PublicKeyAlgorithm)
	}
	if !pub.Equal(key.Public()) {
		return Credential{}, fmt.Errorf("certificate %q is for another key than the private key beside it", leaf.Subject.CommonName)
	}
	c := Credential{Leaf: leaf, Key: key}
	for _, cert := range certs {
		if cert.IsCA && cert.CheckSignatureFrom(cert) == nil {
			continue // a self-signed root: every receiver has its own copy in ring.ca
		}
		c.Chain = append(c.Chain, cert.Raw)
	}
	if len(c.Chain) == 0 || len(c.Chain) > 4 {
		return Credential{}, fmt.Errorf("a chain of %d certificates besides the root (allowed: 1..4, the leaf first)", len(c.Chain))
	}
	return c, nil
}

// LoadCredential reads a credential from files: certFile holds the chain
// (cert-manager's tls.crt) and keyFile the key (tls.key), a secret file
// (internal/secretfile); with keyFile empty both are in certFile, which is
// then read as a secret file (`meridian ring ca issue --out`).
func LoadCredential(certFile, keyFile string) (Credential, error) {
	var certPEM, keyPEM []byte
	var err error
	if keyFile == "" {
		certPEM, err = secretfile.Read(certFile)
		keyPEM = certPEM
	} else {
		if certPEM, err = os.ReadFile(certFile); err == nil {
			keyPEM, err = secretfile.Read(keyFile)
		}
	}
	if err != nil {
		return Credential{}, fmt.Errorf("ring credential: %w", err)
	}
	c, err := ParseCredential(certPEM, keyPEM)
	if err != nil {
		return Credential{}, fmt.Errorf("ring credential %s: %w", certFile, err)
	}
	return c, nil
}

// Check verifies the node's own credential with pool, as every peer will,
// and that it covers this node: name, role and region or cluster. It
// returns what the credential says.
func (c Credential) Check(pool *Pool, name, role, regionOrCluster string, now time.Time) (Verified, error) {
	v, err := pool.Verify(c.Chain, now, 0)
	if err != nil {
		return v, fmt.Errorf("this node's own credential would be refused by its peers: %w", err)
	}
	s := v.Scope
	where := s.Region
	if s.Role == RoleAgent {
		where = s.Cluster
	}
	switch {
	case s.Role != role:
		return v, fmt.Errorf("this node's credential (%s) is for role %s, but the node runs as %s", s, s.Role, role)
	case where != regionOrCluster:
		return v, fmt.Errorf("this node's credential (%s) is for %s, but the node's is %s (ring.region, or the agent's cluster)", s, where, regionOrCluster)
	case !s.Matches(name):
		return v, fmt.Errorf("this node's credential (%s) does not cover its name %q (ring.node_name)", s, name)
	}
	return v, nil
}

// LoadPool reads the CA certificates of files (PEM bundles; several files or
// certificates during a CA rotation) and returns the ring's trust.
func LoadPool(trustDomain string, files, revoked []string) (*Pool, error) {
	var pems [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("ring.ca: %w", err)
		}
		pems = append(pems, b)
	}
	p, err := NewPool(trustDomain, pems, revoked)
	if err != nil {
		return nil, fmt.Errorf("ring.ca: %w", err)
	}
	return p, nil
}

// parseKey reads the first PKCS#8 PRIVATE KEY block of b: an Ed25519 key.
func parseKey(b []byte) (ed25519.PrivateKey, error) {
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return nil, errors.New(`no PEM "PRIVATE KEY" block (PKCS#8 Ed25519)`)
		}
		if blk.Type != "PRIVATE KEY" {
			continue
		}
		k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("private key: %w", err)
		}
		ek, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("private key: a %T key (allowed: Ed25519; with cert-manager set privateKey.algorithm: Ed25519, encoding: PKCS8)", k)
		}
		return ek, nil
	}
}
