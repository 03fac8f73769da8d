package kube

import (
	"strings"
	"testing"
)

// FuzzInlineKubeconfig feeds arbitrary bytes as a member Secret's
// kubeconfig. Invariants: no panic; whatever is accepted builds a client
// configuration that runs no command and reads no file, for an https
// server; a refusal says that nothing from the kubeconfig is used.
func FuzzInlineKubeconfig(f *testing.F) {
	f.Add(kubeconfig(inlineUser, inlineCluster))
	f.Add(kubeconfig("    exec: {apiVersion: client.authentication.k8s.io/v1, command: id}", inlineCluster))
	f.Add(kubeconfig("    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token", inlineCluster))
	f.Add(kubeconfig(inlineUser, "    server: http://127.0.0.1:8080"))
	f.Add(`{"apiVersion":"v1","kind":"Config","current-context":"c","contexts":[{"name":"c","context":{"cluster":"k","user":"u"}}],` +
		`"clusters":[{"name":"k","cluster":{"server":"https://h:1"}}],"users":[{"name":"u","user":{"auth-provider":{"name":"oidc"}}}]}`)
	f.Add("")
	f.Fuzz(func(t *testing.T, data string) {
		_, err := inlineKubeconfig([]byte(data))
		cfg, rerr := inlineRestConfig([]byte(data))
		if err != nil {
			if rerr == nil {
				t.Fatalf("refused by inlineKubeconfig but accepted by inlineRestConfig: %v", err)
			}
			if !strings.Contains(err.Error(), "nothing from it is used") {
				t.Fatalf("a refusal without its consequence: %v", err)
			}
			return
		}
		if rerr != nil {
			return // client-go refused what passed the check: nothing is used either
		}
		tc := cfg.TLSClientConfig
		if cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.BearerTokenFile != "" || tc.CertFile != "" || tc.KeyFile != "" || tc.CAFile != "" {
			t.Fatalf("accepted a configuration that runs a command or reads a file: %+v", cfg)
		}
		if !strings.HasPrefix(cfg.Host, "https://") || cfg.Insecure {
			t.Fatalf("accepted host %q (insecure %v)", cfg.Host, cfg.Insecure)
		}
	})
}
