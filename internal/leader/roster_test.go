package leader

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoster(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	year := t0.Add(365 * 24 * time.Hour)
	east0 := Member{Name: "east-0", Expires: year, Serial: "serial:1", Key: "sha256:a"}
	east1 := Member{Name: "east-1", Expires: year, Serial: "serial:1", Key: "sha256:a"}
	west0 := Member{Name: "west-0", Expires: t0.Add(time.Hour), Serial: "serial:2", Key: "sha256:b"}
	for _, tc := range []struct {
		name    string
		steps   func(r *Roster) []string
		want    []string
		forgets []string
	}{
		{"every prober listed by credential becomes a candidate", func(r *Roster) []string {
			r.Observe(t0, []Member{east0, east1, west0})
			return r.Prune(t0, nil)
		}, []string{"east-0", "east-1", "west-0"}, nil},
		{"a candidate out of sight is kept (a partition's minority writes nothing)", func(r *Roster) []string {
			r.Observe(t0, []Member{east0, east1, west0})
			r.Observe(t0.Add(30*time.Minute), []Member{east0, east1})
			return r.Prune(t0.Add(30*time.Minute), nil)
		}, []string{"east-0", "east-1", "west-0"}, nil},
		{"a candidate out of sight for a day is forgotten", func(r *Roster) []string {
			r.Observe(t0, []Member{east0, west0})
			r.Observe(t0.Add(20*time.Minute), []Member{west0})
			return r.Prune(t0.Add(25*time.Hour), nil)
		}, nil, []string{"east-0", "west-0"}},
		{"a candidate whose credential expired is forgotten at once", func(r *Roster) []string {
			r.Observe(t0, []Member{east0, west0})
			return r.Prune(t0.Add(time.Hour), nil)
		}, []string{"east-0"}, []string{"west-0"}},
		{"a revoked candidate is forgotten at once", func(r *Roster) []string {
			r.Observe(t0, []Member{east0, west0})
			return r.Prune(t0, func(serial, key string) bool { return key == "sha256:b" })
		}, []string{"east-0"}, []string{"west-0"}},
		{"a scope's candidates are at most its max_nodes, the latest seen kept", func(r *Roster) []string {
			e := func(name string) Member {
				return Member{Name: name, Expires: year, Scope: "spiffe://r/prober/us-east/east-*/max-nodes/2", Max: 2}
			}
			r.Observe(t0, []Member{e("east-0"), e("east-1")})
			r.Observe(t0.Add(time.Minute), []Member{e("east--"), e("east-0")}) // a leaked credential under a new name
			r.Observe(t0.Add(2*time.Minute), []Member{e("east-x"), e("east-0")})
			return r.Prune(t0.Add(2*time.Minute), nil)
		}, []string{"east-0", "east-x"}, nil},
		{"a renewed credential extends the candidate", func(r *Roster) []string {
			r.Observe(t0, []Member{west0})
			renewed := west0
			renewed.Expires, renewed.Serial = year, "serial:3"
			r.Observe(t0.Add(30*time.Minute), []Member{renewed})
			return r.Prune(t0.Add(2*time.Hour), nil)
		}, []string{"west-0"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Roster
			forgot := tc.steps(&r)
			assert.Equal(t, tc.want, nilIfEmpty(r.Names()))
			assert.Equal(t, tc.forgets, forgot)
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestRosterSavesAndLoadsSkippingBadEntries(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	var r Roster
	assert.True(t, r.Observe(t0, []Member{{Name: "east-0", Expires: t0.Add(time.Hour)}}))
	assert.False(t, r.Observe(t0.Add(time.Second), []Member{{Name: "east-0", Expires: t0.Add(time.Hour)}}), "seen again: no change to save")
	b, err := json.Marshal(&r)
	require.NoError(t, err)
	var back Roster
	skipped, err := back.Load(b)
	require.NoError(t, err)
	assert.Empty(t, skipped)
	assert.Equal(t, []string{"east-0"}, back.Names())

	skipped, err = back.Load([]byte(`{"candidates":{"":{"seen":"2026-12-04T12:00:00Z","expires":"2027-01-01T00:00:00Z"},"w":{"seen":"2026-12-04T12:00:00Z"},"ok":{"seen":"2026-12-04T12:00:00Z","expires":"2027-01-01T00:00:00Z"}}}`))
	require.NoError(t, err)
	assert.Len(t, skipped, 2)
	assert.Equal(t, []string{"ok"}, back.Names())
	_, err = back.Load([]byte(`not json`))
	assert.Error(t, err)
}
