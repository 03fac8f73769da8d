package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testHub is a hub with short timings behind an httptest server.
func testHub(t *testing.T, build func() Overview, max int) (*eventHub, *httptest.Server, *Metrics) {
	t.Helper()
	m := NewMetrics(prometheus.NewRegistry())
	h := newEventHub(build, max, m)
	h.check, h.keepalive, h.writeTimeout = 10*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv, m
}

func openStream(t *testing.T, ctx context.Context, url string) (*http.Response, *bufio.Reader) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp, bufio.NewReader(resp.Body)
}

func (h *eventHub) isRunning() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.running
}

func TestEventsStream(t *testing.T) {
	var gen atomic.Uint64
	gen.Store(1)
	var calls atomic.Int64
	h, srv, _ := testHub(t, func() Overview {
		calls.Add(1)
		return Overview{Generation: gen.Load(), Now: time.Now()} // Now alone changes nothing
	}, 4)
	ctx, cancel := context.WithCancel(context.Background())
	resp, r := openStream(t, ctx, srv.URL)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	line, _ := r.ReadString('\n')
	assert.Equal(t, "retry: 2000\n", line)

	ev, data := readEvent(t, r)
	assert.Equal(t, "overview", ev)
	var o Overview
	require.NoError(t, json.Unmarshal([]byte(data), &o))
	assert.Equal(t, uint64(1), o.Generation)

	ev, data = readEvent(t, r)
	assert.Equal(t, "comment", ev, "nothing changed: a keepalive comment, no event")
	assert.Equal(t, ": keepalive", data)

	gen.Store(2)
	ev, data = readEvent(t, r)
	assert.Equal(t, "overview", ev)
	require.NoError(t, json.Unmarshal([]byte(data), &o))
	assert.Equal(t, uint64(2), o.Generation)

	cancel()
	resp.Body.Close()
	require.Eventually(t, func() bool { return !h.isRunning() }, 5*time.Second, 5*time.Millisecond, "the producer stops after the last stream left")
	n := calls.Load()
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, n, calls.Load(), "no overview is built without a stream")
}

func TestEventsShareOneProducer(t *testing.T) {
	var gen atomic.Uint64
	var inFlight, maxInFlight atomic.Int64
	_, srv, m := testHub(t, func() Overview {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			cur := maxInFlight.Load()
			if n <= cur || maxInFlight.CompareAndSwap(cur, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond) // a slow overview: builds per stream would overlap
		return Overview{Generation: gen.Load()}
	}, 16)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const streams = 8
	readers := make([]*bufio.Reader, streams)
	for i := range readers {
		resp, r := openStream(t, ctx, srv.URL)
		defer resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
		_, _ = r.ReadString('\n')
		readers[i] = r
	}
	assert.Equal(t, float64(streams), testutil.ToFloat64(m.Streams))
	for round := uint64(1); round <= 3; round++ {
		gen.Store(round)
		var first string
		for i, r := range readers {
			var data string
			for { // skip older generations and keepalives
				ev, d := readEvent(t, r)
				var o Overview
				if ev == "overview" && json.Unmarshal([]byte(d), &o) == nil && o.Generation == round {
					data = d
					break
				}
			}
			if i == 0 {
				first = data
			}
			assert.Equal(t, first, data, "stream %d got the same message as stream 0", i)
		}
	}
	assert.Equal(t, int64(1), maxInFlight.Load(), "one producer builds the overview for every stream")
}

func TestEventsBeyondTheCapGet503(t *testing.T) {
	_, srv, m := testHub(t, func() Overview { return Overview{} }, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var open []*http.Response
	for range 2 {
		resp, r := openStream(t, ctx, srv.URL)
		require.Equal(t, 200, resp.StatusCode)
		_, _ = r.ReadString('\n')
		open = append(open, resp)
	}
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	assert.Contains(t, string(body), "server.http.max_event_streams = 2")
	assert.Contains(t, string(body), "GET /v1/overview")
	assert.Equal(t, 1.0, testutil.ToFloat64(m.StreamsRejected))

	open[0].Body.Close()
	require.Eventually(t, func() bool {
		resp, err := http.Get(srv.URL)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == 200
	}, 5*time.Second, 10*time.Millisecond, "a slot frees when a stream ends")
	open[1].Body.Close()
}

func TestEventsDropAClientThatNeverReads(t *testing.T) {
	var gen atomic.Uint64
	big := strings.Repeat("x", 256<<10)
	h, srv, m := testHub(t, func() Overview { return Overview{Generation: gen.Add(1), ConfigPath: big} }, 4)
	c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "GET /v1/events HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	// The client never reads: socket buffers fill, a write misses its deadline.
	require.Eventually(t, func() bool { return testutil.ToFloat64(m.StreamsDropped) == 1 }, 20*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return testutil.ToFloat64(m.Streams) == 0 && !h.isRunning() }, 5*time.Second, 10*time.Millisecond,
		"the dropped stream left and the producer stopped")
}
