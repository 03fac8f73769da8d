package ring

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/meridian-gslb/meridian/internal/vote"
)

// How old a one-shot request may be when it arrives.
const (
	maxConfirmAge = time.Minute
	maxKeyOpAge   = 10 * time.Minute
	maxLeaderAge  = time.Minute // writer votes are sent every second, directly
	maxSharedAge  = 2 * time.Minute
)

// NotifyMsg handles a message from another node (memberlist calls it from
// its packet loop). It never blocks, copies what it keeps, and recovers
// from a panic: nothing a peer sends can stop this node.
func (d *delegate) NotifyMsg(b []byte) {
	r := (*Ring)(d)
	defer r.recoverPanic("message")
	if len(b) == 0 {
		return
	}
	kind := typeName(b[0])
	r.m.Messages.WithLabelValues(kind, "received").Inc()
	if rj := r.handle(slices.Clone(b), true); rj != nil {
		r.rejected(kind, rj)
	} else {
		r.changedIfNeeded()
	}
}

func typeName(t byte) string {
	if n, ok := msgNames[t]; ok {
		return n
	}
	return "unknown"
}

// handle checks one message (the envelope, the origin's listing and role,
// the payload's fields and stamps, then the signature) and applies it.
// With relay the message is queued to be passed on, as received.
func (r *Ring) handle(b []byte, relay bool) *rejection { return r.handleOpts(b, relay, false) }

// handleOpts is handle; exempt checks the signatures outside the budget
// (the messages of a pull reply whose challenge matched).
func (r *Ring) handleOpts(b []byte, relay, exempt bool) *rejection {
	rj := r.handleEnvelope(b, relay, exempt)
	if rj != nil && rj.origin == "" && len(b) > envHeader && len(b) >= envHeader+int(b[2]) {
		rj.origin = string(b[envHeader : envHeader+int(b[2])])
	}
	return rj
}

// handleEnvelope checks one message in a fixed order — its size, its
// envelope, a message in this node's own name, then the origin's listing,
// role and admission — and hands it to its type's handler, which checks
// the payload and the signature. Credentials and pulls are checked by
// their own handlers before any listing: they are what lists a sender.
func (r *Ring) handleEnvelope(b []byte, relay, exempt bool) *rejection {
	if limit := sizeLimit(b); len(b) > limit {
		return reject(ReasonOversized, "%d bytes (allowed: %d)", len(b), limit)
	}
	e, err := openEnvelope(b)
	if err != nil {
		return reject(ReasonMalformed, "%v", err)
	}
	e.exempt = exempt
	t := r.trust.Load()
	if e.origin == r.cfg.NodeName {
		return r.onOwnName(e)
	}
	switch e.t {
	case msgCred:
		return r.onCred(t, e, b) // the credential is what lists its sender
	case msgPull:
		return r.onPull(t, e, clock{now: time.Now(), skew: r.cfg.MaxClockSkew})
	case msgPullReply:
		return r.onPullReply(t, e)
	}
	p, rj := t.authorize(e)
	if rj != nil {
		return rj
	}
	if p.IsPrefix() && !r.view.Load().admitted[e.origin] && !r.provesLife(e) {
		return reject(ReasonUnadmitted, "%q matches %q but is not one of its %d live members", e.origin, p.Name, p.MaxNodes)
	}
	return r.dispatch(t, e, p, b, relay)
}

// sizeLimit is the largest message of b's type: shared state and pull
// replies may be larger than the rest.
func sizeLimit(b []byte) int {
	switch {
	case len(b) > 0 && b[0] == msgShared:
		return maxShared
	case len(b) > 0 && b[0] == msgPullReply:
		return maxPullReply
	}
	return maxMessage
}

// onOwnName checks a message in this node's own name: our own message come
// back through a relay (we are the authority on it), or someone speaking in
// our name. Only its signature matters; nothing in it is applied.
func (r *Ring) onOwnName(e envelope) *rejection {
	if rj := r.checkSig(e, r.id().Public()); rj != nil {
		rj.detail = "in this node's own name: " + rj.detail
		return rj
	}
	return nil
}

