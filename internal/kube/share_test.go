package kube

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
)

func ep(cluster, target string, w int, up bool) EndpointView {
	st := "up"
	if !up {
		st = "down"
	}
	return EndpointView{Cluster: cluster, Target: target, Weight: w, State: st, Available: up}
}

func TestShareOf(t *testing.T) {
	east := []EndpointView{ep("east", "192.0.2.1", 70, true)}
	tests := []struct {
		name   string
		sv     ServiceView
		mine   []EndpointView
		want   string
		served bool
	}{
		{"a weighted cluster gets its weight's share",
			ServiceView{Strategy: model.StrategyWeighted, Endpoints: []EndpointView{ep("east", "192.0.2.1", 70, true), ep("west", "192.0.2.2", 30, true)}},
			east, "70%", true},
		{"a down peer leaves the whole share to the survivor",
			ServiceView{Strategy: model.StrategyWeighted, Endpoints: []EndpointView{ep("east", "192.0.2.1", 70, true), ep("west", "192.0.2.2", 30, false)}},
			east, "100%", true},
		{"a down endpoint has no share",
			ServiceView{Strategy: model.StrategyWeighted, Endpoints: []EndpointView{ep("east", "192.0.2.1", 70, false), ep("west", "192.0.2.2", 30, true)}},
			[]EndpointView{ep("east", "192.0.2.1", 70, false)}, "0%", false},
		{"when everything is down fail-open shares by weight",
			ServiceView{Strategy: model.StrategyWeighted, Endpoints: []EndpointView{ep("east", "192.0.2.1", 70, false), ep("west", "192.0.2.2", 30, false)}},
			[]EndpointView{ep("east", "192.0.2.1", 70, false)}, "70%", true},
		{"when everything is down fail-open leaves a forced-down endpoint out",
			ServiceView{Strategy: model.StrategyWeighted, Endpoints: []EndpointView{ep("east", "192.0.2.1", 70, false), func() EndpointView { e := ep("west", "192.0.2.2", 30, false); e.Forced = true; return e }()}},
			[]EndpointView{ep("east", "192.0.2.1", 70, false)}, "100%", true},
		{"roundrobin counts endpoints, not weights",
			ServiceView{Strategy: model.StrategyRoundRobin, Endpoints: []EndpointView{ep("east", "192.0.2.1", 70, true), ep("west", "192.0.2.2", 30, true)}},
			east, "50%", true},
		{"the failover primary takes everything",
			ServiceView{Strategy: model.StrategyFailover, Order: []string{"east", "west"}, Endpoints: []EndpointView{ep("east", "192.0.2.1", 70, true), ep("west", "192.0.2.2", 30, true)}},
			east, "100%", true},
		{"the failover secondary takes nothing while the primary is up",
			ServiceView{Strategy: model.StrategyFailover, Order: []string{"east", "west"}, Endpoints: []EndpointView{ep("east", "192.0.2.1", 70, true), ep("west", "192.0.2.2", 30, true)}},
			[]EndpointView{ep("west", "192.0.2.2", 30, true)}, "0%", false},
		{"geo shares by location",
			ServiceView{Strategy: model.StrategyGeo, Endpoints: []EndpointView{ep("east", "192.0.2.1", 70, true)}},
			east, "by location", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, served := shareOf(tt.sv, tt.mine)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.served, served)
		})
	}
}

func TestStatusesNameShareHealthAndLastChange(t *testing.T) {
	a := obj("east", "app", 1, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoWeight: "70"}, "192.0.2.1")
	b := obj("west", "app", 2, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoWeight: "30"}, "192.0.2.2")
	r := Build([]Object{a, b}, base())
	changed := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	view := func(name string) (ServiceView, bool) {
		if name != "app.gslb.example.com." {
			return ServiceView{}, false
		}
		w := ep("west", "192.0.2.2", 30, false)
		w.Since, w.Reason = changed, "heartbeat lost"
		return ServiceView{Strategy: "weighted", Endpoints: []EndpointView{ep("east", "192.0.2.1", 70, true), w}}, true
	}
	st := Statuses([]Object{a, b}, r, view)
	require.Contains(t, st, a.Ref)
	assert.Equal(t, Status{Served: true, Hostnames: []string{"app.gslb.example.com."}, Strategy: "weighted", Share: "100%", Health: "1 up"}, st[a.Ref])
	assert.Equal(t, "0%", st[b.Ref].Share)
	assert.False(t, st[b.Ref].Served)
	require.NotNil(t, st[b.Ref].LastChange)
	assert.Equal(t, changed, *st[b.Ref].LastChange)
	assert.Equal(t, "heartbeat lost", st[b.Ref].Reason)
	assert.JSONEq(t, `{"served":false,"hostnames":["app.gslb.example.com."],"strategy":"weighted","share":"0%","health":"1 down","lastChange":"2026-11-29T10:00:00Z","reason":"heartbeat lost"}`, st[b.Ref].Text())
}
