package health

import (
	"context"
	"errors"
	"fmt"
	"github.com/meridian-gslb/meridian/internal/vote"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
)

func TestHeartbeatPollTakesGraceBeforeDown(t *testing.T) {
	noLeaks(t)
	const (
		iv    = 30 * time.Millisecond
		grace = 150 * time.Millisecond
	)
	var failing atomic.Bool
	srv := serveAt(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
		}
	}))
	var rec recorder
	m := NewMetrics(prometheus.NewRegistry())
	p := NewProber(ProberOptions{Logger: quiet, OnResult: rec.add, Metrics: m})
	hb := &model.Heartbeat{URL: srv.URL + "/readyz", Interval: model.Duration(iv), Grace: model.Duration(grace)}
	p.SetHeartbeats([]HeartbeatTarget{
		{Cluster: "c1", HB: hb},
		{Cluster: "agent-only", HB: &model.Heartbeat{Agent: true}},
	})
	_, ok := p.Status(vote.ClusterSubject("agent-only"))
	assert.False(t, ok, "agent heartbeats are not polled")
	run(t, p)
	s := vote.ClusterSubject("c1")

	rs := rec.waitFor(t, s, "up", func(rs []Result) bool { return len(rs) > 0 })
	assert.Equal(t, vote.Up, rs[0].Status, "one successful poll is up")
	assert.True(t, rs[0].Changed)
	assert.Equal(t, KindHeartbeat, rs[0].Kind)

	failing.Store(true)
	from := len(rs)
	rs = rec.waitFor(t, s, "down", func(rs []Result) bool { _, ok := changedTo(rs, from, vote.Down); return ok })
	down, _ := changedTo(rs, from, vote.Down)
	lastOK := from - 1
	for i := from; i < down; i++ {
		if rs[i].Err == nil {
			lastOK = i
		}
	}
	require.Greater(t, down-lastOK, 1, "one failed poll does not make the cluster down")
	for _, r := range rs[lastOK+1 : down] {
		assert.Equal(t, vote.Up, r.Status, "within the grace the cluster stays up")
		assert.ErrorContains(t, r.Err, "heartbeat c1 GET "+srv.URL+"/readyz: status 503, want 2xx")
	}
	assert.Greater(t, rs[down].At.Sub(rs[lastOK].At), grace, "down only after the grace")
	st, _ := p.Status(s)
	assert.Equal(t, vote.Down, st)

	failing.Store(false)
	from = len(rs)
	rs = rec.waitFor(t, s, "up again", func(rs []Result) bool { _, ok := changedTo(rs, from, vote.Up); return ok })
	back, _ := changedTo(rs, from, vote.Up)
	assert.NoError(t, rs[back].Err)
	for _, r := range rs[down+1 : back] {
		assert.Error(t, r.Err, "the first successful poll is up again")
	}
	assert.Positive(t, testutil.ToFloat64(m.polls.WithLabelValues("c1", "ok")))
	assert.Positive(t, testutil.ToFloat64(m.polls.WithLabelValues("c1", "fail")))
}

func TestHeartbeatNeverUpGoesDownAfterGrace(t *testing.T) {
	noLeaks(t)
	const grace = 100 * time.Millisecond
	var rec recorder
	start := time.Now()
	p := NewProber(ProberOptions{Logger: quiet, OnResult: rec.add})
	hb := &model.Heartbeat{URL: fmt.Sprintf("http://127.0.0.1:%d/readyz", closedPort(t)), Interval: model.Duration(20 * time.Millisecond), Grace: model.Duration(grace)}
	p.SetHeartbeats([]HeartbeatTarget{{Cluster: "c2", HB: hb}})
	run(t, p)
	rs := rec.waitFor(t, vote.ClusterSubject("c2"), "down", func(rs []Result) bool { _, ok := changedTo(rs, 0, vote.Down); return ok })
	down, _ := changedTo(rs, 0, vote.Down)
	assert.Greater(t, time.Since(start), grace)
	for _, r := range rs[:down] {
		assert.Equal(t, vote.Unknown, r.Status, "a cluster never seen up is unknown within the grace")
		assert.ErrorContains(t, r.Err, "connection refused")
	}
}

func TestSetHeartbeatsKeepsUnchangedClusters(t *testing.T) {
	noLeaks(t)
	srv := serveAt(t, "127.0.0.1:0", okHandler)
	var rec recorder
	p := NewProber(ProberOptions{Logger: quiet, OnResult: rec.add})
	hb := model.Heartbeat{URL: srv.URL, Interval: model.Duration(30 * time.Millisecond), Grace: model.Duration(time.Second)}
	p.SetHeartbeats([]HeartbeatTarget{{Cluster: "c1", HB: &hb}, {Cluster: "c2", HB: &hb}})
	run(t, p)
	rec.waitFor(t, vote.ClusterSubject("c1"), "up", func(rs []Result) bool { return len(rs) > 0 })
	rec.waitFor(t, vote.ClusterSubject("c2"), "up", func(rs []Result) bool { return len(rs) > 0 })

	same := hb
	p.SetHeartbeats([]HeartbeatTarget{{Cluster: "c1", HB: &same}})
	n2 := len(rec.of(vote.ClusterSubject("c2")))
	st, ok := p.Status(vote.ClusterSubject("c1"))
	assert.True(t, ok)
	assert.Equal(t, vote.Up, st)
	_, ok = p.Status(vote.ClusterSubject("c2"))
	assert.False(t, ok)
	from := len(rec.of(vote.ClusterSubject("c1")))
	rs := rec.waitFor(t, vote.ClusterSubject("c1"), "2 more polls", func(rs []Result) bool { return len(rs) >= from+2 })
	for _, r := range rs[from:] {
		assert.False(t, r.Changed, "the state was kept")
	}
	assert.Len(t, rec.of(vote.ClusterSubject("c2")), n2, "no poll of a removed cluster is reported")
}

