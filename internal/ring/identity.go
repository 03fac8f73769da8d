package ring

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/meridian-gslb/meridian/internal/secretfile"
)

// Identity is a node's signing key: every message the node originates is
// signed with it, and other nodes check the signature against the public
// key their config lists for the node's name (ring.peers).
type Identity struct {
	key ed25519.PrivateKey
}

// NewIdentity returns a fresh random identity (not saved anywhere).
func NewIdentity() Identity {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return Identity{key: k}
}

// Public is the identity's public key.
func (id Identity) Public() ed25519.PublicKey { return id.key.Public().(ed25519.PublicKey) }

// Sign signs msg.
func (id Identity) Sign(msg []byte) []byte { return ed25519.Sign(id.key, msg) }

// LoadIdentity reads a PKCS#8 PEM Ed25519 private key.
func LoadIdentity(path string) (Identity, error) {
	b, err := secretfile.Read(path) // owner-only (or root-owned, read-only to our group)
	if err != nil {
		return Identity{}, fmt.Errorf("ring identity %s: %w", path, err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return Identity{}, fmt.Errorf("ring identity %s: not a PEM \"PRIVATE KEY\" block (`meridian ring identity --file %s` creates one)", path, path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return Identity{}, fmt.Errorf("ring identity %s: %w", path, err)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return Identity{}, fmt.Errorf("ring identity %s: a %T key (allowed: Ed25519)", path, k)
	}
	return Identity{key: ek}, nil
}

// LoadOrCreateIdentity reads the identity at path, or creates a new one
// there (mode 0600, directories 0700) when the file does not exist. It
// reports whether it created it.
func LoadOrCreateIdentity(path string) (Identity, bool, error) {
	id, err := LoadIdentity(path)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return id, false, err
	}
	id = NewIdentity()
	der, err := x509.MarshalPKCS8PrivateKey(id.key)
	if err != nil {
		return Identity{}, false, fmt.Errorf("ring identity %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Identity{}, false, fmt.Errorf("ring identity %s: %w", path, err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := writeFileAtomic(path, data, 0o600); err != nil {
		return Identity{}, false, fmt.Errorf("ring identity %s: %w", path, err)
	}
	return id, true, nil
}

// writeFileAtomic writes data to a temporary file beside path with mode
// perm and renames it over path, so a reader never sees half a file.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
