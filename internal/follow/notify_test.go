package follow

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/meridian-gslb/meridian/internal/failover"
	"github.com/meridian-gslb/meridian/internal/notify"
	"github.com/meridian-gslb/meridian/internal/vote"
)

func TestChangeEvent(t *testing.T) {
	at := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	ep := vote.EndpointSubject("app", "10.0.0.1")
	cl := vote.ClusterSubject("us-east")
	cases := []struct {
		name   string
		change failover.Change
		ok     bool
		kind   string
		sev    string
		action string
	}{
		{"an endpoint decided down is a failover that pages", failover.Change{Subject: ep, From: failover.Up, To: failover.Down, Reason: failover.ReasonThreshold}, true, notify.EventFailover, notify.SeverityCritical, notify.ActionTrigger},
		{"an endpoint down at its first verdict is a failover", failover.Change{Subject: ep, From: failover.Unknown, To: failover.Down, Reason: failover.ReasonThreshold}, true, notify.EventFailover, notify.SeverityCritical, notify.ActionTrigger},
		{"a cluster failed over is a failover", failover.Change{Subject: cl, From: failover.Unreachable, To: failover.FailedOver, Reason: failover.ReasonHeartbeatLost}, true, notify.EventFailover, notify.SeverityCritical, notify.ActionTrigger},
		{"an endpoint back up resolves", failover.Change{Subject: ep, From: failover.Down, To: failover.Up, Reason: failover.ReasonHoldDown}, true, notify.EventDecided, notify.SeverityInfo, notify.ActionResolve},
		{"a cluster ready again resolves", failover.Change{Subject: cl, From: failover.FailedOver, To: failover.Ready, Reason: failover.ReasonThreshold}, true, notify.EventDecided, notify.SeverityInfo, notify.ActionResolve},
		{"a cluster unreachable below quorum is a warning that does not page", failover.Change{Subject: cl, From: failover.Ready, To: failover.Unreachable, Reason: failover.ReasonUnconfirmed}, true, notify.EventDecided, notify.SeverityWarning, ""},
		{"a first verdict up is not notified", failover.Change{Subject: ep, From: failover.Unknown, To: failover.Up, Reason: failover.ReasonThreshold}, false, "", "", ""},
		{"a first verdict ready is not notified", failover.Change{Subject: cl, From: failover.Unknown, To: failover.Ready, Reason: failover.ReasonNoHeartbeat}, false, "", "", ""},
		{"a hold-down starting without a state change is not notified", failover.Change{Subject: ep, From: failover.Down, To: failover.Down, Reason: failover.ReasonHoldDown}, false, "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.change.At = at
			e, ok := ChangeEvent(tc.change)
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

func TestChangeEventSummaryNamesSubjectStatesReasonAndVoters(t *testing.T) {
	e, ok := ChangeEvent(failover.Change{Subject: vote.EndpointSubject("app", "10.0.0.1"), From: failover.Up, To: failover.Down,
		Reason: failover.ReasonConfirmation, Voters: []string{"p1", "p2"}})
	assert.True(t, ok)
	assert.Equal(t, "endpoint 10.0.0.1 of app decided down (was up; reason confirmation; voters p1,p2)", e.Summary)
	assert.Equal(t, "app", e.Service)
	assert.Equal(t, "10.0.0.1", e.Endpoint)
}
