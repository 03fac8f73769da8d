package health

import (
	"context"
	"github.com/meridian-gslb/meridian/internal/vote"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
)

// recorder collects Results as OnResult.
type recorder struct {
	mu      sync.Mutex
	results []Result
}

func (r *recorder) add(res Result) {
	r.mu.Lock()
	r.results = append(r.results, res)
	r.mu.Unlock()
}

func (r *recorder) snapshot() []Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Result(nil), r.results...)
}

// of returns the results about s.
func (r *recorder) of(s vote.Subject) []Result {
	var out []Result
	for _, res := range r.snapshot() {
		if res.Subject == s {
			out = append(out, res)
		}
	}
	return out
}

// waitFor waits (at most 5s) until cond holds for the results about s
// and returns them.
func (r *recorder) waitFor(t *testing.T, s vote.Subject, what string, cond func([]Result) bool) []Result {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rs := r.of(s)
		if cond(rs) {
			return rs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: timed out waiting for %s; results: %v", s, what, rs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// changedTo reports whether the results after from contain a change to st,
// and returns the index of the first one.
func changedTo(rs []Result, from int, st vote.Status) (int, bool) {
	for i := from; i < len(rs); i++ {
		if rs[i].Changed && rs[i].Status == st {
			return i, true
		}
	}
	return 0, false
}

// run runs p until the test ends (returning once it runs) and checks that
// Run returns.
func run(t *testing.T, p *Prober) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after its context was cancelled")
		}
	})
	require.Eventually(t, func() bool {
		p.mu.RLock()
		defer p.mu.RUnlock()
		return p.runCtx != nil
	}, 5*time.Second, time.Millisecond, "Run did not start")
}

