package admin

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flood is n entries written by node, each stamped at now + i ns.
func flood(node string, n int, at time.Time, f func(*Entry)) State {
	st := State{Entries: map[string]Entry{}}
	for i := range n {
		id := fmt.Sprintf("%s-%05d", node, i)
		e := Entry{Override: Override{ID: id, Kind: KindForceDown, Cluster: "east", Who: "mallory@" + node, Reason: "x", At: at}, Stamp: Stamp{At: at.UnixNano() + int64(i), Node: node}}
		if f != nil {
			f(&e)
		}
		st.Entries[id] = e
	}
	return st
}

func count(st State, node string) int {
	n := 0
	for _, e := range st.Entries {
		if e.Stamp.Node == node {
			n++
		}
	}
	return n
}

func TestMergeCapped(t *testing.T) {
	lim := DefaultLimits
	huge := func(e *Entry) {
		e.Override.Reason = strings.Repeat("r", MaxReason)
		e.Override.Forced = strings.Repeat("f", MaxForced)
	}
	tests := []struct {
		name   string
		held   State
		in     []State
		check  func(t *testing.T, st State, refused []EntryError)
		reason string // every refusal's reason ("" = none refused; "cap-*" = either cap)
	}{
		{
			name: "a flood of 4200 entries from one writer keeps its share and no more",
			in:   []State{flood("evil", 4200, now, nil)},
			check: func(t *testing.T, st State, refused []EntryError) {
				assert.Equal(t, MaxPerOrigin, count(st, "evil"))
				assert.Len(t, refused, 4200-MaxPerOrigin)
			},
			reason: RejectCapOrigin,
		},
		{
			name: "the largest entries allowed stay under the byte budget of a writer",
			in:   []State{flood("evil", 4200, now, huge)},
			check: func(t *testing.T, st State, _ []EntryError) {
				assert.LessOrEqual(t, st.Size(), MaxOriginBytes+16)
			},
			reason: RejectCapOrigin,
		},
		{
			name: "many writers together never take this node's own share",
			in: func() []State {
				var out []State
				for i := range 20 {
					out = append(out, flood(fmt.Sprintf("w%02d", i), 300, now, huge))
				}
				return out
			}(),
			check: func(t *testing.T, st State, _ []EntryError) {
				assert.LessOrEqual(t, st.Size(), MaxStateBytes-MaxOriginBytes+16)
				assert.LessOrEqual(t, len(st.Entries), MaxEntries-MaxPerOrigin)
			},
			reason: "cap-*",
		},
		{
			name: "expired entries of a writer go before its new entries are refused",
			held: flood("w", MaxPerOrigin, now.Add(-2*time.Hour), func(e *Entry) {
				exp := now.Add(-time.Hour)
				e.Override.Expires = &exp
			}),
			in: []State{func() State {
				st := flood("w", 10, now, nil)
				for id, e := range st.Entries {
					delete(st.Entries, id)
					st.Entries["new-"+id] = e
				}
				return st
			}()},
			check: func(t *testing.T, st State, refused []EntryError) {
				assert.Empty(t, refused)
				assert.Equal(t, MaxPerOrigin, count(st, "w"))
				assert.Len(t, st.Active(now), 10, "the new ones are in force")
			},
		},
		{
			name: "removals over an hour old of a writer go before its new entries are refused",
			held: flood("w", MaxPerOrigin, now.Add(-2*time.Hour), func(e *Entry) { e.Deleted = true }),
			in: []State{flood("w2", 0, now, nil), func() State {
				st := flood("w", 10, now, nil)
				for id, e := range st.Entries {
					delete(st.Entries, id)
					st.Entries["new-"+id] = e
				}
				return st
			}()},
			check: func(t *testing.T, st State, refused []EntryError) {
				assert.Empty(t, refused)
				assert.Equal(t, MaxPerOrigin, count(st, "w"))
				assert.Len(t, st.Active(now), 10, "the new ones are in force")
			},
		},
		{
			name: "a removal less than an hour old is kept: an old add arriving late cannot bring it back",
			held: flood("w", MaxPerOrigin, now.Add(-time.Minute), func(e *Entry) { e.Deleted = true }),
			in:   []State{{Entries: map[string]Entry{"fresh": flood("w", 1, now, nil).Entries["w-00000"]}}},
			check: func(t *testing.T, st State, refused []EntryError) {
				assert.Equal(t, MaxPerOrigin, count(st, "w"))
			},
			reason: RejectCapOrigin,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.held.Clone()
			if st.Entries == nil {
				st.Entries = map[string]Entry{}
			}
			var refused []EntryError
			for _, in := range tt.in {
				for id, e := range in.Entries { // ids filed under their own name
					if e.Override.ID != id {
						delete(in.Entries, id)
						e.Override.ID = id
						in.Entries[id] = e
					}
				}
				_, r := st.MergeCapped(in, "self", now, lim)
				refused = append(refused, r...)
			}
			for _, r := range refused {
				if tt.reason == "cap-*" {
					assert.Contains(t, []string{RejectCapOrigin, RejectCapTotal}, r.Reason, r.Error())
					continue
				}
				assert.Equal(t, tt.reason, r.Reason, r.Error())
			}
			if tt.reason != "" {
				assert.NotEmpty(t, refused)
			}
			assert.LessOrEqual(t, len(st.Marshal())*4/3, 1<<20-1024, "the state fits one ring message")
			tt.check(t, st, refused)
		})
	}
}

