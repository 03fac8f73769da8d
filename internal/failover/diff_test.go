package failover

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/vote"
)

func TestChangedSince(t *testing.T) {
	ep := func(svc, target, cluster string, s State) EndpointState {
		return EndpointState{Subject: vote.EndpointSubject(svc, target), Cluster: cluster, State: s}
	}
	base := &Decision{
		Endpoints: []EndpointState{ep("a.", "192.0.2.1", "east", Up), ep("a.", "192.0.2.2", "west", Up), ep("b.", "192.0.2.3", "east", Up)},
		Clusters:  []ClusterState{{Name: "east", Monitored: true, State: Ready}, {Name: "west", Monitored: true, State: Ready}},
	}
	with := func(f func(d *Decision)) *Decision {
		d := *base
		d.Endpoints = append([]EndpointState(nil), base.Endpoints...)
		d.Clusters = append([]ClusterState(nil), base.Clusters...)
		f(&d)
		return &d
	}
	for _, tc := range []struct {
		name   string
		next   *Decision
		prev   engine.Health
		want   map[string]bool
		wantOK bool
	}{
		{"the same decision changes nothing", base, base, nil, true},
		{"an equal decision changes nothing", with(func(*Decision) {}), base, map[string]bool{}, true},
		{"one endpoint down changes its service only", with(func(d *Decision) { d.Endpoints[1].State = Down }), base, map[string]bool{"a.": true}, true},
		{"a new endpoint changes its service", with(func(d *Decision) { d.Endpoints = append(d.Endpoints, ep("c.", "192.0.2.9", "east", Up)) }), base, map[string]bool{"c.": true}, true},
		{"a removed endpoint changes its service", with(func(d *Decision) { d.Endpoints = d.Endpoints[:2] }), base, map[string]bool{"b.": true}, true},
		{"a held or re-reasoned endpoint in the same state changes nothing", with(func(d *Decision) { d.Endpoints[0].Reason = "held" }), base, map[string]bool{}, true},
		{"a cluster failing over cannot be told per service", with(func(d *Decision) { d.Clusters[0].State = FailedOver }), base, nil, false},
		{"a health that is not a decision cannot be compared", base, engine.NoHealth{}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.next.ChangedSince(tc.prev)
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}
