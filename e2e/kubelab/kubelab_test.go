package kubelab

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
)

// The kubeconfigs and certs, without starting anything (no binaries needed).
func TestKubeconfigUsers(t *testing.T) {
	rogue, err := newAuthority("rogue")
	require.NoError(t, err)
	lab := &Lab{dir: t.TempDir(), rogueCA: rogue, EtcdURL: "http://127.0.0.1:1"}
	m, err := newMember(lab, "/nonexistent", "east", 23456)
	require.NoError(t, err)
	require.Equal(t, "https://127.0.0.1:23456", m.URL)
	require.Contains(t, m.proc.args, "--etcd-prefix=/registry-east")
	for _, f := range []string{"serving.crt", "serving.key", "client-ca.crt", "sa.key"} {
		require.FileExists(t, filepath.Join(m.dir, f))
	}

	// The serving cert verifies for 127.0.0.1 against CAPEM.
	serving, err := os.ReadFile(filepath.Join(m.dir, "serving.crt"))
	require.NoError(t, err)
	_, err = parseCert(t, serving).Verify(x509.VerifyOptions{Roots: pool(t, m.CAPEM)})
	require.NoError(t, err)
	require.NoError(t, parseCert(t, serving).VerifyHostname("127.0.0.1"))

	load := func(user KubeUser) (caPEM, certPEM []byte, token string) {
		path := m.Kubeconfig(t, user)
		kc, err := clientcmd.LoadFromFile(path)
		require.NoError(t, err)
		require.Equal(t, "east", kc.CurrentContext)
		require.Equal(t, m.URL, kc.Clusters["east"].Server)
		a := kc.AuthInfos["east"]
		return kc.Clusters["east"].CertificateAuthorityData, a.ClientCertificateData, a.Token
	}

	ca, certPEM, _ := load(AdminUser)
	require.Equal(t, m.CAPEM, ca)
	admin := parseCert(t, certPEM)
	require.Equal(t, []string{"system:masters"}, admin.Subject.Organization)
	_, err = admin.Verify(x509.VerifyOptions{Roots: pool(t, m.ClientCAPEM), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)

	_, certPEM, _ = load(ExpiredAdminUser)
	expired := parseCert(t, certPEM)
	require.True(t, expired.NotAfter.Before(time.Now()))
	require.True(t, expired.NotBefore.Before(expired.NotAfter))

	ca, _, _ = load(WrongCAAdminUser)
	require.Equal(t, rogue.certPEM, ca)

	ca, certPEM, token := load(TokenUser("abc"))
	require.Equal(t, m.CAPEM, ca)
	require.Empty(t, certPEM)
	require.Equal(t, "abc", token)

	cfg, err := m.RESTConfig(AdminUser)
	require.NoError(t, err)
	require.Equal(t, m.URL, cfg.Host)
	require.Equal(t, m.URL, m.AdminConfig().Host)

	_, err = m.RESTConfig(KubeUser{})
	require.Error(t, err)
}

func TestBinsSkipsWithoutKubeBins(t *testing.T) {
	t.Setenv("KUBE_BINS", "")
	skipped := true
	t.Run("inner", func(t *testing.T) {
		Bins(t)
		skipped = false
	})
	require.True(t, skipped)
}

func TestFreePortsAreDistinct(t *testing.T) {
	ports := freePorts(t, 20)
	seen := map[int]bool{}
	for _, p := range ports {
		require.False(t, seen[p])
		seen[p] = true
		require.Less(t, p, 32768)
	}
}

func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("x\n", 100)+"last\n"), 0o644))
	require.Equal(t, "x\nx\nlast", tailFile(path, 3))
}

func parseCert(t *testing.T, b []byte) *x509.Certificate {
	t.Helper()
	blk, _ := pem.Decode(b)
	require.NotNil(t, blk)
	c, err := x509.ParseCertificate(blk.Bytes)
	require.NoError(t, err)
	return c
}

func pool(t *testing.T, caPEM []byte) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	require.True(t, p.AppendCertsFromPEM(caPEM))
	return p
}
