package ring

import (
	"crypto/ed25519"
	"fmt"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/model"
)

// Who may change traffic over the ring (issue 31): a node whose identity
// carries the admin capability — its ring.peers entry says admin: true, or
// its credential has the capability URI (internal/ringca). Its admin state
// is accepted (onShared), and the overrides it writes carry its signature,
// checked by every receiver with VerifyEntry whoever relayed them.

// Errors of VerifyEntry: internal/admin's, so that the pipeline tells them
// apart without importing the ring.
var (
	ErrNoCapability = admin.ErrNoCapability
	ErrBadSignature = admin.ErrBadSignature
)

// MayChangeTraffic is nil when this node's identity carries the admin
// capability, or when it trusts nobody else (a ring of one); else an error
// that says what is missing.
func (r *Ring) MayChangeTraffic() error {
	t := r.trust.Load()
	if t.self.Admin || len(t.peers) == 0 && t.pool == nil {
		return nil
	}
	return fmt.Errorf("this node (%s) has no admin capability in its ring identity, so its peers would refuse the change: set admin: true on its ring.peers entry, or issue its credential with `meridian ring ca issue --capability admin` (ring.certManager in the Helm chart), or send the change to a node that has it", r.cfg.NodeName)
}

// SignEntry signs msg with this node's identity (an override it writes).
func (r *Ring) SignEntry(msg []byte) []byte { return r.id().Sign(msg) }

// KeyID names this node's current identity (its public key): it changes
// when a renewed credential rotates the key.
func (r *Ring) KeyID() string { return model.FormatPeerKey(r.id().Public()) }

// MayWrite is nil when node is a trusted prober with the admin
// capability (this node included), else ErrNoCapability saying why. It is
// cheap: no signature is checked.
func (r *Ring) MayWrite(node string) error {
	_, err := r.writer(node)
	return err
}

func (r *Ring) writer(node string) (peer, error) {
	p, ok := r.trust.Load().lookup(node)
	switch {
	case !ok:
		return p, fmt.Errorf("%w: %q is not in ring.peers and has no credential this node accepted", ErrNoCapability, node)
	case p.Role != model.PeerProber || !p.Admin:
		return p, fmt.Errorf("%w: %s %q may not change traffic (ring.peers[].admin, or a credential issued with --capability admin)", ErrNoCapability, p.Role, node)
	}
	return p, nil
}

// VerifyEntry checks that node may write overrides (MayWrite) and signed
// msg: ErrBadSignature when sig is not its.
func (r *Ring) VerifyEntry(node string, msg, sig []byte) error {
	p, err := r.writer(node)
	if err != nil {
		return err
	}
	if len(sig) == 0 || !verifyRaw(p.key, msg, sig) {
		return fmt.Errorf("%w: the override is not signed by %q's key", ErrBadSignature, node)
	}
	return nil
}

// WriterOrigin names the identity behind writer node, for the caps on the
// overrides one identity may keep in every node's state: its public key.
// Every name a prefix entry (or a shared credential) covers signs with the
// same key, so one compromised replica cannot multiply its share by
// writing under invented names. An unknown writer is its own name.
func (r *Ring) WriterOrigin(node string) string {
	p, ok := r.trust.Load().lookup(node)
	if !ok || len(p.key) == 0 {
		return "name:" + node
	}
	return model.FormatPeerKey(p.key)
}

func verifyRaw(k []byte, msg, sig []byte) bool {
	return len(k) == ed25519.PublicKeySize && ed25519.Verify(ed25519.PublicKey(k), msg, sig)
}
