package admin

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
)

func desired() *model.Desired {
	w := 100
	return &model.Desired{
		Clusters: []model.Cluster{{Name: "east", Region: "r1", State: "up"}, {Name: "west", Region: "r2", State: "up"}},
		Services: []model.Service{{Name: "app.gslb.test.", Endpoints: []model.Endpoint{
			{Address: "192.0.2.1", Cluster: "east", Weight: &w}, {Address: "192.0.2.2", Cluster: "west", Weight: &w}}}},
	}
}

func intp(v int) *int { return &v }

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		req   Request
		field string // "" = valid
	}{
		{"draining a cluster is valid", Request{Kind: KindDrain, Cluster: "east", Reason: "maintenance"}, ""},
		{"forcing an endpoint down for an hour is valid", Request{Kind: KindForceDown, Service: "app.gslb.test", Endpoint: "192.0.2.1", Reason: "bad", ExpiresIn: "1h"}, ""},
		{"a weight override is valid", Request{Kind: KindWeight, Service: "app.gslb.test.", Endpoint: "192.0.2.2", Weight: intp(500), Reason: "shift"}, ""},
		{"an unknown kind names the allowed kinds", Request{Kind: "pause", Cluster: "east", Reason: "x"}, "kind"},
		{"a reason is required", Request{Kind: KindDrain, Cluster: "east"}, "reason"},
		{"an unknown cluster is rejected", Request{Kind: KindDrain, Cluster: "mars", Reason: "x"}, "cluster"},
		{"an unknown service is rejected", Request{Kind: KindDrain, Service: "nope.gslb.test", Endpoint: "192.0.2.1", Reason: "x"}, "service"},
		{"an unknown endpoint is rejected", Request{Kind: KindDrain, Service: "app.gslb.test", Endpoint: "192.0.2.9", Reason: "x"}, "endpoint"},
		{"a cluster and an endpoint together are rejected", Request{Kind: KindDrain, Cluster: "east", Service: "app.gslb.test", Endpoint: "192.0.2.1", Reason: "x"}, "cluster"},
		{"a weight out of range is rejected", Request{Kind: KindWeight, Service: "app.gslb.test", Endpoint: "192.0.2.1", Weight: intp(1001), Reason: "x"}, "weight"},
		{"a weight on a cluster is rejected", Request{Kind: KindWeight, Cluster: "east", Weight: intp(1), Reason: "x"}, "kind"},
		{"a weight without kind weight is rejected", Request{Kind: KindDrain, Cluster: "east", Weight: intp(1), Reason: "x"}, "weight"},
		{"a bad expiry is rejected", Request{Kind: KindDrain, Cluster: "east", Reason: "x", ExpiresIn: "soon"}, "expires_in"},
		{"a negative expiry is rejected", Request{Kind: KindDrain, Cluster: "east", Reason: "x", ExpiresIn: "-5m"}, "expires_in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.req.Validate(desired(), now)
			if tt.field == "" {
				require.NoError(t, err)
				return
			}
			var fe FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tt.field, fe.Field)
		})
	}
}

