package ring

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/ringca"
)

// Credentials (ADR 0016): a node with ring.credential sends its
// certificate chain in a credMsg signed with the certificate's key, over
// TCP (a chain does not fit a gossip packet): to every node that joins, to
// every member when it is renewed, and in push/pull syncs. A receiver
// verifies the chain with ring.ca (and ring.revoked), checks that its scope
// covers the sender's name and that the sender signed with its key, and
// from then on lists the node as the scope says (role, region or cluster,
// max_nodes of a prefix) — so no site lists another site's keys. An entry
// of ring.peers for the same name takes precedence (pinning).

// credMsg is a node's credential.
type credMsg struct {
	Node  string   `json:"n"`
	Chain [][]byte `json:"c"` // DER, the leaf first
}

// heldCred is a verified credential of another node.
type heldCred struct {
	v     ringca.Verified
	chain [][]byte // DER, as received: verified again when the trust changes or time passes
	raw   []byte   // the envelope, passed on in push/pull syncs
}

// Bounds of what a node keeps of others' credentials: a prefix credential
// covers any number of names, so its holder could invent names to fill
// memory and every push/pull state.
const (
	maxPerName   = 4       // credentials held per node name (a renewal in flight, an overlapping scope)
	maxPending   = 64      // node names held that are not live members (yet)
	maxChain     = 8 << 10 // bytes of one credential's certificates
	maxCredState = 1 << 20 // bytes of credentials taken from one push/pull state
	badTTL       = time.Minute
	maxBad       = 1024
)

// credStore holds the verified credentials of other nodes, by node name
// and certificate. Which one lists a node is the one its current signed
// metadata names (want): an older credential replayed, or another scope's
// that also covers the name, never lists it. Credentials are kept for live
// members and a few names that are not (yet). Safe for concurrent use.
type credStore struct {
	mu     sync.Mutex
	byName map[string]map[[32]byte]heldCred
	wanted map[string][]byte // node -> credID its live metadata names (live members only)
	bad    map[badKey]badCred
}

type badKey struct {
	h      [32]byte
	origin string
}

// badCred is a refused credential, remembered for a while so that a
// repeat costs no chain verification.
type badCred struct {
	until time.Time
	rj    *rejection
}

func newCredStore() *credStore {
	return &credStore{byName: map[string]map[[32]byte]heldCred{}, wanted: map[string][]byte{}, bad: map[badKey]badCred{}}
}

// get returns the listing of a live node by the credential its metadata names.
func (s *credStore) get(name string) (peer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	want, ok := s.wanted[name]
	if !ok {
		return peer{}, false
	}
	for h, held := range s.byName[name] {
		if bytes.Equal(credID(h), want) {
			return credPeer(held.v), true
		}
	}
	return peer{}, false
}

// credPeer is the listing a verified credential stands for.
func credPeer(v ringca.Verified) peer {
	sc := v.Scope
	return peer{RingPeer: model.RingPeer{Name: sc.Name, Role: sc.Role, Region: sc.Region, Cluster: sc.Cluster, MaxNodes: sc.MaxNodes, Admin: sc.Admin},
		key: v.Key, cred: credID(v.Hash), site: sc.Site(), expires: v.NotAfter, serial: v.Serial, fpr: v.Fingerprint, scope: sc.URI()}
}

// credID is the short form of a certificate's hash carried in a node's
// signed metadata: the metadata counts only with that very credential.
func credID(h [32]byte) []byte { return h[:16] }

// live records that node name is a live member whose metadata names the
// credential cred (nil: none); gone forgets a node that left, with its
// credentials (it sends them again when it comes back).
func (s *credStore) live(name string, cred []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wanted[name] = slices.Clone(cred)
}

func (s *credStore) gone(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.wanted, name)
	delete(s.byName, name)
}

// same reports whether the certificate with hash h is held for name.
func (s *credStore) same(name string, h [32]byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.byName[name][h]
	return ok
}

// refused returns a copy of the cached refusal of the certificate with hash
// h sent by origin: each caller may fill in its own (handleOpts sets the
// origin) while other messages are handled concurrently.
func (s *credStore) refused(h [32]byte, origin string, now time.Time) *rejection {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.bad[badKey{h, origin}]
	if !ok || now.After(b.until) {
		return nil
	}
	c := *b.rj
	return &c
}

// refuse caches a copy of rj as the refusal of the certificate with hash h
// sent by origin, for badTTL.
func (s *credStore) refuse(h [32]byte, origin string, rj *rejection, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bad) >= maxBad {
		clear(s.bad)
	}
	c := *rj
	s.bad[badKey{h, origin}] = badCred{until: now.Add(badTTL), rj: &c}
}

