package shift

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func spec() Spec {
	return Spec{To: "eu-west", Steps: []int{1, 5, 25, 50, 100}, Every: 5 * time.Minute, MaxFailures: 2, AbortIf: `rate(errors[1m]) > 0.1`}
}

func at(step, safe int, since time.Time) Progress {
	return Progress{Step: step, Safe: safe, Since: since}
}

func healthy(now time.Time) Observation { return Observation{Now: now, TargetHealthy: true} }

func TestDecide(t *testing.T) {
	guardErr := errors.New("connection refused")
	cases := []struct {
		name       string
		p          Progress
		o          Observation
		action     Action
		percent    int
		step, safe int
		paused     bool
		reason     string
	}{
		{"a new shift sends the first step's share", Start(t0), healthy(t0.Add(time.Minute)), Hold, 1, 0, -1, false, "waiting"},
		{"a step that held a whole interval advances to the next", Start(t0), healthy(t0.Add(5 * time.Minute)), Advance, 5, 1, 0, false, "1% held 5m0s"},
		{"a step that has not held a whole interval holds", at(2, 1, t0), healthy(t0.Add(4*time.Minute + 59*time.Second)), Hold, 25, 2, 1, false, "waiting"},
		{"the last step holding a whole interval finishes the shift", at(4, 3, t0), healthy(t0.Add(5 * time.Minute)), Finish, 100, 4, 4, false, "100% held 5m0s"},
		{"a target failure at 25% rolls back to 5% and pauses", at(2, 1, t0), Observation{Now: t0.Add(time.Minute), Unhealthy: "2 of 2 endpoints down"}, Rollback, 5, 1, 1, true,
			"rolled back from 25% to 5%: target eu-west unhealthy: 2 of 2 endpoints down"},
		{"a guard breach rolls back to the last safe step", at(3, 2, t0), Observation{Now: t0.Add(time.Minute), TargetHealthy: true, Guard: Guard{Checked: true, Breach: true, Detail: "0.4"}}, Rollback, 25, 2, 2, true,
			"rolled back from 50% to 25%: guard breached: rate(errors[1m]) > 0.1 = 0.4"},
		{"a breach on the first step rolls back to 0%", Start(t0), Observation{Now: t0.Add(time.Minute)}, Rollback, 0, -1, -1, true,
			"rolled back from 1% to 0%: target eu-west unhealthy"},
		{"a breach after resume at the step it rolled back to goes one step lower, not to the same share", at(1, 1, t0), Observation{Now: t0.Add(time.Minute)}, Rollback, 1, 0, 0, true,
			"rolled back from 5% to 1%: target eu-west unhealthy"},
		{"a breach after resume at the first step goes to 0%", at(0, 0, t0), Observation{Now: t0.Add(time.Minute)}, Rollback, 0, -1, -1, true,
			"rolled back from 1% to 0%: target eu-west unhealthy"},
		{"a breach at 0% has nothing left to take back: it pauses with the reason", at(-1, -1, t0), Observation{Now: t0.Add(time.Minute)}, Hold, 0, -1, -1, true,
			"paused at 0%, nothing left to roll back: target eu-west unhealthy"},
		{"a guard error within max failures holds without advancing", at(1, 0, t0), Observation{Now: t0.Add(time.Hour), TargetHealthy: true, Guard: Guard{Checked: true, Err: guardErr}}, Hold, 5, 1, 0, false,
			"guard failed (1 of 2 tolerated): connection refused"},
		{"a guard error beyond max failures rolls back", Progress{Step: 1, Safe: 0, Since: t0, Failures: 2}, Observation{Now: t0.Add(time.Hour), TargetHealthy: true, Guard: Guard{Checked: true, Err: guardErr}}, Rollback, 1, 0, 0, true,
			"rolled back from 5% to 1%: guard failed 3 times in a row (max 2): connection refused"},
		{"a guard that holds lets the step advance", at(1, 0, t0), Observation{Now: t0.Add(5 * time.Minute), TargetHealthy: true, Guard: Guard{Checked: true, Detail: "0"}}, Advance, 25, 2, 1, false, "5% held 5m0s"},
		{"a paused shift holds even when the target fails", Progress{Step: 2, Safe: 1, Since: t0, Paused: true, Reason: "by ops"}, Observation{Now: t0.Add(time.Hour)}, Hold, 25, 2, 1, true, "paused: by ops"},
		{"a finished shift holds at 100%", Progress{Step: 4, Safe: 4, Since: t0, Done: true}, Observation{Now: t0.Add(time.Hour)}, Hold, 100, 4, 4, false, "complete"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(spec(), c.p, c.o)
			require.Equal(t, c.action, d.Action)
			require.Equal(t, c.percent, d.Percent)
			require.Equal(t, c.step, d.Progress.Step)
			require.Equal(t, c.safe, d.Progress.Safe)
			require.Equal(t, c.paused, d.Progress.Paused)
			require.Equal(t, c.reason, d.Reason)
			require.NoError(t, spec().ValidProgress(d.Progress))
		})
	}
}

