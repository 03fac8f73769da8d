package notify

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestShiftAndRollbackEvents(t *testing.T) {
	at := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	s := ShiftEvent("app", "shift of app to eu: step 25%", at)
	assert.Equal(t, Event{Kind: EventShift, At: at, Service: "app", Severity: SeverityInfo, Summary: "shift of app to eu: step 25%", DedupKey: "meridian:shift app"}, s)
	r := RollbackEvent("app", "25%", "5%", "abort_if held: error ratio 0.07 > 0.05", at)
	assert.Equal(t, EventRollback, r.Kind)
	assert.Equal(t, ActionTrigger, r.Action, "a rollback pages")
	assert.Equal(t, "shift of app rolled back from 25% to 5%: abort_if held: error ratio 0.07 > 0.05", r.Summary)
	assert.Equal(t, s.DedupKey, r.DedupKey)
}

func TestSlackTextEscapesWhatSlackWouldFormat(t *testing.T) {
	at := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		e    Event
		want string
	}{
		{"plain text is unchanged",
			Event{Kind: EventFailover, Severity: SeverityCritical, Summary: "endpoint 10.0.0.1 of app decided down", Node: "east-1", At: at},
			":red_circle: *Meridian failover*: endpoint 10.0.0.1 of app decided down — node east-1 at 2026-12-02T01:00:00Z"},
		{"a channel ping in a reason is shown, not sent",
			RollbackEvent("app", "25%", "5%", "abort_if held: <!channel> look", at),
			":warning: *Meridian rollback*: shift of app rolled back from 25% to 5%: abort_if held: &lt;!channel&gt; look at 2026-12-02T01:00:00Z"},
		{"a link in a summary is shown as text",
			Event{Kind: EventDecided, Severity: SeverityInfo, Summary: "see <http://x|y>", At: at},
			":information_source: *Meridian decided*: see &lt;http://x|y&gt; at 2026-12-02T01:00:00Z"},
		{"an ampersand is escaped once, before the angle brackets",
			Event{Kind: EventShift, Severity: SeverityInfo, Summary: `rate(x[1m]) > 1 & up < 1 &lt;`, At: at},
			":information_source: *Meridian shift*: rate(x[1m]) &gt; 1 &amp; up &lt; 1 &amp;lt; at 2026-12-02T01:00:00Z"},
		{"a node name is escaped",
			Event{Kind: EventFailover, Severity: SeverityCritical, Summary: "s", Node: "<@U123>", At: at},
			":red_circle: *Meridian failover*: s — node &lt;@U123&gt; at 2026-12-02T01:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, slackText(tc.e))
		})
	}
}
