package dnssec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// Signature validity: RRSIGs are valid from an hour ago (clock skew) for
// a week, and are made again when less than two days are left.
const (
	Inception       = time.Hour
	Validity        = 7 * 24 * time.Hour
	RefreshBefore   = 2 * 24 * time.Hour
	DefaultCacheMax = 20000
)

// Options of a Signer.
type Options struct {
	DNSKEYTTL uint32           // TTL of the DNSKEY RRset (default 3600)
	CacheMax  int              // most cached RRsets (default DefaultCacheMax)
	Now       func() time.Time // clock (default time.Now)
}

// Signer signs the RRsets of one zone with its keys. Signatures are cached
// per RRset (owner, type, TTL and the set of records in any order), so a
// dynamic answer that is one of a few distinct sets is signed once per set
// and validity period. It is safe for concurrent use.
type Signer struct {
	apex   string
	keys   []*Key
	dnskey []dns.RR
	now    func() time.Time
	cache  sigCache

	hits, misses atomic.Uint64
}

// NewSigner returns the signer of zone apex (canonical) with keys, each
// of which must be a private key of the zone.
func NewSigner(apex string, keys []*Key, o Options) (*Signer, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("zone %s: no keys", apex)
	}
	if o.DNSKEYTTL == 0 {
		o.DNSKEYTTL = 3600
	}
	if o.CacheMax <= 0 {
		o.CacheMax = DefaultCacheMax
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Signer{apex: dns.CanonicalName(apex), now: o.Now, cache: sigCache{max: max(2, o.CacheMax)}}
	tags := map[uint16]bool{}
	for _, k := range keys {
		if k.Signer == nil {
			return nil, fmt.Errorf("zone %s: key %d has no private key", s.apex, k.Tag())
		}
		if !sameName(k.DNSKEY.Hdr.Name, s.apex) {
			return nil, fmt.Errorf("zone %s: key %d belongs to zone %s", s.apex, k.Tag(), k.DNSKEY.Hdr.Name)
		}
		if tags[k.Tag()] {
			return nil, fmt.Errorf("zone %s: key tag %d is used twice", s.apex, k.Tag())
		}
		tags[k.Tag()] = true
		pub := *k.DNSKEY
		pub.Hdr = dns.RR_Header{Name: s.apex, Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: o.DNSKEYTTL}
		s.dnskey = append(s.dnskey, &pub)
		s.keys = append(s.keys, &Key{DNSKEY: &pub, Signer: k.Signer})
	}
	return s, nil
}

// Apex is the zone the signer signs.
func (s *Signer) Apex() string { return s.apex }

// Keys returns the zone's keys.
func (s *Signer) Keys() []*Key { return s.keys }

// DNSKEY returns the zone's DNSKEY RRset (served at the apex). Callers
// must not modify it.
func (s *Signer) DNSKEY() []dns.RR { return s.dnskey }

// Stats returns the signature cache's hits and misses so far.
func (s *Signer) Stats() (hits, misses uint64) { return s.hits.Load(), s.misses.Load() }

// Sign returns the RRSIGs (one per key) covering rrset: records of one
// owner name, type and class. The result is shared: callers must not
// modify it.
func (s *Signer) Sign(rrset []dns.RR) ([]dns.RR, error) {
	if len(rrset) == 0 {
		return nil, nil
	}
	now := s.now()
	kb := keyBufs.Get().(*keyBuf)
	defer keyBufs.Put(kb)
	key, err := kb.key(rrset)
	if err != nil {
		return nil, err
	}
	if e := s.cache.get(key); e != nil && now.Before(e.refresh) {
		s.hits.Add(1)
		return e.sigs, nil
	}
	s.misses.Add(1)
	e, err := s.sign(rrset, now)
	if err != nil {
		return nil, err
	}
	s.cache.put(string(key), e)
	return e.sigs, nil
}

// SignGated is Sign, except that a fresh signature (a cache miss) is made
// only if allow says yes; otherwise nothing is signed and refused is true.
func (s *Signer) SignGated(rrset []dns.RR, allow func() bool) (sigs []dns.RR, refused bool, err error) {
	if len(rrset) == 0 {
		return nil, false, nil
	}
	now := s.now()
	kb := keyBufs.Get().(*keyBuf)
	defer keyBufs.Put(kb)
	key, err := kb.key(rrset)
	if err != nil {
		return nil, false, err
	}
	if e := s.cache.get(key); e != nil && now.Before(e.refresh) {
		s.hits.Add(1)
		return e.sigs, false, nil
	}
	if !allow() {
		return nil, true, nil
	}
	s.misses.Add(1)
	e, err := s.sign(rrset, now)
	if err != nil {
		return nil, false, err
	}
	s.cache.put(string(key), e)
	return e.sigs, false, nil
}