// serveAt starts an HTTP test server on addr ("127.0.0.1:0" for any port).
func serveAt(t *testing.T, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

func httpTarget(service string, addr netip.Addr, port int, interval time.Duration, fall, rise int) Target {
	return Target{
		Subject: vote.EndpointSubject(service, addr.String()),
		Addr:    addr,
		Check: &model.Check{
			Kind: model.CheckHTTP, Port: port, Method: "GET", Path: "/", Host: service,
			ExpectStatus: []string{"200-399"},
			Interval:     model.Duration(interval), Timeout: model.Duration(interval * 8 / 10),
			Fall: fall, Rise: rise,
		},
	}
}

func TestProberStoppedServerGoesDownAfterFallAndComesBackAfterRise(t *testing.T) {
	noLeaks(t)
	const fall, rise = 3, 2
	srv := serveAt(t, "127.0.0.1:0", okHandler)
	hostport := srv.Listener.Addr().String()
	addr, port := serverAddr(t, srv)
	var rec recorder
	p := NewProber(ProberOptions{Logger: quiet, OnResult: rec.add})
	tg := httpTarget("app.example.com.", addr, port, 50*time.Millisecond, fall, rise)
	p.SetTargets([]Target{tg})
	run(t, p)
	s := tg.Subject

	rs := rec.waitFor(t, s, "up", func(rs []Result) bool { _, ok := changedTo(rs, 0, vote.Up); return ok })
	up, _ := changedTo(rs, 0, vote.Up)
	assert.Equal(t, rise-1, up, "the first up comes after rise probes")
	st, ok := p.Status(s)
	assert.True(t, ok)
	assert.Equal(t, vote.Up, st)

	srv.Close()
	from := len(rs)
	rs = rec.waitFor(t, s, "down", func(rs []Result) bool { _, ok := changedTo(rs, from, vote.Down); return ok })
	down, _ := changedTo(rs, from, vote.Down)
	lastOK := up
	for i := up; i < down; i++ {
		if rs[i].Err == nil {
			lastOK = i
		}
	}
	assert.Equal(t, fall, down-lastOK, "down after exactly fall failures in a row")
	for _, r := range rs[lastOK+1 : down] {
		assert.Equal(t, vote.Up, r.Status, "fewer than fall failures stay up")
		assert.False(t, r.Changed)
		assert.ErrorContains(t, r.Err, "http "+hostport+" GET /: ")
	}
	assert.Equal(t, model.CheckHTTP, rs[down].Kind)

	serveAt(t, hostport, okHandler) // the same address again
	from = len(rs)
	rs = rec.waitFor(t, s, "up again", func(rs []Result) bool { _, ok := changedTo(rs, from, vote.Up); return ok })
	back, _ := changedTo(rs, from, vote.Up)
	lastFail := down
	for i := down; i < back; i++ {
		if rs[i].Err != nil {
			lastFail = i
		}
	}
	assert.Equal(t, rise, back-lastFail, "up after exactly rise successes in a row")
}

func TestJitterStaysWithinTenPercent(t *testing.T) {
	p := NewProber(ProberOptions{Logger: quiet, Rand: rand.New(rand.NewPCG(1, 2))})
	const iv = 100 * time.Millisecond
	lo, hi, sum := time.Hour, time.Duration(0), time.Duration(0)
	const n = 10000
	for range n {
		d := p.jitter(iv)
		require.GreaterOrEqual(t, d, 90*time.Millisecond)
		require.LessOrEqual(t, d, 110*time.Millisecond)
		lo, hi, sum = min(lo, d), max(hi, d), sum+d
	}
	assert.Less(t, lo, 91*time.Millisecond, "the whole -10% is used")
	assert.Greater(t, hi, 109*time.Millisecond, "the whole +10% is used")
	assert.InDelta(t, float64(iv), float64(sum/n), float64(time.Millisecond), "uniform around the interval")

	lo, hi = time.Hour, 0
	for range n {
		d := p.firstDelay(iv)
		require.GreaterOrEqual(t, d, time.Duration(0))
		require.Less(t, d, iv)
		lo, hi = min(lo, d), max(hi, d)
	}
	assert.Less(t, lo, 5*time.Millisecond, "first probes spread from 0")
	assert.Greater(t, hi, 95*time.Millisecond, "first probes spread up to the interval")
}

func TestProberProbesOnTheIntervalWithJitter(t *testing.T) {
	noLeaks(t)
	const iv = 50 * time.Millisecond
	srv := serveAt(t, "127.0.0.1:0", okHandler)
	addr, port := serverAddr(t, srv)
	var rec recorder
	p := NewProber(ProberOptions{Logger: quiet, OnResult: rec.add})
	tg := httpTarget("app.example.com.", addr, port, iv, 3, 2)
	p.SetTargets([]Target{tg})
	run(t, p)
	rs := rec.waitFor(t, tg.Subject, "12 probes", func(rs []Result) bool { return len(rs) >= 12 })

	var sum time.Duration
	for i := 1; i < len(rs); i++ {
		gap := rs[i].At.Sub(rs[i-1].At)
		// Timers never fire early, so -10% is a hard floor (less a little
		// for scheduling between the clock reads); late timers are the
		// machine's, not ours.
		assert.GreaterOrEqual(t, gap, iv*9/10-10*time.Millisecond, "gap %d", i)
		sum += gap
	}
	mean := sum / time.Duration(len(rs)-1)
	assert.GreaterOrEqual(t, mean, iv*9/10)
	assert.LessOrEqual(t, mean, iv*2, "loose: the mean gap is about the interval")
}

func TestProberSetTargets(t *testing.T) {
	noLeaks(t)
	const iv = 50 * time.Millisecond
	var hitsB atomic.Int64
	srvA := serveAt(t, "127.0.0.1:0", okHandler)
	srvB := serveAt(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hitsB.Add(1) }))
	srvC := serveAt(t, "127.0.0.1:0", okHandler)
	addr, portA := serverAddr(t, srvA)
	_, portB := serverAddr(t, srvB)
	_, portC := serverAddr(t, srvC)
	a := httpTarget("a.example.com.", addr, portA, iv, 2, 2)
	b := httpTarget("b.example.com.", addr, portB, iv, 2, 2)
	c := httpTarget("c.example.com.", addr, portC, iv, 2, 2)

	var rec recorder
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	p := NewProber(ProberOptions{Logger: quiet, OnResult: rec.add, Metrics: m})
	p.SetTargets([]Target{a, b})
	assert.Equal(t, 2.0, testutil.ToFloat64(m.targets))
	run(t, p)
	for _, tg := range []Target{a, b} {
		rec.waitFor(t, tg.Subject, "up", func(rs []Result) bool { _, ok := changedTo(rs, 0, vote.Up); return ok })
	}

	t.Run("an unchanged target keeps its state and a removed one stops", func(t *testing.T) {
		a2 := a
		check := *a.Check
		check.ExpectStatus = []string{"200-399"} // an equal copy, as a config reload makes
		a2.Check = &check
		before := len(rec.of(a.Subject))
		p.SetTargets([]Target{a2, c})
		afterB := len(rec.of(b.Subject))
		st, ok := p.Status(a.Subject)
		assert.True(t, ok)
		assert.Equal(t, vote.Up, st, "no reset to unknown")
		_, ok = p.Status(b.Subject)
		assert.False(t, ok, "b is gone")
		assert.False(t, p.ConfirmNow(b.Subject))
		assert.Equal(t, 2.0, testutil.ToFloat64(m.targets))

		time.Sleep(2 * iv) // a request of b already on the wire may still land
		hits := hitsB.Load()
		rs := rec.waitFor(t, a.Subject, "3 more probes", func(rs []Result) bool { return len(rs) >= before+3 })
		for _, r := range rs[before:] {
			assert.Equal(t, vote.Up, r.Status)
			assert.False(t, r.Changed, "the state was kept, so nothing changes")
		}
		rec.waitFor(t, c.Subject, "c up", func(rs []Result) bool { _, ok := changedTo(rs, 0, vote.Up); return ok })
		assert.Len(t, rec.of(b.Subject), afterB, "no result of b after SetTargets returned")
		assert.Equal(t, hits, hitsB.Load(), "b is not probed any more")
	})

	t.Run("a changed check starts again from unknown", func(t *testing.T) {
		a3 := a
		check := *a.Check
		check.Path = "/other"
		a3.Check = &check
		before := len(rec.of(a.Subject))
		p.SetTargets([]Target{a3, c})
		st, ok := p.Status(a.Subject)
		assert.True(t, ok)
		assert.Equal(t, vote.Unknown, st)
		rs := rec.waitFor(t, a.Subject, "up again", func(rs []Result) bool { _, ok := changedTo(rs, before, vote.Up); return ok })
		assert.Equal(t, vote.Unknown, rs[before].Status, "the first probe of the new check is below rise")
	})

	assert.Positive(t, testutil.ToFloat64(m.results.WithLabelValues(model.CheckHTTP, "ok")))
	assert.Equal(t, 1, testutil.CollectAndCount(m.duration))
}

