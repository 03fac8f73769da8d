package ring

import (
	"bytes"
	"compress/lzw"
	"encoding/binary"
	"fmt"
	"io"
	"log"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/vote"
)

// Attacks found by an attacker's review of the issue 31 defences of the
// ring; each of these tests failed before its fix (budget.go: verified
// pull requests answered only to known members, known names outside the
// node's bucket; capability.go: WriterOrigin).

// udpUser wraps user messages in one memberlist compound packet with the lab's label.
func udpUser(msgs ...[]byte) []byte {
	pkt := []byte{7, byte(len(msgs))}
	for _, m := range msgs {
		pkt = binary.BigEndian.AppendUint16(pkt, uint16(len(m)+1))
	}
	for _, m := range msgs {
		pkt = append(pkt, 8) // userMsg
		pkt = append(pkt, m...)
	}
	pkt, _ = memberlist.AddLabelHeaderToPacket(pkt, "test")
	return pkt
}

// forgedPull is an (unsigned in effect) pull request in from's name to to.
func forgedPull(from, to string) []byte {
	n := make([]byte, 16)
	copy(n, fmt.Sprintf("%016d", time.Now().UnixNano()%1e16))
	return seal(forger, msgPull, from, pullReq{From: from, To: to, Nonce: n, At: time.Now().UnixMilli()})
}

// TestForgedPullRequestsInTheRequestersNameDoNotKeepTheRealProberSilenced:
// the attacker floods v with forged votes in p2's name (p2's budget on v
// stays empty, so p2's real messages are refused as "budget") and, at the
// same time, sends p2 pull requests in v's name (pull requests are not
// verified). p2 answers the forged ones (with the attacker's challenge,
// which v refuses) and, within pullGap of each, ignores v's real pull: the
// recovery path never delivers p2's vote. Needs only UDP to the gossip
// ports of an unencrypted ring (or the gossip key every agent holds).
func TestForgedPullRequestsInTheRequestersNameDoNotKeepTheRealProberSilenced(t *testing.T) {
	l := labFor(t)
	v := l.start(t, l.config("v", "r1", RoleProber, ""))
	pcfg := l.config("p2", "r2", RoleProber, "")
	pcfg.Seeds = []string{v.LocalAddr()}
	p2 := l.start(t, pcfg)
	eventually(t, "p2 counts", func() bool { return len(v.Members()) == 2 })

	subjects := []vote.Subject{vote.EndpointSubject("app.example.test.", "192.0.2.201"), vote.EndpointSubject("app.example.test.", "192.0.2.202")}
	base := uint64(time.Now().UnixNano())
	toV, err := net.Dial("udp", v.LocalAddr())
	require.NoError(t, err)
	defer toV.Close()
	toP, err := net.Dial("udp", p2.LocalAddr())
	require.NoError(t, err)
	defer toP.Close()
	stop := make(chan struct{})
	var sent atomic.Int64
	done := make(chan struct{})
	go func() { // 1 ms ticks, bounded to 8 s: 2 forged votes to v, 1 forged pull to p2
		defer close(done)
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		end := time.Now().Add(8 * time.Second)
		var pull []byte
		var pullAt time.Time
		for i := 0; time.Now().Before(end); i++ {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			if time.Since(pullAt) > time.Second {
				pull, pullAt = udpUser(forgedPull("v", "p2")), time.Now()
			}
			_, _ = toV.Write(udpUser(forgedVote("p2", "r2", subjects[i%2], base+uint64(2*i)), forgedVote("p2", "r2", subjects[(i+1)%2], base+uint64(2*i+1))))
			_, _ = toP.Write(pull)
			sent.Add(3)
		}
	}()
	defer func() { close(stop); <-done }()
	eventually(t, "forgeries are refused unchecked", func() bool {
		return testutil.ToFloat64(v.m.Rejected.WithLabelValues("vote", ReasonBudget)) > 0
	})
	s := vote.EndpointSubject("app.example.test.", "192.0.2.1")
	p2.Publish(s, vote.Down, time.Now())
	applied := false
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end) && !applied; time.Sleep(20 * time.Millisecond) {
		applied = hasVote(v, "p2", s, vote.Down)
	}
	time.Sleep(time.Second) // let a few more pulls go by
	t.Logf("p2's vote applied on v within 4 s: %v (when it is, it slipped in on a budget token, not by a pull); %d forged packets sent; v: pulls requested %.0f, applied %.0f, pull replies refused %.0f; p2: pulls answered %.0f",
		applied, sent.Load(), testutil.ToFloat64(v.m.Pulls.WithLabelValues("requested")), testutil.ToFloat64(v.m.Pulls.WithLabelValues("applied")),
		testutil.ToFloat64(v.m.Rejected.WithLabelValues("pull-reply", ReasonStale)), testutil.ToFloat64(p2.m.Pulls.WithLabelValues("answered")))
	require.Positive(t, testutil.ToFloat64(v.m.Pulls.WithLabelValues("requested")), "v asked p2 directly")
	assert.Positive(t, testutil.ToFloat64(v.m.Pulls.WithLabelValues("applied")),
		"the pull (the recovery path for a prober whose budget a flood spent) must deliver p2's messages despite forged pull requests in v's name")
}

