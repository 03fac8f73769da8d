package health

import (
	"errors"
	"github.com/meridian-gslb/meridian/internal/vote"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSmooth(t *testing.T) {
	at := time.Unix(1000, 0)
	ms := time.Millisecond
	for _, tc := range []struct {
		name    string
		samples []time.Duration
		want    time.Duration
	}{
		{"the first sample is taken as it is", []time.Duration{40 * ms}, 40 * ms},
		{"a second sample moves the average half way", []time.Duration{40 * ms, 80 * ms}, 60 * ms},
		{"a step change is 87.5% absorbed after three samples", []time.Duration{10 * ms, 90 * ms, 90 * ms, 90 * ms}, 80 * ms},
		{"one odd sample among steady ones moves the average half way only", []time.Duration{10 * ms, 10 * ms, 110 * ms}, 60 * ms},
		{"steady samples keep the average", []time.Duration{25 * ms, 25 * ms, 25 * ms}, 25 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r RTT
			for i, x := range tc.samples {
				r = Smooth(r, x, at.Add(time.Duration(i)*time.Second))
			}
			assert.Equal(t, tc.want, r.RTT)
			assert.Equal(t, uint32(len(tc.samples)), r.Samples)
			assert.Equal(t, at.Add(time.Duration(len(tc.samples)-1)*time.Second), r.At, "stamped with the newest sample")
		})
	}
}

func TestRTTsTakeOnlySuccessfulEndpointProbes(t *testing.T) {
	s := vote.EndpointSubject("app.example.test.", "192.0.2.1")
	at := time.Unix(1000, 0)
	for _, tc := range []struct {
		name string
		res  Result
		kept bool
	}{
		{"a successful probe is a sample", Result{Subject: s, Duration: 5 * time.Millisecond, At: at, Kind: "tcp"}, true},
		{"a failed probe changes nothing (a timeout is no round trip)", Result{Subject: s, Duration: 3 * time.Second, At: at, Kind: "tcp", Err: errors.New("timeout")}, false},
		{"a heartbeat poll is no endpoint RTT", Result{Subject: vote.ClusterSubject("east"), Duration: time.Millisecond, At: at, Kind: KindHeartbeat}, false},
		{"a result without a duration (an agent heartbeat vote) is no sample", Result{Subject: s, At: at, Kind: "agent"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r RTTs
			r.Observe(tc.res)
			_, ok := r.Snapshot()[tc.res.Subject]
			assert.Equal(t, tc.kept, ok)
		})
	}
}

func TestRTTsForgetRemovedEndpoints(t *testing.T) {
	a, b := vote.EndpointSubject("app.", "192.0.2.1"), vote.EndpointSubject("app.", "192.0.2.2")
	var r RTTs
	r.Observe(Result{Subject: a, Duration: time.Millisecond, Kind: "tcp"})
	r.Observe(Result{Subject: b, Duration: time.Millisecond, Kind: "tcp"})
	r.Forget(func(s vote.Subject) bool { return s == a })
	assert.Len(t, r.Snapshot(), 1)
	assert.Contains(t, r.Snapshot(), a)
}