func TestDecideSequence(t *testing.T) {
	t.Run("two breaches with a resume between take traffic away twice: 25, back to 5, resume, back to 1", func(t *testing.T) {
		s := spec()
		s.AbortIf = ""
		p := at(2, 1, t0)
		d := Decide(s, p, Observation{Now: t0.Add(time.Minute)})
		require.Equal(t, 5, d.Percent)
		p = Resume(d.Progress, t0.Add(2*time.Minute))
		d = Decide(s, p, Observation{Now: t0.Add(3 * time.Minute)})
		require.Equal(t, Rollback, d.Action)
		require.Equal(t, 1, d.Percent, "the second breach removes traffic: %s", d.Reason)
		require.Equal(t, 2, d.Progress.Rollbacks)
	})
	t.Run("a scripted run with a failure at 25% goes 1, 5, 25, back to 5, and after resume on to 100", func(t *testing.T) {
		s := spec()
		s.AbortIf = ""
		p := Start(t0)
		now := t0
		var seen []int
		step := func(o Observation) {
			d := Decide(s, p, o)
			p = d.Progress
			if len(seen) == 0 || seen[len(seen)-1] != d.Percent {
				seen = append(seen, d.Percent)
			}
		}
		for range 2 {
			now = now.Add(s.Every)
			step(healthy(now))
		}
		now = now.Add(time.Minute)
		step(Observation{Now: now})
		require.Equal(t, 1, p.Rollbacks)
		p = Resume(p, now)
		for range 10 {
			now = now.Add(s.Every)
			step(healthy(now))
		}
		require.True(t, p.Done)
		require.Equal(t, []int{5, 25, 5, 25, 50, 100}, seen)
	})
}

func TestResume(t *testing.T) {
	cases := []struct {
		name string
		p    Progress
		step int
	}{
		{"resuming after a rollback to 0% starts at the first step", Progress{Step: -1, Safe: -1, Paused: true, Since: t0}, 0},
		{"resuming a paused step stays on it", Progress{Step: 2, Safe: 1, Paused: true, Since: t0, Failures: 1}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Resume(c.p, t0.Add(time.Hour))
			require.False(t, p.Paused)
			require.Zero(t, p.Failures)
			require.Equal(t, c.step, p.Step)
			require.Equal(t, t0.Add(time.Hour), p.Since)
		})
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*Spec)
		field string
	}{
		{"the default spec is valid", func(*Spec) {}, ""},
		{"a spec without a target is refused", func(s *Spec) { s.To = "" }, "to"},
		{"steps that go down are refused", func(s *Spec) { s.Steps = []int{5, 1, 100} }, "steps"},
		{"steps that do not end at 100 are refused", func(s *Spec) { s.Steps = []int{1, 50} }, "steps"},
		{"a step above 100 is refused", func(s *Spec) { s.Steps = []int{50, 101} }, "steps"},
		{"no steps are refused", func(s *Spec) { s.Steps = nil }, "steps"},
		{"an interval under a second is refused", func(s *Spec) { s.Every = time.Millisecond }, "every"},
		{"negative max failures are refused", func(s *Spec) { s.MaxFailures = -1 }, "max_failures"},
		{"a multi-line guard is refused", func(s *Spec) { s.AbortIf = "up\n== 0" }, "abort_if"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := spec()
			c.edit(&s)
			err := s.Validate()
			if c.field == "" {
				require.NoError(t, err)
				return
			}
			var fe FieldError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, c.field, fe.Field)
		})
	}
}

func TestParseSteps(t *testing.T) {
	t.Run("steps parse with spaces and percent signs", func(t *testing.T) {
		got, err := ParseSteps("1, 5%,25,50,100")
		require.NoError(t, err)
		require.Equal(t, []int{1, 5, 25, 50, 100}, got)
		require.Equal(t, "1,5,25,50,100", FormatSteps(got))
	})
	t.Run("a word among the steps is refused", func(t *testing.T) {
		_, err := ParseSteps("1,five,100")
		require.Error(t, err)
	})
}

