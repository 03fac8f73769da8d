package ring

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/ringca"
	"github.com/meridian-gslb/meridian/internal/vote"
)

const testDomain = "gslb.example.test"

// caLab issues credentials from ring CAs for the nodes of one test; no
// node lists another (ring.peers stays empty).
type caLab struct {
	t   *testing.T
	cas map[string]ringca.Authority
}

func newCALab(t *testing.T, names ...string) *caLab {
	l := &caLab{t: t, cas: map[string]ringca.Authority{}}
	for _, n := range names {
		a, err := ringca.NewAuthority(testDomain, 24*time.Hour, time.Now())
		require.NoError(t, err)
		l.cas[n] = a
	}
	return l
}

// pool trusts the named CAs, with revoked entries.
func (l *caLab) pool(revoked []string, cas ...string) *ringca.Pool {
	var pems [][]byte
	for _, n := range cas {
		pems = append(pems, ringca.EncodeCert(l.cas[n].Cert.Raw))
	}
	p, err := ringca.NewPool(testDomain, pems, revoked)
	require.NoError(l.t, err)
	return p
}

// issue makes a credential from CA ca for scope s, valid from at for validity.
func (l *caLab) issue(ca string, s ringca.Scope, at time.Time, validity time.Duration) ringca.Credential {
	l.t.Helper()
	s.TrustDomain = testDomain
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(l.t, err)
	der, err := l.cas[ca].Issue(s, pub, validity, at)
	require.NoError(l.t, err)
	k, err := ringca.EncodeKey(key)
	require.NoError(l.t, err)
	c, err := ringca.ParseCredential(ringca.EncodeCert(der), k)
	require.NoError(l.t, err)
	return c
}

// noLeaks checks for leaked goroutines after the test's own cleanups
// (which stop its nodes) have run. memberlist's probe of a node ends within
// its probe timeout after Shutdown, which on a loaded machine is longer
// than goleak's own retries: up to 10 s are allowed.
func noLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		for end := time.Now().Add(10 * time.Second); goleak.Find(ignore) != nil && time.Now().Before(end); {
			time.Sleep(50 * time.Millisecond)
		}
		goleak.VerifyNone(t, ignore)
	})
}

func prober(region, name string, max int) ringca.Scope {
	return ringca.Scope{Role: ringca.RoleProber, Region: region, Name: name, MaxNodes: max}
}

// config is a node of the test holding credential c and trusting pool.
func (l *caLab) config(name, region, role string, c *ringca.Credential, pool *ringca.Pool, seeds ...string) Config {
	return Config{NodeName: name, Region: region, Role: role, Credential: c, Trust: pool, Label: "test", Bind: "127.0.0.1:0", Seeds: seeds,
		Memberlist: fast, Logger: slog.New(slog.DiscardHandler), RejoinInterval: 300 * time.Millisecond, SummaryInterval: 100 * time.Millisecond}
}

func (l *caLab) start(cfg Config) *Ring {
	l.t.Helper()
	r, err := Start(cfg)
	require.NoError(l.t, err)
	l.t.Cleanup(func() { _ = r.Shutdown() })
	return r
}

func trustedNames(r *Ring) map[string]string {
	out := map[string]string{}
	for _, m := range r.Members() {
		out[m.Name] = m.Site
	}
	return out
}