// hangingChecker hangs until its context is done and records how many of
// its probes ran at once.
type hangingChecker struct{ inFlight, maxInFlight atomic.Int64 }

func (h *hangingChecker) Check(ctx context.Context, _ netip.Addr) error {
	n := h.inFlight.Add(1)
	defer h.inFlight.Add(-1)
	for {
		m := h.maxInFlight.Load()
		if n <= m || h.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	<-ctx.Done()
	return ctx.Err()
}

// constSource makes every random draw the same; 1<<64-1 pushes the first
// probe to the end of its interval, so tests can probe out of cycle alone.
type constSource uint64

func (s constSource) Uint64() uint64 { return uint64(s) }

func TestProberConfirmNow(t *testing.T) {
	noLeaks(t)
	ok := serveAt(t, "127.0.0.1:0", okHandler)
	addr, okPort := serverAddr(t, ok)

	const never = time.Hour // the regular cycle never probes during the test
	dead := httpTarget("dead.example.com.", addr, closedPort(t), never, 3, 2)
	alive := httpTarget("alive.example.com.", addr, okPort, never, 3, 2)
	slow := httpTarget("slow.example.com.", addr, okPort, never, 2, 2)
	slow.Check.Timeout = model.Duration(100 * time.Millisecond)
	hanging := &hangingChecker{}
	slow.Checker = hanging

	var rec recorder
	p := NewProber(ProberOptions{Logger: quiet, OnResult: rec.add, Rand: rand.New(constSource(1<<64 - 1))})
	p.SetTargets([]Target{dead, alive, slow})
	assert.False(t, p.ConfirmNow(dead.Subject), "not before Run")
	run(t, p)

	t.Run("an unknown subject is not confirmed", func(t *testing.T) {
		assert.False(t, p.ConfirmNow(vote.EndpointSubject("nope.example.com.", "192.0.2.1")))
		assert.False(t, p.ConfirmNow(vote.ClusterSubject("c1")))
	})

	t.Run("a dead endpoint goes down within fall quick probes", func(t *testing.T) {
		start := time.Now()
		require.True(t, p.ConfirmNow(dead.Subject))
		rs := rec.waitFor(t, dead.Subject, "down", func(rs []Result) bool { _, ok := changedTo(rs, 0, vote.Down); return ok })
		assert.Less(t, time.Since(start), 2*time.Second)
		require.Len(t, rs, 3)
		for i, r := range rs {
			assert.ErrorContains(t, r.Err, "connection refused")
			assert.Equal(t, i == 2, r.Changed)
		}
		assert.Equal(t, vote.Down, rs[2].Status)

		require.True(t, p.ConfirmNow(dead.Subject))
		rs = rec.waitFor(t, dead.Subject, "one more", func(rs []Result) bool { return len(rs) == 4 })
		assert.Equal(t, vote.Down, rs[3].Status, "confirming a down endpoint takes one probe")
	})

	t.Run("a healthy endpoint stops at the first success", func(t *testing.T) {
		require.True(t, p.ConfirmNow(alive.Subject))
		rec.waitFor(t, alive.Subject, "a result", func(rs []Result) bool { return len(rs) == 1 })
		time.Sleep(100 * time.Millisecond)
		rs := rec.of(alive.Subject)
		require.Len(t, rs, 1)
		assert.NoError(t, rs[0].Err)
		assert.Equal(t, vote.Unknown, rs[0].Status, "one success is below rise 2")
	})

	t.Run("confirmations of one subject do not overlap", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() { assert.True(t, p.ConfirmNow(slow.Subject)) })
		}
		wg.Wait()
		rs := rec.waitFor(t, slow.Subject, "down", func(rs []Result) bool { _, ok := changedTo(rs, 0, vote.Down); return ok })
		time.Sleep(150 * time.Millisecond)
		assert.Len(t, rec.of(slow.Subject), len(rs), "one confirmation of fall 2 probes")
		assert.Len(t, rs, 2)
		assert.Equal(t, int64(1), hanging.maxInFlight.Load(), "never two probes of one subject at once")
		assert.ErrorIs(t, rs[0].Err, context.DeadlineExceeded)
	})
}

