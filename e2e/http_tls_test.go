//go:build e2e

package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeCert writes a self-signed certificate for 127.0.0.1 (its own CA)
// as cert.pem/key.pem of dir, replacing them atomically, and a copy of the
// certificate as ca-NAME.pem.
func writeCert(t *testing.T, dir, name string) (ca string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "meridian-" + name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	ca = filepath.Join(dir, "ca-"+name+".pem")
	require.NoError(t, os.WriteFile(ca, certPEM, 0o644))
	// The key first, then the certificate: the pair matches again after the second rename.
	for _, f := range []struct {
		name string
		data []byte
	}{{"key.pem", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})}, {"cert.pem", certPEM}} {
		tmp := filepath.Join(dir, ".tmp-"+f.name)
		require.NoError(t, os.WriteFile(tmp, f.data, 0o600))
		require.NoError(t, os.Rename(tmp, filepath.Join(dir, f.name)))
	}
	return ca
}

const tlsConfig = `
server:
  http:
    listen: "127.0.0.1:%[1]d"
    tls: {cert_file: "%[2]s/cert.pem", key_file: "%[2]s/key.pem"}
  admin: {token_file: "%[2]s/tokens", state_file: "%[2]s/admin.json"}
  dns: {listen: ["127.0.0.1:%[3]d"]}
zones:
  - apex: tls.test
    nameservers: [{name: ns1.tls.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
services:
  - name: app.tls.test
    endpoints:
      - {address: 192.0.2.1, cluster: east}
      - {address: 192.0.2.2, cluster: west}
`

const (
	aliceToken = "alice-token-0123456789abcdef"
	bobToken   = "bob-token-0123456789abcdefgh"
)

// TestHTTPSAndReloads: HTTPS with a self-signed certificate, the CLI over
// https:// with --ca-file; a replaced certificate serves new connections
// and a rewritten token file revokes a token, both without a restart; a
// token file others may read stops the start unless allowed.
func TestHTTPSAndReloads(t *testing.T) {
	dir := t.TempDir()
	ca1 := writeCert(t, dir, "one")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokens"), []byte("alice "+aliceToken+"\n"), 0o600))
	for name, tok := range map[string]string{"alice": aliceToken, "bob": bobToken} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".token"), []byte(tok+"\n"), 0o600))
	}
	httpPort := freePort(t)
	conf := filepath.Join(dir, "meridian.yaml")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(tlsConfig, httpPort, dir, freePort(t))), 0o644))
	addr := fmt.Sprintf("https://127.0.0.1:%d", httpPort)

	start := func(extra ...string) (*exec.Cmd, *syncBuffer, chan error) {
		logs := &syncBuffer{}
		cmd := exec.Command(meridianBin, append([]string{"serve", "--config", conf}, extra...)...)
		cmd.Stdout, cmd.Stderr = logs, logs
		require.NoError(t, cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		return cmd, logs, done
	}
	cliOut := func(args ...string) (string, error) {
		out, err := exec.Command(meridianBin, append(args, "--http", addr)...).CombinedOutput()
		return string(out), err
	}

	t.Run("a token file others may read stops the start, naming the file and the fix", func(t *testing.T) {
		require.NoError(t, os.Chmod(filepath.Join(dir, "tokens"), 0o644))
		defer os.Chmod(filepath.Join(dir, "tokens"), 0o600)
		_, logs, done := start()
		select {
		case err := <-done:
			require.Error(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("meridian started with a world-readable token file")
		}
		assert.Contains(t, logs.String(), "mode 0644")
		assert.Contains(t, logs.String(), "chmod 600 "+filepath.Join(dir, "tokens"))
	})

	cmd, logs, done := start()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	require.Eventually(t, func() bool {
		_, err := cliOut("status", "--ca-file", ca1)
		return err == nil
	}, 15*time.Second, 100*time.Millisecond, "serving HTTPS:\n%s", logs)

	t.Run("the CLI needs the CA of a self-signed certificate", func(t *testing.T) {
		out, err := cliOut("status")
		require.Error(t, err)
		assert.Contains(t, out, "certificate")
		code, err := exec.Command("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", ca1, addr+"/healthz").CombinedOutput()
		require.NoError(t, err)
		assert.Equal(t, "200", string(code))
	})

	t.Run("a change over https with the token", func(t *testing.T) {
		out, err := cliOut("drain", "cluster", "west", "--reason", "tls", "--ca-file", ca1, "--token-file", filepath.Join(dir, "alice.token"))
		require.NoError(t, err, out)
		assert.Contains(t, out, "drained by alice")
		assert.NotContains(t, out, "plain HTTP", "no warning over https")
	})

	t.Run("a replaced certificate serves new connections without a restart", func(t *testing.T) {
		ca2 := writeCert(t, dir, "two")
		require.Eventually(t, func() bool {
			_, err := cliOut("status", "--ca-file", ca2)
			return err == nil
		}, 10*time.Second, 100*time.Millisecond)
		_, err := cliOut("status", "--ca-file", ca1)
		assert.Error(t, err, "the old certificate is no longer served")
		t.Setenv("MERIDIAN_CA_FILE", ca2)
		_, err = cliOut("overrides")
		assert.NoError(t, err, "$MERIDIAN_CA_FILE works like --ca-file")
	})

	t.Run("a rewritten token file revokes a token without a restart; a bad one keeps the last good", func(t *testing.T) {
		t.Setenv("MERIDIAN_CA_FILE", filepath.Join(dir, "ca-two.pem"))
		list, err := cliOut("overrides")
		require.NoError(t, err, list)
		require.Contains(t, list, "cluster west", "the drain of the earlier step is in force")
		writeAtomicMode(t, filepath.Join(dir, "tokens"), "bob "+bobToken+"\n")
		require.Eventually(t, func() bool { return strings.Contains(logs.String(), "admin token file reloaded") }, 10*time.Second, 50*time.Millisecond)
		out, err := cliOut("undrain", "cluster", "west", "--token-file", filepath.Join(dir, "alice.token"))
		require.Error(t, err)
		assert.Contains(t, out, "invalid bearer token", "alice's token is revoked")
		out, err = cliOut("undrain", "cluster", "west", "--token-file", filepath.Join(dir, "bob.token"))
		require.NoError(t, err, out)

		writeAtomicMode(t, filepath.Join(dir, "tokens"), "carol short\n")
		require.Eventually(t, func() bool { return strings.Contains(logs.String(), "admin token file reload failed") }, 10*time.Second, 100*time.Millisecond)
		out, err = cliOut("drain", "cluster", "west", "--reason", "x", "--token-file", filepath.Join(dir, "bob.token"))
		require.NoError(t, err, "bob's token stays in force: %s", out)
	})
}

// writeAtomicMode replaces path by a rename, with mode 600.
func writeAtomicMode(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// syncBuffer is a log sink safe to read while the process writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