// clearBad forgets the cached refusals.
func (s *credStore) clearBad() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.bad)
}

// put keeps a verified credential for name; it reports whether it was new.
// A name that is not a live member takes one of maxPending places; a name
// holds at most maxPerName credentials (the one its metadata names stays).
func (s *credStore) put(name string, h heldCred) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := s.byName[name]
	if held == nil {
		if _, isLive := s.wanted[name]; !isLive && len(s.byName)-len(s.wanted) >= maxPending {
			return false
		}
		held = map[[32]byte]heldCred{}
		s.byName[name] = held
	}
	if _, ok := held[h.v.Hash]; ok {
		return false
	}
	if len(held) >= maxPerName {
		var oldest [32]byte
		found := false
		for k, c := range held {
			if bytes.Equal(credID(k), s.wanted[name]) {
				continue
			}
			if !found || c.v.NotBefore.Before(held[oldest].v.NotBefore) {
				oldest, found = k, true
			}
		}
		delete(held, oldest)
	}
	held[h.v.Hash] = h
	return true
}

// drop forgets the credentials refuse returns true for; it returns the
// names that lost one.
func (s *credStore) drop(refuse func(name string, h heldCred) bool) []string {
	s.mu.Lock()
	var all []struct {
		name string
		h    heldCred
	}
	for n, held := range s.byName {
		for _, c := range held {
			all = append(all, struct {
				name string
				h    heldCred
			}{n, c})
		}
	}
	s.mu.Unlock()
	var out []string
	for _, c := range all { // verified outside the lock: lookups go on meanwhile
		if !refuse(c.name, c.h) {
			continue
		}
		s.mu.Lock()
		if held := s.byName[c.name]; held != nil {
			delete(held, c.h.v.Hash)
			if len(held) == 0 {
				delete(s.byName, c.name)
			}
		}
		s.mu.Unlock()
		out = append(out, c.name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// all returns the envelopes of the credentials live members' metadata
// names, for a push/pull sync.
func (s *credStore) all() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]byte
	for name, want := range s.wanted {
		for h, c := range s.byName[name] {
			if bytes.Equal(credID(h), want) {
				out = append(out, c.raw)
			}
		}
	}
	return out
}

// onCred checks another node's credential and keeps it. It is handled
// before the generic checks: the credential is what lists its sender.
// Cheap checks come first: the sender's signature with the leaf's key and
// the leaf's scope, then the chain (cached when refused).
func (r *Ring) onCred(t *trust, e envelope, b []byte) *rejection {
	cm, rj := decodeCred(t, e)
	if rj != nil {
		return rj
	}
	h := sha256.Sum256(cm.Chain[0])
	if r.creds.same(e.origin, h) {
		return nil // a repeat
	}
	now := time.Now()
	leaf, rj := r.credLeaf(e, cm.Chain[0])
	if rj != nil {
		return rj
	}
	if rj := r.creds.refused(h, e.origin, now); rj != nil {
		return rj // refused a moment ago: no second chain verification
	}
	known := r.knownName(e.origin)
	if !r.budget.allow(e.origin, known, now) {
		return reject(ReasonBudget, "credential of %q not checked: too many failed checks in its name or in all lately", e.origin)
	}
	v, rj := r.verifyCred(t, e.origin, cm.Chain, leaf, h, known, now)
	if rj != nil {
		return rj
	}
	r.keepCred(e.origin, v, cm.Chain, b)
	return nil
}

// decodeCred reads a credential message and checks its shape: sent in its
// own node's name, to a node that trusts a ring CA, with a chain of one to
// four certificates within maxChain bytes.
func decodeCred(t *trust, e envelope) (credMsg, *rejection) {
	var cm credMsg
	if err := e.decodePayload(&cm); err != nil {
		return cm, reject(ReasonMalformed, "credential: %v", err)
	}
	size := 0
	for _, c := range cm.Chain {
		size += len(c)
	}
	switch {
	case cm.Node != e.origin:
		return cm, reject(ReasonImpersonation, "credential sent by %q in the name of %q", e.origin, cm.Node)
	case t.pool == nil:
		return cm, reject(ReasonForeignCA, "credential of %q: this node trusts no ring CA (ring.ca)", e.origin)
	case len(cm.Chain) == 0 || len(cm.Chain) > 4 || size > maxChain:
		return cm, reject(ReasonMalformed, "credential of %q: a chain of %d certificates, %d bytes (allowed: 1..4, at most %d bytes)", e.origin, len(cm.Chain), size, maxChain)
	}
	return cm, nil
}

// credLeaf parses a credential's leaf certificate and checks the message's
// signature with the leaf's Ed25519 key.
func (r *Ring) credLeaf(e envelope, der []byte) (*x509.Certificate, *rejection) {
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, reject(ReasonMalformed, "credential of %q: %v", e.origin, err)
	}
	key, ok := leaf.PublicKey.(ed25519.PublicKey)
	if !ok {
		return nil, reject(ReasonMalformed, "credential of %q: a %s key (allowed: Ed25519)", e.origin, leaf.PublicKeyAlgorithm)
	}
	if rj := r.checkSig(e, key); rj != nil {
		rj.detail = "credential: " + rj.detail + " (its certificate's key)"
		return nil, rj
	}
	return leaf, nil
}