// dispatch hands an authorized, admitted message from peer p to its type's
// handler.
func (r *Ring) dispatch(t *trust, e envelope, p peer, b []byte, relay bool) *rejection {
	c := clock{now: time.Now(), skew: r.cfg.MaxClockSkew}
	switch e.t {
	case msgVote:
		return r.onVote(t, e, p, c, b, relay)
	case msgSummary:
		return r.onSummary(t, e, p, c, b, relay)
	case msgConfirm:
		return r.onConfirm(t, e, p, c, b, relay)
	case msgHeartbeat:
		return r.onHeartbeat(t, e, p, c, b, relay)
	case msgLeader:
		return r.onLeader(t, e, p, c)
	case msgShared:
		return r.onShared(t, e, p, c)
	case msgKeyOp:
		return r.onKeyOp(t, e, p, c)
	case msgRTT:
		return r.onRTT(t, e, p, c, b, relay)
	}
	return reject(ReasonUnknownType, "type %d", e.t)
}

// provesLife reports whether e is the summary or heartbeat of a member of a
// prefix entry that waits for a place (its metadata checks out, but it
// has not been seen alive yet, or the entry's places are taken): that is
// how it becomes alive and admitted (refreshView). Nothing else of it is
// taken until it is admitted.
func (r *Ring) provesLife(e envelope) bool {
	return (e.t == msgSummary || e.t == msgHeartbeat) && r.view.Load().waiting[e.origin]
}

// admitIfWaiting recomputes the view when a waiting member of a prefix
// entry proved it is alive; it reports whether the member is admitted.
func (r *Ring) admitIfWaiting(name string) bool {
	if r.view.Load().admitted[name] {
		return true
	}
	r.refreshView()
	return r.view.Load().admitted[name]
}

func (r *Ring) known(s vote.Subject) bool {
	return r.cfg.Known == nil || r.cfg.Known(s)
}

// checkSubject bounds a subject's text (it is a map key everywhere).
func checkSubject(service, target string) *rejection {
	if len(service) > 255 || target == "" || len(target) > 255 {
		return reject(ReasonInvalid, "subject %q %q: names are 1..255 characters", service, target)
	}
	return nil
}

func (r *Ring) onVote(t *trust, e envelope, p peer, c clock, b []byte, relay bool) *rejection {
	var w wireVote
	if err := e.decodePayload(&w); err != nil {
		return reject(ReasonMalformed, "vote: %v", err)
	}
	switch {
	case w.Prober != e.origin:
		return reject(ReasonImpersonation, "vote signed by %q in the name of %q", e.origin, w.Prober)
	case w.Region != p.Region:
		return reject(ReasonRegion, "vote of %q for region %q (listed: %q)", e.origin, w.Region, p.Region)
	case c.futureMs(w.At):
		return reject(ReasonFuture, "vote of %q observed at %s, beyond now + %s", e.origin, time.UnixMilli(w.At).UTC().Format(time.RFC3339), c.skew)
	case c.futureSeq(w.Seq):
		return reject(ReasonFuture, "vote of %q with sequence %d, ahead of the clock", e.origin, w.Seq)
	}
	if rj := checkSubject(w.Service, w.Target); rj != nil {
		return rj
	}
	v := w.vote()
	if !r.known(v.Subject) {
		return reject(ReasonUnknownTarget, "vote of %q on %s", e.origin, v.Subject)
	}
	if !r.store.newer(v) {
		return nil // a repeat
	}
	if rj := r.checkSig(e, p.key); rj != nil {
		return rj
	}
	if !r.store.put(v, b) {
		return nil
	}
	r.m.Votes.Inc()
	r.pending.Store(true)
	// Relaying others' votes makes delivery robust in larger rings; under a
	// burst the originator's own retransmissions and push/pull suffice, and
	// relays would only crowd the queue.
	if relay && r.q.NumQueued() < maxRelayQueued {
		r.q.QueueBroadcast(&bcast{name: "v/" + w.Prober + "/" + w.Service + "/" + w.Target, msg: b})
	}
	return nil
}

