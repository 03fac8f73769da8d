package serving

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/ring"
)

// ringWorld is the identities of a ring as every node's trust table sees
// them: each node's key and whether it has the admin capability. A
// identityRing is one node's view (RingAdmin), checking real signatures.
type ringWorld struct {
	mu     sync.Mutex
	keys   map[string]ed25519.PrivateKey
	admins map[string]bool
}

func newRingWorld() *ringWorld {
	return &ringWorld{keys: map[string]ed25519.PrivateKey{}, admins: map[string]bool{}}
}

// node lists a node (its key made on first use) and returns its view.
func (w *ringWorld) node(name string, isAdmin bool) *identityRing {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.keys[name]; !ok {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			panic(err)
		}
		w.keys[name] = k
	}
	w.admins[name] = isAdmin
	return &identityRing{w: w, self: name}
}

func (w *ringWorld) key(name string) ed25519.PrivateKey {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.keys[name]
}

type identityRing struct {
	w    *ringWorld
	self string
}

func (f *identityRing) MayChangeTraffic() error {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	if f.w.admins[f.self] {
		return nil
	}
	return fmt.Errorf("this node (%s) has no admin capability in its ring identity", f.self)
}

func (f *identityRing) SignEntry(msg []byte) []byte { return ed25519.Sign(f.w.key(f.self), msg) }
func (f *identityRing) KeyID() string               { return f.self }

func (f *identityRing) MayWrite(node string) error {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	if _, ok := f.w.keys[node]; !ok || !f.w.admins[node] {
		return fmt.Errorf("%w: %q", ring.ErrNoCapability, node)
	}
	return nil
}

func (f *identityRing) VerifyEntry(node string, msg, sig []byte) error {
	f.w.mu.Lock()
	k, ok := f.w.keys[node]
	adm := f.w.admins[node]
	f.w.mu.Unlock()
	switch {
	case !ok || !adm:
		return fmt.Errorf("%w: %q", ring.ErrNoCapability, node)
	case !ed25519.Verify(k.Public().(ed25519.PublicKey), msg, sig):
		return fmt.Errorf("%w: %q", ring.ErrBadSignature, node)
	}
	return nil
}

// WriterOrigin is the writer's public key, as in *ring.Ring.
func (f *identityRing) WriterOrigin(node string) string {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	if k, ok := f.w.keys[node]; ok {
		return fmt.Sprintf("%x", k.Public())
	}
	return "name:" + node
}

var _ RingAdmin = (*identityRing)(nil)

// signedAdmin is node's admin store, its entries signed with node's key in w.
func signedAdmin(t *testing.T, w *ringWorld, node string) *admin.Store {
	t.Helper()
	s := memoryAdmin(t, node)
	r := w.node(node, true)
	s.Sign(r.SignEntry, r.KeyID())
	require.NotNil(t, s)
	return s
}
