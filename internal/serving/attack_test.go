package serving

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/admin"
)

// TestOneAdminKeyUnderManyWriterNamesHasOneShareAndAnOperatorsDrainHoldsEverywhere: a
// ring.peers prefix entry (or a site-* credential, as the Helm chart issues
// with the admin capability by default) lets one key sign as every name it
// covers. With the cap per writer name (500 entries, 160 KiB), one
// compromised replica wrote 4 × 500 harmless force-up entries under four
// names and filled what every node keeps for the other nodes together;
// then an operator's drain on east-0 was in force on east-0 only (west-0
// refused it as cap-total). The caps are now per origin (the key).
func TestOneAdminKeyUnderManyWriterNamesHasOneShareAndAnOperatorsDrainHoldsEverywhere(t *testing.T) {
	w := newRingWorld()
	a, b := twoNodes(t, w)
	w.node("rogue-1", true)
	k := w.key("rogue-1")
	w.mu.Lock()
	for i := 2; i <= 4; i++ { // the same key under every name the entry covers
		w.keys[fmt.Sprintf("rogue-%d", i)], w.admins[fmt.Sprintf("rogue-%d", i)] = k, true
	}
	w.mu.Unlock()
	all := admin.State{Entries: map[string]admin.Entry{}}
	for i := 1; i <= 4; i++ {
		name := fmt.Sprintf("rogue-%d", i)
		st := forged(w, name, name, "mallory@"+name, admin.MaxPerOrigin, func(_ int, o *admin.Override) {
			o.Kind, o.Forced = admin.KindForceUp, "" // short entries: the count cap (2000 - 500 for the others) is what fills
		})
		for id, e := range st.Entries {
			all.Entries[id] = e
		}
	}
	for _, n := range []*ringNode{a, b} {
		n.p.OnShared(all.Marshal())
		t.Logf("%s: %d overrides of the rogue key in force", n.name, len(n.p.Overrides()))
	}
	code, body := a.drain(t, `{"kind":"drain","cluster":"east","reason":"maintenance"}`)
	require.Equal(t, http.StatusCreated, code, body)
	for _, n := range []*ringNode{a, b} {
		var mine int
		for _, o := range n.p.Overrides() {
			if strings.HasPrefix(o.Who, "alice@") {
				mine++
			}
		}
		assert.Equal(t, 1, mine, "%s: the operator's drain must be in force on every node (refused cap-total: %.0f)", n.name, rejected(n.m, admin.RejectCapTotal))
	}
}
