package api

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTokenReloadKeepsTheLastGoodSet(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(p, []byte("alice 0123456789abcdef0123\n"), 0o600))
	toks, err := LoadTokens(p)
	require.NoError(t, err)
	_, ok := toks.who("0123456789abcdef0123")
	require.True(t, ok)

	require.NoError(t, os.WriteFile(p, []byte("bob  bbbbbbbbbbbbbbbbbbbbbbbb\n"), 0o600))
	require.NoError(t, toks.Reload())
	_, ok = toks.who("0123456789abcdef0123")
	assert.False(t, ok, "alice's token is revoked without a restart")
	who, ok := toks.who("bbbbbbbbbbbbbbbbbbbbbbbb")
	assert.True(t, ok)
	assert.Equal(t, "bob", who)

	require.NoError(t, os.WriteFile(p, []byte("carol short\n"), 0o600))
	assert.ErrorContains(t, toks.Reload(), "shorter than 16 characters")
	_, ok = toks.who("bbbbbbbbbbbbbbbbbbbbbbbb")
	assert.True(t, ok, "a bad file keeps the last good tokens")

	require.NoError(t, os.WriteFile(p, []byte("dave dddddddddddddddddddddddd\n"), 0o600))
	require.NoError(t, os.Chmod(p, 0o644))
	assert.ErrorContains(t, toks.Reload(), "chmod 600", "a token file others may read is refused")
	_, ok = toks.who("dddddddddddddddddddddddd")
	assert.False(t, ok)

	require.NoError(t, os.Remove(p))
	assert.Error(t, toks.Reload())
	assert.Equal(t, 1, toks.Len(), "a missing file keeps the last good tokens")
}

func TestLoadTokensRefusesAFileOthersMayRead(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(p, []byte("alice 0123456789abcdef0123\n"), 0o600))
	require.NoError(t, os.Chmod(p, 0o644))
	_, err := LoadTokens(p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mode 0644")
	assert.Contains(t, err.Error(), "chmod 600 "+p)
}

func TestServerLimits(t *testing.T) {
	srv := NewServer(http.NotFoundHandler(), nil, nil)
	assert.Equal(t, ReadHeaderTimeout, srv.ReadHeaderTimeout)
	assert.NotZero(t, srv.ReadTimeout)
	assert.NotZero(t, srv.WriteTimeout)
	assert.NotZero(t, srv.IdleTimeout)
	assert.Equal(t, MaxHeaderBytes, srv.MaxHeaderBytes)

	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go srv.Serve(raw)
	defer srv.Close()
	req, _ := http.NewRequest("GET", "http://"+raw.Addr().String()+"/", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 2*MaxHeaderBytes))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
}

// selfSigned writes a certificate for 127.0.0.1 and its key; it returns
// the paths and a pool that trusts the certificate.
func selfSigned(t *testing.T, dir, cn string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	c, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(c)
	return certFile, keyFile, pool
}

func TestCertificateReloadServesNewConnections(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool1 := selfSigned(t, dir, "first")
	cert, err := LoadCertificate(certFile, keyFile)
	require.NoError(t, err)
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	conf := cert.TLSConfig()
	srv := NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }), conf, nil)
	go srv.Serve(Listen(srv, raw, Limits{}, "main", nil))
	defer srv.Close()
	url := "https://" + raw.Addr().String() + "/"
	client := func(pool *x509.CertPool) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}}
	}
	resp, err := client(pool1).Get(url)
	require.NoError(t, err)
	resp.Body.Close()

	_, _, pool2 := selfSigned(t, dir, "second") // overwrites both files
	require.NoError(t, cert.Reload())
	_, err = client(pool1).Get(url)
	assert.Error(t, err, "new connections get the new certificate")
	resp, err = client(pool2).Get(url)
	require.NoError(t, err)
	resp.Body.Close()

	require.NoError(t, os.WriteFile(keyFile, []byte("not a key"), 0o600))
	assert.Error(t, cert.Reload())
	resp, err = client(pool2).Get(url)
	require.NoError(t, err, "a bad key file keeps the last good certificate")
	resp.Body.Close()

	require.NoError(t, os.Chmod(keyFile, 0o644))
	assert.ErrorContains(t, cert.Reload(), "chmod 600")
}

func TestClientKey(t *testing.T) {
	tests := []struct{ name, addr, want string }{
		{"an IPv4 client is its /24", "192.0.2.7:4000", "192.0.2.0/24"},
		{"an IPv6 client is its /64", "[2001:db8:1:2:3:4:5:6]:4000", "2001:db8:1:2::/64"},
		{"an IPv4-mapped IPv6 client is its IPv4 /24", "[::ffff:192.0.2.7]:4000", "192.0.2.0/24"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := net.ResolveTCPAddr("tcp", tt.addr)
			require.NoError(t, err)
			assert.Equal(t, tt.want, clientKey(a).String())
		})
	}
}
