package follow

import (
	"fmt"
	"slices"

	"github.com/meridian-gslb/meridian/internal/report"
	"github.com/meridian-gslb/meridian/internal/shift"
)

// ShiftEvent puts a shift's step on the status page's timeline (the
// Follower is a ShiftNotifier).
func (f *Follower) ShiftEvent(ev shift.Event) {
	reason := ev.Action + ": " + ev.Reason
	if ev.Who != "" {
		reason += " (" + ev.Who + ")"
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.timeline = append(f.timeline, report.ChangeEvent{At: ev.At, Subject: "shift " + ev.Service + " to " + ev.To,
		From: fmt.Sprintf("%d%%", ev.From), To: fmt.Sprintf("%d%%", ev.Percent), Reason: reason})
	if len(f.timeline) > MaxTimeline {
		f.timeline = slices.Delete(f.timeline, 0, len(f.timeline)-MaxTimeline)
	}
}
