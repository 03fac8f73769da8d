package benchenv

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMetrics(t *testing.T) {
	page := `# HELP meridian_ring_gossip_bytes_total Bytes of gossip.
# TYPE meridian_ring_gossip_bytes_total counter
meridian_ring_gossip_bytes_total{direction="received"} 1.5e+06
meridian_ring_gossip_bytes_total{direction="sent"} 1234
# TYPE meridian_ring_messages_total counter
meridian_ring_messages_total{direction="sent",type="vote"} 10
meridian_ring_messages_total{direction="received",type="vote"} 7
# TYPE meridian_decision_duration_seconds histogram
meridian_decision_duration_seconds_bucket{le="0.1"} 3
meridian_decision_duration_seconds_bucket{le="+Inf"} 4
meridian_decision_duration_seconds_sum 0.25
meridian_decision_duration_seconds_count 4
# TYPE meridian_build_info gauge
meridian_build_info{goversion="go1.26.8",version="v0.3.0-4-gabc \"x\""} 1
# TYPE go_gc_duration_seconds summary
go_gc_duration_seconds{quantile="1"} NaN
go_gc_duration_seconds_sum 0.5
go_gc_duration_seconds_count 9
`
	m, err := ParseMetrics(strings.NewReader(page))
	require.NoError(t, err)
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"a label selects one series", m.Sum("meridian_ring_gossip_bytes_total", "direction", "sent"), 1234},
		{"exponent notation is read", m.Sum("meridian_ring_gossip_bytes_total", "direction", "received"), 1.5e6},
		{"no label adds every series", m.Sum("meridian_ring_messages_total"), 17},
		{"two labels must both match", m.Sum("meridian_ring_messages_total", "type", "vote", "direction", "received"), 7},
		{"a histogram sums its observations", m.Sum("meridian_decision_duration_seconds"), 0.25},
		{"a histogram counts its observations", m.Count("meridian_decision_duration_seconds"), 4},
		{"a summary counts its observations", m.Count("go_gc_duration_seconds"), 9},
		{"a counter has no observation count", m.Count("meridian_ring_messages_total"), 0},
		{"an unknown name sums to zero", m.Sum("nope"), 0},
	} {
		assert.Equal(t, tc.want, tc.got, tc.name)
	}
	assert.Equal(t, `v0.3.0-4-gabc "x"`, m.Label("meridian_build_info", "version"), "an escaped label value is read")
}

func TestParseMetricsRejectsBrokenLines(t *testing.T) {
	for _, line := range []string{`x{a="b" 1`, `x{a=b} 1`, `x`, `x{a="b"}`, `x one`} {
		_, err := ParseMetrics(strings.NewReader(line + "\n"))
		assert.Error(t, err, line)
	}
}
