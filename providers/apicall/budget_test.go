package apicall

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clock advances only when slept on.
type clock struct {
	t      time.Time
	sleeps []time.Duration
}

func (c *clock) now() time.Time { return c.t }
func (c *clock) sleep(ctx context.Context, d time.Duration) error {
	c.sleeps = append(c.sleeps, d)
	c.t = c.t.Add(d)
	return ctx.Err()
}

func TestWindow(t *testing.T) {
	cases := []struct {
		name     string
		n        int
		takes    int
		lower    int // Lower(lower) before the takes (0: no)
		wantWait time.Duration
		limit    int
	}{
		{"requests within the budget start at once", 3, 3, 0, 0, 3},
		{"the request past the budget waits for the oldest to leave the window", 3, 4, 0, time.Minute, 3},
		{"two windows' worth wait two periods", 2, 5, 0, 2 * time.Minute, 2},
		{"a lowered budget keeps the smaller limit", 3, 2, 1, time.Minute, 1},
		{"a budget is never lowered below one request", 3, 2, -5, time.Minute, 1},
		{"raising through Lower does nothing", 1, 2, 10, time.Minute, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			w := NewWindow(tc.n, time.Minute, c.now, c.sleep)
			if tc.lower != 0 {
				w.Lower(tc.lower)
			}
			for range tc.takes {
				require.NoError(t, w.Take(context.Background()))
			}
			var waited time.Duration
			for _, d := range c.sleeps {
				waited += d
			}
			assert.Equal(t, tc.wantWait, waited)
			assert.Equal(t, tc.limit, w.Limit())
		})
	}
}

func TestWindowGivesUpWhenTheCallerCancels(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	w := NewWindow(1, time.Minute, c.now, c.sleep)
	require.NoError(t, w.Take(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, w.Take(ctx), context.Canceled)
}

func TestRateRefusesAWaitPastTheDeadline(t *testing.T) {
	r := NewRate(0.001) // one request per 1000s
	require.NoError(t, r.Take(context.Background()), "the burst of one")
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	cancel() // the deadline stays an hour away, but ctx is done: no wait at all
	require.Error(t, r.Take(ctx))
	ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := r.Take(ctx)
	require.Error(t, err, "the next token is 1000s away, past the deadline: refused at once")
}