func TestHeartbeatPoll(t *testing.T) {
	noLeaks(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/readyz":
			io.WriteString(w, "ok")
		case "/moved":
			http.Redirect(w, r, "/readyz", http.StatusFound)
		default:
			http.Error(w, "no", http.StatusInternalServerError)
		}
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	ca := writeCA(t, srv)
	tests := []struct {
		name    string
		hb      model.Heartbeat
		wantErr string
	}{
		{name: "an untrusted certificate fails by default", hb: model.Heartbeat{URL: srv.URL + "/readyz"}, wantErr: "tls: failed to verify certificate"},
		{name: "the certificate passes with its CA in ca_file", hb: model.Heartbeat{URL: srv.URL + "/readyz", CAFile: ca}},
		{name: "an untrusted certificate passes with insecure_skip_verify", hb: model.Heartbeat{URL: srv.URL + "/readyz", InsecureSkipVerify: true}},
		{name: "a 500 answer fails", hb: model.Heartbeat{URL: srv.URL + "/broken", CAFile: ca}, wantErr: "status 500, want 2xx"},
		{name: "a redirect is not followed and fails", hb: model.Heartbeat{URL: srv.URL + "/moved", CAFile: ca}, wantErr: "status 302, want 2xx"},
		{name: "an unreadable ca_file fails naming it", hb: model.Heartbeat{URL: srv.URL, CAFile: "/nonexistent/ca.pem"}, wantErr: "heartbeat c1: ca_file: open /nonexistent/ca.pem"},
		{name: "a password in the url is not shown", hb: model.Heartbeat{URL: "https://user:secret@" + srv.Listener.Addr().String() + "/broken", CAFile: ca}, wantErr: "GET https://user:xxxxx@"},
		{name: "a url that is not http fails", hb: model.Heartbeat{URL: "ftp://example.com/"}, wantErr: "scheme must be http or https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			err := newBeat("c1", tt.hb).poll(ctx)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.NotContains(t, err.Error(), "secret")
		})
	}
}

func TestHeartbeatObserve(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type poll struct {
		at      int // seconds after polling started
		ok      bool
		status  vote.Status
		changed bool
	}
	tests := []struct {
		name  string
		polls []poll
	}{
		{
			name:  "a successful poll is up at once",
			polls: []poll{{1, true, vote.Up, true}, {11, true, vote.Up, false}},
		},
		{
			name:  "failed polls within the grace after a success stay up",
			polls: []poll{{1, true, vote.Up, true}, {11, false, vote.Up, false}, {41, false, vote.Up, false}},
		},
		{
			name:  "no success for longer than the grace is down",
			polls: []poll{{1, true, vote.Up, true}, {11, false, vote.Up, false}, {42, false, vote.Down, true}, {52, false, vote.Down, false}},
		},
		{
			name:  "a cluster never seen up is unknown within the grace then down",
			polls: []poll{{1, false, vote.Unknown, false}, {40, false, vote.Unknown, false}, {41, false, vote.Down, true}},
		},
		{
			name:  "one success after down is up again",
			polls: []poll{{41, false, vote.Down, true}, {51, true, vote.Up, true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBeat("c1", model.Heartbeat{URL: "https://c1.example/readyz", Interval: model.Duration(10 * time.Second), Grace: model.Duration(40 * time.Second)})
			b.since = t0
			for i, p := range tt.polls {
				s, changed := b.observe(p.ok, at(p.at))
				assert.Equalf(t, p.status, s, "status after poll %d", i+1)
				assert.Equalf(t, p.changed, changed, "changed after poll %d", i+1)
			}
		})
	}
}

func TestACustomHeartbeatPollReplacesTheURL(t *testing.T) {
	noLeaks(t)
	var rec recorder
	var fail atomic.Bool
	p := NewProber(ProberOptions{Logger: quiet, OnResult: rec.add})
	hb := &model.Heartbeat{Interval: model.Duration(20 * time.Millisecond), Grace: model.Duration(100 * time.Millisecond)}
	poll := func(context.Context) error {
		if fail.Load() {
			return errors.New("member readyz: connection refused")
		}
		return nil
	}
	p.SetHeartbeats([]HeartbeatTarget{{Cluster: "k1", HB: hb, Poll: poll, PollID: "kube k1"}})
	run(t, p)
	rec.waitFor(t, vote.ClusterSubject("k1"), "up", func(rs []Result) bool { _, ok := changedTo(rs, 0, vote.Up); return ok })
	fail.Store(true)
	rs := rec.waitFor(t, vote.ClusterSubject("k1"), "down", func(rs []Result) bool { _, ok := changedTo(rs, 0, vote.Down); return ok })
	i, _ := changedTo(rs, 0, vote.Down)
	assert.ErrorContains(t, rs[i].Err, "connection refused")
}
