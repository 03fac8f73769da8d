//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// bindPrimaryOptions starts the named.conf of a BIND primary (the parent of
// TestTheZoneIsDelegatedForYou, the answers zone of
// TestRFC2136AnswersFollowTheDecisions): files in %[1]s, listening on
// 127.0.0.1:%[2]d, and the TSIG key meridian-update with secret %[3]s. The
// zone statements follow.
const bindPrimaryOptions = `options {
	directory "%[1]s";
	pid-file "%[1]s/named.pid";
	session-keyfile "%[1]s/session.key";
	managed-keys-directory "%[1]s";
	listen-on port %[2]d { 127.0.0.1; };
	listen-on-v6 { none; };
	recursion no;
	notify no;
	dnssec-validation no;
	allow-query { any; };
	allow-transfer { none; };
};
controls { };
key "meridian-update" { algorithm hmac-sha256; secret "%[3]s"; };
`

// updateKey makes a random hmac-sha256 key meridian-update and writes it
// in BIND format to dir/update.key, the tsig_key_file Meridian reads.
func updateKey(t *testing.T, dir string) (secret, file string) {
	t.Helper()
	raw := make([]byte, 32)
	_, err := rand.Read(raw)
	require.NoError(t, err)
	secret = base64.StdEncoding.EncodeToString(raw)
	file = filepath.Join(dir, "update.key")
	require.NoError(t, os.WriteFile(file, []byte(fmt.Sprintf("key \"meridian-update\" {\n\talgorithm hmac-sha256;\n\tsecret \"%s\";\n};\n", secret)), 0o600))
	return secret, file
}

// startBindPrimary runs named with conf (formatted with its directory, its
// port and secret) and the zone files (file name → content) in dir/bind,
// and returns its port.
func startBindPrimary(t *testing.T, dir, conf, secret string, zoneFiles map[string]string) (*secondary, int) {
	t.Helper()
	bindDir := filepath.Join(dir, "bind")
	require.NoError(t, os.MkdirAll(bindDir, 0o755))
	port := freePort(t)
	require.NoError(t, os.WriteFile(filepath.Join(bindDir, "named.conf"), []byte(fmt.Sprintf(conf, bindDir, port, secret)), 0o644))
	for name, content := range zoneFiles {
		require.NoError(t, os.WriteFile(filepath.Join(bindDir, name), []byte(content), 0o644))
	}
	return startSecondary(t, "named", port, "-g", "-n", "1", "-c", filepath.Join(bindDir, "named.conf")), port
}

// digAXFR transfers zone from 127.0.0.1:port with `dig AXFR`, signed with
// the key meridian-update, and returns the record lines of its output as
// dig prints them (comments, blank lines and the TSIG of each message left
// out).
func digAXFR(t *testing.T, port int, secret, zone string) []string {
	t.Helper()
	out := runNoFail("dig", "@127.0.0.1", "-p", fmt.Sprint(port), "+time=2", "+tries=1", "-y", "hmac-sha256:meridian-update:"+secret, zone, "AXFR")
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 3 && !strings.HasPrefix(l, ";") && f[3] != "TSIG" {
			lines = append(lines, l)
		}
	}
	return lines
}
