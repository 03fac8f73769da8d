package shift

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestObserved(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	at := Progress{Step: 2, Safe: 1, Since: t0}
	for _, tc := range []struct {
		name string
		cur  func(p Progress) Progress
		want Action
	}{
		{name: "a higher step is an advance", cur: func(p Progress) Progress { p.Step, p.Safe = 3, 2; return p }, want: Advance},
		{name: "one more rollback is a rollback even though the shift is paused too", cur: func(p Progress) Progress {
			p.Step, p.Paused, p.Rollbacks, p.Reason = 1, true, 1, "target unhealthy"
			return p
		}, want: Rollback},
		{name: "done is a finish", cur: func(p Progress) Progress { p.Step, p.Done = 4, true; return p }, want: Finish},
		{name: "paused without a rollback is a pause", cur: func(p Progress) Progress { p.Paused, p.Reason = true, "paused by alice"; return p }, want: Paused},
		{name: "running again is a resume", cur: func(p Progress) Progress { p.Since = t0.Add(time.Minute); return p }, want: Resumed},
		{name: "a guard error counted is nothing to note", cur: func(p Progress) Progress { p.Failures = 1; return p }, want: Hold},
		{name: "the same progress is nothing to note", cur: func(p Progress) Progress { return p }, want: Hold},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := at
			if tc.want == Resumed {
				prev.Paused = true
			}
			assert.Equal(t, tc.want, Observed(prev, tc.cur(at)))
		})
	}
}
