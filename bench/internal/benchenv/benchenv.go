// Package benchenv reads the benchmarks' settings from the environment:
// each getter returns the default for an unset variable and collects an
// error naming the variable, its value and what is allowed for a bad one,
// so a run reports every bad setting at once.
package benchenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Env collects the errors of the settings read so far.
type Env struct{ errs []error }

// Err is every bad setting read so far, joined (nil: none).
func (e *Env) Err() error { return errors.Join(e.errs...) }

// Add records an error of a check made outside the getters.
func (e *Env) Add(err error) { e.errs = append(e.errs, err) }

// Int reads an integer in [lo, hi].
func (e *Env) Int(name string, def, lo, hi int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		e.Add(fmt.Errorf("%s=%q: want an integer in [%d, %d]", name, s, lo, hi))
		return def
	}
	return v
}

// Duration reads a duration of at least lo, in Go syntax ("90s", "2m")
// or plain seconds ("60").
func (e *Env) Duration(name string, def, lo time.Duration) time.Duration {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if n, nerr := strconv.Atoi(s); nerr == nil {
			d, err = time.Duration(n)*time.Second, nil
		}
	}
	if err != nil || d < lo {
		e.Add(fmt.Errorf("%s=%q: want a duration of at least %v (e.g. 60 or 60s)", name, s, lo))
		return def
	}
	return d
}

// Bool reads 1/0 (true/false, yes/no, on/off).
func (e *Env) Bool(name string, def bool) bool {
	switch strings.ToLower(os.Getenv(name)) {
	case "":
		return def
	case "1", "true", "yes", "on":
		return true
	case "0", "false", "no", "off":
		return false
	}
	e.Add(fmt.Errorf("%s=%q: want 1 or 0", name, os.Getenv(name)))
	return def
}

// List reads a space-separated subset of all, in the given order (unset:
// all of them).
func (e *Env) List(name string, all []string) []string {
	s := os.Getenv(name)
	if strings.TrimSpace(s) == "" {
		return all
	}
	var out []string
	for _, w := range strings.Fields(s) {
		switch {
		case !slices.Contains(all, w):
			e.Add(fmt.Errorf("%s: unknown %q (allowed: %s)", name, w, strings.Join(all, " ")))
		case slices.Contains(out, w):
			e.Add(fmt.Errorf("%s: %q is listed twice", name, w))
		default:
			out = append(out, w)
		}
	}
	return out
}

// RepoRoot is the directory of the module's go.mod, from the working
// directory up.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/meridian-gslb/meridian\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the meridian repository (no go.mod of github.com/meridian-gslb/meridian above the working directory)")
		}
		dir = parent
	}
}

// Sleep waits d or until ctx is done (its error).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Memory reads VmRSS and VmHWM (the peak since the process started) of
// pid from /proc/PID/status, in KiB.
func Memory(pid int) (rssKB, hwmKB uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			rssKB = n
		case "VmHWM":
			hwmKB = n
		}
	}
	return rssKB, hwmKB, nil
}

// Stop ends a process the benchmark started: SIGTERM, then SIGKILL when
// exited (closed once the process has been waited for) is not closed within
// grace. It returns once the process is gone and reports whether it had to
// be killed.
func Stop(p *os.Process, exited <-chan struct{}, grace time.Duration) (killed bool) {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		return false
	case <-time.After(grace):
		_ = p.Kill()
		<-exited
		return true
	}
}
