package ring

import (
	"crypto/sha256"
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

// maxCreds bounds how many nodes' credentials are held: a prefix credential
// covers any number of names, so a holder could invent names to fill memory.
const maxCreds = 4096

// credStore holds the verified credentials of other nodes, by node name.
// Safe for concurrent use.
type credStore struct {
	mu     sync.Mutex
	byName map[string]heldCred
}

func newCredStore() *credStore { return &credStore{byName: map[string]heldCred{}} }

// get returns the listing a node's credential gives it.
func (s *credStore) get(name string) (peer, bool) {
	s.mu.Lock()
	h, ok := s.byName[name]
	s.mu.Unlock()
	if !ok {
		return peer{}, false
	}
	return credPeer(h.v), true
}

// credPeer is the listing a verified credential stands for.
func credPeer(v ringca.Verified) peer {
	sc := v.Scope
	return peer{RingPeer: model.RingPeer{Name: sc.Name, Role: sc.Role, Region: sc.Region, Cluster: sc.Cluster, MaxNodes: sc.MaxNodes},
		key: v.Key, cred: credID(v.Hash), site: sc.Site(), expires: v.NotAfter, serial: v.Serial, fpr: v.Fingerprint}
}

// credID is the short form of a certificate's hash carried in a node's
// signed metadata: the metadata counts only with that very credential.
func credID(h [32]byte) []byte { return h[:16] }

// same reports whether name's held credential is the certificate with hash h.
func (s *credStore) same(name string, h [32]byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	held, ok := s.byName[name]
	return ok && held.v.Hash == h
}

// put keeps v for name unless what is held is newer (a later NotBefore: an
// old credential replayed does not replace its renewal). It reports whether
// v was taken.
func (s *credStore) put(name string, h heldCred, live func(string) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.byName[name]; ok && old.v.NotBefore.After(h.v.NotBefore) {
		return false
	}
	if _, ok := s.byName[name]; !ok && len(s.byName) >= maxCreds {
		for n := range s.byName {
			if !live(n) {
				delete(s.byName, n)
			}
		}
		if len(s.byName) >= maxCreds {
			return false
		}
	}
	s.byName[name] = h
	return true
}

// drop forgets the credentials refuse returns a reason for; it returns the
// names dropped.
func (s *credStore) drop(refuse func(name string, h heldCred) bool) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n, h := range s.byName {
		if refuse(n, h) {
			delete(s.byName, n)
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// all returns the envelopes of every held credential, for a push/pull sync.
func (s *credStore) all() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]byte, 0, len(s.byName))
	for _, h := range s.byName {
		out = append(out, h.raw)
	}
	return out
}

// onCred checks another node's credential and keeps it. It is handled
// before the generic checks: the credential is what lists its sender.
func (r *Ring) onCred(t *trust, e envelope, b []byte) *rejection {
	var cm credMsg
	if err := e.decodePayload(&cm); err != nil {
		return reject(ReasonMalformed, "credential: %v", err)
	}
	switch {
	case cm.Node != e.origin:
		return reject(ReasonImpersonation, "credential sent by %q in the name of %q", e.origin, cm.Node)
	case t.pool == nil:
		return reject(ReasonForeignCA, "credential of %q: this node trusts no ring CA (ring.ca)", e.origin)
	case len(cm.Chain) == 0 || len(cm.Chain) > 4:
		return reject(ReasonMalformed, "credential of %q: a chain of %d certificates (allowed: 1..4)", e.origin, len(cm.Chain))
	}
	h := sha256.Sum256(cm.Chain[0])
	if r.creds.same(e.origin, h) {
		return nil // a repeat
	}
	v, err := t.pool.Verify(cm.Chain, time.Now(), r.cfg.MaxClockSkew)
	if err != nil {
		reason := ringca.Reason(err)
		if reason == "" {
			reason = ReasonMalformed
		}
		return reject(reason, "credential of %q: %v", e.origin, err)
	}
	if !v.Scope.Matches(e.origin) {
		return reject(ReasonScope, "credential %s does not cover node %q", v.Scope, e.origin)
	}
	if !e.verify(v.Key) {
		return reject(ReasonSignature, "credential of %q is not signed with its certificate's key", e.origin)
	}
	if !r.creds.put(e.origin, heldCred{v: v, chain: cm.Chain, raw: b}, r.isLive) {
		return nil
	}
	r.mu.Lock()
	delete(r.metaOK, e.origin)
	r.mu.Unlock()
	r.log.Info("ring: credential accepted", "member", e.origin, "scope", v.Scope.URI(), "serial", v.Serial, "expires", v.NotAfter.UTC().Format(time.RFC3339))
	r.refreshView()
	r.pending.Store(true)
	return nil
}

// isLive reports whether name is a live memberlist node.
func (r *Ring) isLive(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.nodes[name]
	return ok
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
