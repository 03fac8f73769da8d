//go:build e2e

package ring

import (
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/vote"
)

func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestForgedVoteFloodFigures is issue 31's acceptance for the CPU budget:
// 20 000 forged votes a second for 10 s in a listed prober's name, against
// a prober with memberlist's production settings (WAN: gossip every 500ms,
// push/pull every 60s); that prober publishes a real vote change every two
// seconds. It measures how long each takes to be applied and the process
// CPU time (the in-process flooder included), with the budget and, in the
// same run, without it.
//
//	go test -tags e2e -count=1 -run TestForgedVoteFloodFigures -v ./internal/ring/
func TestForgedVoteFloodFigures(t *testing.T) {
	const rate, length = 20000, 10 * time.Second
	s := vote.EndpointSubject("app.example.test.", "192.0.2.1")
	cpu := map[bool]time.Duration{}
	worst := map[bool]time.Duration{}
	for _, off := range []bool{false, true} {
		name := map[bool]string{false: "with the budget", true: "without the budget"}[off]
		t.Run(name, func(t *testing.T) {
			l := labFor(t)
			vcfg := l.config("v", "r1", RoleProber, "")
			vcfg.Memberlist, vcfg.SummaryInterval, vcfg.sigBudgetOff = model.Memberlist{}, time.Second, off // memberlist's WAN defaults
			v := l.start(t, vcfg)
			pcfg := l.config("p2", "r2", RoleProber, "")
			pcfg.Memberlist, pcfg.SummaryInterval, pcfg.Seeds = vcfg.Memberlist, time.Second, []string{v.LocalAddr()}
			p2 := l.start(t, pcfg)
			eventually(t, "p2 counts", func() bool { return len(v.Members()) == 2 })

			before := cpuTime(t)
			start := time.Now()
			done := make(chan int)
			go func() { done <- flood(t, v.LocalAddr(), "p2", "r2", rate, length, nil) }()
			var delays []time.Duration
			st := vote.Down
			for i := 1; ; i += 2 {
				at := start.Add(time.Duration(i) * time.Second)
				if at.After(start.Add(length - time.Second)) {
					break
				}
				time.Sleep(time.Until(at))
				p2.Publish(s, st, time.Now())
				published := time.Now()
				deadline := start.Add(length + 5*time.Second)
				for !hasVote(v, "p2", s, st) && time.Now().Before(deadline) {
					time.Sleep(2 * time.Millisecond)
				}
				d := time.Since(published)
				if !hasVote(v, "p2", s, st) {
					d = -1 // not applied
				}
				delays = append(delays, d)
				st = map[vote.Status]vote.Status{vote.Down: vote.Up, vote.Up: vote.Down}[st]
			}
			sent := <-done
			elapsed := time.Since(start)
			used := cpuTime(t) - before
			cpu[off] = used
			worst[off] = slices.Max(delays)
			if slices.Contains(delays, -1) {
				worst[off] = -1
			}
			t.Logf("%s: %d forged votes in %s (%.0f/s); real vote applied after %v (-1: not within the flood + 5 s); process CPU %s (%.2f cores, %.1f µs per forged vote); checks failed %.0f, refused unchecked %.0f, pulls applied %.0f",
				name, sent, elapsed.Round(time.Millisecond), float64(sent)/elapsed.Seconds(), roundAll(delays), used.Round(time.Millisecond), used.Seconds()/elapsed.Seconds(), float64(used.Microseconds())/float64(sent),
				testutil.ToFloat64(v.m.Rejected.WithLabelValues("vote", ReasonSignature)), testutil.ToFloat64(v.m.Rejected.WithLabelValues("vote", ReasonBudget)),
				testutil.ToFloat64(v.m.Pulls.WithLabelValues("applied")))
		})
	}
	if cpu[false] > 0 {
		t.Logf("CPU without the budget / with it: %.1f×", float64(cpu[true])/float64(cpu[false]))
	}
	assert.Greater(t, worst[false], time.Duration(-1), "with the budget, every real vote is applied during the flood")
	assert.LessOrEqual(t, worst[false], time.Second, "with the budget, a real vote is applied within 1 s")
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}
