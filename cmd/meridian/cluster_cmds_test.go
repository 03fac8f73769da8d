package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// operatorKubeconfig has contexts hub and west, west with a CA file that
// is read and inlined by a dry run.
func operatorKubeconfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "west-ca.crt"), []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), 0o600))
	kc := `apiVersion: v1
kind: Config
current-context: hub
clusters:
  - {name: hub, cluster: {server: "https://10.0.0.1:6443", insecure-skip-tls-verify: true}}
  - {name: west, cluster: {server: "https://10.0.0.2:6443", certificate-authority: west-ca.crt}}
users:
  - {name: admin, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: cloud-login, interactiveMode: Never}}}
contexts:
  - {name: hub, context: {cluster: hub, user: admin}}
  - {name: west, context: {cluster: west, user: admin}}
`
	path := filepath.Join(dir, "config")
	require.NoError(t, os.WriteFile(path, []byte(kc), 0o600))
	return path
}

func TestClusterCommandsWithoutACluster(t *testing.T) {
	kc := operatorKubeconfig(t)
	for _, c := range []struct {
		name    string
		args    []string
		wantErr string
		wantOut []string
	}{
		{name: "join without --member-context names the flag and the contexts there are",
			args: []string{"cluster", "join", "--kubeconfig", kc, "--name", "west", "--region", "us-west"}, wantErr: "--member-context is required (contexts: hub, west)"},
		{name: "join with an unknown context names it",
			args: []string{"cluster", "join", "--kubeconfig", kc, "--member-context", "east", "--name", "west", "--region", "us-west"}, wantErr: `--member-context "east": no such context in the kubeconfig (contexts: hub, west)`},
		{name: "join checks its own flags before reading the kubeconfig",
			args:    []string{"cluster", "join", "--kubeconfig", "/nonexistent", "--member-context", "west", "--name", "West", "--region", "us-west", "--components", "dns"},
			wantErr: `--name "West"`},
		{name: "a member context that skips TLS verification is refused",
			args: []string{"cluster", "join", "--kubeconfig", kc, "--member-context", "hub", "--name", "west", "--region", "us-west", "--dry-run"}, wantErr: "sets insecure-skip-tls-verify"},
		{name: "a dry run prints the objects with the CA file inlined and contacts no cluster",
			args:    []string{"cluster", "join", "--kubeconfig", kc, "--member-context", "west", "--name", "west", "--region", "us-west", "--dry-run", "--components", "propagation"},
			wantOut: []string{"name: meridian-hub-propagation", "server: https://10.0.0.2:6443", "certificate-authority-data: LS0t", "token: MINTED-BY-JOIN", "meridian.io/region: us-west"}},
		{name: "list refuses an output format it does not have",
			args: []string{"cluster", "list", "--kubeconfig", kc, "-o", "yaml"}, wantErr: `-o "yaml": not an output format (allowed: table, json)`},
		{name: "unjoin without --name names the flag",
			args: []string{"cluster", "unjoin", "--kubeconfig", kc, "--member-context", "west"}, wantErr: "--name is required"},
		{name: "unjoin with an unknown hub context names it",
			args: []string{"cluster", "unjoin", "--kubeconfig", kc, "--hub-context", "nowhere", "--member-context", "west", "--name", "west"}, wantErr: `--hub-context "nowhere": no such context`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := newRoot()
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(c.args)
			err := cmd.Execute()
			if c.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.wantErr)
				return
			}
			require.NoError(t, err)
			for _, w := range c.wantOut {
				assert.Contains(t, out.String(), w)
			}
		})
	}
}
