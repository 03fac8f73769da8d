package api

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/meridian-gslb/meridian/internal/secretfile"
)

// Certificate is the HTTPS certificate of server.http.tls, reloadable:
// new connections get the certificate loaded last; a bad pair of files
// keeps the last good one.
type Certificate struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// LoadCertificate reads a PEM certificate (chain) and its PEM private key.
// The key file must be readable by its owner only (see package secretfile).
func LoadCertificate(certFile, keyFile string) (*Certificate, error) {
	c := &Certificate{certFile: certFile, keyFile: keyFile}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload reads both files again; on any error the certificate in force
// stays and the error says why.
func (c *Certificate) Reload() error {
	certPEM, err := os.ReadFile(c.certFile)
	if err != nil {
		return fmt.Errorf("server.http.tls.cert_file: %w", err)
	}
	keyPEM, err := secretfile.Read(c.keyFile)
	if err != nil {
		return fmt.Errorf("server.http.tls.key_file: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("server.http.tls: %s and %s: %w", c.certFile, c.keyFile, err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return fmt.Errorf("server.http.tls.cert_file %s: %w", c.certFile, err)
	}
	pair.Leaf = leaf
	c.cur.Store(&pair)
	return nil
}

// Files are the certificate and key files.
func (c *Certificate) Files() (cert, key string) { return c.certFile, c.keyFile }

// NotAfter is the expiry of the certificate in force.
func (c *Certificate) NotAfter() time.Time { return c.cur.Load().Leaf.NotAfter }

// TLSConfig serves the certificate in force to every new connection
// (TLS 1.2 or later).
func (c *Certificate) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if p := c.cur.Load(); p != nil {
				return p, nil
			}
			return nil, errors.New("no certificate loaded")
		},
	}
}
