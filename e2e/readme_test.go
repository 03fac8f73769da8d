//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/srcdir"
)

// readmeBlocks returns the ```sh blocks of README.md under the heading
// (a line "## X" or "### X").
func readmeBlocks(t *testing.T, heading string) []string {
	t.Helper()
	return docBlocks(t, "README.md", heading)
}

// docBlocks returns the ```sh blocks of the Markdown file doc (a path in
// the source tree) under the heading.
func docBlocks(t *testing.T, doc, heading string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(srcdir.Root(), doc))
	require.NoError(t, err)
	defer f.Close()
	var blocks []string
	var cur *strings.Builder
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "#!") && cur == nil:
			in = strings.TrimSpace(strings.TrimLeft(l, "#")) == heading
		case in && cur == nil && l == "```sh":
			cur = &strings.Builder{}
		case cur != nil && l == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(l + "\n")
		}
	}
	require.NotEmpty(t, blocks, "%s has sh blocks under %q", doc, heading)
	return blocks
}

// walkthrough runs the README's commands as written against a node that
// `make run` would start, with only its ports changed: the node listens on
// free ports (127.0.0.1:8080 and port 5353 of the text become them), and
// `bin/meridian` and `meridian` are the binary under test.
type walkthrough struct {
	t         *testing.T
	dir, http string
	dnsPort   int
	env       []string
}

func (w *walkthrough) run(block string) (string, error) {
	w.t.Helper()
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		switch {
		case strings.HasPrefix(l, "make "):
			continue // the node runs already
		}
		l = strings.ReplaceAll(l, "127.0.0.1:8080", w.http)
		l = strings.ReplaceAll(l, "-p 5353", fmt.Sprintf("-p %d", w.dnsPort))
		lines = append(lines, l)
	}
	cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", strings.Join(lines, "\n"))
	cmd.Dir, cmd.Env = w.dir, w.env
	out, err := cmd.CombinedOutput()
	w.t.Logf("README commands:\n%s\noutput:\n%s", strings.Join(lines, "\n"), out)
	return string(out), err
}