func TestValidProgress(t *testing.T) {
	t.Run("a step beyond the last is refused", func(t *testing.T) {
		require.Error(t, spec().ValidProgress(Progress{Step: 5, Safe: 0, Since: t0}))
	})
	t.Run("a safe step after the current one is refused", func(t *testing.T) {
		require.Error(t, spec().ValidProgress(Progress{Step: 1, Safe: 2, Since: t0}))
	})
}

// longNames are n CNAME targets of about 250 bytes each.
func longNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("ep%02d.%s.example.com.", i, strings.Repeat("a", 60)+"."+strings.Repeat("b", 60)+"."+strings.Repeat("c", 60)+"."+strings.Repeat("d", 40))
	}
	return out
}

func TestDecideLongReasons(t *testing.T) {
	names := longNames(60)
	old := "60 of 60 endpoints down (" + strings.Join(names, ", ") + ")" // what targetHealth used to give
	require.Greater(t, len(old), 5000)
	cases := []struct {
		name     string
		spec     func(*Spec)
		o        Observation
		contains []string
		absent   []string
	}{
		{"a target of 60 long CNAME endpoints down rolls back naming the first 3 and counting the rest",
			func(*Spec) {}, Observation{Now: t0.Add(time.Minute), Down: names, Endpoints: 60},
			[]string{"rolled back from 25% to 5%", "60 of 60 endpoints down", names[0], names[1], names[2], "and 57 more"}, []string{names[3]}},
		{"a target that lists only the first down endpoints still counts them all",
			func(*Spec) {}, Observation{Now: t0.Add(time.Minute), Down: names[:3], DownCount: 60, Endpoints: 60},
			[]string{"60 of 60 endpoints down", "and 57 more"}, []string{names[3]}},
		{"a 5 kB unhealthy text is cut so that the rollback is still stored",
			func(*Spec) {}, Observation{Now: t0.Add(time.Minute), Unhealthy: old},
			[]string{"rolled back from 25% to 5%: target eu-west unhealthy: 60 of 60", "…"}, nil},
		{"a reason of multi-byte characters is cut on a character boundary",
			func(*Spec) {}, Observation{Now: t0.Add(time.Minute), Unhealthy: strings.Repeat("é", 3000)},
			[]string{"rolled back from 25% to 5%"}, nil},
		{"a long guard and a long guard result are cut so that the rollback is still stored",
			func(s *Spec) { s.AbortIf = strings.Repeat("x", MaxAbortIf) },
			Observation{Now: t0.Add(time.Minute), TargetHealthy: true, Guard: Guard{Checked: true, Breach: true, Detail: strings.Repeat("9", 3000)}},
			[]string{"guard breached: xxx"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := spec()
			c.spec(&s)
			d := Decide(s, at(2, 1, t0), c.o)
			require.Equal(t, Rollback, d.Action)
			require.Equal(t, 5, d.Percent)
			require.True(t, d.Progress.Paused)
			require.LessOrEqual(t, len(d.Reason), MaxReason)
			require.True(t, utf8.ValidString(d.Reason), "the reason is cut on a UTF-8 boundary")
			require.Equal(t, d.Reason, d.Progress.Reason)
			require.NoError(t, s.ValidProgress(d.Progress), "the rollback passes the store's check")
			for _, w := range c.contains {
				require.Contains(t, d.Reason, w)
			}
			for _, w := range c.absent {
				require.NotContains(t, d.Reason, w)
			}
		})
	}
}

func TestEndpointsDown(t *testing.T) {
	cases := []struct {
		name        string
		named       []string
		down, total int
		want        string
	}{
		{"a few down endpoints are all named", []string{"a", "b"}, 2, 4, "2 of 4 endpoints down (a, b)"},
		{"more than three down endpoints name three and count the rest", []string{"a", "b", "c", "d", "e"}, 5, 5, "5 of 5 endpoints down (a, b, c and 2 more)"},
		{"a count above the names counts the ones not listed", []string{"a"}, 3, 9, "3 of 9 endpoints down (a and 2 more)"},
		{"no names gives the count alone", nil, 2, 3, "2 of 3 endpoints down"},
		{"an unknown total leaves it out", []string{"a"}, 1, 0, "1 endpoints down (a)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, EndpointsDown(c.named, c.down, c.total))
		})
	}
}

func TestClip(t *testing.T) {
	cases := []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"a short text is kept", "abc", 10, "abc"},
		{"a long text is cut and ends in an ellipsis", "abcdefghij", 6, "abc…"},
		{"a cut never splits a character", "ééééé", 6, "é…"},
		{"a limit below the ellipsis cuts without it", "abcdef", 2, "ab"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Clip(c.s, c.n)
			require.Equal(t, c.want, got)
			require.LessOrEqual(t, len(got), c.n)
		})
	}
}