func TestNodesTrustEachOtherByCredentialsAlone(t *testing.T) {
	noLeaks(t)
	l := newCALab(t, "ca")
	pool := l.pool(nil, "ca")
	now := time.Now()
	east := l.issue("ca", prober("us-east", "east-*", 2), now, time.Hour) // shared by the site's replicas
	west := l.issue("ca", prober("eu-west", "west-*", 1), now, time.Hour)

	e0 := l.start(l.config("east-0", "us-east", RoleProber, &east, pool))
	e1 := l.start(l.config("east-1", "us-east", RoleProber, &east, pool, e0.LocalAddr()))
	w0 := l.start(l.config("west-0", "eu-west", RoleProber, &west, pool, e0.LocalAddr()))
	want := map[string]string{"east-0": "east", "east-1": "east", "west-0": "west"}
	for _, r := range []*Ring{e0, e1, w0} {
		eventually(t, r.Name()+" trusts all three by their credentials", func() bool { return assert.ObjectsAreEqual(want, trustedNames(r)) })
	}
	s := vote.EndpointSubject("app.example.test.", "192.0.2.1")
	w0.Publish(s, vote.Down, time.Now())
	eventually(t, "west's vote counts in east", func() bool { return hasVote(e1, "west-0", s, vote.Down) })

	// A third east replica is one more than the credential's max_nodes: it
	// joins but does not count.
	e2 := l.start(l.config("east-2", "us-east", RoleProber, &east, pool, e0.LocalAddr()))
	eventually(t, "east-2 is a member of west's view", func() bool {
		for _, m := range w0.AllMembers() {
			if m.Name == "east-2" {
				return true
			}
		}
		return false
	})
	assert.Equal(t, want, trustedNames(w0), "max_nodes 2 admits the first two east nodes by name")
	_ = e2

	// A site announces its public DNS addresses in its signed metadata.
	require.NoError(t, w0.SetDNSAddresses([]netip.Addr{netip.MustParseAddr("203.0.113.7")}))
	eventually(t, "east sees west's DNS address", func() bool {
		for _, m := range e1.Members() {
			if m.Name == "west-0" {
				return slices.Equal(m.DNSAddresses, []netip.Addr{netip.MustParseAddr("203.0.113.7")})
			}
		}
		return false
	})
	assert.Error(t, w0.SetDNSAddresses(make([]netip.Addr, 9)), "at most 8")
}