func (r *Ring) onSummary(t *trust, e envelope, p peer, c clock, b []byte, relay bool) *rejection {
	var sm summary
	if err := e.decodePayload(&sm); err != nil {
		return reject(ReasonMalformed, "summary: %v", err)
	}
	switch {
	case sm.Prober != e.origin:
		return reject(ReasonImpersonation, "summary signed by %q in the name of %q", e.origin, sm.Prober)
	case sm.Region != p.Region:
		return reject(ReasonRegion, "summary of %q for region %q (listed: %q)", e.origin, sm.Region, p.Region)
	case c.futureMs(sm.At):
		return reject(ReasonFuture, "summary of %q at %s, beyond now + %s", e.origin, time.UnixMilli(sm.At).UTC().Format(time.RFC3339), c.skew)
	case c.futureSeq(sm.Inc):
		return reject(ReasonFuture, "summary of %q from incarnation %d, ahead of the clock", e.origin, sm.Inc)
	case sm.Count < 0:
		return reject(ReasonInvalid, "summary of %q counts %d votes", e.origin, sm.Count)
	}
	if !r.store.newerSummary(sm) {
		return nil
	}
	if rj := r.checkSig(e, p.key); rj != nil {
		return rj
	}
	if !r.store.putSummary(sm, b) {
		return nil
	}
	if p.IsPrefix() {
		r.admitIfWaiting(e.origin)
	}
	if relay {
		r.q.QueueBroadcast(&bcast{name: "s/" + sm.Prober, msg: b})
		r.checkDigest(sm)
	}
	r.pending.Store(true)
	return nil
}

func (r *Ring) onConfirm(t *trust, e envelope, p peer, c clock, b []byte, relay bool) *rejection {
	var cr confirmReq
	if err := e.decodePayload(&cr); err != nil {
		return reject(ReasonMalformed, "confirmation: %v", err)
	}
	switch {
	case cr.From != e.origin:
		return reject(ReasonImpersonation, "confirmation signed by %q in the name of %q", e.origin, cr.From)
	case cr.Region != p.Region:
		return reject(ReasonRegion, "confirmation of %q for region %q (listed: %q)", e.origin, cr.Region, p.Region)
	case c.futureMs(cr.At):
		return reject(ReasonFuture, "confirmation of %q at %s, beyond now + %s", e.origin, time.UnixMilli(cr.At).UTC().Format(time.RFC3339), c.skew)
	case c.now.Sub(time.UnixMilli(cr.At)) > maxConfirmAge:
		return reject(ReasonStale, "confirmation of %q from %s (at most %s old)", e.origin, time.UnixMilli(cr.At).UTC().Format(time.RFC3339), maxConfirmAge)
	}
	if rj := checkSubject(cr.Service, cr.Target); rj != nil {
		return rj
	}
	s := vote.Subject{Service: cr.Service, Target: cr.Target}
	if !r.known(s) {
		return reject(ReasonUnknownTarget, "confirmation of %q on %s", e.origin, s)
	}
	name := "c/" + cr.From + "/" + cr.Service + "/" + cr.Target
	r.mu.Lock()
	repeat := r.confirmRepeatLocked(name, cr.At, c.now)
	r.mu.Unlock()
	if repeat {
		return nil // a copy of a request we handled, or one too soon after it
	}
	if rj := r.checkSig(e, p.key); rj != nil {
		return rj
	}
	r.mu.Lock()
	if r.confirmRepeatLocked(name, cr.At, c.now) {
		// The same request by another path (direct and relayed copies are
		// delivered concurrently) was handled while we verified this one.
		r.mu.Unlock()
		return nil
	}
	r.confirms[name] = confirmed{at: cr.At, handled: c.now}
	if c.now.Sub(r.confirmsPruned) > maxConfirmAge/4 {
		r.confirmsPruned = c.now
		for k, cs := range r.confirms {
			if c.now.Sub(cs.handled) > maxConfirmAge {
				delete(r.confirms, k)
			}
		}
	}
	r.mu.Unlock()
	if relay {
		r.q.QueueBroadcast(&bcast{name: name, msg: b})
	}
	if cr.Region != r.cfg.Region && r.cfg.Role == RoleProber && r.cfg.OnConfirm != nil {
		r.cfg.OnConfirm(s, cr.From)
	}
	return nil
}

// confirmed is the last confirmation request handled from one prober
// about one subject.
type confirmed struct {
	at      int64     // its stamp (Unix ms)
	handled time.Time // when this node handled it
}

// minConfirmGap is the shortest time between two requests of one prober
// about one subject that are both handled: a prober asks when an endpoint
// turns (down, then up again when it recovers), and no faster; the probes
// they cause are bounded by the fast cadence and the re-probe budget too.
const minConfirmGap = time.Second

