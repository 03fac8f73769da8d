package dnssec

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func a(name, ip string, ttl uint32) dns.RR {
	rr, err := dns.NewRR(name + " " + itoa(ttl) + " IN A " + ip)
	if err != nil {
		panic(err)
	}
	return rr
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }

func TestKeyFilesRoundTrip(t *testing.T) {
	for _, alg := range []string{"ecdsap256", "ed25519"} {
		t.Run(alg, func(t *testing.T) {
			n, err := ParseAlgorithm(alg)
			require.NoError(t, err)
			k, err := Generate("Example.TEST", n, 3600)
			require.NoError(t, err)
			dir := t.TempDir()
			keyPath, privPath, err := k.Write(dir)
			require.NoError(t, err)
			assert.Equal(t, filepath.Join(dir, k.BaseName()+".key"), keyPath)
			fi, err := os.Stat(privPath)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
			_, _, err = k.Write(dir)
			require.Error(t, err, "never overwrites")

			for _, p := range []string{keyPath, privPath, filepath.Join(dir, k.BaseName())} {
				got, err := ReadKey(p)
				require.NoError(t, err)
				assert.Equal(t, k.Tag(), got.Tag())
				assert.Equal(t, "example.test.", got.DNSKEY.Hdr.Name)
				assert.Equal(t, uint16(257), got.DNSKEY.Flags)
			}
			ds := k.DS()
			assert.Equal(t, uint8(dns.SHA256), ds.DigestType)
			assert.Equal(t, k.Tag(), ds.KeyTag)
		})
	}
	_, err := ParseAlgorithm("rsasha256")
	require.Error(t, err)
}

func TestReadKeyRejectsMismatchedHalves(t *testing.T) {
	dir := t.TempDir()
	k1, err := Generate("example.test.", dns.ECDSAP256SHA256, 3600)
	require.NoError(t, err)
	k2, err := Generate("example.test.", dns.ECDSAP256SHA256, 3600)
	require.NoError(t, err)
	kp1, _, err := k1.Write(dir)
	require.NoError(t, err)
	_, pp2, err := k2.Write(dir)
	require.NoError(t, err)
	priv, err := os.ReadFile(pp2)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(kp1[:len(kp1)-4]+".private", priv, 0o600))
	_, err = ReadKey(kp1)
	require.ErrorContains(t, err, "does not match")
}

func TestSignVerifiesAndCachesPerRRset(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	k13, err := Generate("example.test.", dns.ECDSAP256SHA256, 3600)
	require.NoError(t, err)
	k15, err := Generate("example.test.", dns.ED25519, 3600)
	require.NoError(t, err)
	s, err := NewSigner("example.test.", []*Key{k13, k15}, Options{DNSKEYTTL: 600, Now: clock})
	require.NoError(t, err)
	require.Len(t, s.DNSKEY(), 2)
	assert.Equal(t, uint32(600), s.DNSKEY()[0].Header().Ttl)

	x, y := a("w.example.test.", "192.0.2.1", 60), a("w.example.test.", "192.0.2.2", 60)
	sigs, err := s.Sign([]dns.RR{x, y})
	require.NoError(t, err)
	require.Len(t, sigs, 2)
	for i, sig := range sigs {
		r := sig.(*dns.RRSIG)
		key := s.DNSKEY()[i].(*dns.DNSKEY)
		require.NoError(t, r.Verify(key, []dns.RR{y, x}), "any order")
		assert.True(t, r.ValidityPeriod(now))
		assert.Equal(t, uint32(now.Add(-time.Hour).Unix()), r.Inception)
		assert.Equal(t, uint32(now.Add(7*24*time.Hour).Unix()), r.Expiration)
		assert.Equal(t, uint32(60), r.Hdr.Ttl)
		assert.Equal(t, uint8(3), r.Labels)
	}
	again, err := s.Sign([]dns.RR{y, x})
	require.NoError(t, err)
	assert.Same(t, sigs[0], again[0], "the other order of the same set is a cache hit")
	hits, misses := s.Stats()
	assert.Equal(t, [2]uint64{1, 1}, [2]uint64{hits, misses})

	other, err := s.Sign([]dns.RR{x})
	require.NoError(t, err)
	assert.NotSame(t, sigs[0], other[0], "another set")
	ttl, err := s.Sign([]dns.RR{a("w.example.test.", "192.0.2.1", 5)})
	require.NoError(t, err)
	assert.Equal(t, uint32(5), ttl[0].(*dns.RRSIG).OrigTtl, "TTL is part of the key")

	mu.Lock()
	now = now.Add(5*24*time.Hour - time.Minute) // 2 days + 59 min left
	mu.Unlock()
	same, err := s.Sign([]dns.RR{x, y})
	require.NoError(t, err)
	assert.Same(t, sigs[0], same[0])
	mu.Lock()
	now = now.Add(2 * time.Minute) // under 2 days left: refresh
	mu.Unlock()
	fresh, err := s.Sign([]dns.RR{x, y})
	require.NoError(t, err)
	assert.NotSame(t, sigs[0], fresh[0])
	assert.Greater(t, fresh[0].(*dns.RRSIG).Expiration, sigs[0].(*dns.RRSIG).Expiration)

	_, err = s.Sign([]dns.RR{a("w.example.org.", "192.0.2.1", 5)})
	require.Error(t, err, "outside the zone")
}

