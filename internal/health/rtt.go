package health

import (
	"github.com/meridian-gslb/meridian/internal/vote"
	"sync"
	"time"
)

// RTTAlpha is the weight of a new sample in a smoothed RTT, an
// exponentially weighted moving average: s ← s + α·(x − s), the first
// sample taken as it is. At 0.5 a step change is 75 % absorbed after two
// probes and 87.5 % after three, while one odd sample moves the average
// only half way (the latency view's hysteresis absorbs the rest).
const RTTAlpha = 0.5

// MaxRTTSamples caps a smoothed RTT's sample count (it only says how much
// stands behind the value).
const MaxRTTSamples = 1 << 30

// RTT is a smoothed round-trip time to one endpoint from this prober.
type RTT struct {
	RTT     time.Duration // the EWMA of successful probes' durations
	Samples uint32        // successful probes behind it (capped at MaxRTTSamples)
	At      time.Time     // when the newest sample was taken
}

// Smooth adds the sample x, taken at at, to prev (the zero RTT: none yet).
func Smooth(prev RTT, x time.Duration, at time.Time) RTT {
	if prev.Samples == 0 {
		return RTT{RTT: x, Samples: 1, At: at}
	}
	next := prev.RTT + time.Duration(RTTAlpha*float64(x-prev.RTT))
	return RTT{RTT: max(next, 1), Samples: min(prev.Samples+1, MaxRTTSamples), At: at}
}

// RTTs keeps this prober's smoothed RTT per endpoint, from the probes it
// sends anyway: the duration of a successful probe (a TCP connect; an HTTP
// or HTTPS connect, request and answer; a DNS query and answer). A failed
// probe changes nothing (a timeout is no round trip), nor does a heartbeat
// poll. Safe for concurrent use.
type RTTs struct {
	mu sync.Mutex
	m  map[vote.Subject]RTT
}

// Observe takes one probe result (call it from ProberOptions.OnResult).
func (r *RTTs) Observe(res Result) {
	if res.Err != nil || res.Subject.IsCluster() || res.Kind == KindHeartbeat || res.Duration <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[vote.Subject]RTT{}
	}
	r.m[res.Subject] = Smooth(r.m[res.Subject], res.Duration, res.At)
}

// Snapshot returns a copy of every smoothed RTT.
func (r *RTTs) Snapshot() map[vote.Subject]RTT {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[vote.Subject]RTT, len(r.m))
	for s, v := range r.m {
		out[s] = v
	}
	return out
}

// Forget drops the RTTs of subjects keep rejects (removed endpoints).
func (r *RTTs) Forget(keep func(vote.Subject) bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range r.m {
		if !keep(s) {
			delete(r.m, s)
		}
	}
}
