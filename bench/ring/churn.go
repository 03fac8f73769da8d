package main

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"github.com/meridian-gslb/meridian/bench/internal/benchenv"
)

// churnResult is what the churn phase saw.
type churnResult struct {
	Failing    int             // endpoints made to fail
	Window     *windowResult   // the first ChurnWindow after the failure
	DownAfter  []time.Duration // per node: failure → last failed endpoint decided down (0: never)
	UpAfter    []time.Duration // per node: recovery → last one decided up again (0: never)
	FalseDowns []int           // per node: most healthy endpoints seen decided down at once
	DownViews  []healthView    // the last poll while waiting for down
	UpViews    []healthView    // the last poll while waiting for up
}

// churn makes ChurnPercent of the endpoints fail, measures the ring for
// ChurnWindow, waits until every node decided them down, makes them healthy
// again and waits until every node decided them up.
func (b *bench) churn(ctx context.Context) error {
	failing := failingSet(b.p.Endpoints, b.p.ChurnPercent)
	n := len(b.nodes)
	c := &churnResult{Failing: len(failing), DownAfter: make([]time.Duration, n), UpAfter: make([]time.Duration, n), FalseDowns: make([]int, n)}
	b.rep.churn = c
	logf("churn: %d endpoints (%d%%) answer 503 from now on; measuring %v, waiting up to %v for every node to decide them down",
		len(failing), b.p.ChurnPercent, b.p.ChurnWindow, b.p.DownTimeout)

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tFail, wc, err := b.startChurnWindow(ctx, wctx, failing)
	if err != nil {
		return err
	}
	// Down: poll every node until each has decided every failing endpoint down.
	done, err := b.awaitDecided(ctx, c, failing, "down", tFail, tFail.Add(b.p.DownTimeout))
	if err != nil {
		return err
	}
	if !done {
		cancel()
		<-wc
		return fmt.Errorf("churn: not every node decided the %d failed endpoints down within %v (BENCH_RING_DOWN_TIMEOUT):\n%s",
			len(failing), b.p.DownTimeout, churnLines(c.DownViews, len(failing), "down"))
	}
	logf("churn: every node decided all %d failed endpoints down (slowest %.1f s after the failure)", len(failing), maxDur(c.DownAfter).Seconds())
	r := <-wc
	if r.err != nil {
		return fmt.Errorf("churn window: %w", r.err)
	}
	c.Window = r.w

	// Up again: healthy endpoints come back after rise probes and the hold-down.
	b.backend.setFailing(nil)
	tUp := time.Now()
	logf("churn: the %d endpoints are healthy again; waiting up to %v for every node to decide them up (hold-down included)", len(failing), b.p.RecoverTimeout)
	done, err = b.awaitDecided(ctx, c, failing, "up", tUp, tUp.Add(b.p.RecoverTimeout))
	if err != nil {
		return err
	}
	if !done {
		return fmt.Errorf("churn: not every node decided the %d recovered endpoints up within %v (BENCH_RING_RECOVER_TIMEOUT):\n%s",
			len(failing), b.p.RecoverTimeout, churnLines(c.UpViews, len(failing), "up"))
	}
	logf("churn: every node decided them up again (slowest %.1f s after recovery)", maxDur(c.UpAfter).Seconds())
	return nil
}

// churnWindow is the outcome of the measurement window of the churn phase.
type churnWindow struct {
	w   *windowResult
	err error
}

// startChurnWindow starts the ChurnWindow measurement under wctx, which
// makes the failing endpoints fail as it starts; it returns when that
// happened and the channel the window's outcome arrives on.
func (b *bench) startChurnWindow(ctx, wctx context.Context, failing map[netip.Addr]bool) (time.Time, <-chan churnWindow, error) {
	started := make(chan time.Time, 1)
	wc := make(chan churnWindow, 1)
	go func() {
		w, err := b.window(wctx, b.p.ChurnWindow, func() {
			b.backend.setFailing(failing)
			started <- time.Now()
		})
		wc <- churnWindow{w, err}
	}()
	select {
	case tFail := <-started:
		return tFail, wc, nil
	case r := <-wc:
		return time.Time{}, nil, fmt.Errorf("churn window: %w", r.err)
	case <-ctx.Done():
		return time.Time{}, nil, ctx.Err()
	}
}