// TestRefusedCredentialsAreCountedByReason sends a prober that trusts one CA
// credentials and votes it must refuse: a leaked east credential voting as
// eu-west, an agent credential voting, an expired, a revoked and a
// foreign-CA credential, one that does not cover its sender, one sent in
// another node's name. None of them lists its sender or changes a vote.
func TestRefusedCredentialsAreCountedByReason(t *testing.T) {
	noLeaks(t)
	l := newCALab(t, "ca", "other")
	now := time.Now()
	revoked := l.issue("ca", prober("us-east", "rev-*", 1), now, time.Hour)
	leaf, err := x509.ParseCertificate(revoked.Chain[0])
	require.NoError(t, err)
	victimCred := l.issue("ca", prober("eu-west", "v", 0), now, time.Hour)
	victim := l.start(l.config("v", "eu-west", RoleProber, &victimCred, l.pool([]string{"serial:" + leaf.SerialNumber.Text(16)}, "ca")))
	east := l.issue("ca", prober("us-east", "east-*", 2), now, time.Hour)
	sender := l.start(l.config("east-0", "us-east", RoleProber, &east, l.pool(nil, "ca"), victim.LocalAddr()))
	eventually(t, "the victim trusts east-0", func() bool { _, ok := trustedNames(victim)["east-0"]; return ok })

	agent := l.issue("ca", ringca.Scope{Role: ringca.RoleAgent, Cluster: "east", Name: "agent-east"}, now, time.Hour)
	expired := l.issue("ca", prober("us-east", "old-*", 1), now.Add(-3*time.Hour), time.Hour)
	foreign := l.issue("other", prober("us-east", "east-*", 2), now, time.Hour)
	narrow := l.issue("ca", prober("us-east", "east-9", 0), now, time.Hour)
	known := vote.EndpointSubject("app.example.test.", "192.0.2.1")
	mkVote := func(prober, region string) wireVote {
		return wireVote{Service: known.Service, Target: known.Target, Prober: prober, Region: region, Down: true, At: time.Now().UnixMilli(), Seq: uint64(time.Now().UnixNano())}
	}
	credOf := func(name string, c ringca.Credential) []byte {
		return seal(Identity{key: c.Key}, msgCred, name, credMsg{Node: name, Chain: c.Chain})
	}
	eastID := Identity{key: east.Key}
	agentID := Identity{key: agent.Key}

	cases := []struct {
		name   string
		msgs   [][]byte
		kind   string
		reason string
	}{
		{"an east credential voting as eu-west is refused", [][]byte{seal(eastID, msgVote, "east-0", mkVote("east-0", "eu-west"))}, "vote", ReasonRegion},
		{"an agent credential voting is refused", [][]byte{seal(agentID, msgVote, "agent-east", mkVote("agent-east", ""))}, "vote", ReasonRole},
		{"an expired credential is refused", [][]byte{credOf("old-1", expired)}, "credential", ReasonExpired},
		{"a revoked credential is refused", [][]byte{credOf("rev-1", revoked)}, "credential", ReasonRevoked},
		{"a credential from a foreign CA is refused", [][]byte{credOf("east-5", foreign)}, "credential", ReasonForeignCA},
		{"a credential that does not cover its sender is refused", [][]byte{credOf("east-7", narrow)}, "credential", ReasonScope},
		{"a credential sent in another node's name is refused", [][]byte{seal(eastID, msgCred, "east-0", credMsg{Node: "west-0", Chain: east.Chain})}, "credential", ReasonImpersonation},
		{"a credential signed with another key than its certificate's is refused", [][]byte{seal(eastID, msgCred, "east-9", credMsg{Node: "east-9", Chain: narrow.Chain})}, "credential", ReasonSignature},
	}
	// The agent's credential itself is valid: it lists the agent, as an agent.
	acfg := l.config("agent-east", "agent", RoleAgent, &agent, l.pool(nil, "ca"), victim.LocalAddr())
	acfg.Cluster = "east"
	l.start(acfg)
	eventually(t, "the agent is listed", func() bool { p, ok := victim.trust.Load().lookup("agent-east"); return ok && p.Role == RoleAgent })
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := testutil.ToFloat64(victim.m.Rejected.WithLabelValues(tc.kind, tc.reason))
			for _, m := range tc.msgs {
				sendRaw(t, sender, victim, m)
			}
			eventually(t, "refused as "+tc.reason, func() bool {
				return testutil.ToFloat64(victim.m.Rejected.WithLabelValues(tc.kind, tc.reason)) > before
			})
		})
	}
	for _, v := range victim.Votes() {
		assert.NotEqual(t, vote.Down, v.Status, "no refused vote was taken: %+v", v)
	}
	assert.Equal(t, map[string]string{"v": "v", "east-0": "east", "agent-east": "agent-east"}, trustedNames(victim))
	for _, n := range []string{"agent-east", "old-1", "rev-1", "east-5", "east-7", "east-9", "west-0"} {
		_, ok := victim.trust.Load().lookup(n)
		if n == "agent-east" {
			assert.True(t, ok, "the agent's credential itself is valid: it lists the agent, as an agent")
			continue
		}
		assert.False(t, ok, "%s is not listed", n)
	}
}

func TestRevokingOnReloadDropsTheNodeAndItsVotes(t *testing.T) {
	noLeaks(t)
	l := newCALab(t, "ca")
	pool := l.pool(nil, "ca")
	now := time.Now()
	east := l.issue("ca", prober("us-east", "east-*", 2), now, time.Hour)
	west := l.issue("ca", prober("eu-west", "west-*", 1), now, time.Hour)
	e0 := l.start(l.config("east-0", "us-east", RoleProber, &east, pool))
	w0 := l.start(l.config("west-0", "eu-west", RoleProber, &west, pool, e0.LocalAddr()))
	s := vote.EndpointSubject("app.example.test.", "192.0.2.1")
	w0.Publish(s, vote.Down, time.Now())
	eventually(t, "west's vote counts in east", func() bool { return hasVote(e0, "west-0", s, vote.Down) })

	leaf, err := x509.ParseCertificate(west.Chain[0])
	require.NoError(t, err)
	require.NoError(t, e0.SetTrust(nil, l.pool([]string{ringca.Fingerprint(leaf)}, "ca")))
	assert.Equal(t, map[string]string{"east-0": "east"}, trustedNames(e0), "west is no longer trusted")
	assert.False(t, hasVote(e0, "west-0", s, vote.Down), "its votes are gone")
	assert.Equal(t, 1.0, testutil.ToFloat64(e0.m.Rejected.WithLabelValues("credential", ReasonRevoked)))
	w0.Publish(s, vote.Up, time.Now())
	time.Sleep(300 * time.Millisecond)
	assert.False(t, hasVote(e0, "west-0", s, vote.Up), "nor are its new ones taken")
}

