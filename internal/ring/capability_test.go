package ring

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
)

func TestOnlyANodeWithTheAdminCapabilityChangesTraffic(t *testing.T) {
	p2, agent, ops := NewIdentity(), NewIdentity(), NewIdentity()
	r := detached(t, p2, agent)
	var got [][]byte
	r.cfg.OnShared = func(b []byte) { got = append(got, b) }
	require.NoError(t, r.SetPeers([]model.RingPeer{
		{Name: "p2", Role: model.PeerProber, Region: "r2", PublicKey: model.FormatPeerKey(p2.Public())},
		{Name: "ops", Role: model.PeerProber, Region: "r2", PublicKey: model.FormatPeerKey(ops.Public()), Admin: true},
		{Name: "agent-c1", Role: model.PeerAgent, Cluster: "c1", PublicKey: model.FormatPeerKey(agent.Public())},
	}))
	state := func(id Identity, from string) []byte {
		return seal(id, msgShared, from, sharedMsg{At: time.Now().UnixMilli(), State: []byte(`{"entries":{}}`)})
	}

	t.Run("a validly signed admin state from a plain prober is refused and counted", func(t *testing.T) {
		rj := r.handle(state(p2, "p2"), false)
		require.NotNil(t, rj)
		assert.Equal(t, ReasonCapability, rj.reason)
		assert.Contains(t, rj.Error(), `admin state of "p2", which has no admin capability`)
		r.rejected("shared", rj)
		assert.Equal(t, 1.0, testutil.ToFloat64(r.m.Rejected.WithLabelValues("shared", ReasonCapability)))
		assert.Empty(t, got)
	})
	t.Run("an agent's is refused by its role", func(t *testing.T) {
		rj := r.handle(state(agent, "agent-c1"), false)
		require.NotNil(t, rj)
		assert.Equal(t, ReasonRole, rj.reason)
	})
	t.Run("a node listed with admin is heard", func(t *testing.T) {
		require.Nil(t, r.handle(state(ops, "ops"), false))
		assert.Len(t, got, 1)
	})
	t.Run("an override is verified against its writer's key and capability", func(t *testing.T) {
		msg := []byte("entry")
		require.NoError(t, r.VerifyEntry("ops", msg, ops.Sign(msg)))
		assert.ErrorIs(t, r.VerifyEntry("ops", msg, p2.Sign(msg)), ErrBadSignature, "signed by another key than the writer's")
		assert.ErrorIs(t, r.VerifyEntry("ops", msg, nil), ErrBadSignature)
		assert.ErrorIs(t, r.VerifyEntry("p2", msg, p2.Sign(msg)), ErrNoCapability, "a plain prober's own signature is not enough")
		assert.ErrorIs(t, r.VerifyEntry("agent-c1", msg, agent.Sign(msg)), ErrNoCapability)
		assert.ErrorIs(t, r.VerifyEntry("stranger", msg, ops.Sign(msg)), ErrNoCapability)
		assert.NoError(t, r.MayWrite("ops"))
		assert.ErrorIs(t, r.MayWrite("p2"), ErrNoCapability)
	})
	t.Run("this node may change traffic only with the capability", func(t *testing.T) {
		err := r.MayChangeTraffic()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "has no admin capability")
		assert.Contains(t, err.Error(), "--capability admin")
		require.NoError(t, r.SetPeers([]model.RingPeer{
			{Name: "v", Role: model.PeerProber, Region: "r1", PublicKey: model.FormatPeerKey(r.id().Public()), Admin: true},
			{Name: "p2", Role: model.PeerProber, Region: "r2", PublicKey: model.FormatPeerKey(p2.Public())},
		}))
		assert.NoError(t, r.MayChangeTraffic(), "its own ring.peers entry gives it")
		require.NoError(t, r.SetPeers(nil))
		assert.NoError(t, r.MayChangeTraffic(), "a ring of one trusts nobody else")
	})
	assert.False(t, errors.Is(ErrNoCapability, ErrBadSignature))
}

func TestTheAdminCapabilityComesWithTheCredential(t *testing.T) {
	noLeaks(t)
	l := newCALab(t, "ca")
	pool := l.pool(nil, "ca")
	now := time.Now()
	ops := prober("us-east", "east-*", 2)
	require.NoError(t, ops.SetCapability("admin"))
	east := l.issue("ca", ops, now, time.Hour)
	plain := l.issue("ca", prober("eu-west", "west-*", 1), now, time.Hour)

	var got atomic.Int32
	cfg := l.config("east-0", "us-east", RoleProber, &east, pool)
	cfg.OnShared, cfg.SharedState = func([]byte) { got.Add(1) }, func() []byte { return []byte(`{"entries":{}}`) }
	e0 := l.start(cfg)
	wcfg := l.config("west-0", "eu-west", RoleProber, &plain, pool, e0.LocalAddr())
	wcfg.OnShared, wcfg.SharedState = func([]byte) {}, func() []byte { return []byte(`{"entries":{}}`) }
	w0 := l.start(wcfg)
	eventually(t, "both trust each other", func() bool { return len(trustedNames(e0)) == 2 && len(trustedNames(w0)) == 2 })

	assert.NoError(t, e0.MayChangeTraffic(), "east's credential carries the capability")
	assert.NoError(t, w0.MayWrite("east-0"), "and west sees it in east's credential")
	assert.ErrorContains(t, w0.MayChangeTraffic(), "has no admin capability")
	assert.ErrorIs(t, e0.MayWrite("west-0"), ErrNoCapability)
	w0.BroadcastShared([]byte(`{"entries":{}}`)) // a plain prober sends none
	time.Sleep(300 * time.Millisecond)
	assert.Zero(t, got.Load(), "east hears no admin state from a plain prober")
}
