package health

import (
	"context"
	"errors"
	"fmt"
	"github.com/meridian-gslb/meridian/internal/vote"
	"io"
	"maps"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
)

// HeartbeatTarget is a cluster whose readiness URL this prober polls.
type HeartbeatTarget struct {
	Cluster string           // cluster name
	HB      *model.Heartbeat // normalised; only URL, CAFile, InsecureSkipVerify, Interval and Grace are used
	// Poll, when set, replaces the GET of HB.URL: one readiness check whose
	// nil error is a success (a Kubernetes member's /readyz through its
	// credentials). PollID names it: a target whose PollID changes is
	// restarted like one whose HB changes.
	Poll   func(ctx context.Context) error
	PollID string
}

// beat is a HeartbeatTarget with its running state.
type beat struct {
	cluster  string
	hb       model.Heartbeat
	url      string // hb.URL with any password redacted, for messages
	client   *http.Client
	setupErr error // non-nil: every poll fails with it
	custom   func(ctx context.Context) error
	pollID   string
	ctx      context.Context
	cancel   context.CancelFunc
	status   atomic.Uint32

	mu      sync.Mutex // serialises the grace logic and OnResult of this cluster
	since   time.Time  // when polling started
	lastOK  time.Time  // last successful poll; zero = none yet
	stopped bool
}

func (b *beat) interval() time.Duration {
	if iv := b.hb.Interval.D(); iv > 0 {
		return iv
	}
	return model.DefaultHeartbeatPeriod
}

func (b *beat) grace() time.Duration {
	if g := b.hb.Grace.D(); g > 0 {
		return g
	}
	return max(model.DefaultHeartbeatGrace, 4*b.interval())
}

// cancelLocked ends b's goroutine; p.mu is held (b.cancel is set under it).
func (b *beat) cancelLocked() {
	if b.cancel != nil {
		b.cancel()
	}
}

// markStopped waits for a running OnResult of b; no Result of b is reported
// after it returns.
func (b *beat) markStopped() {
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
}

func newBeat(cluster string, hb model.Heartbeat) *beat {
	b := &beat{cluster: cluster, hb: hb, url: hb.URL}
	u, err := url.Parse(hb.URL)
	switch {
	case err != nil:
		b.setupErr = fmt.Errorf("heartbeat %s: url: %w", cluster, err)
		return b
	case u.Scheme != "http" && u.Scheme != "https":
		b.setupErr = fmt.Errorf("heartbeat %s: url %s: scheme must be http or https", cluster, u.Redacted())
		return b
	}
	b.url = u.Redacted()
	tc, err := tlsConfig("", hb.CAFile, hb.InsecureSkipVerify)
	if err != nil {
		b.setupErr = fmt.Errorf("heartbeat %s: %w", cluster, err)
		return b
	}
	b.client = probeClient(tc, b.interval())
	return b
}

// poll fetches the heartbeat URL once: any 2xx answer is a success.
func (b *beat) poll(ctx context.Context) error {
	if b.setupErr != nil {
		return b.setupErr
	}
	if b.custom != nil {
		return b.custom(ctx)
	}
	what := fmt.Sprintf("heartbeat %s GET %s", b.cluster, b.url)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.hb.URL, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	req.Header.Set("User-Agent", "meridian-health")
	resp, err := b.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s: status %d, want 2xx", what, resp.StatusCode)
	}
	return nil
}

// observe applies one poll outcome at time at: a success is Up at once;
// failures turn the cluster Down only once no poll has succeeded for longer
// than the grace (counted from the start of polling for a cluster never
// seen up); before that the status stays what it was.
func (b *beat) observe(ok bool, at time.Time) (s vote.Status, changed bool) {
	prev := vote.Status(b.status.Load())
	s = prev
	if ok {
		b.lastOK = at
		s = vote.Up
	} else {
		ref := b.lastOK
		if ref.IsZero() {
			ref = b.since
		}
		if at.Sub(ref) > b.grace() {
			s = vote.Down
		}
	}
	b.status.Store(uint32(s))
	return s, s != prev
}

// SetHeartbeats replaces the set of polled cluster heartbeats. Entries
// without a URL (agent-only heartbeats, handled on the ring) are ignored.
// Unchanged entries keep their state; removed and changed ones are stopped
// (no Result of theirs is reported once SetHeartbeats returns). Each poll
// is a GET bounded by the interval; its Result is Up when it succeeded and
// Down only after no success for longer than Grace.
func (p *Prober) SetHeartbeats(hs []HeartbeatTarget) {
	p.setMu.Lock()
	defer p.setMu.Unlock()
	p.mu.RLock()
	cur := maps.Clone(p.beats)
	p.mu.RUnlock()

	next := make(map[string]*beat, len(hs))
	var started []*beat
	for _, h := range hs {
		if h.HB == nil || (h.HB.URL == "" && h.Poll == nil) {
			continue
		}
		if _, dup := next[h.Cluster]; dup {
			p.log.Warn("health: duplicate heartbeat ignored", "cluster", h.Cluster)
			continue
		}
		if old, ok := cur[h.Cluster]; ok && old.hb == *h.HB && old.pollID == h.PollID {
			next[h.Cluster] = old
			continue
		}
		var b *beat
		if h.Poll != nil {
			b = &beat{cluster: h.Cluster, hb: *h.HB, url: h.PollID, custom: h.Poll, pollID: h.PollID}
		} else {
			b = newBeat(h.Cluster, *h.HB)
		}
		if b.setupErr != nil {
			p.log.Error("health: cannot poll heartbeat; every poll will fail", "cluster", h.Cluster, "err", b.setupErr)
		}
		next[h.Cluster] = b
		started = append(started, b)
	}
	swapRunners(&p.mu, func() { p.beats = next }, cur, next, started, p.startBeatLocked)
}

// startBeatLocked starts b's poll loop if the prober runs; p.mu is held.
func (p *Prober) startBeatLocked(b *beat) {
	if p.runCtx == nil || b.ctx != nil {
		return
	}
	b.ctx, b.cancel = context.WithCancel(p.runCtx)
	b.since = p.now()
	p.wg.Go(func() { p.beatLoop(b) })
}

func (p *Prober) beatLoop(b *beat) {
	iv := b.interval()
	timer := time.NewTimer(p.firstDelay(iv))
	defer timer.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-timer.C:
		}
		start := time.Now()
		p.pollBeat(b)
		timer.Reset(max(0, p.jitter(iv)-time.Since(start)))
	}
}

func (p *Prober) pollBeat(b *beat) {
	at := p.now()
	start := time.Now()
	ctx, cancel := context.WithTimeout(b.ctx, b.interval())
	err := b.poll(ctx)
	cancel()
	d := time.Since(start)
	if b.ctx.Err() != nil {
		return // stopped while polling
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return
	}
	s, changed := b.observe(err == nil, at)
	p.metrics.poll(b.cluster, err)
	switch {
	case changed:
		p.log.Info("health: cluster heartbeat status changed", "cluster", b.cluster, "status", s, "err", err)
	case err != nil:
		p.log.Debug("health: heartbeat poll failed", "cluster", b.cluster, "status", s, "err", err)
	}
	if p.onResult != nil {
		p.onResult(Result{Subject: vote.ClusterSubject(b.cluster), Status: s, Changed: changed, At: at, Err: err, Duration: d, Kind: KindHeartbeat})
	}
}
