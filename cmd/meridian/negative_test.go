package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestANegativeNumberIsAPositionalArgument(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"a negative weight goes after --, the flags before it",
			[]string{"weight", "app.test", "192.0.2.1", "-1", "--reason", "r"},
			[]string{"weight", "--reason", "r", "--", "app.test", "192.0.2.1", "-1"}},
		{"a flag's value stays the flag's even when it looks negative",
			[]string{"drain", "cluster", "east", "--for", "-5m", "--reason", "r", "-9"},
			[]string{"drain", "--for", "-5m", "--reason", "r", "--", "cluster", "east", "-9"}},
		{"a persistent flag before the command is kept with its value",
			[]string{"--ca-file", "ca.pem", "weight", "app.test", "192.0.2.1", "-2.5"},
			[]string{"weight", "--ca-file", "ca.pem", "--", "app.test", "192.0.2.1", "-2.5"}},
		{"arguments without a negative number are left as they are",
			[]string{"weight", "app.test", "192.0.2.1", "5", "--reason", "r"},
			[]string{"weight", "app.test", "192.0.2.1", "5", "--reason", "r"}},
		{"arguments that already hold -- are left as they are",
			[]string{"weight", "--reason", "r", "--", "app.test", "192.0.2.1", "-1"},
			[]string{"weight", "--reason", "r", "--", "app.test", "192.0.2.1", "-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, negativeNumbersAsArgs(newRoot(), tc.args))
		})
	}
}

func TestMeridianWeightMinusOneIsARangeError(t *testing.T) {
	for _, tc := range []struct {
		weight, want string
	}{
		{"-1", "weight -1 is out of range (allowed: 0..1000)"},
		{"5000", "weight 5000 is out of range (allowed: 0..1000)"},
		{"x", `weight "x" is not an integer (allowed: 0..1000)`},
	} {
		t.Run(tc.weight, func(t *testing.T) {
			root := newRoot()
			root.SetArgs(negativeNumbersAsArgs(root, []string{"weight", "app.test", "192.0.2.1", tc.weight, "--reason", "r", "--http", "127.0.0.1:1"}))
			err := root.Execute()
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

func TestCheckConfigRefusesASecretFileServeWouldRefuse(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "xfr.key")
	require.NoError(t, os.WriteFile(key, []byte("hmac-sha256:k:c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0\n"), 0o644))
	cfg := filepath.Join(dir, "m.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`zones:
  - apex: gslb.example.com
    nameservers: [{name: ns1.gslb.example.com, ipv4: [127.0.0.1]}]
    transfer: {allow: [127.0.0.1], tsig_key_file: `+key+`}
clusters:
  - {name: east, region: r1}
services:
  - name: app.gslb.example.com
    endpoints: [{address: 192.0.2.1, cluster: east}]
`), 0o600))
	run := func(args ...string) (string, error) {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(args)
		err := root.Execute()
		return out.String(), err
	}
	out, err := run("check-config", cfg)
	require.Error(t, err, out)
	assert.Contains(t, out, ":4:")
	assert.Contains(t, out, "zones[0].transfer.tsig_key_file: secret file "+key+" has mode 0644")
	require.NoError(t, os.Chmod(key, 0o600))
	out, err = run("check-config", cfg)
	require.NoError(t, err, out)
	assert.Contains(t, out, "ok (1 zones")
}