func TestCARotationWithTwoCAsInOverlapKeepsTheRingWhole(t *testing.T) {
	noLeaks(t)
	l := newCALab(t, "old", "new")
	now := time.Now()
	east := l.issue("old", prober("us-east", "east-*", 2), now, time.Hour)
	west := l.issue("old", prober("eu-west", "west-*", 1), now, time.Hour)
	e0 := l.start(l.config("east-0", "us-east", RoleProber, &east, l.pool(nil, "old")))
	e1 := l.start(l.config("east-1", "us-east", RoleProber, &east, l.pool(nil, "old"), e0.LocalAddr()))
	w0 := l.start(l.config("west-0", "eu-west", RoleProber, &west, l.pool(nil, "old"), e0.LocalAddr()))
	nodes := []*Ring{e0, e1, w0}
	whole := func(step string) {
		t.Helper()
		for _, r := range nodes {
			eventually(t, step+": "+r.Name()+" trusts all three", func() bool { return len(r.Members()) == 3 })
		}
	}
	whole("before")
	// 1. every node trusts both CAs.
	for _, r := range nodes {
		require.NoError(t, r.SetTrust(nil, l.pool(nil, "old", "new")))
	}
	whole("both CAs")
	// 2. credentials are renewed from the new CA, one site at a time (as
	// cert-manager does when the Issuer changes).
	eastNew := l.issue("new", prober("us-east", "east-*", 2), time.Now(), time.Hour)
	require.NoError(t, e0.SetCredential(eastNew))
	require.NoError(t, e1.SetCredential(eastNew))
	whole("east renewed")
	westNew := l.issue("new", prober("eu-west", "west-*", 1), time.Now(), time.Hour)
	require.NoError(t, w0.SetCredential(westNew))
	whole("west renewed")
	// 3. the old CA goes.
	for _, r := range nodes {
		require.NoError(t, r.SetTrust(nil, l.pool(nil, "new")))
	}
	whole("new CA alone")
	s := vote.EndpointSubject("app.example.test.", "192.0.2.1")
	w0.Publish(s, vote.Down, time.Now())
	eventually(t, "votes still count", func() bool { return hasVote(e1, "west-0", s, vote.Down) })

	// A node still on the old CA's credential is refused once the old CA is gone.
	stale := l.issue("old", prober("us-east", "east-*", 2), time.Now(), time.Hour)
	err := e1.SetCredential(stale)
	require.Error(t, err, "a node refuses a credential its peers would refuse")
	assert.Contains(t, err.Error(), "would be refused by its peers")
}

func TestAHeldCredentialThatExpiresStopsCounting(t *testing.T) {
	noLeaks(t)
	l := newCALab(t, "ca")
	pool := l.pool(nil, "ca")
	now := time.Now()
	east := l.issue("ca", prober("us-east", "east-*", 2), now, time.Hour)
	// Valid until a few seconds from now (issued Backdate before its start).
	short := l.issue("ca", prober("eu-west", "west-*", 1), now.Add(-ringca.Backdate), ringca.Backdate+3*time.Second)
	e0 := l.start(l.config("east-0", "us-east", RoleProber, &east, pool))
	w0 := l.start(l.config("west-0", "eu-west", RoleProber, &short, pool, e0.LocalAddr()))
	eventually(t, "west is trusted while its credential holds", func() bool { return len(e0.Members()) == 2 })
	require.Eventually(t, func() bool { return len(e0.Members()) == 1 }, 15*time.Second, 50*time.Millisecond, "west stops counting when its credential expires")
	assert.Positive(t, testutil.ToFloat64(e0.m.Rejected.WithLabelValues("credential", ReasonExpired)))
	_ = w0
}

