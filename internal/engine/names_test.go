package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
)

// nameMutations are the mutations (by index) that change one service's
// value or name, or add or remove one, or have the name tables built from
// scratch with the services shared.
var nameMutations = func() []int {
	var out []int
	for i, m := range mutations {
		switch m.name {
		case "an endpoint's weight", "an endpoint's drain", "a service renamed", "a service removed", "a service added at a new name", "two services swap names",
			"a zone's TTLs": // the tables from scratch, most services shared
			out = append(out, i)
		}
	}
	return out
}()

// A chain of incremental compiles shares each zone's name table with the
// snapshot before (nameTable): every snapshot of the chain must still
// answer as a compile of its own desired state from scratch once later
// ones are built, across the flattening of the tables too.
func TestIncrementalCompilesLeaveEarlierSnapshotsAsTheyWere(t *testing.T) {
	require.Len(t, nameMutations, 7, "the mutations named above exist")
	old := flattenMin
	flattenMin = 3 // flatten every few changes: the chain crosses it
	t.Cleanup(func() { flattenMin = old })

	base := desired(t, fixture)
	loc := locator(t, base)
	now := time.Now()
	r := rand.New(rand.NewPCG(18, 4))
	h := fakeHealth{endpoints: map[string]State{}, clusters: map[string]State{}}
	type step struct {
		d    *model.Desired
		h    Health
		snap *Snapshot
	}
	first, err := Compile(base, Options{Health: h, Locator: loc, Now: now})
	require.NoError(t, err)
	chain := []step{{base, h, first}}
	flattened, overlaid := 0, 0
	for round := range 30 {
		prev := chain[len(chain)-1]
		next := *prev.d
		m := mutations[nameMutations[r.IntN(len(nameMutations))]] // one service's value or name
		m.apply(r, &next, &h)
		snap, err := Compile(&next, Options{Health: h, Locator: loc, Previous: prev.snap, Now: now})
		require.NoError(t, err)
		require.GreaterOrEqual(t, snap.SharedServices(), len(next.Services)-2, "round %d (%s): at most two services compiled anew", round, m.name)
		for apex, z := range snap.zones {
			pz := prev.snap.zones[apex]
			switch {
			case len(z.names.over) == 0 || len(pz.names.over) >= flattenAt(len(pz.names.base)):
				flattened++
			default:
				overlaid++
				assert.Equal(t, fmt.Sprintf("%p", pz.names.base), fmt.Sprintf("%p", z.names.base), "round %d: the base is shared", round)
			}
		}
		chain = append(chain, step{&next, h, snap})
	}
	assert.Positive(t, flattened, "the chain flattens a table")
	assert.Positive(t, overlaid, "the chain overlays a shared table")

	for i, st := range chain {
		full, err := Compile(st.d, Options{Health: st.h, Locator: loc, Now: now})
		require.NoError(t, err)
		names := make([]string, len(st.d.Services))
		for k, s := range st.d.Services {
			names[k] = s.Name
		}
		assert.Equal(t, full.Services(), st.snap.Services(), "snapshot %d", i)
		assert.Equal(t, nameTables(full), nameTables(st.snap), "snapshot %d has the owner names of its own state", i)
		assert.Equal(t, lookupAll(full, names), lookupAll(st.snap, names), "snapshot %d answers as from scratch", i)
		assert.Equal(t, explainAll(full, names), explainAll(st.snap, names), "snapshot %d explains as from scratch", i)
		for apex, z := range full.zones {
			zd, ok := st.snap.ZoneData(apex)
			require.True(t, ok)
			want, _ := full.ZoneData(apex)
			assert.Equal(t, fmt.Sprint(want.Records), fmt.Sprint(zd.Records), "snapshot %d zone %s", i, z.apex)
		}
	}
}
