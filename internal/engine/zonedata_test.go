package engine

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// records returns "name type rdata" per record of the zone's static view.
func records(t *testing.T, s *Snapshot, apex string) map[string]bool {
	t.Helper()
	zd, ok := s.ZoneData(apex)
	require.True(t, ok)
	require.NotNil(t, zd.SOA)
	out := map[string]bool{}
	for _, rr := range zd.Records {
		f := strings.Fields(rr.String())
		out[f[0]+" "+f[3]+" "+strings.Join(f[4:], " ")] = true
	}
	return out
}

func TestZoneDataIsTheDecidedHealthySet(t *testing.T) {
	s := compile(t, nil)
	got := records(t, s, "example.test.")
	for _, want := range []string{
		"example.test. NS ns1.example.test.", "example.test. NS ns.other.test.",
		"ns1.example.test. A 192.0.2.53", "ns1.example.test. AAAA 2001:db8::53",
		"w.example.test. A 192.0.2.1", "w.example.test. A 192.0.2.2", "w.example.test. AAAA 2001:db8::1",
		"fo.example.test. A 192.0.2.21",
		"prio.example.test. A 192.0.2.32", "prio.example.test. A 192.0.2.33",
		// geo: every bucket's endpoints together
		"geo.example.test. A 192.0.2.41", "geo.example.test. A 192.0.2.43",
		"alias.example.test. CNAME w.example.test.",
		"open.example.test. A 192.0.2.81", "open.example.test. A 192.0.2.82", // fail-open
	} {
		assert.True(t, got[want], want)
	}
	assert.False(t, got["nod.example.test. A 192.0.2.71"], "when_all_down: nodata lists nothing")
	assert.False(t, got["w.example.test. A 192.0.2.3"], "weight 0 only when every weighted endpoint is down")
	assert.False(t, got["fo.example.test. A 192.0.2.22"], "failover: the active group only")
	assert.False(t, got["prio.example.test. A 192.0.2.31"])
	assert.False(t, got["open.example.test. A 192.0.2.83"], "drained stays out of fail-open while others exist")

	// A failover moves the static view too.
	s = compile(t, fakeHealth{endpoints: map[string]State{"fo.example.test.|192.0.2.21": Down, "w.example.test.|192.0.2.1": Down}})
	got = records(t, s, "example.test.")
	assert.True(t, got["fo.example.test. A 192.0.2.22"])
	assert.False(t, got["fo.example.test. A 192.0.2.21"])
	assert.False(t, got["w.example.test. A 192.0.2.1"])
	assert.True(t, got["w.example.test. A 192.0.2.2"])

	_, ok := s.ZoneData("nothere.test.")
	assert.False(t, ok)
}
