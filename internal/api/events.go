package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// DefaultMaxEventStreams is the default of server.http.max_event_streams.
const DefaultMaxEventStreams = 64

// Timing of GET /v1/events: how often the overview is checked for a change,
// how long a stream may stay silent before a comment line, and how long one
// message may take to leave (a client that does not read for that long is
// dropped).
var (
	eventCheck        = 500 * time.Millisecond
	eventKeepalive    = 15 * time.Second
	eventWriteTimeout = 10 * time.Second
)

// eventHub serves GET /v1/events. One producer goroutine, running while at
// least one stream is open, builds the overview every check and turns it
// into one message when it changed; every stream sends that same message.
// The cost of the overview is therefore per node, not per stream, and the
// number of streams is capped.
type eventHub struct {
	build                          func() Overview
	max                            int
	m                              *Metrics
	check, keepalive, writeTimeout time.Duration

	mu         sync.Mutex
	streams    int
	running    bool
	msg        []byte        // the latest "overview" event, nil until the producer built one
	seq        uint64        // +1 per message
	changed    chan struct{} // closed and replaced when msg changes
	stopping   chan struct{} // closed when a server shuts down: every stream ends
	stopOnce   sync.Once
	registered map[*http.Server]bool
}

func newEventHub(build func() Overview, max int, m *Metrics) *eventHub {
	if max <= 0 {
		max = DefaultMaxEventStreams
	}
	return &eventHub{build: build, max: max, m: m, check: eventCheck, keepalive: eventKeepalive, writeTimeout: eventWriteTimeout,
		changed: make(chan struct{}), stopping: make(chan struct{}), registered: map[*http.Server]bool{}}
}

// join counts a new stream, starting the producer for the first one; false
// when max streams are open.
func (h *eventHub) join() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.streams >= h.max {
		return false
	}
	h.streams++
	if !h.running {
		h.running, h.msg = true, nil // a stopped producer's message may be stale
		go h.produce()
	}
	return true
}

func (h *eventHub) leave() {
	h.mu.Lock()
	h.streams--
	h.mu.Unlock()
}

// current returns the latest message, its number and a channel closed when
// the next one is there.
func (h *eventHub) current() ([]byte, uint64, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.msg, h.seq, h.changed
}

func (h *eventHub) publish(msg []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msg = msg
	h.seq++
	close(h.changed)
	h.changed = make(chan struct{})
}

// produce builds the overview every check while streams are open and
// publishes it when its fingerprint changed. It returns one check after the
// last stream left, or when a server shuts down.
func (h *eventHub) produce() {
	t := time.NewTicker(h.check)
	defer t.Stop()
	var last []byte
	for {
		if fp, msg, ok := h.message(); ok && !bytes.Equal(fp, last) {
			h.publish(msg)
			last = fp
		}
		select {
		case <-t.C:
		case <-h.stopping:
		}
		h.mu.Lock()
		stop := h.streams == 0 || isClosed(h.stopping)
		if stop {
			h.running = false
		}
		h.mu.Unlock()
		if stop {
			return
		}
	}
}

// message builds the overview and its event; a panic while building is
// recovered (the streams keep their last message).
func (h *eventHub) message() (fp, msg []byte, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	o := h.build()
	data, err := json.Marshal(o)
	if err != nil {
		return nil, nil, false
	}
	// Compact JSON holds no newline: one data line.
	return o.fingerprint(), append(append([]byte("event: overview\ndata: "), data...), "\n\n"...), true
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// watchShutdown makes the shutdown of the request's server end every
// stream: http.Server.Shutdown waits for connections to go idle, which a
// stream never does.
func (h *eventHub) watchShutdown(r *http.Request) {
	srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server)
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.registered[srv] {
		h.registered[srv] = true
		srv.RegisterOnShutdown(func() { h.stopOnce.Do(func() { close(h.stopping) }) })
	}
}

var (
	eventRetry   = []byte("retry: 2000\n\n")
	keepaliveMsg = []byte(": keepalive\n\n")
)

// ServeHTTP streams the overview as Server-Sent Events: the current one at
// once, another whenever it changes, a comment line after keepalive of
// silence. Beyond max open streams the answer is 503 (the status page then
// polls GET /v1/overview). It returns when the client goes, a write misses
// its deadline, or the server shuts down.
func (h *eventHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.watchShutdown(r)
	if !h.join() {
		if h.m != nil {
			h.m.StreamsRejected.Inc()
		}
		w.Header().Set("Retry-After", strconv.Itoa(int(h.keepalive/time.Second)+1))
		writeError(w, http.StatusServiceUnavailable, "too many event streams: %d are open (allowed: server.http.max_event_streams = %d); poll GET /v1/overview instead", h.max, h.max)
		return
	}
	defer h.leave()
	if h.m != nil {
		h.m.Streams.Inc()
		defer h.m.Streams.Dec()
	}
	rc := http.NewResponseController(w)
	// A stream outlives the server's timeouts: no read deadline (an expired
	// one cancels the request), and a write deadline per message instead.
	_ = rc.SetReadDeadline(time.Time{})
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(h.writeTimeout))
		_, err := w.Write(b)
		if err == nil {
			err = rc.Flush()
		}
		if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && h.m != nil {
			h.m.StreamsDropped.Inc()
		}
		return err == nil
	}
	if !write(eventRetry) {
		return
	}
	ka := time.NewTimer(h.keepalive)
	defer ka.Stop()
	var sent uint64
	for {
		msg, seq, changed := h.current()
		if msg != nil && seq != sent {
			if !write(msg) {
				return
			}
			sent = seq
			ka.Reset(h.keepalive)
		}
		select {
		case <-r.Context().Done():
			return
		case <-h.stopping:
			return
		case <-changed:
		case <-ka.C:
			if !write(keepaliveMsg) {
				return
			}
			ka.Reset(h.keepalive)
		}
	}
}