// Cached reports whether Sign would answer rrset without making a
// signature: from the cache, or with an error (an RRset that cannot be
// packed). It neither signs nor counts a hit or a miss.
func (s *Signer) Cached(rrset []dns.RR) bool {
	if len(rrset) == 0 {
		return true
	}
	kb := keyBufs.Get().(*keyBuf)
	defer keyBufs.Put(kb)
	key, err := kb.key(rrset)
	if err != nil {
		return true
	}
	e := s.cache.get(key)
	return e != nil && s.now().Before(e.refresh)
}

type entry struct {
	sigs    []dns.RR
	refresh time.Time // sign again from then on
}

func (s *Signer) sign(rrset []dns.RR, now time.Time) (*entry, error) {
	h := rrset[0].Header()
	if !dns.IsSubDomain(s.apex, h.Name) {
		return nil, fmt.Errorf("zone %s: cannot sign %s outside the zone", s.apex, h.Name)
	}
	inc, exp := now.Add(-Inception), now.Add(Validity)
	e := &entry{refresh: exp.Add(-RefreshBefore)}
	for _, k := range s.keys {
		sig := &dns.RRSIG{
			Hdr:        dns.RR_Header{Ttl: h.Ttl},
			Algorithm:  k.DNSKEY.Algorithm,
			KeyTag:     k.Tag(),
			SignerName: s.apex,
			OrigTtl:    h.Ttl,
			Inception:  uint32(inc.Unix()),
			Expiration: uint32(exp.Unix()),
		}
		if err := sig.Sign(k.Signer, rrset); err != nil {
			return nil, fmt.Errorf("zone %s: sign %s %s: %w", s.apex, h.Name, dns.TypeToString[h.Rrtype], err)
		}
		e.sigs = append(e.sigs, sig)
	}
	return e, nil
}

// sigCache is a bounded map of signatures in two generations: new entries
// go into cur; when cur is full it becomes old and a new cur starts, so an
// RRset asked for at least once per generation stays cached (a hit in old
// moves the entry into cur) while a flood of one-off RRsets (random names
// answered with compact denial) only ever evicts others after max/2 of them.
type sigCache struct {
	mu       sync.RWMutex
	cur, old map[string]*entry
	max      int
}

func (c *sigCache) get(key []byte) *entry {
	c.mu.RLock()
	e := c.cur[string(key)]
	if e != nil {
		c.mu.RUnlock()
		return e
	}
	e = c.old[string(key)]
	c.mu.RUnlock()
	if e != nil {
		c.put(string(key), e)
	}
	return e
}

func (c *sigCache) put(key string, e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil || len(c.cur) >= c.max/2 {
		c.old, c.cur = c.cur, make(map[string]*entry, min(c.max/2, 1024))
	}
	c.cur[key] = e
}

// keyBuf builds cache keys: every record in uncompressed wire form (owner,
// type, class, TTL, rdata), sorted so that the order of a draw does not
// matter. The records are packed as the answer section of a message:
// dns.PackRR would write each record's Rdlength, and the records are shared
// with every goroutine that answers (a data race).
type keyBuf struct {
	msg   dns.Msg
	wire  []byte
	spans [][2]int
	out   []byte
}

var keyBufs = sync.Pool{New: func() any {
	return &keyBuf{wire: make([]byte, dns.MaxMsgSize), out: make([]byte, 0, 4096)}
}}

func (b *keyBuf) key(rrset []dns.RR) ([]byte, error) {
	b.msg.Answer = rrset
	wire, err := b.msg.PackBuffer(b.wire)
	b.msg.Answer = nil
	if err != nil {
		return nil, err
	}
	b.spans = b.spans[:0]
	off := 12 // the message header
	for range rrset {
		start := off
		for off < len(wire) && wire[off] != 0 { // owner name, uncompressed
			off += 1 + int(wire[off])
		}
		off += 1 + 10 // root label; type, class, TTL, RDLENGTH
		if off > len(wire) {
			return nil, errors.New("cache key: record cut short")
		}
		off += int(binary.BigEndian.Uint16(wire[off-2:]))
		if off > len(wire) {
			return nil, errors.New("cache key: rdata cut short")
		}
		b.spans = append(b.spans, [2]int{start, off})
	}
	slices.SortFunc(b.spans, func(x, y [2]int) int { return bytes.Compare(wire[x[0]:x[1]], wire[y[0]:y[1]]) })
	b.out = b.out[:0]
	for _, sp := range b.spans {
		b.out = append(b.out, wire[sp[0]:sp[1]]...)
	}
	return b.out, nil
}

func sameName(a, b string) bool { return dns.CanonicalName(a) == dns.CanonicalName(b) }