func TestSignerRejectsForeignKeys(t *testing.T) {
	k, err := Generate("example.org.", dns.ED25519, 3600)
	require.NoError(t, err)
	_, err = NewSigner("example.test.", []*Key{k}, Options{})
	require.ErrorContains(t, err, "belongs to zone example.org.")
	_, err = NewSigner("example.test.", nil, Options{})
	require.Error(t, err)
}

func TestCacheIsBounded(t *testing.T) {
	k, err := Generate("example.test.", dns.ED25519, 3600)
	require.NoError(t, err)
	s, err := NewSigner("example.test.", []*Key{k}, Options{CacheMax: 10})
	require.NoError(t, err)
	hot := a("hot.example.test.", "192.0.2.1", 60)
	for i := range 100 {
		_, err := s.Sign([]dns.RR{a("n.example.test.", "192.0.2."+itoa(uint32(i)), 60)})
		require.NoError(t, err)
		_, err = s.Sign([]dns.RR{hot})
		require.NoError(t, err)
		s.cache.mu.RLock()
		n := len(s.cache.cur) + len(s.cache.old)
		s.cache.mu.RUnlock()
		assert.LessOrEqual(t, n, 10)
	}
	_, misses := s.Stats()
	assert.Equal(t, uint64(101), misses, "the hot set stays cached")
}

func TestCachedTellsWhetherSignWouldSign(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	k, err := Generate("example.test.", dns.ED25519, 3600)
	require.NoError(t, err)
	s, err := NewSigner("example.test.", []*Key{k}, Options{Now: clock})
	require.NoError(t, err)
	x, y := a("w.example.test.", "192.0.2.1", 60), a("w.example.test.", "192.0.2.2", 60)

	for _, step := range []struct {
		name string
		do   func()
		set  []dns.RR
		want bool
	}{
		{"a set never signed is not cached", nil, []dns.RR{x, y}, false},
		{"a set just signed is cached", func() { _, err := s.Sign([]dns.RR{x, y}); require.NoError(t, err) }, []dns.RR{x, y}, true},
		{"the same set in another order is cached", nil, []dns.RR{y, x}, true},
		{"a subset is another set, not cached", nil, []dns.RR{x}, false},
		{"a set whose signature is due for refresh is not cached", func() {
			mu.Lock()
			now = now.Add(Validity - RefreshBefore + time.Minute)
			mu.Unlock()
		}, []dns.RR{x, y}, false},
		{"an empty set needs no signature", nil, nil, true},
	} {
		t.Run(step.name, func(t *testing.T) {
			if step.do != nil {
				step.do()
			}
			assert.Equal(t, step.want, s.Cached(step.set))
		})
	}
	hits, misses := s.Stats()
	assert.Equal(t, [2]uint64{0, 1}, [2]uint64{hits, misses}, "Cached neither signs nor counts")
}

// TestSignDoesNotWriteToSharedRecords runs Sign and a message packing on
// the same records at once: records are shared by every goroutine that
// answers, so computing a cache key must only read them (go test -race).
func TestSignDoesNotWriteToSharedRecords(t *testing.T) {
	k, err := Generate("example.test.", dns.ED25519, 3600)
	require.NoError(t, err)
	s, err := NewSigner("example.test.", []*Key{k}, Options{})
	require.NoError(t, err)
	set := []dns.RR{a("w.example.test.", "192.0.2.1", 60), a("w.example.test.", "192.0.2.2", 60)}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 512)
			for range 200 {
				if g%2 == 0 {
					_, err := s.Sign(set)
					assert.NoError(t, err)
					continue
				}
				m := &dns.Msg{Answer: set}
				_, err := m.PackBuffer(buf)
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
}

func TestCacheKeyIsTheSortedUncompressedWireForm(t *testing.T) {
	set := []dns.RR{a("w.example.test.", "192.0.2.2", 60), a("w.example.test.", "192.0.2.1", 60), a("W.example.test.", "192.0.2.3", 5)}
	var want [][]byte
	for _, rr := range set {
		buf := make([]byte, 512)
		n, err := dns.PackRR(dns.Copy(rr), buf, 0, nil, false)
		require.NoError(t, err)
		want = append(want, buf[:n])
	}
	slices.SortFunc(want, bytes.Compare)
	kb := keyBufs.Get().(*keyBuf)
	defer keyBufs.Put(kb)
	got, err := kb.key(set)
	require.NoError(t, err)
	assert.Equal(t, bytes.Join(want, nil), got)
}