// verifyCred checks that a credential covers its node, first by the leaf's
// scope alone, then by verifying the chain. A refusal is cached under the
// leaf's hash h; a failed chain verification also spends the budget.
func (r *Ring) verifyCred(t *trust, origin string, chain [][]byte, leaf *x509.Certificate, h [32]byte, known bool, now time.Time) (ringca.Verified, *rejection) {
	if sc, err := ringca.LeafScope(leaf); err == nil && !sc.Matches(origin) {
		rj := reject(ReasonScope, "credential %s does not cover node %q", sc, origin)
		r.creds.refuse(h, origin, rj, now)
		return ringca.Verified{}, rj
	}
	v, err := t.pool.Verify(chain, now, r.cfg.MaxClockSkew)
	if err == nil && !v.Scope.Matches(origin) {
		err = &ringca.Error{Reason: ReasonScope, Err: fmt.Errorf("credential %s does not cover node %q", v.Scope, origin)}
	}
	if err != nil {
		rj := reject(orMalformed(ringca.Reason(err)), "credential of %q: %v", origin, err)
		r.creds.refuse(h, origin, rj, now)
		r.budget.failed(origin, known, now) // a chain check costs like a signature check
		return ringca.Verified{}, rj
	}
	return v, nil
}

// keepCred stores an accepted credential (raw is its envelope, passed on
// in syncs); a new one makes the origin's metadata be checked again and
// the view recomputed.
func (r *Ring) keepCred(origin string, v ringca.Verified, chain [][]byte, raw []byte) {
	if !r.creds.put(origin, heldCred{v: v, chain: chain, raw: raw}) {
		return
	}
	r.mu.Lock()
	delete(r.metaOK, origin)
	r.mu.Unlock()
	r.log.Info("ring: credential accepted", "member", origin, "scope", v.Scope.URI(), "serial", v.Serial, "expires", v.NotAfter.UTC().Format(time.RFC3339))
	r.refreshView()
	r.pending.Store(true)
}

// ownCred is this node's credential as sent.
type ownCred struct {
	v     ringca.Verified
	chain [][]byte
	msg   []byte // the sealed credMsg
}

// sendCred sends this node's credential to n over TCP, in the background.
func (r *Ring) sendCred(nodes ...memberlist.Node) {
	oc := r.own.Load()
	if oc == nil || len(nodes) == 0 || r.stopped.Load() {
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		ml := r.mlp.Load()
		if ml == nil {
			return
		}
		for _, n := range nodes {
			if n.Name == r.cfg.NodeName || r.stopped.Load() {
				continue
			}
			if err := ml.SendReliable(&n, oc.msg); err != nil {
				r.log.Debug("ring: credential not sent; the next push/pull carries it", "to", n.Name, "err", err)
				continue
			}
			r.m.Messages.WithLabelValues(msgNames[msgCred], "sent").Inc()
		}
	}()
}

// checkCreds drops the held credentials that expired or that the current
// trust (CAs, revocations) refuses, with the votes of the probers that
// stood on them.
func (r *Ring) checkCreds(now time.Time) {
	t := r.trust.Load()
	dropped := r.creds.drop(func(name string, h heldCred) bool {
		if t.pool == nil {
			return true
		}
		if _, err := t.pool.Verify(h.chain, now, r.cfg.MaxClockSkew); err != nil {
			r.rejected(msgNames[msgCred], reject(orMalformed(ringca.Reason(err)), "credential of %q no longer holds: %v", name, err))
			return true
		}
		return false
	})
	if len(dropped) == 0 {
		return
	}
	r.log.Warn("ring: credentials dropped (expired, revoked, or their CA is no longer in ring.ca)", "members", dropped)
	gone := func(name string) bool {
		if !slices.Contains(dropped, name) {
			return false
		}
		_, still := t.lookup(name)
		return !still
	}
	r.store.dropProbers(gone)
	r.rtt.drop(gone, nil, 0)
	r.refreshView()
	r.changed()
}

func orMalformed(reason string) string {
	if reason == "" {
		return ReasonMalformed
	}
	return reason
}