// awaitDecided polls every node every two seconds until each has decided
// every failing endpoint want ("down" or "up"), recording when each node got
// there (after since), the false downs and the last views. It reports false
// when deadline passed first.
func (b *bench) awaitDecided(ctx context.Context, c *churnResult, failing map[netip.Addr]bool, want string, since, deadline time.Time) (bool, error) {
	after, views := c.UpAfter, &c.UpViews
	if want == "down" {
		after, views = c.DownAfter, &c.DownViews
	}
	for {
		if err := benchenv.Sleep(ctx, 2*time.Second); err != nil {
			return false, err
		}
		if err := b.checkAlive(); err != nil {
			return false, err
		}
		*views = b.pollAll(ctx, failing)
		done := true
		for i, v := range *views {
			c.FalseDowns[i] = max(c.FalseDowns[i], v.OtherDown)
			decided, at := v.FailUp, v.LastUpSince
			if want == "down" {
				decided, at = v.FailDown, v.LastDownSince
			}
			if v.Err == nil && decided == len(failing) {
				if after[i] == 0 {
					after[i] = max(at.Sub(since), time.Millisecond)
				}
			} else {
				done = false
			}
		}
		if done {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, nil
		}
	}
}

// churnLines describes, one line per node, how far it got deciding the
// failing endpoints want.
func churnLines(vs []healthView, failing int, want string) string {
	var lines []string
	for _, v := range vs {
		if v.Err != nil {
			lines = append(lines, "  "+v.String())
			continue
		}
		lines = append(lines, fmt.Sprintf("  %s: %d of %d failed endpoints down, %d up (want all %s); %d healthy endpoints down; %s",
			v.Node, v.FailDown, failing, v.FailUp, want, v.OtherDown, v.String()))
	}
	return strings.Join(lines, "\n")
}

func maxDur(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

// restart stops the last prober (SIGTERM: it leaves the ring), starts it
// again with the same name and address, and waits until every node holds a
// fresh vote from every prober on every endpoint again.
func (b *bench) restart(ctx context.Context) error {
	n := b.nodes[len(b.nodes)-1]
	logf("restart: stopping %s and starting it again; waiting up to %v until every node counts its votes again", n.name, b.p.RestartTimeout)
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(10 * time.Second):
		n.cmd.Process.Kill()
		<-n.exited
	case <-ctx.Done():
		return ctx.Err()
	}
	n.logFile.Close()
	n.logFile = nil
	t0 := time.Now()
	if err := b.start(n); err != nil {
		return err
	}
	if err := b.waitReady(ctx, []*node{n}); err != nil {
		return err
	}
	r := &restartResult{Node: n.name}
	b.rep.restart = r
	deadline := t0.Add(b.p.RestartTimeout)
	for {
		if err := benchenv.Sleep(ctx, 2*time.Second); err != nil {
			return err
		}
		if err := b.checkAlive(); err != nil {
			return err
		}
		r.Views = b.pollAll(ctx, nil)
		done := true
		for _, v := range r.Views {
			if v.Err != nil || v.Probers != b.p.Probers || v.FullVotes != b.p.Endpoints {
				done = false
			}
		}
		if done {
			r.After = time.Since(t0)
			logf("restart: every node counts every prober's votes again %.1f s after the restart", r.After.Seconds())
			return nil
		}
		if time.Now().After(deadline) {
			var lines []string
			for _, v := range r.Views {
				lines = append(lines, "  "+v.String())
			}
			msg := fmt.Sprintf("after restarting %s, not every node held a fresh vote from every prober on every endpoint within %v (BENCH_RING_RESTART_TIMEOUT):\n%s",
				n.name, b.p.RestartTimeout, strings.Join(lines, "\n"))
			logf("WARNING: %s", msg)
			b.rep.findings = append(b.rep.findings, msg)
			return nil
		}
	}
}

// restartResult is what the restart phase saw.
type restartResult struct {
	Node  string
	After time.Duration // restart → every node counts every prober again (0: never)
	Views []healthView  // the last poll
}
