package admin

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/shift"
)

func shiftReq() Request {
	return Request{Kind: KindShift, Service: "app.gslb.test", To: "west", Every: "3s", Reason: "move to west"}
}

func TestValidateShift(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Request)
		field string
	}{
		{"a shift with default steps is valid", func(*Request) {}, ""},
		{"a shift to an unknown cluster names the clusters", func(r *Request) { r.To = "mars" }, "to"},
		{"a shift without a target is refused", func(r *Request) { r.To = "" }, "to"},
		{"a shift of an unknown service is refused", func(r *Request) { r.Service = "nope.gslb.test" }, "service"},
		{"a shift with steps that do not reach 100 is refused", func(r *Request) { r.Steps = []int{1, 50} }, "steps"},
		{"a shift with a bad interval is refused", func(r *Request) { r.Every = "often" }, "every"},
		{"a shift with an endpoint is refused", func(r *Request) { r.Endpoint = "192.0.2.1" }, "service"},
		{"shift fields on a drain are refused", func(r *Request) { r.Kind, r.Cluster, r.Service = KindDrain, "east", "" }, "to"},
		{"too many guard failures allowed are refused", func(r *Request) { r.MaxFailures = intp(1000) }, "max_failures"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := shiftReq()
			tt.edit(&r)
			o, err := r.Validate(desired(), now)
			if tt.field == "" {
				require.NoError(t, err)
				require.Equal(t, "app.gslb.test.", o.Service)
				require.Equal(t, []int{1, 5, 25, 50, 100}, o.Shift.Spec.Steps)
				require.Equal(t, 3*time.Second, o.Shift.Spec.Every)
				return
			}
			var fe FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tt.field, fe.Field)
		})
	}
	t.Run("a guard without a configured Prometheus is refused", func(t *testing.T) {
		r := shiftReq()
		r.AbortIf = "up == 0"
		_, err := r.Validate(desired(), now)
		var fe FieldError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, "abort_if", fe.Field)
		d := desired()
		d.Shift.PrometheusURL = "http://prometheus:9090"
		_, err = r.Validate(d, now)
		require.NoError(t, err)
	})
	t.Run("a shift of a failover service is refused", func(t *testing.T) {
		d := desired()
		d.Services[0].Strategy = model.StrategyFailover
		_, err := shiftReq().Validate(d, now)
		var fe FieldError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, "service", fe.Field)
	})
}

func TestAShiftEntryFromTheRingIsCheckedLikeTheAPI(t *testing.T) {
	o, err := shiftReq().Validate(desired(), now)
	require.NoError(t, err)
	o.ID, o.Who, o.At = "s1", "alice", now
	require.Nil(t, CheckEntry("s1", Entry{Override: o, Stamp: Stamp{At: now.UnixNano(), Node: "n1"}}, desired(), now, time.Second))
	bad := o
	sh := *o.Shift
	sh.Progress.Step = 9
	bad.Shift = &sh
	e := CheckEntry("s1", Entry{Override: bad, Stamp: Stamp{At: now.UnixNano(), Node: "n1"}}, desired(), now, time.Second)
	require.NotNil(t, e)
	assert.Equal(t, RejectInvalid, e.Reason)
	onDrain := Override{ID: "d1", Kind: KindDrain, Cluster: "east", Reason: "x", Who: "a", At: now, Shift: o.Shift}
	require.NotNil(t, CheckEntry("d1", Entry{Override: onDrain, Stamp: Stamp{At: now.UnixNano(), Node: "n1"}}, nil, now, time.Second))
}

func weights(d *model.Desired) map[string]int {
	out := map[string]int{}
	for _, e := range d.Services[0].Endpoints {
		out[e.Address] = *e.Weight
	}
	return out
}

func TestApplyShift(t *testing.T) {
	at := func(step int) Override {
		o, err := shiftReq().Validate(desired(), now)
		require.NoError(t, err)
		o.Shift.Progress.Step = step
		return o
	}
	tests := []struct {
		name string
		o    Override
		want map[string]int
	}{
		{"the first step sends 1% of the weight to the target", at(0), map[string]int{"192.0.2.1": 990, "192.0.2.2": 10}},
		{"25% splits the weight a quarter to the target", at(2), map[string]int{"192.0.2.1": 750, "192.0.2.2": 250}},
		{"100% leaves the others as backups (weight 0)", at(4), map[string]int{"192.0.2.1": 0, "192.0.2.2": 1000}},
		{"a rollback to 0% leaves the target as a backup", at(-1), map[string]int{"192.0.2.1": 1000, "192.0.2.2": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := desired()
			a := Apply(d, []Override{tt.o})
			assert.Equal(t, tt.want, weights(a.Desired))
			assert.Equal(t, map[string]int{"192.0.2.1": 100, "192.0.2.2": 100}, weights(d), "the input is not modified")
			assert.Contains(t, a.Notes[engine.NoteKey("app.gslb.test.", "192.0.2.2")], "shifting to west")
		})
	}
	t.Run("a shift splits the weights a weight override set, in proportion", func(t *testing.T) {
		d := desired()
		d.Services[0].Endpoints = append(d.Services[0].Endpoints, model.Endpoint{Address: "192.0.2.3", Cluster: "east", Weight: intp(100)})
		w := Override{Kind: KindWeight, Service: "app.gslb.test.", Endpoint: "192.0.2.1", Weight: intp(300)}
		s := at(3)
		a := Apply(d, []Override{s, w})
		assert.Equal(t, map[string]int{"192.0.2.1": 375, "192.0.2.3": 125, "192.0.2.2": 500}, weights(a.Desired))
	})
}

func TestUpdateWritesANewerVersionOfAShift(t *testing.T) {
	s, err := Open("", "n1", 0)
	require.NoError(t, err)
	o, err := shiftReq().Validate(desired(), now)
	require.NoError(t, err)
	o, err = s.Add(o, "alice")
	require.NoError(t, err)
	before := s.State().Entries[o.ID].Stamp
	got, err := s.Update(o.ID, func(cur Override) (Override, error) {
		sh := *cur.Shift
		sh.Progress = shift.Pause(sh.Progress, "paused by bob: checking")
		cur.Shift = &sh
		return cur, nil
	})
	require.NoError(t, err)
	assert.True(t, got.Shift.Progress.Paused)
	assert.Equal(t, "alice@n1", got.Who)
	assert.True(t, s.State().Entries[o.ID].Stamp.after(before))
	_, err = s.Update("nope", func(cur Override) (Override, error) { return cur, nil })
	assert.ErrorIs(t, err, ErrNotFound)
}
