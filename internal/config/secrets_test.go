package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEveryFileFieldOfTheConfigIsClassifiedSecretOrPlain(t *testing.T) {
	for name := range fileFieldNames() {
		assert.True(t, secretFields[name] != plainFileFields[name], "%s: in exactly one of secretFields and plainFileFields (is its content a secret serve reads with secretfile?)", name)
	}
}

const secretsConfig = `
server:
  admin: {token_file: %[1]s/missing-tokens}
zones:
  - apex: gslb.example.com
    nameservers: [{name: ns1.gslb.example.com, ipv4: [127.0.0.1]}]
    transfer:
      allow: [127.0.0.1]
      tsig_key_file: %[1]s/xfr.key
clusters:
  - {name: east, region: r1}
services:
  - name: app.gslb.example.com
    endpoints: [{address: 192.0.2.1, cluster: east}]
notifications:
  receivers:
    - {name: hook, kind: webhook, url: "https://hooks.example.com/x", secret_file: %[1]s/hook.key}
`

func TestCheckSecretFilesRefusesWhatServeRefuses(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "xfr.key"), []byte("hmac-sha256:k:c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook.key"), []byte("s3cret\n"), 0o600))
	data := []byte(strings.ReplaceAll(secretsConfig, "%[1]s", dir))
	f, err := Parse("m.yaml", data)
	require.NoError(t, err, "the config itself is valid")

	errs := CheckSecretFiles("m.yaml", data, f)
	require.Len(t, errs, 2, "%v", errs)
	byPath := map[string]Error{}
	for _, e := range errs {
		byPath[e.Path] = e
	}
	key := byPath["zones[0].transfer.tsig_key_file"]
	assert.Equal(t, 9, key.Line, "the line of the field")
	assert.Contains(t, key.Msg, "has mode 0644")
	assert.Contains(t, key.Msg, "chmod 600")
	tok := byPath["server.admin.token_file"]
	assert.Contains(t, tok.Msg, "missing-tokens: no such file or directory")
	assert.NotContains(t, key.Error()+tok.Error(), "hook.key", "a secret file with mode 0600 passes")
}
