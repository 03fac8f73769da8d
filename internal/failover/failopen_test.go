package failover

import (
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/vote"
)

func TestFailOpenIsLeftToTheEngine(t *testing.T) {
	cases := []struct {
		name        string
		whenAllDown string
		answers     int
		failOpen    bool
	}{
		{"every endpoint is reported down and the engine fails open", model.WhenAllDownFailOpen, 1, true},
		{"with when_all_down nodata the engine answers no data", model.WhenAllDownNoData, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			desired := fixture(t)
			desired.Services[0].WhenAllDown = tc.whenAllDown
			w := newWorld(t, desired)
			w.params.Brake = 1 // let all three go in one call
			var votes []vote.Vote
			for _, p := range ring4 {
				votes = append(votes, says(p.Name, vote.Down, ipEast, ipWest, ipEU)...)
			}
			d := w.at(0, votes...)
			for _, ip := range []string{ipEast, ipWest, ipEU} {
				assert.Equal(t, engine.Down, d.Endpoint(app, ip), "the decision reports the truth: %s", ip)
			}
			snap, err := engine.Compile(desired, engine.Options{Health: d, Now: t0})
			require.NoError(t, err)
			var r engine.Result
			snap.Lookup(app, dns.TypeA, engine.Client{}, &r)
			assert.Len(t, r.Answer, tc.answers)
			assert.Equal(t, tc.failOpen, r.FailOpen)
		})
	}
}