func TestMergeKeepsEveryNodesChangesAndARemovalWins(t *testing.T) {
	a, err := Open("", "a", 0)
	require.NoError(t, err)
	b, err := Open("", "b", 0)
	require.NoError(t, err)
	a.now = func() time.Time { return now }
	b.now = func() time.Time { return now }
	oa, err := a.Add(Override{Kind: KindDrain, Cluster: "east", Reason: "x"}, "alice")
	require.NoError(t, err)
	_, err = b.Add(Override{Kind: KindDrain, Cluster: "west", Reason: "y"}, "bob")
	require.NoError(t, err)
	changed, refused, err := a.Merge(b.State())
	require.NoError(t, err)
	assert.Empty(t, refused)
	assert.True(t, changed)
	_, _, _ = b.Merge(a.State())
	assert.Len(t, a.Active(), 2, "concurrent adds on two nodes are both kept")
	assert.Equal(t, a.Active(), b.Active())

	b.now = func() time.Time { return now.Add(time.Second) }
	_, err = b.Remove(oa.ID)
	require.NoError(t, err)
	_, _, _ = a.Merge(b.State())
	assert.Len(t, a.Active(), 1, "the removal reached a")
	changed, _, _ = b.Merge(a.State())
	assert.False(t, changed, "merging an older add does not resurrect it")
	_, err = b.Remove(oa.ID)
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestTheStateSurvivesARestartAndACorruptFileIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.json")
	s, err := Open(path, "n1", 0)
	require.NoError(t, err)
	o, err := s.Add(Override{Kind: KindForceDown, Cluster: "east", Reason: "incident"}, "alice")
	require.NoError(t, err)
	s2, err := Open(path, "n1", 0)
	require.NoError(t, err)
	require.Len(t, s2.Active(), 1)
	assert.Equal(t, o.ID, s2.Active()[0].ID)
	assert.Equal(t, "alice@n1", s2.Active()[0].Who, "who is the token's name on the node that took the request")
	entries, _ := os.ReadDir(filepath.Dir(path))
	assert.Len(t, entries, 1, "no temporary file left behind")

	require.NoError(t, os.WriteFile(path, []byte("{not json"), 0o644))
	_, err = Open(path, "n1", 0)
	assert.ErrorContains(t, err, "admin.json is not valid JSON")
}

func TestAnExpiredOverrideIsNotActive(t *testing.T) {
	s, _ := Open("", "n", 0)
	s.now = func() time.Time { return now }
	exp := now.Add(time.Minute)
	_, err := s.Add(Override{Kind: KindDrain, Cluster: "east", Reason: "x", Expires: &exp}, "a")
	require.NoError(t, err)
	assert.Len(t, s.Active(), 1)
	s.now = func() time.Time { return now.Add(2 * time.Minute) }
	assert.Empty(t, s.Active())
}

func TestApply(t *testing.T) {
	d := desired()
	ovs := []Override{
		{Kind: KindDrain, Cluster: "east", Who: "alice", Reason: "maintenance"},
		{Kind: KindWeight, Service: "app.gslb.test.", Endpoint: "192.0.2.2", Weight: intp(7), Who: "bob", Reason: "shift"},
		{Kind: KindForceDown, Service: "app.gslb.test.", Endpoint: "192.0.2.1", Who: "carol", Reason: "bad"},
		{Kind: KindForceUp, Service: "app.gslb.test.", Endpoint: "192.0.2.2", Who: "dave", Reason: "probe is wrong"},
	}
	a := Apply(d, ovs)
	assert.True(t, a.Desired.Clusters[0].Drain)
	assert.Equal(t, 7, *a.Desired.Services[0].Endpoints[1].Weight)
	assert.Equal(t, model.StateDown, a.Desired.Services[0].Endpoints[0].State)
	assert.False(t, d.Clusters[0].Drain, "the input is not modified")
	assert.Equal(t, 100, *d.Services[0].Endpoints[1].Weight)
	assert.Equal(t, "drained by alice: maintenance", a.Notes[engine.NoteKey("", "east")])
	assert.Contains(t, a.Notes[engine.NoteKey("app.gslb.test.", "192.0.2.2")], "weight set to 7 by bob")
	h := a.Health(downHealth{})
	assert.Equal(t, engine.Up, h.Endpoint("app.gslb.test.", "192.0.2.2"), "forced up whatever the votes say")
	assert.Equal(t, engine.Down, h.Endpoint("app.gslb.test.", "192.0.2.1"))
}

type downHealth struct{}

func (downHealth) Endpoint(string, string) engine.State { return engine.Down }
func (downHealth) Cluster(string) engine.State          { return engine.Down }

func TestAWeightOutOfRangeSaysSoAndNamesTheRange(t *testing.T) {
	for _, tc := range []struct {
		name   string
		weight *int
		want   string
	}{
		{"5 000 is out of range", intp(5000), "weight: 5000 is out of range (allowed: 0..1000)"},
		{"-1 is out of range", intp(-1), "weight: -1 is out of range (allowed: 0..1000)"},
		{"no weight is required", nil, "weight: is required with kind weight (allowed: 0..1000)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Request{Kind: KindWeight, Service: "app.gslb.test", Endpoint: "192.0.2.1", Weight: tc.weight, Reason: "x"}.Validate(desired(), now)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}