// inflate undoes memberlist's compression of a TCP message (label header,
// compressMsg, msgpack {Algo: lzw, Buf}); b unchanged when it is not one.
func inflate(b []byte) []byte {
	i := bytes.Index(b, []byte("\xa3Buf"))
	if i < 0 || len(b) < i+4 {
		return b
	}
	i += 4
	var n int
	switch b[i] {
	case 0xc4, 0xd9:
		n, i = int(b[i+1]), i+2
	case 0xc5, 0xda:
		n, i = int(binary.BigEndian.Uint16(b[i+1:])), i+3
	case 0xc6, 0xdb:
		n, i = int(binary.BigEndian.Uint32(b[i+1:])), i+5
	default:
		return b
	}
	if len(b) < i+n {
		return b
	}
	out, _ := io.ReadAll(lzw.NewReader(bytes.NewReader(b[i:i+n]), lzw.LSB, 8))
	return out
}

// TestAPullRequestDoesNotReflectAProbersVotesToAnAddressOfTheRequestersChoice: on an
// unencrypted ring anyone may add a memberlist node; named after any listed
// (or prefix-matching) peer and advertising a third party's address, it
// made every prober send its own votes over TCP to that address on one
// small unverified UDP pull request in that name (twice a second per name
// and prober). A pull request is now verified: nothing is sent.
func TestAPullRequestDoesNotReflectAProbersVotesToAnAddressOfTheRequestersChoice(t *testing.T) {
	l := labFor(t)
	l.config("p3", "r3", RoleProber, "") // listed, never started: the name the attacker borrows
	p2 := l.start(t, l.config("p2", "r2", RoleProber, ""))
	for i := range 200 { // the prober's own votes (a modest deployment)
		p2.Publish(vote.EndpointSubject("app.example.test.", fmt.Sprintf("192.0.2.%d", i)), vote.Down, time.Now())
	}

	// The third party: any TCP service.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var got, replies atomic.Int64 // bytes of pull replies received, and their number
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
				b, _ := io.ReadAll(io.LimitReader(c, 16<<20))
				if bytes.Contains(inflate(b), []byte(`"t":"p3","n":`)) { // a pull reply's payload (memberlist's TCP framing is plain on an unencrypted ring)
					got.Add(int64(len(b)))
					replies.Add(1)
				}
			}()
		}
	}()
	victimPort := ln.Addr().(*net.TCPAddr).Port

	// A plain memberlist node named p3 that advertises the victim's address.
	c := memberlist.DefaultLANConfig()
	free, err := net.Listen("tcp", "127.0.0.1:0") // memberlist takes its own port as advertised when bound to port 0
	require.NoError(t, err)
	bindPort := free.Addr().(*net.TCPAddr).Port
	require.NoError(t, free.Close())
	c.Name, c.BindAddr, c.BindPort, c.Label = "p3", "127.0.0.1", bindPort, "test"
	c.AdvertiseAddr, c.AdvertisePort = "127.0.0.1", victimPort
	c.Delegate = ghost{}
	c.Logger = log.New(io.Discard, "", 0)
	m, err := memberlist.Create(c)
	require.NoError(t, err)
	defer func() { _ = m.Shutdown() }()
	_, err = m.Join([]string{p2.LocalAddr()})
	require.NoError(t, err)
	eventually(t, "p2 sees p3", func() bool { p2.mu.Lock(); defer p2.mu.Unlock(); _, ok := p2.nodes["p3"]; return ok })

	toP, err := net.Dial("udp", p2.LocalAddr())
	require.NoError(t, err)
	defer toP.Close()
	req := udpUser(forgedPull("p3", "p2"))
	sentBytes := 0
	for range 4 { // 4 requests, 600 ms apart
		_, _ = toP.Write(req)
		sentBytes += len(req)
		time.Sleep(600 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	t.Logf("attacker sent %d bytes (UDP) to p2; the third party received %d pull replies, %d bytes over TCP from p2 (×%.0f); p2 pulls answered %.0f",
		sentBytes, replies.Load(), got.Load(), float64(got.Load())/float64(sentBytes), testutil.ToFloat64(p2.m.Pulls.WithLabelValues("answered")))
	assert.Zero(t, got.Load(), "an unverified pull request must not make a prober send anything to an address the requester chose")
}

// TestForgeriesInFifteenOtherNamesDoNotSilenceAKnownPeersWriterVotesAndKeyChanges:
// forged heartbeats in the names of fifteen listed agents (27 each: a ring of
// a few regions and member clusters lists that many) empty the node-wide
// bucket; a genuine writer vote and a genuine key change of prober p2,
// which never sent a bad signature, were then refused unchecked as
// "budget" (a pull recovers only votes, summaries and heartbeats). A
// known name now has only its own bucket.
func TestForgeriesInFifteenOtherNamesDoNotSilenceAKnownPeersWriterVotesAndKeyChanges(t *testing.T) {
	p2, agent := NewIdentity(), NewIdentity()
	r := detached(t, p2, agent)
	peers := []model.RingPeer{{Name: "p2", Role: model.PeerProber, Region: "r2", PublicKey: model.FormatPeerKey(p2.Public())}}
	for i := range 15 {
		peers = append(peers, model.RingPeer{Name: fmt.Sprintf("agent-c%d", i), Role: model.PeerAgent, Cluster: fmt.Sprintf("c%d", i), PublicKey: model.FormatPeerKey(NewIdentity().Public())})
	}
	require.NoError(t, r.SetPeers(peers))
	seq := uint64(time.Now().UnixNano())
	i := 0
	drain := func() { // forgeries, as a flood delivers them, until the node refuses them unchecked
		for ; ; i++ {
			c := i % 15
			forged := seal(forger, msgHeartbeat, fmt.Sprintf("agent-c%d", c), heartbeat{Cluster: fmt.Sprintf("c%d", c), From: fmt.Sprintf("agent-c%d", c), At: time.Now().UnixMilli(), Seq: seq + uint64(i)})
			if rj := r.handle(forged, false); rj != nil && rj.reason == ReasonBudget {
				return
			}
		}
	}
	now := time.Now()
	genuine := []struct {
		name string
		msg  []byte
	}{
		{"writer vote", seal(p2, msgLeader, "p2", leaderMsg{Voter: "p2", Candidate: "p2", Seq: uint64(now.UnixNano())})},
		{"key change", seal(p2, msgKeyOp, "p2", keyOp{Op: KeyInstall, Key: make([]byte, 32), ID: "k1", At: now.UnixMilli()})},
	}
	for _, g := range genuine {
		drain()
		rj := r.handle(g.msg, false)
		if rj != nil {
			t.Logf("p2's genuine %s: %s", g.name, rj)
		}
		assert.Nil(t, rj, "p2's genuine %s must not be refused because someone forged messages in another name", g.name)
	}
}

// TestEveryNameAPrefixEntryCoversIsOneWriterOrigin: with an admin prefix
// entry (east-*, max_nodes 2) one key signs overrides as every name the
// pattern covers, live or not; the caps on overrides are kept per origin
// (WriterOrigin: the key), so invented names share one share.
func TestEveryNameAPrefixEntryCoversIsOneWriterOrigin(t *testing.T) {
	p2, agent := NewIdentity(), NewIdentity()
	r := detached(t, p2, agent)
	east, west := NewIdentity(), NewIdentity()
	require.NoError(t, r.SetPeers([]model.RingPeer{
		{Name: "east-*", Role: model.PeerProber, Region: "r2", MaxNodes: 2, Admin: true, PublicKey: model.FormatPeerKey(east.Public())},
		{Name: "west-0", Role: model.PeerProber, Region: "r3", Admin: true, PublicKey: model.FormatPeerKey(west.Public())},
	}))
	origins := map[string]bool{}
	for i := range 50 {
		name := fmt.Sprintf("east-invented-%d", i)
		msg := []byte("entry " + name)
		require.NoError(t, r.VerifyEntry(name, msg, east.Sign(msg)), "the key signs as any name its entry covers")
		origins[r.WriterOrigin(name)] = true
	}
	assert.Len(t, origins, 1, "50 names of one prefix entry are one writer origin")
	assert.NotEqual(t, r.WriterOrigin("east-0"), r.WriterOrigin("west-0"), "another entry is another origin")
	assert.Equal(t, "name:nobody", r.WriterOrigin("nobody"), "an unknown writer is its own name")
}
