package ring

import (
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/ringca"
)

// Reasons a message is rejected; they label meridian_ring_messages_rejected_total.
const (
	ReasonMalformed     = "malformed"      // not an envelope, or its JSON does not decode
	ReasonOversized     = "oversized"      // larger than the limit of its kind
	ReasonUnknownType   = "unknown-type"   // a message type this version does not know
	ReasonUnknownOrigin = "unknown-origin" // the origin is not in ring.peers
	ReasonUnadmitted    = "unadmitted"     // matches a prefix entry but is not one of its max_nodes live members
	ReasonSignature     = "bad-signature"  // the signature does not match the origin's listed key
	ReasonRole          = "role"           // the origin's role may not send this kind (an agent voting)
	ReasonImpersonation = "impersonation"  // the message speaks for another node than its origin
	ReasonRegion        = "region"         // a prober claiming another region than its listed one
	ReasonCluster       = "cluster"        // an agent sending the heartbeat of another cluster
	ReasonFuture        = "future"         // a stamp or sequence beyond now + max_clock_skew
	ReasonStale         = "stale"          // a one-shot request older than it may be (key change, confirmation)
	ReasonUnknownTarget = "unknown-subject"
	ReasonInvalid       = "invalid"    // a field out of its allowed range
	ReasonPanic         = "panic"      // handling it panicked (recovered)
	ReasonBudget        = "budget"     // not checked: too many bad signatures in its origin's name, or in all, lately (budget.go)
	ReasonCapability    = "capability" // admin state from a node without the admin capability (ring.peers[].admin, a credential's capability URI)

	// Credentials (ADR 0016).
	ReasonExpired   = ringca.ReasonExpired   // a credential outside its validity
	ReasonRevoked   = ringca.ReasonRevoked   // a credential in ring.revoked
	ReasonForeignCA = ringca.ReasonForeignCA // a credential not signed by a CA of ring.ca
	ReasonScope     = ringca.ReasonScope     // a credential that does not cover its sender, or of another ring
)

// RejectReasons lists every reason, in documentation order.
var RejectReasons = []string{ReasonMalformed, ReasonOversized, ReasonUnknownType, ReasonUnknownOrigin, ReasonUnadmitted, ReasonSignature,
	ReasonRole, ReasonImpersonation, ReasonRegion, ReasonCluster, ReasonFuture, ReasonStale, ReasonUnknownTarget, ReasonInvalid, ReasonPanic, ReasonBudget, ReasonCapability,
	ReasonExpired, ReasonRevoked, ReasonForeignCA, ReasonScope}

// rejection is why a message was not accepted.
type rejection struct {
	reason string
	detail string
	origin string // the envelope's claimed origin, when it had one
}

func (r *rejection) Error() string { return r.reason + ": " + r.detail }

func reject(reason, format string, args ...any) *rejection {
	return &rejection{reason: reason, detail: fmt.Sprintf(format, args...)}
}

// peer is a listed node with its parsed key: an entry of ring.peers, or
// what a node's credential says (cred set).
type peer struct {
	model.RingPeer
	key  ed25519.PublicKey
	cred []byte // credID of the certificate it stands on; nil for a ring.peers entry
	site string // the site it belongs to (a credential's name without its * and separator; a ring.peers entry's name likewise)
	// The credential's validity and revocation handles (empty for a ring.peers entry).
	expires            time.Time
	serial, fpr, scope string
}

// trust is the table of nodes whose messages are accepted: ring.peers, and
// the credentials verified with pool. It is immutable but for the
// credentials (creds, shared by every table of the node): SetTrust swaps
// in a new one.
type trust struct {
	self  peer
	peers []model.RingPeer
	keys  map[string]ed25519.PublicKey // entry name -> its parsed key
	pool  *ringca.Pool                 // ring.ca and ring.revoked; nil: credentials are refused
	creds *credStore
}

