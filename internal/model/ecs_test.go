package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestECSDependents(t *testing.T) {
	for _, tc := range []struct {
		name     string
		services []Service
		want     []string
	}{
		{"weighted, failover and round-robin services do not depend on the client",
			[]Service{{Name: "a", Strategy: StrategyWeighted}, {Name: "b", Strategy: StrategyFailover}, {Name: "c", Strategy: StrategyRoundRobin}}, nil},
		{"geo and latency services depend on where the client is",
			[]Service{{Name: "a", Strategy: StrategyGeo}, {Name: "b"}, {Name: "c", Strategy: StrategyLatency}}, []string{"a", "c"}},
		{"a sticky service depends on the client's network",
			[]Service{{Name: "a", Sticky: StickySubnet}, {Name: "b", Sticky: StickyOff}}, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Desired{Services: tc.services}
			assert.Equal(t, tc.want, d.ECSDependents())
		})
	}
}

func TestECSTrustedFromEverySource(t *testing.T) {
	assert.True(t, (&Desired{}).ECSTrustedFromEverySource(), "absent: every source")
	assert.False(t, (&Desired{Geo: Geo{ECSTrusted: []string{}}}).ECSTrustedFromEverySource(), "empty: no one")
	assert.False(t, (&Desired{Geo: Geo{ECSTrusted: []string{"192.0.2.0/24"}}}).ECSTrustedFromEverySource())
}