func TestAFloodFromTheRingLeavesThisNodesOperatorsTheirShare(t *testing.T) {
	s, err := Open("", "n1", 0)
	require.NoError(t, err)
	s.now = func() time.Time { return now }
	for _, w := range []string{"evil", "evil2", "evil3", "evil4", "evil5"} {
		_, _, err := s.Merge(flood(w, 4200, now, nil))
		require.NoError(t, err)
	}
	o, err := s.Add(Override{Kind: KindDrain, Cluster: "east", Reason: "maintenance"}, "alice")
	require.NoError(t, err, "an operator's drain on this node is never refused for what other nodes sent")
	assert.Equal(t, "alice@n1", o.Who)
	assert.LessOrEqual(t, len(s.State().Marshal())*4/3, 1<<20-1024)
}

func TestCheckOrigin(t *testing.T) {
	at := now
	created := Entry{Override: Override{ID: "a", Who: "alice@n1", At: at}, Stamp: Stamp{At: at.UnixNano(), Node: "n1"}}
	stepped := created
	stepped.Stamp = Stamp{At: at.UnixNano() + 5, Node: "writer"}
	tests := []struct {
		name string
		e    Entry
		held *Entry
		ok   bool
	}{
		{"an override set on the node that wrote it is bound", created, nil, true},
		{"a later version by another node keeps its author", stepped, &created, true},
		{"a later version not held yet is taken with its author", stepped, nil, true},
		{"who without a node is refused", func() Entry { e := created; e.Override.Who = "alice-oncall"; return e }(), nil, false},
		{"who without a node is refused in a later version too", func() Entry { e := stepped; e.Override.Who = "alice-oncall"; return e }(), nil, false},
		{"who naming another node than the writer is refused", func() Entry { e := created; e.Override.Who = "alice@n2"; return e }(), nil, false},
		{"who with an empty name is refused", func() Entry { e := created; e.Override.Who = "@n1"; return e }(), nil, false},
		{"a later version that changes who is refused", func() Entry { e := stepped; e.Override.Who = "bob@n1"; return e }(), &created, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckOrigin("a", tt.e, tt.held)
			if tt.ok {
				assert.Nil(t, err)
				return
			}
			require.NotNil(t, err)
			assert.Equal(t, RejectOrigin, err.Reason)
		})
	}
}

func TestASignatureSurvivesTheRing(t *testing.T) {
	pub, key, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	s, err := Open("", "n1", 0)
	require.NoError(t, err)
	s.Sign(func(b []byte) []byte { return ed25519.Sign(key, b) }, "k1")
	exp := time.Now().In(time.FixedZone("x", 7200)).Add(time.Hour)
	o, err := shiftReq().Validate(desired(), now)
	require.NoError(t, err)
	o.Reason = "bad utf-8 \xff and <html> & more"
	o.Expires = &exp
	o, err = s.Add(o, "alice")
	require.NoError(t, err)
	b := s.State().Marshal()
	got, err := Unmarshal(b)
	require.NoError(t, err)
	e := got.Entries[o.ID]
	require.NotEmpty(t, e.Sig)
	assert.True(t, ed25519.Verify(pub, SigInput(o.ID, e), e.Sig), "the receiver computes what the writer signed")
	e.Override.Reason = "changed"
	assert.False(t, ed25519.Verify(pub, SigInput(o.ID, e), e.Sig))

	// A new key signs this node's entries again.
	_, key2, _ := ed25519.GenerateKey(nil)
	s.Sign(func(b []byte) []byte { return ed25519.Sign(key2, b) }, "k2")
	e2 := s.State().Entries[o.ID]
	assert.True(t, ed25519.Verify(key2.Public().(ed25519.PublicKey), SigInput(o.ID, e2), e2.Sig))
	var back Entry
	require.NoError(t, json.Unmarshal(mustJSON(e2), &back))
	assert.True(t, back.Newer(e), "the same version signed again replaces the old signature")
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
