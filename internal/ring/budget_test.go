package ring

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/vote"
)

func TestTheBudgetRefusesChecksInANameThatSpentItsFailures(t *testing.T) {
	b := newSigBudget(false)
	now := time.Now()
	for range sigPerNameBurst {
		require.True(t, b.allow("p2", false, now))
		b.failed("p2", false, now)
	}
	assert.False(t, b.allow("p2", false, now), "p2 spent its burst of failures")
	assert.True(t, b.allow("p3", false, now), "another name is still checked")
	assert.True(t, b.allow("p2", false, now.Add(time.Second/sigPerName)), "a failure's worth of time later p2 is checked again")
	for i := range sigGlobalBurst {
		b.failed(fmt.Sprintf("n%d", i), false, now)
	}
	assert.False(t, b.allow("p3", false, now), "the node spent its failures in all: no name is checked")
	assert.True(t, b.allow("p3", false, now.Add(time.Second)), "a second later it is")
	assert.True(t, b.allow("p4", true, now), "a known name is held to its own bucket only, not the node's")
	for range sigPerNameBurst {
		b.failed("p4", true, now)
	}
	assert.False(t, b.allow("p4", true, now), "a known name that spent its own failures is refused")
	fresh := newSigBudget(false)
	for range 2 * sigGlobalBurst {
		fresh.failed("p4", true, now)
	}
	assert.True(t, fresh.allow("p3", false, now), "a known name's failures are not charged to the node")
	assert.True(t, newSigBudget(true).allow("p2", false, now), "off: everything is checked")
}

// forger signs forgeries: well-formed signatures by a key nobody lists,
// so that each costs a receiver a whole Ed25519 check (random bytes are
// mostly refused early, as a non-canonical scalar or not a point).
var forger = NewIdentity()

// forgedVote is a vote in prober's name signed by the forger.
func forgedVote(prober, region string, s vote.Subject, seq uint64) []byte {
	return seal(forger, msgVote, prober, wireVote{Service: s.Service, Target: s.Target, Prober: prober, Region: region, Down: true, At: int64(seq / 1e6), Seq: seq})
}

func TestAPushPullStateIsAbortedAfterSixteenBadSignatures(t *testing.T) {
	p2, agent := NewIdentity(), NewIdentity()
	r := detached(t, p2, agent)
	s := vote.EndpointSubject("app.example.test.", "192.0.2.1")
	now := uint64(time.Now().UnixNano())
	st := fullState{}
	for i := range 100 {
		st.Votes = append(st.Votes, forgedVote("p2", "r2", s, now+uint64(i)))
	}
	genuine := seal(p2, msgVote, "p2", wireVote{Service: s.Service, Target: s.Target, Prober: "p2", Region: "r2", At: int64(now / 1e6), Seq: now - 1})
	st.Votes = append(st.Votes, genuine) // after the forgeries: never reached
	r.mergeState(mustJSON(st))
	assert.Equal(t, float64(maxBadPerSync), testutil.ToFloat64(r.m.Rejected.WithLabelValues("vote", ReasonSignature)), "16 checks, then the state is dropped")
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.SyncsAborted))
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.Rejected.WithLabelValues("state", ReasonBudget)))
	assert.Empty(t, r.Votes(), "the rest of the state was not taken")

	// An honest state (every entry checks out) is taken whole.
	r.mergeState(mustJSON(fullState{Votes: [][]byte{genuine}}))
	assert.Len(t, r.Votes(), 1)
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.SyncsAborted))
}

func TestAPullReplyIsTakenOnlyWithOurChallengeAndItsSendersSignature(t *testing.T) {
	p2, agent := NewIdentity(), NewIdentity()
	r := detached(t, p2, agent)
	s := vote.EndpointSubject("app.example.test.", "192.0.2.1")
	seq := uint64(time.Now().UnixNano())
	signed := seal(p2, msgVote, "p2", wireVote{Service: s.Service, Target: s.Target, Prober: "p2", Region: "r2", Down: true, At: int64(seq / 1e6), Seq: seq})
	nonce := []byte("0123456789abcdef")
	r.pulls["p2"] = pending{nonce: nonce, at: time.Now()}
	reply := func(id Identity, nonce []byte, msgs ...[]byte) []byte {
		return seal(id, msgPullReply, "p2", pullReply{To: "v", Nonce: nonce, Msgs: msgs})
	}
	cases := []struct {
		name   string
		msg    []byte
		reason string
		taken  bool
	}{
		{"a reply with another challenge is refused without a signature check", reply(p2, []byte("fedcba9876543210"), signed), ReasonStale, false},
		{"a reply with our challenge signed by another key is refused", reply(NewIdentity(), nonce, signed), ReasonSignature, false},
		{"a reply with our challenge and p2's signature is taken", reply(p2, nonce, signed), "", true},
		{"a second reply to the same challenge is refused", reply(p2, nonce, signed), ReasonStale, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if i == 1 {
				r.pulls["p2"] = pending{nonce: nonce, at: time.Now()} // the refused reply used the challenge up
			}
			if i == 2 {
				r.pulls["p2"] = pending{nonce: nonce, at: time.Now()}
			}
			rj := r.handle(tc.msg, false)
			if tc.reason == "" {
				assert.Nil(t, rj)
			} else {
				require.NotNil(t, rj)
				assert.Equal(t, tc.reason, rj.reason)
			}
			assert.Equal(t, tc.taken, hasVote(r, "p2", s, vote.Down))
		})
	}
}

