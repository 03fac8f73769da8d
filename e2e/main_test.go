//go:build e2e

// Package e2e runs the real meridian binary and queries it with real DNS
// clients (dig, kdig). Run with `make e2e` (it builds the binary and
// installs the clients when missing).
package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/srcdir"
)

var meridianBin string

func TestMain(m *testing.M) {
	meridianBin = os.Getenv("MERIDIAN_BIN")
	if meridianBin == "" {
		dir, err := os.MkdirTemp("", "meridian-e2e")
		if err != nil {
			panic(err)
		}
		meridianBin = filepath.Join(dir, "meridian")
		build := exec.Command("go", "build", "-o", meridianBin, "./cmd/meridian")
		build.Dir = srcdir.Root()
		build.Stdout, build.Stderr = os.Stdout, os.Stderr
		if err := build.Run(); err != nil {
			panic("build meridian: " + err.Error())
		}
	}
	// State (overrides, ring identities) of every process the tests start
	// lands in a temp dir, never in the home directory; startMeridian gives
	// each instance its own.
	state, err := os.MkdirTemp("", "meridian-e2e-state")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	e2eStateHome = state
	for _, tool := range []string{"dig", "kdig"} {
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %s not found: run `make e2e`, which installs it\n", tool)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(state)
	os.Exit(code)
}

// e2eStateHome is the XDG_STATE_HOME of the test binary; startMeridian
// gives each instance its own unless a test set another one.
var e2eStateHome string

// freePort returns a loopback port free for both UDP and TCP.
func freePort(t testing.TB) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			u.Close()
			return port
		}
	}
	t.Fatal("no free port")
	return 0
}

// instance is one running meridian serve.
type instance struct {
	cmd      *exec.Cmd
	dnsPort  int
	dns      string // 127.0.0.1:port
	http     string // http://127.0.0.1:port
	config   string // path of the config file
	mu       sync.Mutex
	logLines []string
	exited   chan struct{}
}

// startMeridian writes config (with the server section filled in) to a file
// and starts `meridian serve` on it, waiting until /readyz answers.
func startMeridian(t testing.TB, config string, extraArgs ...string) *instance {
	t.Helper()
	dir := t.TempDir()
	inst := &instance{dnsPort: freePort(t), exited: make(chan struct{})}
	httpPort := freePort(t)
	inst.dns = fmt.Sprintf("127.0.0.1:%d", inst.dnsPort)
	inst.http = fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	inst.config = filepath.Join(dir, "meridian.yaml")
	require.NoError(t, os.WriteFile(inst.config, []byte(config), 0o644))
	args := append([]string{"serve", "--config", inst.config,
		"--dns-listen", inst.dns, "--http-listen", fmt.Sprintf("127.0.0.1:%d", httpPort)}, extraArgs...)
	inst.cmd = exec.Command(meridianBin, args...)
	if os.Getenv("XDG_STATE_HOME") == e2eStateHome { // not set by the test itself
		inst.cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(dir, "state"))
	}
	stderr, err := inst.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, inst.cmd.Start())
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			inst.mu.Lock()
			inst.logLines = append(inst.logLines, sc.Text())
			inst.mu.Unlock()
		}
	}()
	go func() { inst.cmd.Wait(); close(inst.exited) }()
	t.Cleanup(func() {
		inst.stop(t)
		if t.Failed() {
			t.Logf("meridian log:\n%s", inst.log())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(inst.http + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return inst
			}
		}
		select {
		case <-inst.exited:
			t.Fatalf("meridian exited early:\n%s", inst.log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("meridian not ready after 10s:\n%s", inst.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (i *instance) log() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return strings.Join(i.logLines, "\n")
}

func (i *instance) stop(t testing.TB) {
	select {
	case <-i.exited:
		return
	default:
	}
	i.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-i.exited:
	case <-time.After(10 * time.Second):
		i.cmd.Process.Kill()
		<-i.exited
		t.Errorf("meridian did not stop within 10s of SIGTERM")
	}
}

// run runs a command with a timeout and returns its combined output.
func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	require.NoError(t, err, "%s %s:\n%s", name, strings.Join(args, " "), out)
	return string(out)
}

func (i *instance) dig(t testing.TB, args ...string) string {
	t.Helper()
	return run(t, "dig", append([]string{"@127.0.0.1", "-p", fmt.Sprint(i.dnsPort), "+time=2", "+tries=1"}, args...)...)
}

func (i *instance) kdig(t testing.TB, args ...string) string {
	t.Helper()
	return run(t, "kdig", append([]string{"@127.0.0.1", "-p", fmt.Sprint(i.dnsPort), "+time=2", "+retry=0"}, args...)...)
}

func (i *instance) metrics(t testing.TB) string {
	t.Helper()
	resp, err := http.Get(i.http + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return b.String()
}
