package kube

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/kube/claims"
)

func TestTheFirstClaimsSurviveARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", FirstClaimsFile)
	f, err := OpenFirstClaims(path, nil)
	require.NoError(t, err)
	assert.Empty(t, f.Ledger(), "no file: an empty ledger")
	rel := t0.Add(time.Hour)
	l := claims.Ledger{"app.gslb.example.com.": {Namespace: "team-a", Since: t0},
		"b.gslb.example.com.": {Namespace: "team-b", Since: t0, Released: &rel}}
	f.Set(l)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "written for this user only")

	again, err := OpenFirstClaims(path, nil)
	require.NoError(t, err)
	assert.Equal(t, l, again.Ledger())
}

func TestAFirstClaimsFileThatIsNotJSONStopsTheStartAndABadEntryIsSkipped(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("{not json"), 0o600))
	_, err := OpenFirstClaims(bad, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), bad)

	mixed := filepath.Join(dir, "mixed.json")
	require.NoError(t, os.WriteFile(mixed, []byte(`{"app.gslb.example.com.":{"namespace":"team-a","since":"2026-11-01T00:00:00Z"},
		"*.gslb.example.com.":{"namespace":"team-b","since":"2026-11-01T00:00:00Z"},
		"c.gslb.example.com.":{"namespace":"Team C","since":"2026-11-01T00:00:00Z"},
		"d.gslb.example.com.":{"namespace":"team-d"}}`), 0o600))
	f, err := OpenFirstClaims(mixed, nil)
	require.NoError(t, err)
	assert.Equal(t, claims.Ledger{"app.gslb.example.com.": {Namespace: "team-a", Since: t0}}, f.Ledger())
}
