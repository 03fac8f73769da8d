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