// confirmRepeatLocked reports whether a request stamped at about name is
// a copy of (or older than) the last one handled, or comes less than
// minConfirmGap after it. r.mu is held.
func (r *Ring) confirmRepeatLocked(name string, at int64, now time.Time) bool {
	cs, seen := r.confirms[name]
	return seen && (at <= cs.at || now.Sub(cs.handled) < minConfirmGap)
}

func (r *Ring) onHeartbeat(t *trust, e envelope, p peer, c clock, b []byte, relay bool) *rejection {
	var hb heartbeat
	if err := e.decodePayload(&hb); err != nil {
		return reject(ReasonMalformed, "heartbeat: %v", err)
	}
	switch {
	case hb.From != e.origin:
		return reject(ReasonImpersonation, "heartbeat signed by %q in the name of %q", e.origin, hb.From)
	case hb.Cluster != p.Cluster:
		return reject(ReasonCluster, "agent %q sent the heartbeat of cluster %q (it may speak for %q only)", e.origin, hb.Cluster, p.Cluster)
	case c.futureMs(hb.At):
		return reject(ReasonFuture, "heartbeat of %q at %s, beyond now + %s", e.origin, time.UnixMilli(hb.At).UTC().Format(time.RFC3339), c.skew)
	case c.futureSeq(hb.Seq):
		return reject(ReasonFuture, "heartbeat of %q with sequence %d, ahead of the clock", e.origin, hb.Seq)
	}
	key := hb.Cluster + "|" + hb.From
	r.mu.Lock()
	newer := hb.Seq > r.hbSeen[key]
	r.mu.Unlock()
	if !newer {
		return nil
	}
	if rj := r.checkSig(e, p.key); rj != nil {
		return rj
	}
	r.mu.Lock()
	newer = hb.Seq > r.hbSeen[key]
	if newer {
		r.hbSeen[key] = hb.Seq
		if len(r.agentSeen) > 4096 {
			clear(r.agentSeen)
		}
		r.agentSeen[hb.From] = max(r.agentSeen[hb.From], hb.Seq)
	}
	r.mu.Unlock()
	if !newer {
		return nil
	}
	if p.IsPrefix() && !r.admitIfWaiting(e.origin) {
		return nil // alive, but every place of its entry is taken: its heartbeat does not count
	}
	if relay {
		r.q.QueueBroadcast(&bcast{name: "h/" + hb.Cluster + "/" + hb.From, msg: b})
	}
	if r.cfg.OnHeartbeat != nil {
		r.cfg.OnHeartbeat(hb.Cluster, hb.From, time.UnixMilli(hb.At))
	}
	return nil
}

func (r *Ring) onLeader(t *trust, e envelope, p peer, c clock) *rejection {
	var lm leaderMsg
	if err := e.decodePayload(&lm); err != nil {
		return reject(ReasonMalformed, "writer vote: %v", err)
	}
	switch {
	case lm.Voter != e.origin:
		return reject(ReasonImpersonation, "writer vote signed by %q in the name of %q", e.origin, lm.Voter)
	case c.futureSeq(lm.Seq):
		return reject(ReasonFuture, "writer vote of %q with sequence %d, ahead of the clock", e.origin, lm.Seq)
	case lm.Seq < uint64(c.now.Add(-maxLeaderAge).UnixNano()):
		return reject(ReasonStale, "writer vote of %q from sequence %d, more than %s old (a replay?)", e.origin, lm.Seq, maxLeaderAge)
	case len(lm.Candidate) > 255:
		return reject(ReasonInvalid, "writer vote of %q for a candidate name of %d characters", e.origin, len(lm.Candidate))
	}
	r.mu.Lock()
	old, ok := r.leaders[lm.Voter]
	r.mu.Unlock()
	if ok && lm.Seq <= old.seq {
		return nil
	}
	if rj := r.checkSig(e, p.key); rj != nil {
		return rj
	}
	r.mu.Lock()
	if old, ok := r.leaders[lm.Voter]; !ok || lm.Seq > old.seq {
		r.leaders[lm.Voter] = LeaderVote{Voter: lm.Voter, Candidate: lm.Candidate, Received: time.Now(), seq: lm.Seq}
	}
	r.mu.Unlock()
	return nil
}

