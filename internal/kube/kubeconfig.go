package kube

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

var yamlLine = regexp.MustCompile(`line \d+`)

// inlineKubeconfig parses the kubeconfig of a member Secret and refuses
// whatever is not inline: a Secret's kubeconfig may carry only inline
// credentials (token, client-certificate-data and client-key-data,
// username and password) and inline CA data. Refused, with the reason:
//   - exec plugins: their command would run inside Meridian's pod;
//   - auth-provider: plugins that refresh tokens through files and commands;
//   - tokenFile, client-certificate, client-key, certificate-authority:
//     paths into Meridian's own file system (e.g. its service-account
//     token, which would be sent to whatever server the Secret names);
//   - insecure-skip-tls-verify, and a server that is not https://: the
//     credentials would go to a server nobody verified.
//
// Every user, cluster and context in the file is checked, used or not, and
// the current context must name a cluster and a user that exist. Parsing
// runs nothing and reads no file. It is pure.
func inlineKubeconfig(data []byte) (*clientcmdapi.Config, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		// The parser's message can quote the file, and the file holds
		// credentials: say where, not what.
		where := ""
		if m := yamlLine.FindString(err.Error()); m != "" {
			where = " (" + m + ")"
		}
		return nil, fmt.Errorf("kubeconfig refused: it does not parse as a kubeconfig (YAML or JSON)%s; nothing from it is used", where)
	}
	errs := userProblems(cfg)
	errs = append(errs, clusterProblems(cfg)...)
	errs = append(errs, contextProblems(cfg)...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("kubeconfig refused (only inline credentials and CA data are allowed; nothing from it is used): %s", strings.Join(errs, "; "))
	}
	return cfg, nil
}

// userProblems lists what a Secret's kubeconfig may not carry in its
// users: exec and auth-provider plugins, and files.
func userProblems(cfg *clientcmdapi.Config) []string {
	var errs []string
	for _, name := range sortedKeys(cfg.AuthInfos) {
		u := cfg.AuthInfos[name]
		p := fmt.Sprintf("users[%s]", name)
		if u.Exec != nil {
			errs = append(errs, fmt.Sprintf("%s.exec: exec plugins are refused: command %q would run inside Meridian", p, u.Exec.Command))
		}
		if u.AuthProvider != nil {
			errs = append(errs, fmt.Sprintf("%s.auth-provider: auth provider %q is refused: it runs commands and reads files inside Meridian", p, u.AuthProvider.Name))
		}
		for _, f := range []struct{ field, value string }{
			{"tokenFile", u.TokenFile}, {"client-certificate", u.ClientCertificate}, {"client-key", u.ClientKey},
		} {
			if f.value != "" {
				errs = append(errs, fmt.Sprintf("%s.%s: file %q is refused: a Secret's kubeconfig may not read files inside Meridian (use token, client-certificate-data, client-key-data)", p, f.field, f.value))
			}
		}
	}
	return errs
}

// clusterProblems lists what a Secret's kubeconfig may not carry in its
// clusters: CA files, unverified TLS, servers that are not https://.
func clusterProblems(cfg *clientcmdapi.Config) []string {
	var errs []string
	for _, name := range sortedKeys(cfg.Clusters) {
		c := cfg.Clusters[name]
		p := fmt.Sprintf("clusters[%s]", name)
		if c.CertificateAuthority != "" {
			errs = append(errs, fmt.Sprintf("%s.certificate-authority: file %q is refused: a Secret's kubeconfig may not read files inside Meridian (use certificate-authority-data)", p, c.CertificateAuthority))
		}
		if c.InsecureSkipTLSVerify {
			errs = append(errs, fmt.Sprintf("%s.insecure-skip-tls-verify: is set; Meridian always verifies member certificates (use certificate-authority-data)", p))
		}
		if u, err := url.Parse(c.Server); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Sprintf("%s.server: %q is not an https:// URL: the credentials would cross the network unverified", p, c.Server))
		}
	}
	return errs
}

// contextProblems checks that the current context names a cluster and a
// user that exist.
func contextProblems(cfg *clientcmdapi.Config) []string {
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	switch {
	case cfg.CurrentContext == "":
		return []string{"current-context: is not set"}
	case !ok:
		return []string{fmt.Sprintf("current-context: context %q is not defined", cfg.CurrentContext)}
	}
	var errs []string
	if _, ok := cfg.Clusters[ctx.Cluster]; !ok {
		errs = append(errs, fmt.Sprintf("contexts[%s].cluster: cluster %q is not defined", cfg.CurrentContext, ctx.Cluster))
	}
	if _, ok := cfg.AuthInfos[ctx.AuthInfo]; !ok {
		errs = append(errs, fmt.Sprintf("contexts[%s].user: user %q is not defined", cfg.CurrentContext, ctx.AuthInfo))
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// inlineRestConfig builds the client configuration of a Secret's
// kubeconfig, checked by inlineKubeconfig, and checks the result again:
// whatever client-go derived, nothing in it may run a command or read a
// file.
func inlineRestConfig(data []byte) (*rest.Config, error) {
	kc, err := inlineKubeconfig(data)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	t := cfg.TLSClientConfig
	if cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.BearerTokenFile != "" || t.CertFile != "" || t.KeyFile != "" || t.CAFile != "" {
		return nil, errors.New("kubeconfig refused: its client configuration runs a command or reads a file")
	}
	return cfg, nil
}
