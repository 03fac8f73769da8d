package ring

import (
	"crypto/ed25519"
	crand "crypto/rand"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// A CPU budget for failed signature checks (issue 31). Every envelope in a
// listed node's name that passes the cheap checks costs an Ed25519
// verification (~55 µs): a flood of forgeries in a prober's name would
// saturate memberlist's single message goroutine, and its queue would drop
// the real messages with the forged ones.
//
// memberlist does not tell a delegate who sent a gossip message
// (NotifyMsg has no address, and a relay or a push/pull carries other
// nodes' envelopes anyway), so failures are charged to the name the
// envelope claims, and to the node as a whole:
//
//   - per claimed origin: sigPerName failures a second (burst sigPerNameBurst);
//   - in all: sigGlobal failures a second (burst sigGlobalBurst), for the
//     names that are not known: a name a prefix entry covers but that is
//     not one of its admitted live members, or a credential's sender not
//     yet accepted. A known name (listed exactly, this node's own, or an
//     admitted member) has only its own bucket, so forgeries in other
//     names never refuse its messages; there are at most as many known
//     names as the ring has members, which bounds their cost.
//
// While a bucket that applies is empty, envelopes in that name are refused
// with reason "budget" without a signature check. A flood in prober P's
// name thus costs at most sigPerName verifications a second, but it would
// also keep P's real messages out; so a refusal asks P itself, over TCP at
// its memberlist address, for its current votes and summary (or an agent's
// last heartbeat) with a random challenge (a "pull", at most one per
// pullGap per node). The reply must carry the challenge: a forged reply
// costs no verification, the real one bypasses the budget, and P's votes
// arrive one round trip after the flood began to refuse them.
//
// A pull request is signed and verified like any message, on a bucket of
// its own per name (a flood of forged votes in P's name does not close
// P's pulls), and is answered only to a known member: an unverified
// request would let anyone spend the pullGap of a real requester with a
// challenge of their own, or, with a plain memberlist node that borrows a
// listed name and advertises somebody else's address, make every prober
// send its votes over TCP to that address.
//
// A push/pull state is aborted after maxBadPerSync bad signatures.
const (
	sigPerName      = 20
	sigPerNameBurst = 40
	sigGlobal       = 200
	sigGlobalBurst  = 400
	maxBadPerSync   = 16
	maxBudgetNames  = 1024
	pullGap         = 500 * time.Millisecond
	maxPullAge      = 10 * time.Second
	maxPullReply    = 4 << 20
)

// bucket is a token bucket: tokens refill at rate a second up to burst.
type bucket struct {
	tokens float64
	at     time.Time
}

func (b *bucket) refill(now time.Time, rate, burst float64) {
	if b.at.IsZero() {
		b.tokens, b.at = burst, now
		return
	}
	if d := now.Sub(b.at).Seconds(); d > 0 {
		b.tokens = min(burst, b.tokens+d*rate)
		b.at = now
	}
}

// sigBudget is the failed-verification budget of one node. Safe for
// concurrent use.
type sigBudget struct {
	mu     sync.Mutex
	off    bool // tests: every envelope is verified, as before the budget
	names  map[string]*bucket
	global bucket
}

func newSigBudget(off bool) *sigBudget {
	return &sigBudget{off: off, names: map[string]*bucket{}}
}

// allow reports whether an envelope in name's name may be verified now;
// known names (see above) are not held to the node's bucket.
func (s *sigBudget) allow(name string, known bool, now time.Time) bool {
	if s.off {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.global.refill(now, sigGlobal, sigGlobalBurst)
	if !known && s.global.tokens < 1 {
		return false
	}
	b, ok := s.names[name]
	if !ok {
		return true // no failure yet: a full bucket
	}
	b.refill(now, sigPerName, sigPerNameBurst)
	return b.tokens >= 1
}

// failed charges a failed verification to name, and to the node unless
// name is known.
func (s *sigBudget) failed(name string, known bool, now time.Time) {
	if s.off {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !known {
		s.global.refill(now, sigGlobal, sigGlobalBurst)
		s.global.tokens = max(0, s.global.tokens-1)
	}
	b, ok := s.names[name]
	if !ok {
		if len(s.names) >= maxBudgetNames {
			for n, o := range s.names { // forget the names that have recovered
				if o.refill(now, sigPerName, sigPerNameBurst); o.tokens >= sigPerNameBurst {
					delete(s.names, n)
				}
			}
		}
		if len(s.names) >= maxBudgetNames {
			name = "" // names beyond the bound share one bucket
			if b, ok = s.names[name]; !ok {
				b = &bucket{}
				s.names[name] = b
			}
		} else {
			b = &bucket{}
			s.names[name] = b
		}
	}
	b.refill(now, sigPerName, sigPerNameBurst)
	b.tokens = max(0, b.tokens-1)
}

// checkSig verifies e's signature with key within the budget: refused
// without a check ("budget") when e's claimed origin or the node has spent
// its failures, charged when it fails. Envelopes of a pull reply whose
// challenge matched (e.exempt) are always checked.
func (r *Ring) checkSig(e envelope, key ed25519.PublicKey) *rejection {
	return r.checkSigIn(e, key, e.origin)
}

// checkSigIn is checkSig with the failures charged to the bucket called
// account (e.origin's, or its pull requests').
func (r *Ring) checkSigIn(e envelope, key ed25519.PublicKey, account string) *rejection {
	now := time.Now()
	known := r.knownName(e.origin)
	if !e.exempt && !r.budget.allow(account, known, now) {
		if e.t != msgPull {
			r.askPull(e.origin, now)
		}
		return reject(ReasonBudget, "%s message from %q not checked: too many bad signatures in its name or in all lately (asked %q directly)", typeName(e.t), e.origin, e.origin)
	}
	if e.verify(key) {
		return nil
	}
	r.budget.failed(account, known, now)
	return reject(ReasonSignature, "%s message from %q is not signed by its listed key", typeName(e.t), e.origin)
}

// knownName reports whether name is this node's, listed exactly (in ring.peers
// or by an accepted credential), or an admitted member of a prefix entry:
// the names whose failed checks have their own budget only.
func (r *Ring) knownName(name string) bool {
	if name == r.cfg.NodeName {
		return true
	}
	p, ok := r.trust.Load().lookup(name)
	return ok && (!p.IsPrefix() || r.view.Load().admitted[name])
}

// pullReq asks a node for its own current messages (see askPull). Its
// receiver verifies it (on the bucket pullAccount) and sends its own
// signed messages to the member of that name, at most once per pullGap.
type pullReq struct {
	From  string `json:"f"`
	To    string `json:"t"`
	Nonce []byte `json:"n"`
	At    int64  `json:"a"`
}

// pullAccount is the budget bucket of name's pull requests.
func pullAccount(name string) string { return "\x00pull " + name }

// pullReply is a node's answer: its own envelopes, with the challenge.
type pullReply struct {
	To    string   `json:"t"`
	Nonce []byte   `json:"n"`
	Msgs  [][]byte `json:"m"`
}

type pending struct {
	nonce []byte
	at    time.Time
}

// askPull asks the live member name for its own current messages, unless
// a pull to it went out less than pullGap ago.
func (r *Ring) askPull(name string, now time.Time) {
	if name == r.cfg.NodeName || r.stopped.Load() || r.mlp.Load() == nil {
		return
	}
	r.mu.Lock()
	n, live := r.nodes[name]
	last, asked := r.pulls[name]
	if !live || asked && now.Sub(last.at) < pullGap {
		r.mu.Unlock()
		return
	}
	nonce := make([]byte, 16)
	_, _ = crand.Read(nonce)
	if len(r.pulls) > 4096 {
		clear(r.pulls)
	}
	r.pulls[name] = pending{nonce: nonce, at: now}
	r.mu.Unlock()
	msg := seal(r.id(), msgPull, r.cfg.NodeName, pullReq{From: r.cfg.NodeName, To: name, Nonce: nonce, At: now.UnixMilli()})
	r.m.Pulls.WithLabelValues("requested").Inc()
	r.sendReliable(n, msg, "pull request")
}

// sendReliable sends msg to n over TCP in the background.
func (r *Ring) sendReliable(n memberlist.Node, msg []byte, what string) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		ml := r.mlp.Load()
		if ml == nil || r.stopped.Load() {
			return
		}
		if err := ml.SendReliable(&n, msg); err != nil {
			r.log.Debug("ring: not sent", "what", what, "to", n.Name, "err", err)
		}
	}()
}

// onPull answers a pull request with this node's own messages, sent to
// the member named in the request (never to another address).
func (r *Ring) onPull(t *trust, e envelope, c clock) *rejection {
	var pr pullReq
	if err := e.decodePayload(&pr); err != nil {
		return reject(ReasonMalformed, "pull request: %v", err)
	}
	switch {
	case pr.From != e.origin:
		return reject(ReasonImpersonation, "pull request sent by %q in the name of %q", e.origin, pr.From)
	case pr.To != r.cfg.NodeName:
		return reject(ReasonInvalid, "pull request of %q for %q", e.origin, pr.To)
	case len(pr.Nonce) != 16:
		return reject(ReasonInvalid, "pull request of %q with a challenge of %d bytes (allowed: 16)", e.origin, len(pr.Nonce))
	case c.futureMs(pr.At):
		return reject(ReasonFuture, "pull request of %q at %s, beyond now + %s", e.origin, time.UnixMilli(pr.At).UTC().Format(time.RFC3339), c.skew)
	case c.now.Sub(time.UnixMilli(pr.At)) > maxPullAge:
		return reject(ReasonStale, "pull request of %q more than %s old", e.origin, maxPullAge)
	}
	p, ok := t.lookup(e.origin)
	if !ok {
		return reject(ReasonUnknownOrigin, "pull request from %q, which is not listed", e.origin)
	}
	if !r.knownName(e.origin) {
		return reject(ReasonUnadmitted, "pull request from %q, which matches %q but is not one of its %d live members", e.origin, p.Name, p.MaxNodes)
	}
	if rj := r.checkSigIn(e, p.key, pullAccount(e.origin)); rj != nil {
		return rj
	}
	r.mu.Lock()
	n, live := r.nodes[e.origin]
	last := r.answered[e.origin]
	ok = live && c.now.Sub(last) >= pullGap
	if ok {
		if len(r.answered) > 4096 {
			clear(r.answered)
		}
		r.answered[e.origin] = c.now
	}
	r.mu.Unlock()
	if !ok {
		return nil // not a live member, or answered a moment ago
	}
	var msgs [][]byte
	switch r.cfg.Role {
	case RoleProber:
		msgs = r.store.own(r.cfg.NodeName)
	case RoleAgent:
		if hb := r.lastHB.Load(); hb != nil {
			msgs = [][]byte{*hb}
		}
	}
	reply := seal(r.id(), msgPullReply, r.cfg.NodeName, pullReply{To: e.origin, Nonce: pr.Nonce, Msgs: msgs})
	if len(reply) > maxPullReply {
		r.log.Warn("ring: pull reply too large; push/pull carries the votes", "to", e.origin, "bytes", len(reply))
		return nil
	}
	r.m.Pulls.WithLabelValues("answered").Inc()
	r.sendReliable(n, reply, "pull reply")
	return nil
}

// onPullReply takes a node's own messages sent in answer to our pull: the
// challenge is checked first (an unsolicited or forged reply costs no
// signature check), then the reply's signature and each message as if it
// had arrived on its own, outside the budget.
func (r *Ring) onPullReply(t *trust, e envelope) *rejection {
	var pr pullReply
	if err := e.decodePayload(&pr); err != nil {
		return reject(ReasonMalformed, "pull reply: %v", err)
	}
	r.mu.Lock()
	want, asked := r.pulls[e.origin]
	match := asked && pr.To == r.cfg.NodeName && string(pr.Nonce) == string(want.nonce) && time.Since(want.at) <= maxPullAge
	if match {
		delete(r.pulls, e.origin) // one reply per challenge
	}
	r.mu.Unlock()
	if !match {
		return reject(ReasonStale, "pull reply from %q answers no pull of ours", e.origin)
	}
	p, ok := t.lookup(e.origin)
	if !ok {
		return reject(ReasonUnknownOrigin, "pull reply from %q, which is not listed", e.origin)
	}
	if !e.verify(p.key) {
		return reject(ReasonSignature, "pull reply from %q is not signed by its listed key", e.origin)
	}
	for _, b := range pr.Msgs {
		inner, err := openEnvelope(b)
		if err != nil || inner.origin != e.origin || (inner.t != msgVote && inner.t != msgSummary && inner.t != msgHeartbeat) {
			r.rejected("pull-reply", reject(ReasonInvalid, "pull reply from %q holds a message that is not its own vote, summary or heartbeat", e.origin))
			continue
		}
		if rj := r.handleOpts(b, false, true); rj != nil {
			r.rejected(typeName(inner.t), rj)
		}
	}
	r.m.Pulls.WithLabelValues("applied").Inc()
	return nil
}
