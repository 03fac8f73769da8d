package join

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Endpoint is how the hub reaches the member's API server.
type Endpoint struct {
	Server        string // https:// URL
	CAData        []byte // PEM; empty: the system roots verify the server
	TLSServerName string // the name checked in the server's certificate, when not the URL's host
}

// EndpointFor reads the member's endpoint from the operator's kubeconfig
// context: its server (or server, when set) and its CA, inlined (a
// certificate-authority file is read with readFile, on the operator's
// machine). A context that skips TLS verification is refused: the hub
// always verifies. It is pure but for readFile.
func EndpointFor(cfg *clientcmdapi.Config, context, server string, readFile func(string) ([]byte, error)) (Endpoint, error) {
	kctx, ok := cfg.Contexts[context]
	if !ok {
		return Endpoint{}, fmt.Errorf("--member-context %q: no such context in the kubeconfig (contexts: %s)", context, strings.Join(contextNames(cfg), ", "))
	}
	c, ok := cfg.Clusters[kctx.Cluster]
	if !ok {
		return Endpoint{}, fmt.Errorf("--member-context %q: its cluster %q is not defined in the kubeconfig", context, kctx.Cluster)
	}
	if c.InsecureSkipTLSVerify {
		return Endpoint{}, fmt.Errorf("--member-context %q: cluster %q sets insecure-skip-tls-verify; the hub always verifies the member's certificate, so give the cluster certificate-authority-data (or certificate-authority)", context, kctx.Cluster)
	}
	ep := Endpoint{Server: c.Server, CAData: c.CertificateAuthorityData, TLSServerName: c.TLSServerName}
	if server != "" {
		ep.Server = server
	}
	if u, err := url.Parse(ep.Server); err != nil || u.Scheme != "https" || u.Host == "" {
		flag := "--member-context " + context
		if server != "" {
			flag = "--server"
		}
		return Endpoint{}, fmt.Errorf("%s: server %q is not an https:// URL; the hub accepts only https members (give --server https://HOST:PORT)", flag, ep.Server)
	}
	if len(ep.CAData) == 0 && c.CertificateAuthority != "" {
		b, err := readFile(c.CertificateAuthority)
		if err != nil {
			return Endpoint{}, fmt.Errorf("--member-context %q: certificate-authority: %w", context, err)
		}
		ep.CAData = b
	}
	return ep, nil
}

func contextNames(cfg *clientcmdapi.Config) []string {
	var out []string
	for n := range cfg.Contexts {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Kubeconfig is the inline kubeconfig of member name: one cluster, one
// user with the token, one context, all named name. Nothing in it runs a
// command or names a file.
func Kubeconfig(name string, ep Endpoint, token string) ([]byte, error) {
	if token == "" {
		return nil, errors.New("kubeconfig: no token")
	}
	cfg := clientcmdapi.NewConfig()
	c := clientcmdapi.NewCluster()
	c.Server, c.CertificateAuthorityData, c.TLSServerName = ep.Server, ep.CAData, ep.TLSServerName
	u := clientcmdapi.NewAuthInfo()
	u.Token = token
	kctx := clientcmdapi.NewContext()
	kctx.Cluster, kctx.AuthInfo = name, name
	cfg.Clusters[name], cfg.AuthInfos[name], cfg.Contexts[name] = c, u, kctx
	cfg.CurrentContext = name
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return out, nil
}
