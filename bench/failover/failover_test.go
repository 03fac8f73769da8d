package main

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// at is t0 plus ms milliseconds.
func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// series builds answered samples every 50 ms from t0 out of a compact
// notation: "3" both backends, "1" only A, "2" only B, "-" no answer.
func series(s string) []sample {
	var out []sample
	for i, c := range s {
		sm := sample{At: at(50 * i)}
		if c != '-' {
			sm.OK, sm.Set = true, answerSet(c-'0')
		}
		out = append(out, sm)
	}
	return out
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []measure
		want summary
	}{
		{"no trials give an empty summary", nil, summary{}},
		{"an odd count takes the middle value", []measure{{Seconds: 3}, {Seconds: 1}, {Seconds: 2}}, summary{N: 3, Median: 2, Max: 3}},
		{"an even count takes the mean of the middle two", []measure{{Seconds: 4}, {Seconds: 1}, {Seconds: 2}, {Seconds: 10}}, summary{N: 4, Median: 3, Max: 10}},
		{"a timed-out trial counts at its bound and is counted", []measure{{Seconds: 1}, {Seconds: 90, TimedOut: true}, {Seconds: 2}}, summary{N: 3, Median: 2, Max: 90, TimedOut: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, summarize(tc.in))
		})
	}
}

func TestWorstIsTheSlowerNode(t *testing.T) {
	assert.Equal(t, measure{Seconds: 5}, worst(measure{Seconds: 5}, measure{Seconds: 2}))
	assert.Equal(t, measure{Seconds: 90, TimedOut: true}, worst(measure{Seconds: 3}, measure{Seconds: 90, TimedOut: true}))
}

func TestSettledAt(t *testing.T) {
	gone := func(s answerSet) bool { return !s.has(0) }
	for _, tc := range []struct {
		name     string
		samples  string
		from     int // ms
		wantOK   bool
		wantAt   int // ms
		wantLast int // ms
	}{
		{"the backend is out from the first answer without it", "33322222", 0, true, 150, 350},
		{"a backend that comes back and leaves again is out from its last departure", "33223222", 0, true, 250, 350},
		{"unanswered samples are skipped", "3322-2-2", 0, true, 100, 350},
		{"a backend still answered is not out", "3322223", 0, false, 0, 0},
		{"samples before from do not count", "2222222", 200, true, 200, 300},
		{"no answered sample after from is not settled", "33----", 100, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gotAt, gotLast, ok := settledAt(series(tc.samples), at(tc.from), gone)
			require.Equal(t, tc.wantOK, ok)
			if ok {
				assert.Equal(t, at(tc.wantAt), gotAt)
				assert.Equal(t, at(tc.wantLast), gotLast)
			}
		})
	}
}

func TestChangesAndDepartures(t *testing.T) {
	for _, tc := range []struct {
		name           string
		samples        string
		from, to       int // ms
		wantChanges    int
		wantDepartures int // of backend A (bit 0)
	}{
		{"steady answers make no change", "33333333", 0, 400, 0, 0},
		{"one removal and its return are two changes and one departure", "33222333", 0, 400, 2, 1},
		{"unanswered samples between equal answers are no change", "33--3333", 0, 400, 0, 0},
		{"the first sample in the window is compared with the one before it", "33222222", 100, 400, 1, 1},
		{"changes after the window are not counted", "33333322", 0, 300, 0, 0},
		{"a swap from A to B is one change and one departure of A", "1111222", 0, 350, 1, 1},
		{"B leaving is a change but no departure of A", "3331111", 0, 350, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := series(tc.samples)
			assert.Equal(t, tc.wantChanges, changes(ss, at(tc.from), at(tc.to)), "changes")
			assert.Equal(t, tc.wantDepartures, departures(ss, 0, at(tc.from), at(tc.to)), "departures of A")
		})
	}
}

