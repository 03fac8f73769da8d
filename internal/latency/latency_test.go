package latency

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ms = time.Millisecond

func TestSelect(t *testing.T) {
	measured := func(rtt time.Duration) Candidate { return Candidate{Rankable: true, Measured: true, RTT: rtt} }
	for _, tc := range []struct {
		name      string
		cands     []Candidate
		tolerance float64
		in        []bool
		best      time.Duration
	}{
		{"only the nearest answers when the others are beyond the tolerance",
			[]Candidate{measured(10 * ms), measured(50 * ms), measured(100 * ms)}, 0.2, []bool{true, false, false}, 10 * ms},
		{"an endpoint within the tolerance of the best answers too",
			[]Candidate{measured(10 * ms), measured(12 * ms), measured(13 * ms)}, 0.2, []bool{true, true, false}, 10 * ms},
		{"the bound itself is in tolerance",
			[]Candidate{measured(100 * ms), measured(120 * ms)}, 0.2, []bool{true, true}, 100 * ms},
		{"a tolerance of zero keeps only the best (and ties)",
			[]Candidate{measured(10 * ms), measured(10 * ms), measured(11 * ms)}, 0, []bool{true, true, false}, 10 * ms},
		{"an unavailable endpoint is out however near, and the best is taken among the others",
			[]Candidate{{Measured: true, RTT: ms}, measured(40 * ms), measured(45 * ms)}, 0.2, []bool{false, true, true}, 40 * ms},
		{"an endpoint no region has measured yet is in until it is",
			[]Candidate{measured(10 * ms), {Rankable: true}}, 0.2, []bool{true, true}, 10 * ms},
		{"an endpoint measured only from other regions is out: this region does not reach it",
			[]Candidate{measured(10 * ms), {Rankable: true, Elsewhere: true}}, 0.2, []bool{true, false}, 10 * ms},
		{"with nothing measured from the region every available endpoint answers (plain weighted)",
			[]Candidate{{Rankable: true, Elsewhere: true}, {Rankable: true}, {}}, 0.2, []bool{true, true, false}, 0},
		{"with nothing available nothing is in (the engine fails open)",
			[]Candidate{{Measured: true, RTT: ms}, {}}, 0.2, []bool{false, false}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel := Select(tc.cands, tc.tolerance)
			assert.Equal(t, tc.in, sel.In)
			assert.Equal(t, tc.best, sel.Best)
			if tc.best > 0 {
				assert.Equal(t, time.Duration(float64(tc.best)*(1+tc.tolerance)), sel.Bound)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []time.Duration
		want time.Duration
	}{
		{"none is zero", nil, 0},
		{"one is itself", []time.Duration{7}, 7},
		{"an odd count takes the middle one", []time.Duration{30, 10, 20}, 20},
		{"an even count takes the mean of the middle two", []time.Duration{40, 10, 20, 30}, 25},
		{"one far outlier among three does not move it", []time.Duration{10, 11, 5000}, 11},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, Median(tc.xs)) })
	}
}

