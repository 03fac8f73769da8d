package ring

import (
	"encoding/json"
	"io"
	"log"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/ringca"
	"github.com/meridian-gslb/meridian/internal/vote"
)

// ghost is a plain memberlist node without any Meridian key: it announces
// captured node metadata and, in its push/pull state, captured credential
// envelopes (both signed by someone else, long ago).
type ghost struct {
	meta  []byte
	creds [][]byte
}

func (g ghost) NodeMeta(int) []byte           { return g.meta }
func (ghost) NotifyMsg([]byte)                {}
func (ghost) GetBroadcasts(int, int) [][]byte { return nil }
func (g ghost) LocalState(bool) []byte {
	b, _ := json.Marshal(fullState{Creds: g.creds})
	return b
}
func (ghost) MergeRemoteState([]byte, bool) {}

func startGhost(t *testing.T, name string, g ghost, seed string) {
	t.Helper()
	c := memberlist.DefaultLANConfig()
	c.Name, c.BindAddr, c.BindPort, c.Label = name, "127.0.0.1", 0, "test"
	c.GossipInterval, c.ProbeInterval, c.ProbeTimeout, c.PushPullInterval = 20*time.Millisecond, 200*time.Millisecond, 100*time.Millisecond, 300*time.Millisecond
	c.Delegate = g
	c.Logger = log.New(io.Discard, "", 0)
	m, err := memberlist.Create(c)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Shutdown() })
	_, err = m.Join([]string{seed})
	require.NoError(t, err)
}

// refusals records every refusal by origin and reason.
type refusals struct {
	mu  sync.Mutex
	got map[string][]string // origin -> reasons
}

func (f *refusals) hook(_ string, rj *rejection) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.got == nil {
		f.got = map[string][]string{}
	}
	f.got[rj.origin] = append(f.got[rj.origin], rj.reason)
}

func (f *refusals) of(origin string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got[origin])
}

// TestReplayedGhostsOfDepartedReplicasDoNotSilenceASite: two replicas of a
// max_nodes 2 entry (east-a, east-b) leave; two plain memberlist nodes
// without any Meridian key take their names and announce their captured
// signed metadata (and, with credentials, their captured credentials);
// then the live replicas (east-c, east-d) join. The ghosts send no signed
// summary, so they take no place: the live replicas count, their votes are
// taken, and none of their messages is refused as unadmitted.
func TestReplayedGhostsOfDepartedReplicasDoNotSilenceASite(t *testing.T) {
	s := vote.EndpointSubject("app.example.test.", "192.0.2.1")
	type site struct {
		victim   *Ring
		replica  func(name string) Config
		refusals *refusals
	}
	setups := []struct {
		name  string
		setup func(t *testing.T) site
	}{
		{"replicas sharing a ring.peers prefix entry's key", func(t *testing.T) site {
			shared := NewIdentity()
			l := labFor(t)
			vcfg := l.config("v", "r1", RoleProber, "")
			vid := l.ids["v"]
			peers := []model.RingPeer{
				{Name: "east-*", Role: model.PeerProber, Region: "r2", MaxNodes: 2, PublicKey: model.FormatPeerKey(shared.Public())},
				{Name: "v", Role: model.PeerProber, Region: "r1", PublicKey: model.FormatPeerKey(vid.Public())},
			}
			f := &refusals{}
			vcfg.Peers, vcfg.SummaryInterval, vcfg.MaxClockSkew, vcfg.onReject = peers, 100*time.Millisecond, time.Second, f.hook
			victim, err := Start(vcfg)
			require.NoError(t, err)
			t.Cleanup(func() { _ = victim.Shutdown() })
			return site{victim: victim, refusals: f, replica: func(name string) Config {
				c := l.config(name, "r2", RoleProber, "")
				c.Identity, c.Peers, c.Seeds, c.SummaryInterval, c.MaxClockSkew = shared, peers, []string{victim.LocalAddr()}, 100*time.Millisecond, time.Second
				return c
			}}
		}},
		{"replicas sharing one east-* credential from the ring CA", func(t *testing.T) site {
			l := newCALab(t, "ca")
			pool := l.pool(nil, "ca")
			now := time.Now()
			east := l.issue("ca", prober("r2", "east-*", 2), now, time.Hour)
			vc := l.issue("ca", ringca.Scope{Role: ringca.RoleProber, Region: "r1", Name: "v"}, now, time.Hour)
			f := &refusals{}
			vcfg := l.config("v", "r1", RoleProber, &vc, pool)
			vcfg.MaxClockSkew, vcfg.onReject = time.Second, f.hook
			victim := l.start(vcfg)
			return site{victim: victim, refusals: f, replica: func(name string) Config {
				c := l.config(name, "r2", RoleProber, &east, pool, victim.LocalAddr())
				c.MaxClockSkew = time.Second
				return c
			}}
		}},
	}
	for _, tc := range setups {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.setup(t)
			v := st.victim
			// Two replicas live, count, and leave (a rollout replaced them).
			captured := map[string]ghost{}
			for _, name := range []string{"east-a", "east-b"} {
				r, err := Start(st.replica(name))
				require.NoError(t, err)
				eventually(t, name+" counts", func() bool { return slices.ContainsFunc(v.Members(), func(m Member) bool { return m.Name == name }) })
				for _, n := range v.nodeList() {
					if n.Name == name {
						captured[name] = ghost{meta: slices.Clone(n.Meta)}
					}
				}
				if oc := r.own.Load(); oc != nil {
					g := captured[name]
					g.creds = [][]byte{slices.Clone(oc.msg)} // as any push/pull of the ring carried it
					captured[name] = g
				}
				require.NoError(t, r.Shutdown())
			}
			eventually(t, "both left", func() bool { return len(v.AllMembers()) == 1 })
			// The ghosts come back under the departed names.
			for _, name := range []string{"east-a", "east-b"} {
				startGhost(t, name, captured[name], v.LocalAddr())
			}
			eventually(t, "the ghosts are members", func() bool { return len(v.AllMembers()) == 3 })
			time.Sleep(1500 * time.Millisecond) // past the departed replicas' last summaries (3 × 100ms + 1s)

			// The live replicas join while the ghosts stay connected.
			var live []*Ring
			for _, name := range []string{"east-c", "east-d"} {
				r, err := Start(st.replica(name))
				require.NoError(t, err)
				t.Cleanup(func() { _ = r.Shutdown() })
				live = append(live, r)
			}
			eventually(t, "the live replicas count, the ghosts do not", func() bool {
				var names []string
				for _, m := range v.Members() {
					names = append(names, m.Name)
				}
				return slices.Equal(names, []string{"east-c", "east-d", "v"})
			})
			assert.Len(t, v.AllMembers(), 5, "the ghosts are still connected")
			for _, r := range live {
				r.Publish(s, vote.Down, time.Now())
			}
			eventually(t, "both live replicas' votes are counted", func() bool {
				return hasVote(v, "east-c", s, vote.Down) && hasVote(v, "east-d", s, vote.Down)
			})
			for _, name := range []string{"east-c", "east-d"} {
				assert.NotContains(t, st.refusals.of(name), ReasonUnadmitted, "%s: a live replica is never refused as unadmitted", name)
			}
		})
	}
}