// onShared passes a prober's admin state to OnShared, which validates each
// entry like an API request (internal/admin). The state is stamped: an old
// one replayed (removed overrides coming back) is refused.
func (r *Ring) onShared(t *trust, e envelope, p peer, c clock) *rejection {
	if r.cfg.OnShared == nil {
		return nil
	}
	if !p.Admin {
		return reject(ReasonCapability, "admin state of %q, which has no admin capability (ring.peers[].admin, or a credential issued with --capability admin)", e.origin)
	}
	var sm sharedMsg
	if err := e.decodePayload(&sm); err != nil {
		return reject(ReasonMalformed, "admin state: %v", err)
	}
	switch {
	case c.futureMs(sm.At):
		return reject(ReasonFuture, "admin state of %q at %s, beyond now + %s", e.origin, time.UnixMilli(sm.At).UTC().Format(time.RFC3339), c.skew)
	case c.now.Sub(time.UnixMilli(sm.At)) > maxSharedAge:
		return reject(ReasonStale, "admin state of %q from %s (at most %s old: a replay?)", e.origin, time.UnixMilli(sm.At).UTC().Format(time.RFC3339), maxSharedAge)
	}
	sum := sha256.Sum256(sm.State)
	r.mu.Lock()
	same := r.shared[e.origin] == sum
	r.mu.Unlock()
	if same {
		return nil // the same state as the last one from this node: merged already
	}
	if rj := r.checkSig(e, p.key); rj != nil {
		return rj
	}
	r.mu.Lock()
	if len(r.shared) > 4096 {
		clear(r.shared)
	}
	r.shared[e.origin] = sum
	r.mu.Unlock()
	r.cfg.OnShared(sm.State)
	return nil
}

func (r *Ring) onKeyOp(t *trust, e envelope, p peer, c clock) *rejection {
	var op keyOp
	if err := e.decodePayload(&op); err != nil {
		return reject(ReasonMalformed, "key change: %v", err)
	}
	switch {
	case op.ID == "" || len(op.ID) > 64:
		return reject(ReasonInvalid, "key change of %q with id %q (1..64 characters)", e.origin, op.ID)
	case op.Op != KeyInstall && op.Op != KeyUse && op.Op != KeyRemove:
		return reject(ReasonInvalid, "key change of %q: %q (allowed: install, use, remove)", e.origin, op.Op)
	case c.futureMs(op.At):
		return reject(ReasonFuture, "key change of %q at %s, beyond now + %s", e.origin, time.UnixMilli(op.At).UTC().Format(time.RFC3339), c.skew)
	case c.now.Sub(time.UnixMilli(op.At)) > maxKeyOpAge:
		return reject(ReasonStale, "key change of %q from %s (at most %s old: a replay?)", e.origin, time.UnixMilli(op.At).UTC().Format(time.RFC3339), maxKeyOpAge)
	}
	if _, err := ParseKeyBytes(op.Key); err != nil {
		return reject(ReasonInvalid, "key change of %q: %v", e.origin, err)
	}
	r.mu.Lock()
	_, done := r.keyOpAt[op.ID]
	r.mu.Unlock()
	if done {
		return nil
	}
	if rj := r.checkSig(e, p.key); rj != nil {
		return rj
	}
	if err := r.applyKeyOp(op, false); err != nil {
		r.log.Error("ring: keyring change from the ring failed", "op", op.Op, "from", e.origin, "err", err)
	}
	return nil
}

func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.q.GetBroadcasts(overhead, limit)
}

// LocalState is this node's side of a push/pull sync: the envelopes of
// every vote and summary it holds and, on a prober, its admin state.
func (d *delegate) LocalState(join bool) []byte {
	r := (*Ring)(d)
	defer r.recoverPanic("local-state")
	r.m.Messages.WithLabelValues("state", "sent").Inc()
	st := r.store.full()
	st.RTT = r.rttState()
	st.Creds = r.creds.all()
	if oc := r.own.Load(); oc != nil {
		st.Creds = append(st.Creds, oc.msg)
	}
	if r.cfg.SharedState != nil && r.cfg.Role == RoleProber && r.trust.Load().self.Admin {
		if data := r.cfg.SharedState(); len(data) > 0 {
			st.Shared = seal(r.id(), msgShared, r.cfg.NodeName, sharedMsg{At: time.Now().UnixMilli(), State: data})
		}
	}
	b, _ := json.Marshal(st)
	return b
}