// newTrust builds the table; this node (self) is always trusted as
// itself. A listed entry for self must carry self's own key.
func newTrust(self peer, list []model.RingPeer, pool *ringca.Pool, creds *credStore) (*trust, error) {
	t := &trust{self: self, peers: list, keys: map[string]ed25519.PublicKey{}, pool: pool, creds: creds}
	for i, p := range list {
		k, err := model.ParsePeerKey(p.PublicKey)
		if err != nil {
			return nil, fmt.Errorf("ring.peers[%d] (%s): %w", i, p.Name, err)
		}
		t.keys[p.Name] = k
	}
	if p, ok := t.listed(self.Name); ok {
		switch {
		case !p.key.Equal(self.key):
			return nil, fmt.Errorf("ring.peers: entry %q matches this node (%s) but lists another public key than its identity (%s): fix the entry or ring.identity_file", p.Name, self.Name, model.FormatPeerKey(self.key))
		case p.Role != self.Role:
			return nil, fmt.Errorf("ring.peers: entry %q matches this node (%s) with role %s, but this node runs as %s", p.Name, self.Name, p.Role, self.Role)
		case p.Role == model.PeerProber && p.Region != self.Region:
			return nil, fmt.Errorf("ring.peers: entry %q matches this node (%s) with region %s, but ring.region is %s", p.Name, self.Name, p.Region, self.Region)
		}
	}
	return t, nil
}

// lookup finds the listed node called name: self first, then ring.peers
// (an exact name before the longest prefix), then the node's credential.
func (t *trust) lookup(name string) (peer, bool) {
	if name == t.self.Name {
		return t.self, true
	}
	if p, ok := t.listed(name); ok {
		return p, true
	}
	if t.pool == nil || t.creds == nil {
		return peer{}, false
	}
	return t.creds.get(name)
}

func (t *trust) listed(name string) (peer, bool) {
	p, ok := model.LookupPeer(t.peers, name)
	return peer{RingPeer: p, key: t.keys[p.Name], site: siteOf(p.Name)}, ok
}

// siteOf is the site of an entry or scope name: without its * and separator.
func siteOf(name string) string { return ringca.Scope{Name: name}.Site() }

// allowed lists the roles that may originate each message type.
var allowed = map[byte]string{
	msgVote:      model.PeerProber,
	msgSummary:   model.PeerProber,
	msgConfirm:   model.PeerProber,
	msgHeartbeat: model.PeerAgent,
	msgKeyOp:     model.PeerProber,
	msgLeader:    model.PeerProber,
	msgShared:    model.PeerProber,
	msgRTT:       model.PeerProber,
}

// authorize finds e's origin, checks that its role may send e's type
// and that the signature is the origin's. The signature check is the
// expensive part: callers check everything else first.
func (t *trust) authorize(e envelope) (peer, *rejection) {
	role, ok := allowed[e.t]
	if !ok {
		return peer{}, reject(ReasonUnknownType, "type %d", e.t)
	}
	p, ok := t.lookup(e.origin)
	if !ok {
		return peer{}, reject(ReasonUnknownOrigin, "%q is not in ring.peers and has no credential this node accepted", e.origin)
	}
	if p.Role != role {
		return peer{}, reject(ReasonRole, "%s %q may not send %s messages (allowed: %s)", p.Role, e.origin, msgNames[e.t], role)
	}
	return p, nil
}

func (t *trust) verify(e envelope, p peer) *rejection {
	if !e.verify(p.key) {
		return reject(ReasonSignature, "%s message from %q is not signed by its listed key", msgNames[e.t], e.origin)
	}
	return nil
}

// clock bounds the stamps of received messages.
type clock struct {
	now  time.Time
	skew time.Duration
}

// future reports whether a Unix-millisecond stamp lies beyond now + skew.
func (c clock) futureMs(ms int64) bool { return ms > c.now.Add(c.skew).UnixMilli() }

// futureSeq reports whether a sequence number (nanosecond clock based, see
// Ring.next) lies beyond now + skew.
func (c clock) futureSeq(seq uint64) bool {
	return seq > uint64(c.now.Add(c.skew).UnixNano())
}