func TestMismatch(t *testing.T) {
	// A is down from 100 ms to 300 ms, then up; the answers drop it at
	// 200 ms and take it back at 350 ms: it was answered dead 100–200 and
	// missing while alive 300–350.
	ss := series("33332223")
	ts := []truth{{at(100), false}, {at(300), true}}
	dead, live, down, up := mismatch(ss, 0, ts, at(0), at(400), time.Second)
	assert.Equal(t, 100*time.Millisecond, dead, "dead but answered")
	assert.Equal(t, 50*time.Millisecond, live, "alive but left out")
	assert.Equal(t, 200*time.Millisecond, down, "real down time")
	assert.Equal(t, 200*time.Millisecond, up, "real up time")

	// A gap longer than maxGap counts only maxGap.
	gap := []sample{{At: at(0), OK: true, Set: 3}, {At: at(1000), OK: true, Set: 2}}
	dead, _, _, _ = mismatch(gap, 0, []truth{{at(0), false}}, at(0), at(1050), 200*time.Millisecond)
	assert.Equal(t, 200*time.Millisecond, dead)
}

func TestUpAt(t *testing.T) {
	ts := []truth{{at(100), false}, {at(200), true}}
	assert.True(t, upAt(ts, at(50)), "up before the first change")
	assert.False(t, upAt(ts, at(100)), "down from the change on")
	assert.True(t, upAt(ts, at(250)))
}

func TestPdnsZoneChecksBothBackendsWithDefaults(t *testing.T) {
	z := pdnsZone(17600, []string{"127.0.0.61", "127.0.0.62"})
	assert.Contains(t, z, `svc    5 IN LUA A "ifurlup('http://svc.failover.bench.meridian.test:17600/healthz', {'127.0.0.61', '127.0.0.62'}, {selector='all'})"`)
	assert.NotContains(t, z, "timeout", "the ifurlup timeout stays at its default")
	assert.NotContains(t, pdnsSettings, "lua-health-checks", "the check interval stays at its default")
}

func TestMeridianConfigSetsNoHealthOrDecisionSetting(t *testing.T) {
	b := &bench{p: params{BasePort: 17600}, keyPath: "/k"}
	b.backends = []*backend{newBackend("A", netip.MustParseAddrPort("127.0.0.61:17600")), newBackend("B", netip.MustParseAddrPort("127.0.0.62:17600"))}
	a := &mnode{name: "ring-a", region: "r1", dns: "127.0.0.1:1", http: "127.0.0.1:2", gw: "127.0.0.1:3", idPath: "/a", peer: "- {name: ring-a}"}
	c := &mnode{name: "ring-b", region: "r2", dns: "127.0.0.1:4", http: "127.0.0.1:5", gw: "127.0.0.1:6", idPath: "/b", peer: "- {name: ring-b}"}
	a.ring, c.ring = []*mnode{a, c}, []*mnode{a, c}
	cfg := b.meridianConfig(a, "/state")
	for _, s := range []string{"\nhealth:", "\ndecision:", "interval", "timeout", "fall", "rise", "hold_down"} {
		assert.NotContains(t, cfg, s)
	}
	assert.Contains(t, cfg, `seeds: ["127.0.0.1:6"]`, "a ring node seeds from the other one")
	assert.Contains(t, cfg, "    - {name: ring-a}\n    - {name: ring-b}\n", "both nodes are peers")
	assert.Contains(t, cfg, "health_check: {kind: http, port: 17600, path: /healthz}")
	assert.Equal(t, 1, strings.Count(cfg, "127.0.0.61"))
}

func TestAVanishedBackendTimesConnectionsOutAndARestartedOneAnswers(t *testing.T) {
	be := newBackend("A", netip.MustParseAddrPort("127.0.0.201:17999"))
	require.NoError(t, be.start())
	defer be.kill()
	require.NoError(t, be.check())
	require.NoError(t, be.vanish())
	_, err := net.DialTimeout("tcp4", "127.0.0.201:17999", 300*time.Millisecond)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	assert.True(t, ne.Timeout(), "a connection to a vanished backend times out: %v", err)
	require.NoError(t, be.start())
	assert.NoError(t, be.check())
	be.kill()
	_, err = net.DialTimeout("tcp4", "127.0.0.201:17999", 300*time.Millisecond)
	assert.ErrorContains(t, err, "connection refused", "a killed backend refuses")
}
