package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKubernetesClaimsValidation(t *testing.T) {
	yes := true
	no := false
	tests := []struct {
		name string
		k    Kubernetes
		path string // the field with an error; "" means valid
		msg  string
	}{
		{"a claim of names and suffixes in a zone is valid",
			Kubernetes{Claims: []Claim{{Namespaces: []string{"team-a", "team-b"}, Names: []string{"App.example.test", "example.test"}, Suffixes: []string{"team-a.example.test."}}}}, "", ""},
		{"a claim needs namespaces",
			Kubernetes{Claims: []Claim{{Names: []string{"app.example.test"}}}}, "kubernetes.claims[0].namespaces", "is required"},
		{"a namespace must be a Kubernetes namespace name",
			Kubernetes{Claims: []Claim{{Namespaces: []string{"Team_A"}, Names: []string{"app.example.test"}}}}, "kubernetes.claims[0].namespaces[0]", "is not a namespace name"},
		{"a wildcard namespace is not a namespace",
			Kubernetes{Claims: []Claim{{Namespaces: []string{"*"}, Names: []string{"app.example.test"}}}}, "kubernetes.claims[0].namespaces[0]", "no wildcards"},
		{"a namespace listed twice is an error",
			Kubernetes{Claims: []Claim{{Namespaces: []string{"a", "a"}, Names: []string{"app.example.test"}}}}, "kubernetes.claims[0].namespaces[1]", "duplicate"},
		{"a claim needs names or suffixes",
			Kubernetes{Claims: []Claim{{Namespaces: []string{"a"}}}}, "kubernetes.claims[0]", "needs names or suffixes"},
		{"a claimed name outside every zone is an error",
			Kubernetes{Claims: []Claim{{Namespaces: []string{"a"}, Names: []string{"app.elsewhere.test"}}}}, "kubernetes.claims[0].names[0]", "outside every zone"},
		{"a wildcard suffix is not a name",
			Kubernetes{Claims: []Claim{{Namespaces: []string{"a"}, Suffixes: []string{"*.example.test"}}}}, "kubernetes.claims[0].suffixes[0]", "no wildcards"},
		{"unclaimed_names takes oldest or refuse",
			Kubernetes{UnclaimedNames: "first"}, "kubernetes.unclaimed_names", "allowed: oldest, refuse"},
		{"the status annotation needs status write-back",
			Kubernetes{StatusWriteback: &no, StatusAnnotation: &yes}, "kubernetes.status_annotation", "needs status_writeback"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := minimal()
			d.Kubernetes = tt.k
			err := Validate(d)
			if tt.path == "" {
				require.NoError(t, err)
				return
			}
			var verr *ValidationError
			require.ErrorAs(t, err, &verr)
			require.Len(t, verr.Fields, 1, "one error: %v", err)
			assert.Equal(t, tt.path, verr.Fields[0].Path)
			assert.Contains(t, verr.Fields[0].Msg, tt.msg)
		})
	}
}

func TestNormalizeMakesClaimedNamesCanonicalAndDefaultsUnclaimedNames(t *testing.T) {
	in := minimal()
	in.Kubernetes.Claims = []Claim{{Namespaces: []string{"a"}, Names: []string{"App.Example.test"}, Suffixes: []string{"T.example.test"}}}
	out, err := Normalize(in)
	require.NoError(t, err)
	assert.Equal(t, []string{"app.example.test."}, out.Kubernetes.Claims[0].Names)
	assert.Equal(t, []string{"t.example.test."}, out.Kubernetes.Claims[0].Suffixes)
	assert.Equal(t, UnclaimedOldest, out.Kubernetes.UnclaimedNames)
	assert.Equal(t, "App.Example.test", in.Kubernetes.Claims[0].Names[0], "input unchanged")
	assert.False(t, out.Kubernetes.StatusAnnotationEnabled(), "the status annotation is opt-in")
	assert.True(t, out.Kubernetes.StatusWritebackEnabled(), "Events are on by default")
}
