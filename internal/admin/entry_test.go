package admin

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/shift"
)

func entry(o Override, stamp int64) Entry {
	if o.ID == "" {
		o.ID = "abc123"
	}
	if o.Who == "" {
		o.Who = "alice"
	}
	if o.At.IsZero() {
		o.At = now
	}
	return Entry{Override: o, Stamp: Stamp{At: stamp, Node: "n1"}}
}

func TestCheckEntry(t *testing.T) {
	stamp := now.UnixNano()
	far := now.Add(time.Hour)
	tests := []struct {
		name   string
		id     string
		e      Entry
		reason string // "" = accepted
	}{
		{"a drain of a known cluster is accepted", "abc123", entry(Override{Kind: KindDrain, Cluster: "east", Reason: "x"}, stamp), ""},
		{"a weight on a known endpoint is accepted", "abc123", entry(Override{Kind: KindWeight, Service: "app.gslb.test.", Endpoint: "192.0.2.1", Weight: intp(10), Reason: "x"}, stamp), ""},
		{"a weight entry without a weight is invalid (it crashed nodes once)", "abc123", entry(Override{Kind: KindWeight, Service: "app.gslb.test.", Endpoint: "192.0.2.1", Reason: "x"}, stamp), RejectInvalid},
		{"a weight above 1000 is invalid", "abc123", entry(Override{Kind: KindWeight, Service: "app.gslb.test.", Endpoint: "192.0.2.1", Weight: intp(5000), Reason: "x"}, stamp), RejectInvalid},
		{"an unknown kind is invalid", "abc123", entry(Override{Kind: "pause", Cluster: "east", Reason: "x"}, stamp), RejectInvalid},
		{"an entry without a reason is invalid", "abc123", entry(Override{Kind: KindDrain, Cluster: "east"}, stamp), RejectInvalid},
		{"a stamp of MaxInt64 is in the future", "abc123", entry(Override{Kind: KindDrain, Cluster: "east", Reason: "x"}, math.MaxInt64), RejectFuture},
		{"a stamp an hour ahead is in the future", "abc123", entry(Override{Kind: KindDrain, Cluster: "east", Reason: "x"}, far.UnixNano()), RejectFuture},
		{"a set time an hour ahead is in the future", "abc123", entry(Override{Kind: KindDrain, Cluster: "east", Reason: "x", At: far}, stamp), RejectFuture},
		{"a stamp within the skew is accepted", "abc123", entry(Override{Kind: KindDrain, Cluster: "east", Reason: "x"}, now.Add(5*time.Second).UnixNano()), ""},
		{"an entry filed under another id is invalid", "other", entry(Override{Kind: KindDrain, Cluster: "east", Reason: "x"}, stamp), RejectInvalid},
		{"an id with a slash is invalid", "../x", entry(Override{ID: "../x", Kind: KindDrain, Cluster: "east", Reason: "x"}, stamp), RejectInvalid},
		{"a stamp without a node is invalid", "abc123", Entry{Override: Override{ID: "abc123", Who: "a", At: now, Kind: KindDrain, Cluster: "east", Reason: "x"}, Stamp: Stamp{At: stamp}}, RejectInvalid},
		{"an expiry before the set time is invalid", "abc123", entry(Override{Kind: KindDrain, Cluster: "east", Reason: "x", Expires: ptrTime(now.Add(-time.Minute))}, stamp), RejectInvalid},
		{"an expiry two years out is invalid", "abc123", entry(Override{Kind: KindDrain, Cluster: "east", Reason: "x", Expires: ptrTime(now.Add(2 * 365 * 24 * time.Hour))}, stamp), RejectInvalid},
		{"a drain of a cluster this node does not have is an unknown target", "abc123", entry(Override{Kind: KindDrain, Cluster: "mars", Reason: "x"}, stamp), RejectUnknownTarget},
		{"a shift to a cluster this node does not have is an unknown target", "abc123", entry(shiftOverride("mars"), stamp), RejectUnknownTarget},
		{"a shift to a known cluster is accepted", "abc123", entry(shiftOverride("west"), stamp), ""},
		{"a shift without steps is invalid, not an unknown target", "abc123", entry(func() Override { o := shiftOverride("west"); o.Shift.Spec.Steps = nil; return o }(), stamp), RejectInvalid},
		{"a service name not in canonical form is invalid", "abc123", entry(Override{Kind: KindDrain, Service: "APP.gslb.test", Endpoint: "192.0.2.1", Reason: "x"}, stamp), RejectInvalid},
		{"a removal of an override on a target we lack is kept (it only removes)", "abc123", Entry{Override: entry(Override{Kind: KindDrain, Cluster: "mars", Reason: "x"}, 0).Override, Deleted: true, Stamp: Stamp{At: stamp, Node: "n1"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckEntry(tt.id, tt.e, desired(), now, 10*time.Second)
			if tt.reason == "" {
				assert.Nil(t, err)
				return
			}
			require.NotNil(t, err)
			assert.Equal(t, tt.reason, err.Reason, err.Error())
		})
	}
}

func ptrTime(t time.Time) *time.Time { return &t }

// shiftOverride is a shift of app.gslb.test. to cluster to, started now.
func shiftOverride(to string) Override {
	return Override{Kind: KindShift, Service: "app.gslb.test.", Reason: "x", Shift: &Shift{
		Spec:     shift.Spec{To: to, Steps: []int{1, 50, 100}, Every: time.Minute},
		Progress: shift.Start(now),
	}}
}

func TestABadEntryInTheStateFileIsSkippedNotFatal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.json")
	content := `{"entries":{
	  "good1":{"o":{"id":"good1","kind":"drain","cluster":"east","who":"alice","reason":"x","at":"2026-11-29T12:00:00Z"},"s":{"t":1,"n":"n1"}},
	  "bad1":{"o":{"id":"bad1","kind":"weight","service":"app.gslb.test.","endpoint":"192.0.2.1","who":"eve","reason":"x","at":"2026-11-29T12:00:00Z"},"s":{"t":1,"n":"n1"}},
	  "bad2":{"o":{"id":"bad2","kind":"drain","cluster":"west","who":"eve","reason":"x","at":"2026-11-29T12:00:00Z"},"s":{"t":9223372036854775807,"n":"n1"}}}}`
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	s, err := Open(path, "n1", 0)
	require.NoError(t, err, "a bad entry is never a reason not to start")
	require.Len(t, s.Active(), 1)
	assert.Equal(t, "good1", s.Active()[0].ID)
	reasons := map[string]string{}
	for _, e := range s.Skipped() {
		reasons[e.ID] = e.Reason
	}
	assert.Equal(t, map[string]string{"bad1": RejectInvalid, "bad2": RejectFuture}, reasons)
}

func TestDescribeNeverPanicsOnAWeightWithoutValue(t *testing.T) {
	assert.NotPanics(t, func() { _ = Override{Kind: KindWeight, Who: "x"}.Describe() })
}

func TestAddRefusesBeyondThisNodesOwnShare(t *testing.T) {
	s, err := Open("", "n1", 0)
	require.NoError(t, err)
	for range MaxPerOrigin {
		_, err := s.Add(Override{Kind: KindDrain, Cluster: "east", Reason: "x"}, "alice")
		require.NoError(t, err)
	}
	_, err = s.Add(Override{Kind: KindDrain, Cluster: "east", Reason: "x"}, "alice")
	assert.ErrorIs(t, err, ErrTooMany)
}
