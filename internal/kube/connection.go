package kube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/meridian-gslb/meridian/internal/model"
)

// Member states, as shown on /v1/kube and in logs.
const (
	StateReady    = "Ready"    // reachable, TLS verified, credentials accepted, /readyz ok
	StateNotReady = "NotReady" // not usable: the reason says why; nothing is sent to it
	StateOffline  = "Offline"  // its heartbeat was lost past the grace (decided by the ring)
)

// MemberSource is where a member's connection comes from.
type MemberSource struct {
	Cluster    string
	Config     model.KubeMember // file members
	Kubeconfig []byte           // Secret members: the kubeconfig's bytes
	Origin     string           // "config" or "secret NAMESPACE/NAME", for messages
}

// restConfig builds the member's client configuration for one-shot
// requests (the readiness probe, discovery, other controllers through
// Manager.Config): timeout bounds each whole request. Informers use
// watchConfig's. TLS is always verified: a kubeconfig that turns
// verification off is refused.
func (s MemberSource) restConfig(timeout time.Duration) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch {
	case s.Kubeconfig != nil:
		cfg, err = inlineRestConfig(s.Kubeconfig)
	case s.Config.InCluster:
		cfg, err = rest.InClusterConfig()
	default:
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: s.Config.Kubeconfig}
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
			&clientcmd.ConfigOverrides{CurrentContext: s.Config.Context}).ClientConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig (%s): %w", s.Origin, err)
	}
	if cfg.Insecure {
		return nil, fmt.Errorf("kubeconfig (%s): insecure-skip-tls-verify is set; Meridian always verifies member certificates (give certificate-authority or certificate-authority-data instead)", s.Origin)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = timeout
	cfg.UserAgent = "meridian"
	cfg.QPS, cfg.Burst = 20, 40
	return cfg, nil
}

// watchConfig derives, from a member's request configuration, the one its
// informers (LIST and WATCH) and status writes use: no overall request
// timeout (a watch stays open until the server ends it after its own
// timeoutSeconds; a LIST of many objects takes what it takes), while
// dialing and the TLS handshake stay bounded by timeout, so an unreachable
// or silent server still fails fast.
//
// The TLS handshake bound needs a transport of our own (client-go's is
// fixed at 10s); a configuration whose credentials come from an exec or
// auth-provider plugin (file members only: a Secret's kubeconfig may not
// have them) keeps client-go's transport, with the dial bound only.
func watchConfig(cfg *rest.Config, timeout time.Duration) (*rest.Config, error) {
	out := rest.CopyConfig(cfg)
	out.Timeout = 0
	dial := (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext
	if cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.WrapTransport != nil || cfg.Transport != nil {
		out.Dial = dial
		return out, nil
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("client TLS configuration: %w", err)
	}
	proxy := http.ProxyFromEnvironment
	if cfg.Proxy != nil {
		proxy = cfg.Proxy
	}
	out.Transport = utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               proxy,
		DialContext:         dial,
		TLSHandshakeTimeout: timeout,
		TLSClientConfig:     tlsCfg,
		MaxIdleConnsPerHost: 25,
		DisableCompression:  cfg.DisableCompression,
	})
	// The transport carries the TLS settings now; client-go refuses both.
	out.TLSClientConfig = rest.TLSClientConfig{}
	return out, nil
}

// clientCertProblem checks the client certificate in cfg locally, so an
// expired one is named as such (the server only answers 401).
func clientCertProblem(cfg *rest.Config, now time.Time) error {
	data := cfg.TLSClientConfig.CertData
	if len(data) == 0 && cfg.TLSClientConfig.CertFile != "" {
		b, err := os.ReadFile(cfg.TLSClientConfig.CertFile)
		if err != nil {
			return fmt.Errorf("client certificate: %w", err)
		}
		data = b
	}
	if len(data) == 0 {
		return nil
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return errors.New("client certificate: no PEM block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return fmt.Errorf("client certificate: %w", err)
	}
	switch {
	case now.After(cert.NotAfter):
		return fmt.Errorf("client certificate expired at %s (subject %q)", cert.NotAfter.UTC().Format(time.RFC3339), cert.Subject.CommonName)
	case now.Before(cert.NotBefore):
		return fmt.Errorf("client certificate not valid before %s (subject %q)", cert.NotBefore.UTC().Format(time.RFC3339), cert.Subject.CommonName)
	}
	return nil
}

// Reason classifies a failed request to a member into the reason shown
// with NotReady: which of TLS, credentials or reachability failed.
func Reason(err error) string {
	var (
		unknownCA x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		hostErr   x509.HostnameError
		recErr    tls.RecordHeaderError
		status    apierrors.APIStatus
		opErr     *net.OpError
		dnsErr    *net.DNSError
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &unknownCA):
		return "untrusted server certificate: not signed by the configured CA (wrong CA?): " + short(err)
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return "server certificate expired or not yet valid: " + short(err)
	case errors.As(err, &invalid):
		return "invalid server certificate: " + short(err)
	case errors.As(err, &hostErr):
		return "server certificate does not match the host: " + short(err)
	case errors.As(err, &recErr):
		return "not a TLS server at that address: " + short(err)
	case errors.As(err, &status) && status.Status().Code == 401:
		return "credentials rejected (401 Unauthorized): expired or revoked client certificate or token"
	case errors.As(err, &status) && status.Status().Code == 403:
		return "forbidden (403): the credentials lack permission: " + short(err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "unreachable: connection refused: " + short(err)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return "unreachable: timed out: " + short(err)
	case errors.As(err, &dnsErr):
		return "unreachable: host name not found: " + short(err)
	case errors.As(err, &opErr):
		return "unreachable: " + short(err)
	}
	return short(err)
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// short drops client-go's repetition of the URL from err's text.
func short(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Sprintf("%s %s: %v", ue.Op, ue.URL, ue.Err)
	}
	return strings.TrimSpace(err.Error())
}

// readyz asks the member's kube-apiserver whether it is ready.
func readyz(ctx context.Context, cs kubernetes.Interface) error {
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		// A verbose readyz failure lists every check; name the failed ones.
		var failed []string
		for line := range strings.SplitSeq(string(body)+"\n"+err.Error(), "\n") {
			if name, ok := strings.CutPrefix(strings.TrimSpace(line), "[-]"); ok {
				name, _, _ = strings.Cut(name, " ")
				if !slices.Contains(failed, name) {
					failed = append(failed, name)
				}
			}
		}
		if len(failed) > 0 {
			return fmt.Errorf("GET /readyz: kube-apiserver not ready (failed checks: %s)", strings.Join(failed, ", "))
		}
		return fmt.Errorf("GET /readyz: %w", err)
	}
	return nil
}
