package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func shareFixture() *Desired {
	w := func(n int) *int { return &n }
	return &Desired{Services: []Service{
		{Name: "a.example.test.", Strategy: StrategyWeighted, TTL: 30, Endpoints: []Endpoint{{Address: "192.0.2.1", Cluster: "east", Weight: w(100)}}},
		{Name: "b.example.test.", Strategy: StrategyFailover, TTL: 30, Endpoints: []Endpoint{{Address: "192.0.2.2", Cluster: "east", Weight: w(100)}},
			Failover: &FailoverPolicy{Order: []string{"east"}}},
		{Name: "c.example.test.", Strategy: StrategyWeighted, TTL: 30, Endpoints: []Endpoint{{Address: "192.0.2.3", Cluster: "west", Weight: w(100)}}},
	}}
}

// sameValue reports whether a and b share their endpoints (the identity the
// engine's reuse checks).
func sameValue(a, b *Service) bool {
	return len(a.Endpoints) > 0 && &a.Endpoints[0] == &b.Endpoints[0] && a.Failover == b.Failover
}

func TestShareUnchanged(t *testing.T) {
	t.Run("an equal service becomes the previous value, a changed one stays the new one", func(t *testing.T) {
		prev, next := shareFixture(), shareFixture()
		next.Services[1].TTL = 60
		require.Equal(t, 2, ShareUnchanged(next, prev))
		assert.True(t, sameValue(&next.Services[0], &prev.Services[0]))
		assert.False(t, sameValue(&next.Services[1], &prev.Services[1]))
		assert.Equal(t, 60, next.Services[1].TTL)
		assert.True(t, sameValue(&next.Services[2], &prev.Services[2]))
	})
	t.Run("a changed endpoint weight is a changed service", func(t *testing.T) {
		prev, next := shareFixture(), shareFixture()
		*next.Services[0].Endpoints[0].Weight = 5
		require.Equal(t, 2, ShareUnchanged(next, prev))
		assert.False(t, sameValue(&next.Services[0], &prev.Services[0]))
		assert.Equal(t, 5, *next.Services[0].Endpoints[0].Weight)
	})
	t.Run("services are found by name when they moved, added or removed", func(t *testing.T) {
		prev, next := shareFixture(), shareFixture()
		next.Services = []Service{next.Services[2], {Name: "new.example.test."}, next.Services[0]}
		require.Equal(t, 2, ShareUnchanged(next, prev))
		assert.True(t, sameValue(&next.Services[0], &prev.Services[2]))
		assert.True(t, sameValue(&next.Services[2], &prev.Services[0]))
		assert.Equal(t, "new.example.test.", next.Services[1].Name)
	})
	t.Run("nothing is shared with no previous state", func(t *testing.T) {
		next := shareFixture()
		assert.Zero(t, ShareUnchanged(next, nil))
		assert.Zero(t, ShareUnchanged(next, &Desired{}))
	})
}