func TestANodeRefusesToStartWithACredentialItsPeersWouldRefuse(t *testing.T) {
	l := newCALab(t, "ca", "other")
	now := time.Now()
	east := l.issue("ca", prober("us-east", "east-*", 2), now, time.Hour)
	for _, tc := range []struct {
		name string
		cfg  Config
		err  string
	}{
		{"a credential without ring.ca", l.config("east-0", "us-east", RoleProber, &east, nil), "needs ring.ca"},
		{"a credential from a CA not in ring.ca", l.config("east-0", "us-east", RoleProber, &east, l.pool(nil, "other")), "would be refused by its peers"},
		{"a credential for another region", l.config("east-0", "eu-west", RoleProber, &east, l.pool(nil, "ca")), "is for us-east"},
		{"a credential that does not cover the node's name", l.config("west-0", "us-east", RoleProber, &east, l.pool(nil, "ca")), "does not cover its name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Start(tc.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

// writeCred writes a credential as cert-manager's Secret lays it out:
// tls.crt and tls.key in dir, replaced atomically (the kubelet swaps a
// symlink; a rename is the same to a reader).
func writeCred(t *testing.T, dir string, c ringca.Credential) {
	t.Helper()
	var crt []byte
	for _, der := range c.Chain {
		crt = append(crt, ringca.EncodeCert(der)...)
	}
	key, err := ringca.EncodeKey(c.Key)
	require.NoError(t, err)
	for name, data := range map[string][]byte{"tls.crt": crt, "tls.key": key} {
		tmp := filepath.Join(dir, "."+name)
		require.NoError(t, os.WriteFile(tmp, data, 0o600))
		require.NoError(t, os.Rename(tmp, filepath.Join(dir, name)))
	}
}

func TestAKeeperTakesACredentialRenewedOnDiskWithoutARestart(t *testing.T) {
	noLeaks(t)
	l := newCALab(t, "ca")
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(caFile, ringca.EncodeCert(l.cas["ca"].Cert.Raw), 0o644))
	mr := model.Ring{CA: []string{caFile}, Credential: model.RingCredential{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}}
	first := l.issue("ca", prober("us-east", "east-*", 2), time.Now(), time.Hour)
	writeCred(t, dir, first)
	pool, err := LoadTrust(testDomain, mr)
	require.NoError(t, err)
	cred, err := LoadCredential(mr)
	require.NoError(t, err)
	e0 := l.start(l.config("east-0", "us-east", RoleProber, cred, pool))
	west := l.issue("ca", prober("eu-west", "west-*", 1), time.Now(), time.Hour)
	w0 := l.start(l.config("west-0", "eu-west", RoleProber, &west, pool, e0.LocalAddr()))
	eventually(t, "west trusts east", func() bool { return len(w0.Members()) == 2 })

	k := &Keeper{Ring: e0, Logger: slog.New(slog.DiscardHandler)}
	k.Started(testDomain, mr)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); k.Run(ctx, 50*time.Millisecond) }()
	t.Cleanup(func() { cancel(); <-done })

	renewed := l.issue("ca", prober("us-east", "east-*", 2), time.Now(), 2*time.Hour) // a new key too (rotationPolicy: Always)
	writeCred(t, dir, renewed)
	leaf, err := x509.ParseCertificate(renewed.Chain[0])
	require.NoError(t, err)
	eventually(t, "east signs with the renewed credential", func() bool { return strings.HasSuffix(e0.Credential(), leaf.SerialNumber.Text(16)) })
	s := vote.EndpointSubject("app.example.test.", "192.0.2.1")
	e0.Publish(s, vote.Down, time.Now())
	eventually(t, "west takes east's votes signed with the new key", func() bool { return hasVote(w0, "east-0", s, vote.Down) })
	eventually(t, "west still trusts east", func() bool { return len(w0.Members()) == 2 })

	// A broken file (half-written, or a wrong key) is refused: the credential in use stays.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.key"), []byte("not a key"), 0o600))
	eventually(t, "the bad file is counted", func() bool { return testutil.ToFloat64(e0.m.TrustReloads.WithLabelValues("error")) >= 1 })
	assert.True(t, strings.HasSuffix(e0.Credential(), leaf.SerialNumber.Text(16)))
	e0.Publish(s, vote.Up, time.Now())
	eventually(t, "east keeps working", func() bool { return hasVote(w0, "east-0", s, vote.Up) })
}

