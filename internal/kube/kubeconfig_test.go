package kube

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kubeconfig is an inline kubeconfig with user and cluster fields replaced.
func kubeconfig(user, cluster string) string {
	return `apiVersion: v1
kind: Config
current-context: west
contexts:
- name: west
  context: {cluster: west, user: meridian}
clusters:
- name: west
  cluster:
` + cluster + `
users:
- name: meridian
  user:
` + user + "\n"
}

const (
	inlineCluster = "    server: https://127.0.0.1:6443\n    certificate-authority-data: LS0tLS1CRUdJTg=="
	inlineUser    = "    token: abc.def"
)

func TestTheKubeconfigOfAMemberSecret(t *testing.T) {
	tests := []struct {
		name    string
		config  string
		refused []string // substrings of the error; none: accepted
	}{
		{"inline token and CA data are accepted", kubeconfig(inlineUser, inlineCluster), nil},
		{"an inline username and password are accepted (docs/kubernetes.md and deploy/README.md say so)",
			kubeconfig("    username: admin\n    password: s3cret", inlineCluster), nil},
		{"inline client certificate and key data are accepted",
			kubeconfig("    client-certificate-data: LS0t\n    client-key-data: LS0t", inlineCluster), nil},
		{"an exec plugin is refused with its command",
			kubeconfig("    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh\n      args: [-c, touch /tmp/pwned]\n      interactiveMode: Never", inlineCluster),
			[]string{"users[meridian].exec: exec plugins are refused", `"/bin/sh"`}},
		{"an auth provider is refused",
			kubeconfig("    auth-provider:\n      name: gcp\n      config: {cmd-path: /usr/bin/gcloud}", inlineCluster),
			[]string{"users[meridian].auth-provider", `"gcp"`}},
		{"a token file is refused: it could send Meridian's own token away",
			kubeconfig("    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token", inlineCluster),
			[]string{"users[meridian].tokenFile", "/var/run/secrets/kubernetes.io/serviceaccount/token"}},
		{"client certificate and key files are refused",
			kubeconfig("    client-certificate: /etc/meridian/tls.crt\n    client-key: /etc/meridian/tls.key", inlineCluster),
			[]string{"users[meridian].client-certificate", "users[meridian].client-key"}},
		{"a CA file is refused",
			kubeconfig(inlineUser, "    server: https://127.0.0.1:6443\n    certificate-authority: /etc/ssl/ca.crt"),
			[]string{"clusters[west].certificate-authority", "/etc/ssl/ca.crt"}},
		{"skipping TLS verification is refused",
			kubeconfig(inlineUser, "    server: https://127.0.0.1:6443\n    insecure-skip-tls-verify: true"),
			[]string{"insecure-skip-tls-verify"}},
		{"a plain http server is refused: the token would cross in clear",
			kubeconfig(inlineUser, "    server: http://127.0.0.1:8080"),
			[]string{`clusters[west].server: "http://127.0.0.1:8080" is not an https:// URL`}},
		{"an exec plugin in a user the current context does not use is refused too",
			strings.Replace(kubeconfig(inlineUser, inlineCluster), "users:\n", "users:\n- name: other\n  user:\n    exec: {apiVersion: client.authentication.k8s.io/v1, command: id}\n", 1),
			[]string{"users[other].exec"}},
		{"a current context that is not defined is refused",
			strings.Replace(kubeconfig(inlineUser, inlineCluster), "current-context: west", "current-context: east", 1),
			[]string{`context "east" is not defined`}},
		{"garbage is refused without quoting it", "{{{ s3cr3t", []string{"does not parse as a kubeconfig"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := inlineKubeconfig([]byte(tt.config))
			_, rerr := inlineRestConfig([]byte(tt.config))
			if len(tt.refused) == 0 {
				require.NoError(t, err)
				require.NoError(t, rerr)
				return
			}
			require.Error(t, err)
			require.Error(t, rerr, "the client configuration is refused too")
			for _, s := range tt.refused {
				assert.Contains(t, err.Error(), s)
			}
			assert.NotContains(t, err.Error(), "s3cr3t", "no credential is quoted")
			assert.Contains(t, err.Error(), "nothing from it is used")
		})
	}
}

// A refused exec plugin never runs: building the client configuration and
// connecting give the reason, and the command's marker file is not there.
func TestAnExecPluginInASecretNeverRuns(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	script := "touch " + marker + `; echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"x"}}'`
	cfg := kubeconfig("    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh\n      args:\n      - -c\n      - "+strconv.Quote(script)+"\n      interactiveMode: Never", inlineCluster)
	src := MemberSource{Cluster: "west", Kubeconfig: []byte(cfg), Origin: "secret meridian/member-west"}
	_, err := src.restConfig(0)
	require.ErrorContains(t, err, "exec plugins are refused")
	_, err = MemberFromSecret(secret("member-west", map[string]string{AnnoRegion: "us-west"}, cfg))
	require.ErrorContains(t, err, "secret meridian/member-west: data.kubeconfig: kubeconfig refused")
	_, statErr := os.Stat(marker)
	assert.True(t, os.IsNotExist(statErr), "the exec command did not run")
}
