package join

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/meridian-gslb/meridian/internal/kube"
)

func memberSecret(t *testing.T, name, cluster string, joined bool, kubeconfig []byte) corev1.Secret {
	t.Helper()
	s := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "meridian", Name: name, Labels: map[string]string{kube.LabelMember: "true"},
		Annotations: map[string]string{kube.AnnoCluster: cluster, kube.AnnoRegion: "us-" + cluster}},
		Data: map[string][]byte{kube.SecretKubeconfig: kubeconfig}}
	if joined {
		for k, v := range Labels(cluster) {
			s.Labels[k] = v
		}
	}
	return s
}

// certKubeconfig is an inline kubeconfig with a client certificate valid
// until notAfter.
func certKubeconfig(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "meridian"}, NotBefore: notAfter.Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	cfg := clientcmdapi.NewConfig()
	c := clientcmdapi.NewCluster()
	c.Server = "https://east.example:6443"
	u := clientcmdapi.NewAuthInfo()
	u.ClientCertificateData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	u.ClientKeyData = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	cfg.Clusters["e"], cfg.AuthInfos["e"] = c, u
	cfg.Contexts["e"] = &clientcmdapi.Context{Cluster: "e", AuthInfo: "e"}
	cfg.CurrentContext = "e"
	out, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return out
}

func TestRows(t *testing.T) {
	exp := time.Date(2027, 12, 1, 0, 0, 0, 0, time.UTC)
	tokenKC, err := Kubeconfig("west", testEndpoint, fakeJWT(1, exp))
	require.NoError(t, err)
	certNotAfter := time.Date(2027, 6, 1, 0, 0, 0, 0, time.UTC)
	west := memberSecret(t, "member-west", "west", true, tokenKC)
	east := memberSecret(t, "east-by-hand", "east", false, certKubeconfig(t, certNotAfter))
	bad := memberSecret(t, "member-north", "north", false, []byte("apiVersion: v1\nkind: Config\nusers: [{name: u, user: {exec: {command: sh}}}]\n"))
	ready := []kube.MemberStatus{{Cluster: "west", State: "Ready", Origin: "secret meridian/member-west"},
		{Cluster: "east", State: "NotReady", Reason: "credentials rejected (401 Unauthorized)", Origin: "secret meridian/east-by-hand"}}

	for _, c := range []struct {
		name    string
		secrets []corev1.Secret
		members []kube.MemberStatus
		want    []Row
		// reasonHas: the first row's reason holds this (then it is not
		// compared in full).
		reasonHas string
	}{
		{name: "a joined member shows its server, the token's expiry and the hub's state",
			secrets: []corev1.Secret{west}, members: ready,
			want: []Row{{Secret: "meridian/member-west", Cluster: "west", Region: "us-west", Server: "https://10.0.0.1:6443", Credential: "token", Expires: &exp, Joined: true, State: "Ready"}}},
		{name: "a Secret made by hand with a client certificate shows the certificate's expiry and the hub's reason",
			secrets: []corev1.Secret{east}, members: ready,
			want: []Row{{Secret: "meridian/east-by-hand", Cluster: "east", Region: "us-east", Server: "https://east.example:6443", Credential: "client certificate", Expires: &certNotAfter,
				State: "NotReady", Reason: "credentials rejected (401 Unauthorized)"}}},
		{name: "a Secret the hub refuses says why, whatever the hub reports",
			secrets: []corev1.Secret{bad}, members: ready,
			want:      []Row{{Secret: "meridian/member-north", Cluster: "north", Region: "us-north", State: StateRefused}},
			reasonHas: `secret meridian/member-north: data.kubeconfig: kubeconfig refused (only inline credentials and CA data are allowed; nothing from it is used): users[u].exec: exec plugins are refused`},
		{name: "without the hub the state is unknown",
			secrets: []corev1.Secret{west}, members: nil,
			want: []Row{{Secret: "meridian/member-west", Cluster: "west", Region: "us-west", Server: "https://10.0.0.1:6443", Credential: "token", Expires: &exp, Joined: true, State: StateUnknown}}},
		{name: "a Secret the running hub does not list is unknown, with the likely reasons",
			secrets: []corev1.Secret{west}, members: []kube.MemberStatus{},
			want: []Row{{Secret: "meridian/member-west", Cluster: "west", Region: "us-west", Server: "https://10.0.0.1:6443", Credential: "token", Expires: &exp, Joined: true, State: StateUnknown,
				Reason: "the running hub does not list it (another member_secrets namespace, or a cluster its config file defines)"}}},
		{name: "rows are sorted by cluster", secrets: []corev1.Secret{west, east}, members: ready,
			want: []Row{{Secret: "meridian/east-by-hand", Cluster: "east", Region: "us-east", Server: "https://east.example:6443", Credential: "client certificate", Expires: &certNotAfter,
				State: "NotReady", Reason: "credentials rejected (401 Unauthorized)"},
				{Secret: "meridian/member-west", Cluster: "west", Region: "us-west", Server: "https://10.0.0.1:6443", Credential: "token", Expires: &exp, Joined: true, State: "Ready"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Rows(c.secrets, c.members)
			if c.reasonHas != "" {
				require.NotEmpty(t, got)
				assert.Contains(t, got[0].Reason, c.reasonHas)
				got[0].Reason = ""
			}
			assert.Equal(t, c.want, got)
		})
	}
}

func TestTokenExpiryReadsOnlyWellFormedTokens(t *testing.T) {
	exp := time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		name  string
		token string
		want  *time.Time
	}{
		{name: "a service-account token gives its exp claim", token: fakeJWT(1, exp), want: &exp},
		{name: "an opaque token has no expiry", token: "abcdef0123456789"},
		{name: "a token whose payload is not base64 has no expiry", token: "a.!!!.c"},
		{name: "a token without exp has no expiry", token: "a.e30.c"},
	} {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, tokenExpiry(c.token)) })
	}
}