// TestSeedNamesAreResolvedAgainUntilJoined starts a node whose one seed is
// a DNS name that does not resolve yet (the first site's delegation is not
// in place): it keeps resolving the name and joins as soon as the name
// points at a live node.
func TestSeedNamesAreResolvedAgainUntilJoined(t *testing.T) {
	noLeaks(t)
	var mu sync.Mutex
	var target []netip.Addr
	srv := &dns.Server{Addr: "127.0.0.1:0", Net: "udp", Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		mu.Lock()
		addrs := slices.Clone(target)
		mu.Unlock()
		if len(addrs) == 0 {
			m.Rcode = dns.RcodeNameError
		}
		for _, a := range addrs {
			if q.Question[0].Qtype == dns.TypeA {
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 1}, A: a.AsSlice()})
			}
		}
		_ = w.WriteMsg(m)
	})}
	ready := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(ready) }
	go func() { _ = srv.ListenAndServe() }()
	<-ready
	t.Cleanup(func() { _ = srv.Shutdown() })
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", srv.PacketConn.LocalAddr().String())
	}}

	l := newCALab(t, "ca")
	pool := l.pool(nil, "ca")
	east := l.issue("ca", prober("us-east", "east-*", 2), time.Now(), time.Hour)
	west := l.issue("ca", prober("eu-west", "west-*", 1), time.Now(), time.Hour)
	e0 := l.start(l.config("east-0", "us-east", RoleProber, &east, pool))
	_, port, err := net.SplitHostPort(e0.LocalAddr())
	require.NoError(t, err)
	wcfg := l.config("west-0", "eu-west", RoleProber, &west, pool, net.JoinHostPort("ring.gslb.example.test", port))
	wcfg.Resolver = resolver
	w0 := l.start(wcfg)
	time.Sleep(3 * wcfg.RejoinInterval)
	require.Len(t, w0.AllMembers(), 1, "the name does not resolve yet: west is alone")
	mu.Lock()
	target = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	mu.Unlock()
	eventually(t, "west joins once the name resolves", func() bool { return len(w0.Members()) == 2 && len(e0.Members()) == 2 })
}

// TestALeakedPrefixCredentialCannotFillTheStoreNorTakeANodesListing sends,
// with a leaked east credential, credentials for a hundred names that never
// join, and one for a live node of an overlapping scope: the store keeps a
// bounded number of the first (and sends none of them on), and the live
// node stays listed by the credential its own metadata names.
func TestALeakedPrefixCredentialCannotFillTheStoreNorTakeANodesListing(t *testing.T) {
	noLeaks(t)
	l := newCALab(t, "ca")
	pool := l.pool(nil, "ca")
	now := time.Now()
	victimCred := l.issue("ca", prober("eu-west", "v", 0), now, time.Hour)
	victim := l.start(l.config("v", "eu-west", RoleProber, &victimCred, pool))
	leaked := l.issue("ca", prober("us-east", "east-*", 2), now, time.Hour)
	site := l.issue("ca", prober("eu-central", "east-a-*", 1), now, time.Hour) // a site whose prefix the leaked one covers
	ea := l.start(l.config("east-a-0", "eu-central", RoleProber, &site, pool, victim.LocalAddr()))
	eventually(t, "east-a-0 is listed as eu-central", func() bool {
		p, ok := victim.trust.Load().lookup("east-a-0")
		return ok && p.Region == "eu-central"
	})
	leakedID := Identity{key: leaked.Key}
	for i := range 100 {
		name := fmt.Sprintf("east-x%d", i)
		sendRaw(t, ea, victim, seal(leakedID, msgCred, name, credMsg{Node: name, Chain: leaked.Chain}))
	}
	sendRaw(t, ea, victim, seal(leakedID, msgCred, "east-a-0", credMsg{Node: "east-a-0", Chain: leaked.Chain}))
	eventually(t, "the leaked credential was taken for east-a-0 too", func() bool { return victim.creds.same("east-a-0", sha256.Sum256(leaked.Chain[0])) })
	victim.creds.mu.Lock()
	held := len(victim.creds.byName)
	victim.creds.mu.Unlock()
	assert.LessOrEqual(t, held, maxPending+3, "names that never joined take at most maxPending places")
	p, ok := victim.trust.Load().lookup("east-a-0")
	require.True(t, ok)
	assert.Equal(t, "eu-central", p.Region, "a live node is listed by the credential its metadata names, not by another scope's")
	assert.Len(t, victim.creds.all(), 1, "a push/pull carries the credentials its live members' metadata names only (east-a-0's own)")
}

