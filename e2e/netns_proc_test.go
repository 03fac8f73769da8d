//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	// procStopTimeout is how long Stop waits after SIGTERM before SIGKILL.
	procStopTimeout = 10 * time.Second
	// procKillTimeout is how long Kill waits for the process to be reaped.
	procKillTimeout = 5 * time.Second
)

// Proc is a long-running process started in a host's namespace. It runs
// in its own process group, dies with the test binary (PR_SET_PDEATHSIG),
// and is killed by the cleanup of the test that started it and by the
// lab's. All methods are safe for concurrent use.
type Proc struct {
	Name string // the log prefix given to Start
	Host *Host

	cmd    *exec.Cmd
	out    *labBuffer
	exited chan struct{}
	err    error // written before exited is closed
}

// Start starts name with args in the host's namespace (via `ip netns
// exec`, which execs it in place, so the Proc's pid is the command's).
// Stdout and stderr are captured together (Output) and logged under
// logPrefix if the test fails.
func (h *Host) Start(t testing.TB, logPrefix, name string, args ...string) *Proc {
	t.Helper()
	return h.start(t, logPrefix, nil, name, args...)
}

// start is Start with extra environment variables.
func (h *Host) start(t testing.TB, logPrefix string, env []string, name string, args ...string) *Proc {
	t.Helper()
	l := h.lab
	p := &Proc{Name: logPrefix, Host: h, out: &labBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command("ip", append([]string{"netns", "exec", h.NS, name}, args...)...)
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.WaitDelay = 2 * time.Second
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkOpen(t)
	require.NoError(t, p.cmd.Start(), "%s: start %s", h.Name, name)
	l.procs = append(l.procs, p)
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("%s (on %s) output:\n%s", logPrefix, h.Name, p.Output())
		}
	})
	return p
}

// Pid returns the process id (and process group id).
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Output returns everything the process wrote to stdout and stderr so far.
func (p *Proc) Output() string { return p.out.String() }

// Exited is closed once the process has exited and been reaped.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Err returns how the process ended (nil for status 0); only meaningful
// after Exited is closed.
func (p *Proc) Err() error {
	select {
	case <-p.exited:
		return p.err
	default:
		return nil
	}
}

// Signal sends sig to the process only (not its children).
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Stop sends SIGTERM to the process group and waits up to 10s for the
// process to exit, then kills the group. It returns how the process ended
// (nil for status 0), or an error saying it had to be killed.
func (p *Proc) Stop() error {
	select {
	case <-p.exited:
		return p.err
	default:
	}
	_ = syscall.Kill(-p.Pid(), syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.err
	case <-time.After(procStopTimeout):
		p.Kill()
		return fmt.Errorf("%s on %s: still running %s after SIGTERM; killed", p.Name, p.Host.Name, procStopTimeout)
	}
}

// Kill sends SIGKILL to the process group and waits (up to 5s) until the
// process is reaped. Killing an exited process does nothing.
func (p *Proc) Kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(procKillTimeout):
	}
}

// WaitFor waits until a line of the output contains substr and returns
// that line. It fails the test if the process exits first or timeout
// passes.
func (p *Proc) WaitFor(t testing.TB, substr string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		exited := false
		select {
		case <-p.exited:
			exited = true
		default:
		}
		// Read the output after checking for exit: a process that printed
		// and then exited is still found.
		if line := p.lineWith(substr); line != "" {
			return line
		}
		if exited {
			t.Fatalf("%s on %s exited (%v) before printing %q:\n%s", p.Name, p.Host.Name, p.Err(), substr, p.Output())
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s on %s: no %q after %s:\n%s", p.Name, p.Host.Name, substr, timeout, p.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *Proc) lineWith(substr string) string {
	for line := range strings.Lines(p.Output()) {
		if strings.Contains(line, substr) {
			return strings.TrimRight(line, "\n")
		}
	}
	return ""
}

// StartHTTP serves HTTP on addr inside the host's namespace from a copy
// of the test binary: 200 "ok" on path, 404 elsewhere. It returns once
// the server listens; Stop shuts it down cleanly.
func (h *Host) StartHTTP(t testing.TB, addr netip.AddrPort, path string) *Proc {
	t.Helper()
	p := h.startHelper(t, "http "+addr.String(), "http", addr.String(), path)
	p.WaitFor(t, "ready", 10*time.Second)
	return p
}

// labBuffer is a bytes.Buffer safe for one writer and many readers.
type labBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *labBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *labBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
