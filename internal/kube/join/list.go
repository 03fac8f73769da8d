package join

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/meridian-gslb/meridian/internal/kube"
)

// Row is one member Secret of the hub, as `meridian cluster list` shows it.
// It never holds a credential.
type Row struct {
	Secret     string     `json:"secret"` // NAMESPACE/NAME
	Cluster    string     `json:"cluster"`
	Region     string     `json:"region"`
	Server     string     `json:"server,omitempty"`
	Credential string     `json:"credential,omitempty"` // token, client certificate, basic auth
	Expires    *time.Time `json:"expires,omitempty"`    // the token's exp claim or the client certificate's notAfter
	Joined     bool       `json:"joined"`               // made by `meridian cluster join`
	// State is the hub's view: Ready, NotReady or Offline from the running
	// hub (GET /v1/kube), Refused when the Secret is one the hub refuses
	// (Reason says why), Unknown when the hub could not be asked or does not
	// list the member.
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// Row states that do not come from the hub.
const (
	StateRefused = "Refused"
	StateUnknown = "Unknown"
)

// List reads the member Secrets (labelled meridian.io/member=true) of the
// hub namespace.
func List(ctx context.Context, hub kubernetes.Interface, namespace string) ([]corev1.Secret, error) {
	l, err := hub.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelMember + "=true"})
	if err != nil {
		return nil, fmt.Errorf("hub: list member Secrets in %s: %w", namespace, err)
	}
	return l.Items, nil
}

// Rows describes each Secret; members is the running hub's view (nil when
// it could not be asked). Rows are sorted by cluster. It is pure.
func Rows(secrets []corev1.Secret, members []kube.MemberStatus) []Row {
	out := make([]Row, 0, len(secrets))
	for i := range secrets {
		s := &secrets[i]
		r := Row{Secret: s.Namespace + "/" + s.Name, Cluster: registers(s), Region: s.Annotations[kube.AnnoRegion],
			Joined: Owned(s, registers(s)), State: StateUnknown}
		r.Server, r.Credential, r.Expires = describeKubeconfig(s.Data[kube.SecretKubeconfig])
		if _, err := kube.MemberFromSecret(s); err != nil {
			r.State, r.Reason = StateRefused, err.Error()
		} else if i := slices.IndexFunc(members, func(m kube.MemberStatus) bool { return m.Origin == "secret "+r.Secret }); i >= 0 {
			r.State, r.Reason = members[i].State, members[i].Reason
		} else if members != nil {
			r.Reason = "the running hub does not list it (another member_secrets namespace, or a cluster its config file defines)"
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Row) int { return strings.Compare(a.Cluster+"\x00"+a.Secret, b.Cluster+"\x00"+b.Secret) })
	return out
}

// describeKubeconfig returns the server, the kind of credential and when it
// expires, of the current context; whatever cannot be read stays empty.
func describeKubeconfig(data []byte) (server, credential string, expires *time.Time) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return "", "", nil
	}
	kctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return "", "", nil
	}
	if c, ok := cfg.Clusters[kctx.Cluster]; ok {
		server = c.Server
	}
	u, ok := cfg.AuthInfos[kctx.AuthInfo]
	switch {
	case !ok:
	case u.Token != "":
		credential, expires = "token", tokenExpiry(u.Token)
	case len(u.ClientCertificateData) > 0:
		credential = "client certificate"
		if b, _ := pem.Decode(u.ClientCertificateData); b != nil {
			if c, err := x509.ParseCertificate(b.Bytes); err == nil {
				t := c.NotAfter
				expires = &t
			}
		}
	case u.Username != "":
		credential = "basic auth"
	}
	return server, credential, expires
}

// tokenExpiry reads the exp claim of a JWT (a service-account token)
// without verifying it: for display only.
func tokenExpiry(token string) *time.Time {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == 0 {
		return nil
	}
	t := time.Unix(claims.Exp, 0).UTC()
	return &t
}
