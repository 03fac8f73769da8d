//go:build e2e

// Package e2e runs the real meridian binary and queries it with real DNS
// clients (dig, kdig). Run with `make e2e` (it builds the binary and
// installs the clients when missing).
package e2e

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
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

// freePort returns a loopback port free for both UDP and TCP, outside the
// kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range).
//
// A server port inside that range can be handed to a client as its own
// source port: dig and kdig open a fresh UDP socket per query with
// SO_REUSEPORT set, and a socket of the same user that sets it too joins
// the server's SO_REUSEPORT group on that port. The client's query to the
// server is then delivered back to the client itself ("query response not
// set"), seen in CI about 3 times in 100 runs of a test sending 200 queries
// through `dig -f`. A port the kernel never picks on its own cannot collide.
func freePort(t testing.TB) int {
	t.Helper()
	lo, hi := ephemeralRange()
	freePortMu.Lock()
	defer freePortMu.Unlock()
	for range 200 {
		port := testPortMin + rand.IntN(65536-testPortMin)
		if (port >= lo && port <= hi) || freePortGiven[port] {
			continue
		}
		tl, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		tl.Close()
		if err != nil {
			continue
		}
		u.Close()
		freePortGiven[port] = true
		return port
	}
	t.Fatalf("no free port in %d-65535 outside the ephemeral range %d-%d", testPortMin, lo, hi)
	return 0
}

// testPortMin is the lowest port freePort hands out: above the ports
// services commonly listen on (the demo's 5353 and 8080 among them).
const testPortMin = 10000

var (
	freePortMu    sync.Mutex
	freePortGiven = map[int]bool{} // ports handed out by this process, never twice
)

// ephemeralRange reads the kernel's range of automatic source ports
// (32768-60999 by default on Linux).
func ephemeralRange() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if _, err := fmt.Sscan(string(b), &lo, &hi); err == nil && lo > 0 && hi >= lo {
			return lo, hi
		}
	}
	return 32768, 60999
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

func TestFreePortIsNeverOneTheKernelHandsOutAsASourcePort(t *testing.T) {
	lo, hi := ephemeralRange()
	seen := map[int]bool{}
	for range 100 {
		p := freePort(t)
		require.False(t, p >= lo && p <= hi, "port %d is inside the ephemeral range %d-%d", p, lo, hi)
		require.GreaterOrEqual(t, p, testPortMin)
		require.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
	}
}
