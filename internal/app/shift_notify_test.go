package app

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/meridian-gslb/meridian/internal/notify"
	"github.com/meridian-gslb/meridian/internal/shift"
)

func TestShiftStepsBecomeNotifications(t *testing.T) {
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		ev       shift.Event
		kind     string
		severity string
		summary  string
	}{
		{name: "a rollback is a warning naming both steps and the reason",
			ev:   shift.Event{At: at, Service: "app.t.", To: "c2", Action: "rollback", From: 25, Percent: 5, Reason: "target c2 unhealthy"},
			kind: notify.EventRollback, severity: notify.SeverityWarning, summary: "shift of app.t. rolled back from 25% to 5%: target c2 unhealthy"},
		{name: "an advance is information with the step it took",
			ev:   shift.Event{At: at, Service: "app.t.", To: "c2", Action: "advance", From: 5, Percent: 25},
			kind: notify.EventShift, severity: notify.SeverityInfo, summary: "shift of app.t. to c2: advance, 5% -> 25%"},
		{name: "a pause says who paused it and why",
			ev:   shift.Event{At: at, Service: "app.t.", To: "c2", Action: "pause", From: 25, Percent: 25, Reason: "ops: looking"},
			kind: notify.EventShift, severity: notify.SeverityInfo, summary: "shift of app.t. to c2: pause, 25% -> 25% (ops: looking)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := shiftNotification(tc.ev)
			assert.Equal(t, tc.kind, e.Kind)
			assert.Equal(t, tc.severity, e.Severity)
			assert.Equal(t, tc.summary, e.Summary)
			assert.Equal(t, "app.t.", e.Service)
			assert.Equal(t, at, e.At)
		})
	}
}
