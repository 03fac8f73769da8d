package notify

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/srcdir"
)

// docsShellCheck is the shell recipe of docs/operations.md that checks a
// captured signed request by hand (openssl), as a receiver's author reads it.
func docsShellCheck(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(srcdir.Root(), "docs", "operations.md"))
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(doc), "In a shell, to check a captured request by hand")
	require.True(t, ok, "docs/operations.md has the shell recipe")
	_, block, ok := strings.Cut(after, "```sh\n")
	require.True(t, ok)
	block, _, ok = strings.Cut(block, "```")
	require.True(t, ok)
	return block
}

// TestASignedRequestVerifiesWithTheDocumentedOpensslRecipe: the signature
// of a request Meridian sent is checked outside the package, by openssl
// through docs/operations.md's shell lines (not by Verify, which shares
// Sign's idea of what is signed).
func TestASignedRequestVerifiesWithTheDocumentedOpensslRecipe(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("openssl not found and CI is set")
		}
		t.Skip("openssl not found: apt-get install openssl")
	}
	c, srv := newCapture(t)
	n, _ := start(t, Receiver{Name: "hook", Kind: KindWebhook, URL: srv.URL, SecretFile: secretFile(t, "  s3cret-ключ\n")})
	n.Notify(failoverEvent)
	c.wait(t, 1)
	c.mu.Lock()
	body, sig, ts := c.bodies[0], c.sigs[0], c.stamps[0]
	c.mu.Unlock()

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "body.json"), body, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hook.key"), []byte("  s3cret-ключ\n"), 0o600))
	check := func(sig string) string {
		cmd := exec.Command("bash", "-c", "ts="+ts+"; sig='"+sig+"'\n"+docsShellCheck(t))
		cmd.Dir = dir
		out, _ := cmd.CombinedOutput() // the recipe's last test exits 1 when the signature differs
		return string(out)
	}
	out := check(sig)
	assert.Contains(t, out, "verified", "openssl agrees with the signature Meridian sent")
	assert.NotContains(t, out, "stale")
	assert.NotContains(t, check(strings.Replace(sig, sig[len(sig)-1:], "x", 1)), "verified", "a changed signature is not verified")
}