// signedMeta is a node's metadata as it announces it, signed with id.
func signedMeta(id Identity, name string, md meta) (string, meta) {
	md.Sig = id.Sign(metaInput(name, md))
	return string(mustJSON(md)), md
}

func TestAMembersMetadataCountsOnlyAsItsOwnSignerWroteIt(t *testing.T) {
	p2, agent := NewIdentity(), NewIdentity()
	r := detached(t, p2, agent)
	now := time.Now()
	inc := uint64(now.Add(-time.Minute).UnixNano())
	v3 := meta{Region: "r2", Role: RoleProber, Inc: inc, At: now.UnixMilli()}
	_, signed := signedMeta(p2, "p2", v3)
	stripped := signed
	stripped.Inc, stripped.At = 0, 0 // passed off as older metadata
	cases := []struct {
		name string
		md   meta
		want bool
	}{
		{"metadata naming its incarnation and time checks out", signed, true},
		{"older metadata without an incarnation still checks out (a rolling upgrade)", func() meta { _, m := signedMeta(p2, "p2", meta{Region: "r2", Role: RoleProber}); return m }(), true},
		{"the same metadata with its incarnation removed does not", stripped, false},
		{"metadata with another incarnation than the one signed does not", func() meta { m := signed; m.Inc++; return m }(), false},
		{"metadata of an incarnation that has not begun does not", func() meta {
			_, m := signedMeta(p2, "p2", meta{Region: "r2", Role: RoleProber, Inc: uint64(now.Add(time.Hour).UnixNano()), At: now.UnixMilli()})
			return m
		}(), false},
		{"metadata signed an hour from now does not", func() meta {
			_, m := signedMeta(p2, "p2", meta{Region: "r2", Role: RoleProber, Inc: inc, At: now.Add(time.Hour).UnixMilli()})
			return m
		}(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, ok := r.trustedMeta(r.trust.Load(), "p2", string(mustJSON(tc.md)), tc.md, now)
			assert.Equal(t, tc.want, ok)
		})
	}
}

func TestAMemberIsAliveOnlyWithAFreshSignOfTheIncarnationItsMetadataNames(t *testing.T) {
	p2, agent := NewIdentity(), NewIdentity()
	r := detached(t, p2, agent) // summaries every second, 10s of clock skew: a prober is alive 13s after its last summary
	now := time.Now()
	inc := uint64(now.Add(-time.Minute).UnixNano())
	require.True(t, r.store.putSummary(summary{Prober: "p2", Region: "r2", At: now.Add(-2 * time.Second).UnixMilli(), Inc: inc}, nil))
	hb := uint64(now.Add(-5 * time.Second).UnixNano())
	r.agentSeen["agent-c1"] = hb
	cases := []struct {
		name string
		who  string
		role string
		inc  uint64
		at   time.Time
		want bool
	}{
		{"a prober with a summary of its incarnation two seconds ago is alive", "p2", RoleProber, inc, now, true},
		{"metadata of an older incarnation (a replay after a restart) is not", "p2", RoleProber, inc - 1, now, false},
		{"older metadata without an incarnation goes by the summary alone", "p2", RoleProber, 0, now, true},
		{"a prober whose last summary is 14 seconds old is not", "p2", RoleProber, inc, now.Add(12 * time.Second), false},
		{"a prober that never sent a summary is not", "p3", RoleProber, 0, now, false},
		{"an agent with a heartbeat five seconds ago is alive", "agent-c1", RoleAgent, inc, now, true},
		{"an agent whose metadata names an incarnation after its last heartbeat is not", "agent-c1", RoleAgent, hb + 1, now, false},
		{"an agent silent for longer than three heartbeat periods and the skew is not", "agent-c1", RoleAgent, inc, now.Add(heartbeatWindow + 10*time.Second), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, r.alive(tc.who, tc.role, tc.inc, tc.at))
		})
	}
}