// MergeRemoteState takes another node's state: each envelope is checked
// as if it had arrived on its own.
func (d *delegate) MergeRemoteState(buf []byte, join bool) {
	r := (*Ring)(d)
	defer r.recoverPanic("state")
	r.m.Messages.WithLabelValues("state", "received").Inc()
	r.mergeState(buf)
}

func (r *Ring) mergeState(buf []byte) {
	if len(buf) > maxState {
		r.rejected("state", reject(ReasonOversized, "%d bytes (allowed: %d)", len(buf), maxState))
		return
	}
	var st fullState
	if err := json.Unmarshal(buf, &st); err != nil {
		r.rejected("state", reject(ReasonMalformed, "%v", err))
		return
	}
	size, bad := 0, 0            // bad signatures: the merge stops at maxBadPerSync
	for _, b := range st.Creds { // first: they list the senders of what follows
		if size += len(b); size > maxCredState {
			r.rejected("credential", reject(ReasonOversized, "the credentials of a state sync are over %d bytes: the rest skipped", maxCredState))
			break
		}
		if rj := r.handleTyped(msgCred, b); rj != nil {
			r.rejected("credential", rj)
			if rj.reason == ReasonSignature {
				bad++
			}
		}
	}
	if len(st.Shared) > 0 {
		if rj := r.handleTyped(msgShared, st.Shared); rj != nil {
			r.rejected("shared", rj)
		}
	}
	for _, part := range []struct {
		t    byte
		msgs [][]byte
	}{{msgVote, st.Votes}, {msgSummary, st.Summaries}, {msgRTT, st.RTT}} {
		for _, b := range part.msgs {
			rj := r.handleTyped(part.t, b)
			if rj == nil {
				continue
			}
			r.rejected(msgNames[part.t], rj)
			if rj.reason == ReasonSignature {
				if bad++; bad >= maxBadPerSync {
					r.m.SyncsAborted.Inc()
					r.rejected("state", reject(ReasonBudget, "a push/pull state aborted after %d bad signatures (last in the name of %q): the rest is not checked", bad, rj.origin))
					r.changedIfNeeded()
					return
				}
			}
		}
	}
	r.changedIfNeeded()
}

// handleTyped handles an envelope from a sync that must be of type t.
func (r *Ring) handleTyped(t byte, b []byte) *rejection {
	if len(b) == 0 || b[0] != t {
		return reject(ReasonMalformed, "a %s entry holds another message type", msgNames[t])
	}
	return r.handle(b, false)
}

// changedIfNeeded calls OnChange once after votes or summaries were taken.
func (r *Ring) changedIfNeeded() {
	if r.pending.Swap(false) {
		r.changed()
	}
}

// rejected counts a refused message and logs it, at most once a minute per
// kind, reason and detail's origin, so a flood cannot flood the log too.
func (r *Ring) rejected(kind string, rj *rejection) {
	r.m.Rejected.WithLabelValues(kind, rj.reason).Inc()
	if h := r.cfg.onReject; h != nil {
		h(kind, rj)
	}
	key := kind + "/" + rj.reason
	now := time.Now()
	r.mu.Lock()
	last, seen := r.logged[key]
	if !seen || now.Sub(last) > time.Minute {
		if len(r.logged) > 1024 {
			clear(r.logged)
		}
		r.logged[key] = now
	}
	r.mu.Unlock()
	if !seen || now.Sub(last) > time.Minute {
		r.log.Warn("ring: message rejected (further ones of this kind and reason are counted, logged once a minute)", "type", kind, "reason", rj.reason, "detail", rj.detail)
	}
}

// recoverPanic keeps a panic in a callback (ours or the application's)
// from stopping the node: it is logged with its stack and counted.
func (r *Ring) recoverPanic(where string) {
	v := recover()
	if v == nil {
		return
	}
	r.m.Rejected.WithLabelValues(where, ReasonPanic).Inc()
	r.log.Error("ring: recovered from a panic while handling gossip", "in", where, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
}
