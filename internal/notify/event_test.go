package notify

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/meridian-gslb/meridian/internal/failover"
	"github.com/meridian-gslb/meridian/internal/health"
)

func TestFromChange(t *testing.T) {
	at := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	ep := health.EndpointSubject("app", "10.0.0.1")
	cl := health.ClusterSubject("us-east")
	cases := []struct {
		name   string
		change failover.Change
		ok     bool
		kind   string
		sev    string
		action string
	}{
		{"an endpoint decided down is a failover that pages", failover.Change{Subject: ep, From: failover.Up, To: failover.Down, Reason: failover.ReasonThreshold}, true, EventFailover, SeverityCritical, ActionTrigger},
		{"an endpoint down at its first verdict is a failover", failover.Change{Subject: ep, From: failover.Unknown, To: failover.Down, Reason: failover.ReasonThreshold}, true, EventFailover, SeverityCritical, ActionTrigger},
		{"a cluster failed over is a failover", failover.Change{Subject: cl, From: failover.Unreachable, To: failover.FailedOver, Reason: failover.ReasonHeartbeatLost}, true, EventFailover, SeverityCritical, ActionTrigger},
		{"an endpoint back up resolves", failover.Change{Subject: ep, From: failover.Down, To: failover.Up, Reason: failover.ReasonHoldDown}, true, EventDecided, SeverityInfo, ActionResolve},
		{"a cluster ready again resolves", failover.Change{Subject: cl, From: failover.FailedOver, To: failover.Ready, Reason: failover.ReasonThreshold}, true, EventDecided, SeverityInfo, ActionResolve},
		{"a cluster unreachable below quorum is a warning that does not page", failover.Change{Subject: cl, From: failover.Ready, To: failover.Unreachable, Reason: failover.ReasonUnconfirmed}, true, EventDecided, SeverityWarning, ""},
		{"a first verdict up is not notified", failover.Change{Subject: ep, From: failover.Unknown, To: failover.Up, Reason: failover.ReasonThreshold}, false, "", "", ""},
		{"a first verdict ready is not notified", failover.Change{Subject: cl, From: failover.Unknown, To: failover.Ready, Reason: failover.ReasonNoHeartbeat}, false, "", "", ""},
		{"a hold-down starting without a state change is not notified", failover.Change{Subject: ep, From: failover.Down, To: failover.Down, Reason: failover.ReasonHoldDown}, false, "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.change.At = at
			e, ok := FromChange(tc.change)
			assert.Equal(t, tc.ok, ok)
			if !ok {
				return
			}
			assert.Equal(t, tc.kind, e.Kind)
			assert.Equal(t, tc.sev, e.Severity)
			assert.Equal(t, tc.action, e.Action)
			assert.Equal(t, "meridian:"+tc.change.Subject.String(), e.DedupKey, "trigger and resolve share the key")
			assert.Equal(t, at, e.At)
		})
	}
}

func TestFromChangeSummaryNamesSubjectStatesReasonAndVoters(t *testing.T) {
	e, ok := FromChange(failover.Change{Subject: health.EndpointSubject("app", "10.0.0.1"), From: failover.Up, To: failover.Down,
		Reason: failover.ReasonConfirmation, Voters: []string{"p1", "p2"}})
	assert.True(t, ok)
	assert.Equal(t, "endpoint 10.0.0.1 of app decided down (was up; reason confirmation; voters p1,p2)", e.Summary)
	assert.Equal(t, "app", e.Service)
	assert.Equal(t, "10.0.0.1", e.Endpoint)
}

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