func TestANodeSettlesOnlyWhenItMetTheRingOrIsItsFirst(t *testing.T) {
	noLeaks(t)
	l := newCALab(t, "ca")
	pool := l.pool(nil, "ca")
	cred := l.issue("ca", prober("us-east", "east-*", 3), time.Now(), time.Hour)
	alone := l.start(l.config("east-0", "us-east", RoleProber, &cred, pool))
	assert.True(t, alone.Settled(), "no seeds: a ring of its own")

	// Its seed names another node that does not answer (the other side of
	// a partition it restarted into): it never takes itself for the first.
	cut := l.config("east-1", "us-east", RoleProber, &cred, pool, "192.0.2.1:7946")
	cut.RejoinInterval = 50 * time.Millisecond
	partitioned := l.start(cut)
	time.Sleep(20 * cut.RejoinInterval)
	assert.False(t, partitioned.Settled(), "a seed names another node: wait to meet it")

	// Its seed names only itself (the first node of the first site, whose
	// own name resolves to it): it settles after a few rounds.
	first := l.config("east-2", "us-east", RoleProber, &cred, pool)
	first.RejoinInterval = 50 * time.Millisecond
	first.Bind = "127.0.0.1:0"
	first.Seeds = []string{"127.0.0.1:1"} // this host: no other node
	firstNode := l.start(first)
	eventually(t, "the first node settles", firstNode.Settled)

	// Meeting a trusted node settles at once.
	joined := l.config("east-3", "us-east", RoleProber, &cred, pool, alone.LocalAddr(), "192.0.2.1:7946")
	joined.RejoinInterval = time.Hour
	eventually(t, "a node that met the ring is settled", l.start(joined).Settled)
}

func TestFromConfigCarriesTheRingSectionForEveryFrontEnd(t *testing.T) {
	d := &model.Desired{}
	d.Ring = model.Ring{Region: "r1", Bind: "127.0.0.1:7946", Advertise: "192.0.2.1:7946", Seeds: []string{"ring.example.test:7946"},
		KeyFile: "/k", Label: "prod", RequireEncryption: true, RejoinInterval: model.Duration(5 * time.Second),
		MaxClockSkew: model.Duration(3 * time.Second), Peers: []model.RingPeer{{Name: "p2", Role: model.PeerProber, Region: "r2"}}}
	d.Health.Interval = model.Duration(2 * time.Second)
	c, err := FromConfig(d, "n1", RoleObserver)
	require.NoError(t, err)
	assert.Equal(t, Config{NodeName: "n1", Role: RoleObserver, Region: "r1", Bind: "127.0.0.1:7946", Advertise: "192.0.2.1:7946",
		Seeds: []string{"ring.example.test:7946"}, KeyFile: "/k", Label: "prod", RequireEncryption: true,
		RejoinInterval: 5 * time.Second, MaxClockSkew: 3 * time.Second, SummaryInterval: 2 * time.Second,
		Peers: d.Ring.Peers}, c)
}