// flood sends forged votes in prober's name to the gossip port addr at
// about rate a second, for at most d or until stop is closed, as anyone
// who reaches the port of an unencrypted ring can: raw UDP packets, each a
// memberlist compound message of up to 100 user messages. The forgeries are
// made beforehand (votes on two subjects the prober does not vote on, so
// each stays newer than what the receiver holds). It returns how many it sent.
func flood(t *testing.T, addr, prober, region string, rate int, d time.Duration, stop <-chan struct{}) int {
	t.Helper()
	subjects := []vote.Subject{vote.EndpointSubject("app.example.test.", "192.0.2.201"), vote.EndpointSubject("app.example.test.", "192.0.2.202")}
	base := uint64(time.Now().UnixNano())
	forged := make([][]byte, 4096)
	for i := range forged {
		forged[i] = append([]byte{8}, forgedVote(prober, region, subjects[i%2], base+uint64(i))...) // 8: memberlist's userMsg
	}
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Error(err) // not require: flood runs on its own goroutine
		return 0
	}
	defer conn.Close()
	const tick, perPacket = 10 * time.Millisecond, 100
	per := max(1, rate*int(tick)/int(time.Second))
	end := time.Now().Add(d)
	tk := time.NewTicker(tick)
	defer tk.Stop()
	sent := 0
	for time.Now().Before(end) {
		select {
		case <-stop:
			return sent
		case <-tk.C:
		}
		for n := per; n > 0; {
			k := min(n, perPacket)
			pkt := []byte{7, byte(k)} // memberlist's compoundMsg, count, lengths, messages
			for i := range k {
				pkt = binary.BigEndian.AppendUint16(pkt, uint16(len(forged[(sent+i)%len(forged)])))
			}
			for i := range k {
				pkt = append(pkt, forged[(sent+i)%len(forged)]...)
			}
			pkt, _ = memberlist.AddLabelHeaderToPacket(pkt, "test")
			_, _ = conn.Write(pkt)
			sent += k
			n -= k
		}
	}
	return sent
}

// TestAFloodOfForgedVotesCostsBoundedChecksAndTheRealVoteStillArrives
// floods a prober with forged votes in p2's name (2 000 a second, at most
// 10 s): at most the budget's checks are spent on them, the rest are
// refused as "budget", and p2's real vote is applied while the flood goes
// on (by a pull from p2 when its own copies are refused).
func TestAFloodOfForgedVotesCostsBoundedChecksAndTheRealVoteStillArrives(t *testing.T) {
	l := labFor(t)
	v := l.start(t, l.config("v", "r1", RoleProber, ""))
	pcfg := l.config("p2", "r2", RoleProber, "")
	pcfg.Seeds = []string{v.LocalAddr()}
	p2 := l.start(t, pcfg)
	eventually(t, "p2 counts", func() bool { return len(v.Members()) == 2 })
	stop := make(chan struct{})
	var flooding atomic.Bool
	flooding.Store(true)
	done := make(chan int)
	start := time.Now()
	go func() {
		n := flood(t, v.LocalAddr(), "p2", "r2", 2000, 10*time.Second, stop)
		flooding.Store(false)
		done <- n
	}()
	eventually(t, "forgeries are refused unchecked", func() bool {
		return testutil.ToFloat64(v.m.Rejected.WithLabelValues("vote", ReasonBudget)) > 0
	})
	s := vote.EndpointSubject("app.example.test.", "192.0.2.1")
	p2.Publish(s, vote.Down, time.Now())
	eventually(t, "p2's real vote is applied", func() bool { return hasVote(v, "p2", s, vote.Down) })
	assert.True(t, flooding.Load(), "the vote was applied while the flood went on")
	close(stop)
	sent := <-done
	elapsed := time.Since(start)
	checked := testutil.ToFloat64(v.m.Rejected.WithLabelValues("vote", ReasonSignature))
	bound := sigPerNameBurst + sigPerName*elapsed.Seconds() // all in one name
	t.Logf("%d forgeries in %s: %.0f checked (bound %.0f), %.0f refused unchecked, pulls applied %.0f", sent, elapsed.Round(time.Millisecond), checked,
		bound, testutil.ToFloat64(v.m.Rejected.WithLabelValues("vote", ReasonBudget)), testutil.ToFloat64(v.m.Pulls.WithLabelValues("applied")))
	assert.LessOrEqual(t, checked, bound, "the checks spent on forgeries stay within the budget")
	assert.Positive(t, testutil.ToFloat64(v.m.Pulls.WithLabelValues("applied")), "v asked p2 itself while messages in p2's name were refused")
}
