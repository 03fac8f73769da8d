package placement

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSelector(t *testing.T) {
	eu := map[string]string{"region": "eu", "tier": "core", "gpu": "true"}
	us := map[string]string{"region": "us", "tier": "edge"}
	tests := []struct {
		name           string
		selector       string
		matchEU, match bool
	}{
		{name: "the empty selector matches every cluster", selector: "", matchEU: true, match: true},
		{name: "an equality matches only that value", selector: "region=eu", matchEU: true},
		{name: "a double equals is an equality too", selector: "region==us", match: true},
		{name: "an inequality excludes that value", selector: "tier!=edge", matchEU: true},
		{name: "a bare key requires the label to exist", selector: "gpu", matchEU: true},
		{name: "a negated key requires the label to be absent", selector: "!gpu", match: true},
		{name: "all requirements must hold", selector: "region=eu,tier=edge"},
		{name: "a set requirement matches any listed value", selector: "region in (eu,us)", matchEU: true, match: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := ParseSelector(tc.selector)
			require.NoError(t, err)
			assert.Equal(t, tc.matchEU, Matches(sel, eu), "eu")
			assert.Equal(t, tc.match, Matches(sel, us), "us")
		})
	}
}

func TestParseSelectorErrorNamesTheSelector(t *testing.T) {
	_, err := ParseSelector("region=eu,,=x")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"region=eu,,=x"`)
}

func TestMatchesNilSelectorMatchesNothing(t *testing.T) {
	assert.False(t, Matches(nil, map[string]string{"region": "eu"}))
}

func TestMatchesNilLabels(t *testing.T) {
	sel, err := ParseSelector("tier!=edge")
	require.NoError(t, err)
	assert.True(t, Matches(sel, nil), "a cluster without labels has no tier, so tier!=edge holds")
}