func TestProberTargetWithBrokenCheckFailsEveryProbe(t *testing.T) {
	noLeaks(t)
	var rec recorder
	p := NewProber(ProberOptions{Logger: quiet, OnResult: rec.add})
	tg := httpTarget("tls.example.com.", localhost, 443, 50*time.Millisecond, 1, 1)
	tg.Check.Kind = model.CheckHTTPS
	tg.Check.CAFile = "/nonexistent/ca.pem"
	none := Target{Subject: vote.EndpointSubject("none.example.com.", "127.0.0.1"), Addr: localhost, Check: &model.Check{Kind: model.CheckNone}}
	p.SetTargets([]Target{tg, none})
	_, ok := p.Status(none.Subject)
	assert.False(t, ok, "kind none is not probed")
	run(t, p)
	rs := rec.waitFor(t, tg.Subject, "down", func(rs []Result) bool { _, ok := changedTo(rs, 0, vote.Down); return ok })
	assert.ErrorContains(t, rs[0].Err, "https check: ca_file: open /nonexistent/ca.pem")
}

func TestProberRunsOnce(t *testing.T) {
	noLeaks(t)
	p := NewProber(ProberOptions{Logger: quiet})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.NoError(t, p.Run(ctx))
	assert.ErrorContains(t, p.Run(ctx), "Run called twice")
}