func TestBuild(t *testing.T) {
	now := time.Unix(10_000, 0)
	p := Params{MaxAge: 90 * time.Second, Hysteresis: 0.1}
	a, b := Key{"app.", "192.0.2.1"}, Key{"app.", "192.0.2.2"}
	m := func(prober, region string, k Key, rtt time.Duration, age time.Duration) Measurement {
		return Measurement{Prober: prober, Region: region, Key: k, RTT: rtt, Samples: 5, At: now.Add(-age)}
	}
	t.Run("the RTT of a region is the median of its probers' fresh measurements", func(t *testing.T) {
		v := Build(nil, []Measurement{m("e1", "east", a, 10*ms, 0), m("e2", "east", a, 30*ms, 0), m("e3", "east", a, 12*ms, 0), m("w1", "west", a, 80*ms, 0)}, now, p)
		e, ok := v.RTT("app.", "east", "192.0.2.1")
		require.True(t, ok)
		assert.Equal(t, 12*ms, e.RTT)
		assert.Equal(t, 3, e.Probers)
		assert.Equal(t, uint32(15), e.Samples)
		assert.Equal(t, []string{"east", "west"}, v.Regions())
	})
	t.Run("a measurement older than the maximum age does not count", func(t *testing.T) {
		v := Build(nil, []Measurement{m("e1", "east", a, 10*ms, 91*time.Second), m("e2", "east", b, 10*ms, 89*time.Second)}, now, p)
		_, ok := v.RTT("app.", "east", "192.0.2.1")
		assert.False(t, ok)
		assert.False(t, v.Measured("app.", "192.0.2.1"))
		assert.True(t, v.Measured("app.", "192.0.2.2"))
	})
	t.Run("a median that moved less than the hysteresis keeps the entry in effect", func(t *testing.T) {
		prev := Build(nil, []Measurement{m("e1", "east", a, 100*ms, 0)}, now.Add(-time.Minute), p)
		v := Build(prev, []Measurement{m("e1", "east", a, 109*ms, 0)}, now, p)
		e, _ := v.RTT("app.", "east", "192.0.2.1")
		assert.Equal(t, 100*ms, e.RTT)
		assert.Equal(t, now.Add(-time.Minute), e.Since)
		assert.True(t, v.Equal(prev), "nothing to recompile")
	})
	t.Run("a median that moved more than the hysteresis takes effect", func(t *testing.T) {
		prev := Build(nil, []Measurement{m("e1", "east", a, 100*ms, 0)}, now.Add(-time.Minute), p)
		for _, rtt := range []time.Duration{111 * ms, 89 * ms} {
			v := Build(prev, []Measurement{m("e1", "east", a, rtt, 0)}, now, p)
			e, _ := v.RTT("app.", "east", "192.0.2.1")
			assert.Equal(t, rtt, e.RTT)
			assert.Equal(t, now, e.Since)
			assert.False(t, v.Equal(prev))
		}
	})
	t.Run("noise below the hysteresis never changes the view", func(t *testing.T) {
		rnd := rand.New(rand.NewPCG(1, 2))
		v := Build(nil, []Measurement{m("e1", "east", a, 50*ms, 0)}, now, p)
		first := v
		for i := range 1000 {
			jitter := time.Duration((rnd.Float64()*2 - 1) * 0.095 * float64(50*ms))
			at := now.Add(time.Duration(i) * time.Second)
			x := m("e1", "east", a, 50*ms+jitter, 0)
			x.At = at
			v = Build(v, []Measurement{x}, at, p)
		}
		assert.True(t, v.Equal(first))
	})
	t.Run("an entry whose measurements all went stale leaves the view", func(t *testing.T) {
		prev := Build(nil, []Measurement{m("e1", "east", a, 10*ms, 0)}, now, p)
		v := Build(prev, []Measurement{m("e1", "east", a, 10*ms, 0)}, now.Add(91*time.Second), p)
		assert.Zero(t, v.Len())
		assert.False(t, v.Equal(prev))
	})
	t.Run("the order of the measurements does not matter", func(t *testing.T) {
		ms1 := []Measurement{m("e1", "east", a, 10*ms, 0), m("e2", "east", a, 20*ms, 0), m("w1", "west", b, 5*ms, 0)}
		ms2 := []Measurement{ms1[2], ms1[1], ms1[0]}
		assert.True(t, Build(nil, ms1, now, p).Equal(Build(nil, ms2, now, p)))
	})
	t.Run("an empty view equals nil", func(t *testing.T) {
		var nilView *View
		assert.True(t, Build(nil, nil, now, p).Equal(nilView))
		assert.True(t, nilView.Equal(nil))
		assert.Empty(t, nilView.Regions())
	})
}

func TestDefaultParams(t *testing.T) {
	p := DefaultParams(5 * time.Second)
	assert.Equal(t, 90*time.Second, p.MaxAge)
	assert.InDelta(t, 0.1, p.Hysteresis, 1e-9)
}
