package ring

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/hashicorp/memberlist"
)

// Key operations, applied on every node of the ring (rotation: install the
// new key everywhere, use it, then remove the old one).
const (
	KeyInstall = "install"
	KeyUse     = "use"
	KeyRemove  = "remove"
)

// KeyOp applies a keyring operation on this node, saves the key file, and
// broadcasts it so every node applies it too.
func (r *Ring) KeyOp(op string, key []byte) error {
	return r.applyKeyOp(keyOp{Op: op, Key: key, ID: newOpID(), At: time.Now().UnixMilli()}, true)
}

// Keys returns the primary key and all installed keys, base64 encoded.
func (r *Ring) Keys() (primary string, all []string) {
	kr := r.keyring
	if kr == nil {
		return "", nil
	}
	for _, k := range kr.GetKeys() {
		all = append(all, base64.StdEncoding.EncodeToString(k))
	}
	return base64.StdEncoding.EncodeToString(kr.GetPrimaryKey()), all
}

func (r *Ring) applyKeyOp(op keyOp, local bool) error {
	now := time.Now()
	r.mu.Lock()
	if _, done := r.keyOpAt[op.ID]; done {
		r.mu.Unlock()
		return nil
	}
	for id, at := range r.keyOpAt {
		if now.Sub(at) > 2*maxKeyOpAge {
			delete(r.keyOpAt, id) // older operations are refused as stale anyway
		}
	}
	r.keyOpAt[op.ID] = now
	r.mu.Unlock()
	kr := r.keyring
	if kr == nil {
		return fmt.Errorf("ring: no keyring: gossip encryption is off (set ring.key_file to enable it)")
	}
	if _, err := ParseKeyBytes(op.Key); err != nil {
		return err
	}
	var err error
	switch op.Op {
	case KeyInstall:
		err = kr.AddKey(op.Key)
	case KeyUse:
		err = kr.UseKey(op.Key)
	case KeyRemove:
		if bytes.Equal(op.Key, kr.GetPrimaryKey()) {
			return fmt.Errorf("ring: cannot remove the primary key: use another key first")
		}
		err = kr.RemoveKey(op.Key)
	default:
		return fmt.Errorf("ring: unknown key operation %q (allowed: install, use, remove)", op.Op)
	}
	if err != nil {
		return fmt.Errorf("ring: key %s: %w", op.Op, err)
	}
	// Spread it before the file write: a node that rotates must not be the only one.
	r.broadcast(msgKeyOp, "k/"+op.ID, op)
	if err := r.saveKeyring(kr); err != nil {
		return err
	}
	r.log.Info("ring: keyring changed", "op", op.Op, "local", local, "keys", len(kr.GetKeys()))
	return nil
}

// saveKeyring persists the keyring so a restart keeps it: in the state
// directory (always writable) when one is configured, and in key_file when
// that can be written. A read-only key_file (a Secret) is expected: the
// state copy is newer and wins at the next start (LoadKeyrings).
func (r *Ring) saveKeyring(kr *memberlist.Keyring) error {
	if r.cfg.KeyringState != "" {
		if err := SaveKeyring(r.cfg.KeyringState, kr.GetPrimaryKey(), kr.GetKeys()); err != nil {
			return err
		}
	}
	if r.cfg.KeyFile == "" {
		return nil
	}
	err := SaveKeyring(r.cfg.KeyFile, kr.GetPrimaryKey(), kr.GetKeys())
	if err != nil && r.cfg.KeyringState != "" {
		r.log.Info("ring: key_file is not writable; the rotated keyring is kept in the state directory (update the file or Secret too, so a node that loses its state starts with the new key)",
			"key_file", r.cfg.KeyFile, "state", r.cfg.KeyringState, "err", err)
		return nil
	}
	return err
}
