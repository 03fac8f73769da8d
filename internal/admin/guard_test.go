package admin

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/engine"
)

func TestGuard(t *testing.T) {
	up := func(target string) engine.EndpointStatus {
		return engine.EndpointStatus{Target: target, State: engine.Up}
	}
	unknown := func(target string) engine.EndpointStatus {
		return engine.EndpointStatus{Target: target, State: engine.Unknown}
	}
	down := func(target string) engine.EndpointStatus {
		return engine.EndpointStatus{Target: target, State: engine.Down}
	}
	drained := func(target string) engine.EndpointStatus {
		return engine.EndpointStatus{Target: target, State: engine.Up, Drained: true}
	}
	svc := func(name string, eps ...engine.EndpointStatus) engine.ServiceStatus {
		return engine.ServiceStatus{Name: name, Endpoints: eps}
	}
	one := func(string) MinHealthy { return MinHealthy{N: 1} }
	two := func(string) MinHealthy { return MinHealthy{N: 2} }
	tests := []struct {
		name          string
		before, after []engine.ServiceStatus
		minOf         func(string) MinHealthy
		want          []Shortfall
	}{
		{"draining one of two healthy endpoints keeps one and is allowed",
			[]engine.ServiceStatus{svc("app.", up("a"), up("b"))},
			[]engine.ServiceStatus{svc("app.", up("a"), drained("b"))}, one, nil},
		{"draining the last healthy endpoint is refused naming the service and what remains",
			[]engine.ServiceStatus{svc("app.", up("a"), down("b"))},
			[]engine.ServiceStatus{svc("app.", drained("a"), down("b"))}, one,
			[]Shortfall{{Service: "app.", MinHealthy: 1, Before: 1, After: 0}}},
		{"endpoints of unknown health count as answerable",
			[]engine.ServiceStatus{svc("app.", unknown("a"), unknown("b"))},
			[]engine.ServiceStatus{svc("app.", unknown("a"), drained("b"))}, one, nil},
		{"a min_healthy of two refuses going from two to one",
			[]engine.ServiceStatus{svc("app.", up("a"), up("b"), down("c"))},
			[]engine.ServiceStatus{svc("app.", up("a"), down("b"), down("c"))}, two,
			[]Shortfall{{Service: "app.", MinHealthy: 2, Before: 2, After: 1}}},
		{"a min_healthy of zero turns the guard off",
			[]engine.ServiceStatus{svc("app.", up("a"))},
			[]engine.ServiceStatus{svc("app.", drained("a"))}, func(string) MinHealthy { return MinHealthy{} }, nil},
		{"a service already below its minimum does not block a change that leaves it as it is",
			[]engine.ServiceStatus{svc("app.", down("a")), svc("web.", up("x"), up("y"))},
			[]engine.ServiceStatus{svc("app.", down("a")), svc("web.", drained("x"), up("y"))}, one, nil},
		{"a cluster drain reports every service it would empty, and only those",
			[]engine.ServiceStatus{svc("app.", up("a"), down("b")), svc("web.", up("x"), up("y")), svc("api.", up("p"))},
			[]engine.ServiceStatus{svc("app.", drained("a"), down("b")), svc("web.", drained("x"), up("y")), svc("api.", drained("p"))}, one,
			[]Shortfall{{Service: "app.", MinHealthy: 1, Before: 1, After: 0}, {Service: "api.", MinHealthy: 1, Before: 1, After: 0}}},
		{"each service is held to its own minimum",
			[]engine.ServiceStatus{svc("app.", up("a"), up("b")), svc("web.", up("x"), up("y"))},
			[]engine.ServiceStatus{svc("app.", up("a"), drained("b")), svc("web.", drained("x"), up("y"))},
			func(s string) MinHealthy {
				return map[string]MinHealthy{"app.": {N: 1}, "web.": {N: 2, From: "services[].min_healthy in the config"}}[s]
			},
			[]Shortfall{{Service: "web.", MinHealthy: 2, From: "services[].min_healthy in the config", Before: 2, After: 1}}},
		{"a service that appears only after the change is not judged",
			nil, []engine.ServiceStatus{svc("new.", down("a"))}, one, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Guard(tt.before, tt.after, tt.minOf))
		})
	}
}

func TestGuardErrorNamesTheRuleTheServiceAndWhatRemains(t *testing.T) {
	err := error(&GuardError{Shortfalls: []Shortfall{{Service: "app.demo.test.", MinHealthy: 2, Before: 2, After: 1}}})
	require.True(t, errors.Is(err, ErrBelowMinHealthy))
	assert.Contains(t, err.Error(), "refused by rule min_healthy")
	assert.Contains(t, err.Error(), "service app.demo.test would keep 1 healthy endpoint(s), below min_healthy 2 (now 2)")
	assert.Contains(t, err.Error(), "force")
	assert.Equal(t, "min_healthy: service app.demo.test would keep 1 healthy endpoint(s), below min_healthy 2 (now 2)", err.(*GuardError).Rule())
}

func TestShortfallNamesWhereItsMinimumComesFrom(t *testing.T) {
	s := Shortfall{Service: "web.team-a.test.", MinHealthy: 3, Before: 3, After: 2,
		From: "annotation meridian.io/min-healthy on service team-a/web in cluster east = 1000, clamped to the service's 3 endpoint(s)"}
	assert.Equal(t, "service web.team-a.test would keep 2 healthy endpoint(s), below min_healthy 3 (now 3), set by annotation meridian.io/min-healthy on service team-a/web in cluster east = 1000, clamped to the service's 3 endpoint(s)", s.String())
}

func TestForcedIsShownAndBounded(t *testing.T) {
	o := Override{Kind: KindDrain, Cluster: "east", Who: "alice", Reason: "r", Forced: "min_healthy: x"}
	assert.Contains(t, o.Describe(), "[forced past min_healthy: x]")
	long := make([]byte, MaxForced+1)
	for i := range long {
		long[i] = 'a'
	}
	o.Forced = string(long)
	require.ErrorContains(t, o.validate(nil), "forced: is longer than 2048 characters")
}