// TestReadmeWalkthroughs: the "Two commands", "Watch a failover" and
// "Overrides" sections of README.md, run as written.
func TestReadmeWalkthroughs(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	require.NoError(t, os.Symlink(meridianBin, filepath.Join(dir, "bin", "meridian")))
	// make run: serve deploy/examples/demo.yaml with its backends; the
	// ring's gossip port is moved to a free one too.
	demo, err := os.ReadFile(filepath.Join(srcdir.Root(), "deploy", "examples", "demo.yaml"))
	require.NoError(t, err)
	conf := strings.Replace(string(demo), "bind: 127.0.0.1:7946", fmt.Sprintf("bind: 127.0.0.1:%d", freePort(t)), 1)
	t.Setenv("XDG_STATE_HOME", state)
	m := startMeridian(t, conf, "--demo-backends")
	w := &walkthrough{t: t, dir: dir, http: strings.TrimPrefix(m.http, "http://"), dnsPort: m.dnsPort,
		env: append(os.Environ(), "PATH="+filepath.Join(dir, "bin")+":"+os.Getenv("PATH"), "XDG_STATE_HOME="+state,
			"MERIDIAN_HTTP="+strings.TrimPrefix(m.http, "http://"), "MERIDIAN_ADMIN_TOKEN=", "MERIDIAN_ADMIN_TOKEN_FILE=")}
	tok, err := os.Stat(filepath.Join(state, "meridian", "demo-admin-token"))
	require.NoError(t, err, "make run wrote this run's token")
	assert.Equal(t, os.FileMode(0o600), tok.Mode().Perm())
	assert.Contains(t, m.log(), "MERIDIAN_ADMIN_TOKEN_FILE="+filepath.Join(state, "meridian", "demo-admin-token"), "the log says where")
	require.Eventually(t, func() bool {
		out, _ := cli(t, m, "status")
		return strings.Count(out, " up ") >= 4
	}, 20*time.Second, 200*time.Millisecond, "the demo's backends are probed up")

	t.Run("two commands", func(t *testing.T) {
		blocks := readmeBlocks(t, "Two commands")
		require.Len(t, blocks, 2)
		out, err := w.run(blocks[1])
		require.NoError(t, err)
		assert.Regexp(t, `app\.demo\.meridian\.test\.\s+30\s+IN\s+A\s+127\.0\.0\.1[12]`, out)
		assert.Regexp(t, `api\.demo\.meridian\.test\.\s+\d+\s+IN\s+A\s+127\.0\.0\.21`, out)
		assert.Regexp(t, `www\.demo\.meridian\.test\.\s+\d+\s+IN\s+A\s+127\.0\.0\.33`, out)
		assert.Contains(t, out, "meridian_dns_queries_total")
		assert.Contains(t, out, "status page: http://", "the status page's URL is shown, not opened (no browser on a server)")
	})

	t.Run("watch a failover", func(t *testing.T) {
		out, err := w.run(readmeBlocks(t, "Watch a failover")[0])
		require.NoError(t, err, "every command succeeds, demo stop and start with the token")
		assert.Contains(t, out, "stopped 127.0.0.11")
		assert.Contains(t, out, "started 127.0.0.11")
		var answers []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "127.0.0.1") && !strings.Contains(l, " ") {
				answers = append(answers, l)
			}
		}
		require.GreaterOrEqual(t, len(answers), 10, "ten dig answers")
		for _, a := range answers[len(answers)-3:] {
			assert.Equal(t, "127.0.0.12", a, "after the failover dig only returns 127.0.0.12")
		}
		assert.Regexp(t, `app\.demo\.meridian\.test\s+127\.0\.0\.11\s+\S+\s+down`, out, "status shows 127.0.0.11 down")
		assert.NotRegexp(t, `(?m)^docs\.demo\.meridian\.test`, out, "the grep keeps app's rows and changes, not the CNAME service pointing at app")
		assert.NotRegexp(t, `(?m)^ +[0-9:]+ +www\.demo\.meridian\.test\.`, out, "nor another service's changes")
		assert.Regexp(t, `(?m)^ +[0-9:]+ +app\.demo\.meridian\.test\. 127\.0\.0\.11: \S+ -> down`, out, "app's change shows")
	})

	t.Run("the curl in the failover walkthrough carries the token", func(t *testing.T) {
		block := readmeBlocks(t, "Watch a failover")[0]
		i := strings.Index(block, "# or: curl ")
		require.GreaterOrEqual(t, i, 0)
		curl := strings.SplitN(block[i+len("# or: "):], "\n", 2)[0]
		curl = strings.Replace(curl, "/stop", "/start", 1)
		out, err := w.run("export MERIDIAN_ADMIN_TOKEN_FILE=" + filepath.Join(state, "meridian", "demo-admin-token") + "\n" + curl + " -f -s")
		require.NoError(t, err, out)
		assert.Contains(t, out, `"addr": "127.0.0.11:8081"`)
	})

	t.Run("overrides", func(t *testing.T) {
		out, err := w.run(readmeBlocks(t, "Overrides: drain, force, weight")[0])
		require.NoError(t, err, "every override command succeeds with the demo token")
		assert.Contains(t, out, "drained by demo@demo: kernel upgrade", "who is the token's name at the node that took the change")
		assert.Contains(t, out, "removed drain on cluster us-east")
		list, err := cli(t, m, "overrides")
		require.NoError(t, err)
		assert.NotContains(t, list, "kernel upgrade", "the undrain removed the drain")
		assert.Contains(t, list, "bad deploy")
	})

	t.Run("without the token every change is refused", func(t *testing.T) {
		out, err := w.run("bin/meridian demo stop 127.0.0.12")
		require.Error(t, err)
		assert.Contains(t, out, "no admin token")
		out, err = w.run("curl -s -X POST 127.0.0.1:8080/v1/demo/backends/127.0.0.12/stop")
		require.NoError(t, err)
		assert.Contains(t, out, "missing bearer token")
	})
}
