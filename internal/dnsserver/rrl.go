package dnsserver

import (
	"crypto/rand"
	"encoding/binary"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/meridian-gslb/meridian/internal/geo"
)

// RRL configures response rate limiting on UDP. The zero value is off; New
// sets the zero fields of an enabled RRL to 200/s, ResponsesPerSec × 512
// bytes/s, 15s, /24 and /56 (Slip 0 is meaningful and kept).
//
// Responses are counted per client prefix and response identity, as in
// BIND's and Knot's RRL, but the identity holds only what a flood cannot
// vary at will (see rrlBucket): every response about a name that exists
// (answer or NODATA, whatever the type) is one budget per name, every
// denial of a name that does not exist (NXDOMAIN, or the NODATA of a DNSSEC
// compact denial) is one budget per zone, and every error is one budget.
// So a resolver asking for many names has a budget per name, while a flood
// that cycles the type or invents names stays in one bucket.
//
// Each bucket is charged in time: a response costs the larger of 1/rate
// (its count) and its size / BytesPerSec (its bytes), so a bucket sends at
// most ResponsesPerSec responses and BytesPerSec bytes per second, and a
// burst of Window seconds of both.
type RRL struct {
	Enabled         bool
	ResponsesPerSec int // sustained responses per second per client prefix and response identity (1..1000000)
	BytesPerSec     int // sustained response bytes per second per client prefix and response identity (default ResponsesPerSec × 512)
	Window          int // seconds of credit a quiet prefix saves up: a burst of ResponsesPerSec×Window
	Slip            int // every Slip-th limited response is sent truncated (TC=1); 0 = drop all, 1 = truncate all
	IPv4Prefix      int // client prefix length for IPv4 (1..32)
	IPv6Prefix      int // client prefix length for IPv6 (1..64)
	// Exempt: sources never limited (e.g. known resolvers); nil = none.
	Exempt *geo.PrefixSet
}

// withDefaults returns c with the defaults of an enabled RRL filled in.
func (c RRL) withDefaults() RRL {
	if c.ResponsesPerSec <= 0 {
		c.ResponsesPerSec = 200
	}
	if c.Window <= 0 {
		c.Window = 15
	}
	if c.BytesPerSec <= 0 {
		c.BytesPerSec = c.ResponsesPerSec * DefaultRRLBytesPerResponse
	}
	if c.IPv4Prefix <= 0 || c.IPv4Prefix > 32 {
		c.IPv4Prefix = 24
	}
	if c.IPv6Prefix <= 0 || c.IPv6Prefix > 64 {
		c.IPv6Prefix = 56
	}
	return c
}

// DefaultRRLBytesPerResponse sets the default byte budget of an RRL
// bucket: ResponsesPerSec × 512 bytes per second, so responses up to 512
// bytes are counted by number alone, and a larger one (a DNSKEY set, a
// large signed answer) costs its size in 512-byte shares.
const DefaultRRLBytesPerResponse = 512

// rrlClass is the class of a limited response in the metrics
// (meridian_dns_rrl_limited_total{class}); rrlBucket says what it is
// counted against.
//
// The engine serves no delegations and no wildcards, so there is no
// referral or wildcard class: those responses cannot occur.
type rrlClass uint8

const (
	rrlAnswer   rrlClass = iota // NOERROR with records in the answer section
	rrlNoData                   // NOERROR without answer records, for a name that exists
	rrlNXDomain                 // NXDOMAIN, or the NODATA of a compact denial (a name that does not exist)
	rrlError                    // any other rcode
	rrlClasses                  // number of classes
)

// rrlBucket is what a response's budget is keyed on, besides the client
// prefix. Only what a flood cannot vary at will is in the key: never the
// query type, and the query name only when it exists.
//
//   - name: answers and NODATA of a name that exists, whatever the type,
//     keyed on the name. A resolver asking for many names has a budget
//     per name (A, AAAA and HTTPS of one name share it); a flood cycling
//     the type on one name is one bucket. (BIND and Knot key on the type
//     as well, which let 5 000 queries cycling it all be answered.)
//   - zone: NXDOMAIN and the NODATA of a DNSSEC compact denial ("black
//     lie", RFC 9824: a name that does not exist answered NOERROR with an
//     NSEC listing NXNAME), keyed on the zone's apex: a flood of random
//     names, with DO or without, is one bucket per prefix and zone.
//   - error (REFUSED, FORMERR, SERVFAIL, NOTIMP, ...): nothing else, so
//     every error to one client prefix shares one bucket.
type rrlBucket uint8

const (
	rrlByName  rrlBucket = iota // an existing name: answers and NODATA
	rrlByZone                   // a zone: denials of names that do not exist
	rrlByError                  // every error
)

var rrlClassNames = [rrlClasses]string{"answer", "nodata", "nxdomain", "error"}

func (c rrlClass) String() string {
	if c < rrlClasses {
		return rrlClassNames[c]
	}
	return "unknown"
}

// rrlIdentity hashes a response identity (without the client prefix): its
// bucket kind and the name it is keyed on (ASCII case folded, so
// 0x20-randomised names share a bucket). FNV-1a; the limiter mixes the
// result with a random seed, so the identity need not be unpredictable
// itself.
func rrlIdentity(bucket rrlBucket, name string) uint64 {
	h := uint64(14695981039346656037) ^ uint64(bucket)<<16
	h *= 1099511628211
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// rrlAction is what to do with the response to one UDP query.
type rrlAction uint8

const (
	rrlSend   rrlAction = iota // within the rate: answer
	rrlDrop                    // over the rate: send nothing
	rrlSlip                    // over the rate: send an empty truncated reply (TC=1)
	rrlExempt                  // the source is in RRL.Exempt: answer, not counted
)

// rrlSlots is the number of (client prefix, response identity) buckets the
// limiter tracks at once: a fixed table of 2^17 words (1 MiB), allocated
// once. A bucket occupies its slot only while it holds debt (a response
// charged less than 1/rate ago, or a limited identity); a full bucket's slot
// is free for reuse, so the table holds the identities active in the last
// moments, not every one ever seen.
const (
	rrlSlotBits = 17
	rrlSlots    = 1 << rrlSlotBits
)

// A slot word packs a 12-bit tag of the prefix's hash with its theoretical
// arrival time (GCRA) in 52 bits of 1/16 µs since the limiter started
// (8.9 years before it would wrap).
const (
	rrlTimeBits = 52
	rrlTimeMask = 1<<rrlTimeBits - 1
)

// limiter is a response rate limiter keyed by client prefix and response
// identity (one bucket per pair; "prefix" below means that pair). It implements
// the token bucket as GCRA (generic cell rate algorithm): a prefix's whole
// state is its "theoretical arrival time" tat, advanced by the cost of each
// response sent — one interval (1/rate), or its size in byte intervals
// (1/bytes per second) when that is more; a response is allowed while tat
// stays within window seconds of now. So a prefix that was quiet may send
// rate×window responses (and bytes×window bytes) at once, and a flood gets
// rate responses (and at most bytes bytes) per second; limited queries
// cost nothing (they do not extend the limit).
//
// It is lock-free: each prefix maps, by a keyed hash, to two candidate slots
// of a fixed table and is updated with one compare-and-swap. A slot whose
// tat is in the past holds no information (a full bucket) and is reused at
// once; when both candidates are in use by other prefixes, the one with the
// least debt is evicted (that prefix starts afresh), so heavy hitters keep
// their state however many prefixes pass by. Memory is fixed: rrlSlots
// words.
type limiter struct {
	slots    []atomic.Uint64
	seed     uint64
	epoch    time.Time
	interval uint64 // 1/rate, in units
	perSec   uint64 // bytes per second: a response of n bytes costs n/perSec seconds (0: bytes not counted)
	burst    uint64 // window, in units: how far tat may run ahead of now
	v4, v6   int    // prefix lengths
	slip     uint32
	exempt   *geo.PrefixSet // never limited (nil: none)
}

// units converts a duration to the limiter's time unit (1/16 µs).
func units(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	return uint64(d) * 16 / 1000
}

func newLimiter(cfg RRL, epoch time.Time) *limiter {
	var b [8]byte
	rand.Read(b[:])
	l := &limiter{
		slots:  make([]atomic.Uint64, rrlSlots),
		seed:   binary.LittleEndian.Uint64(b[:]),
		epoch:  epoch,
		v4:     cfg.IPv4Prefix,
		v6:     cfg.IPv6Prefix,
		slip:   uint32(max(cfg.Slip, 0)),
		exempt: cfg.Exempt,
	}
	rate := max(cfg.ResponsesPerSec, 1)
	l.interval = max(units(time.Second)/uint64(rate), 1)
	l.perSec = uint64(max(cfg.BytesPerSec, 0))
	l.burst = units(time.Duration(max(cfg.Window, 1)) * time.Second)
	if l.burst < l.interval {
		l.burst = l.interval
	}
	if l.v4 <= 0 || l.v4 > 32 {
		l.v4 = 24
	}
	if l.v6 <= 0 || l.v6 > 64 {
		l.v6 = 56
	}
	return l
}

// prefixKey maps a client address to its prefix: IPv4 (and IPv4-mapped
// IPv6) as 1<<32 | masked address, IPv6 as its first 64 bits masked.
func (l *limiter) prefixKey(a netip.Addr) uint64 {
	a = a.Unmap()
	if a.Is4() {
		v := a.As4()
		x := uint64(binary.BigEndian.Uint32(v[:]))
		x &^= (1<<(32-l.v4) - 1)
		return 1<<32 | x
	}
	v := a.As16()
	x := binary.BigEndian.Uint64(v[:8])
	if l.v6 < 64 {
		x &^= (1<<(64-l.v6) - 1)
	}
	return x
}

// mix is the murmur3 64-bit finaliser: a bijection that spreads every bit.
func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// cost is what a response of size bytes is charged, in units: the larger
// of 1/rate and size/bytes per second, and never more than the burst (so
// that a response larger than the bucket's bytes can still be sent once
// per window).
func (l *limiter) cost(size int) uint64 {
	c := l.interval
	if l.perSec > 0 && size > 0 {
		c = max(c, uint64(size)*units(time.Second)/l.perSec)
	}
	return min(c, l.burst)
}

// allow reports whether one response of identity id (see rrlIdentity) to
// src may be sent at now and charges it (1/rate) when it may.
func (l *limiter) allow(src netip.Addr, id uint64, now time.Time) bool {
	return l.allowCost(src, id, now, l.interval)
}

// allowCost is allow for a response that costs cost units (see cost).
func (l *limiter) allowCost(src netip.Addr, id uint64, now time.Time, cost uint64) bool {
	t := units(now.Sub(l.epoch)) + 1 // never 0, so an empty slot is always in the past
	h := mix(mix(l.prefixKey(src)^l.seed) ^ id)
	tag := h >> rrlTimeBits
	s1 := &l.slots[h&(rrlSlots-1)]
	s2 := &l.slots[(h>>rrlSlotBits)&(rrlSlots-1)]
	for {
		w1, w2 := s1.Load(), s2.Load()
		slot, old, tat := s1, w1, uint64(0)
		switch {
		case w1>>rrlTimeBits == tag:
			tat = w1 & rrlTimeMask
		case w2>>rrlTimeBits == tag:
			slot, old, tat = s2, w2, w2&rrlTimeMask
		case w1&rrlTimeMask <= t: // idle: a full bucket, nothing lost by reusing it
		case w2&rrlTimeMask <= t:
			slot, old = s2, w2
		case w2&rrlTimeMask < w1&rrlTimeMask: // both busy: evict the one with less debt
			slot, old = s2, w2
		}
		tat = max(tat, t) + cost
		if tat-t > l.burst {
			return false
		}
		if slot.CompareAndSwap(old, tag<<rrlTimeBits|tat&rrlTimeMask) {
			return true
		}
	}
}

// check decides about a response of identity id and size bytes to src.
// slipCount is the caller's counter of limited responses (one per reader
// goroutine, so no shared state): every slip-th limited response is
// slipped. Exempt sources are never limited (and not charged).
func (l *limiter) check(src netip.Addr, id uint64, size int, now time.Time, slipCount *uint32) rrlAction {
	if l.exempt.Contains(src) {
		return rrlExempt
	}
	if l.allowCost(src, id, now, l.cost(size)) {
		return rrlSend
	}
	if l.slip == 0 {
		return rrlDrop
	}
	*slipCount++
	if *slipCount >= l.slip {
		*slipCount = 0
		return rrlSlip
	}
	return rrlDrop
}

// slipReply writes to out the truncated reply to query in: its header with
// QR and TC set, NOERROR, and its question, nothing else. It returns nil
// when the question cannot be read from the wire (the query is dropped).
func slipReply(out, in []byte) []byte {
	if len(in) < headerLen || in[2]&0x80 != 0 || binary.BigEndian.Uint16(in[4:]) != 1 {
		return nil
	}
	i := headerLen
	for {
		if i >= len(in) {
			return nil
		}
		l := int(in[i])
		if l == 0 {
			break
		}
		if l&0xC0 != 0 {
			return nil // a query's first name is never compressed
		}
		i += 1 + l
		if i-headerLen >= 255 {
			return nil // longer than a name may be
		}
	}
	end := i + 1 + 4 // root label, qtype, qclass
	if end > len(in) || end > len(out) {
		return nil
	}
	out = out[:end]
	copy(out, in[:end])
	out[2] = 0x80 | in[2]&0x79 | 0x02 // QR, opcode, RD kept, TC
	out[3] = 0                        // RA, Z, AD, CD off; NOERROR
	clear(out[6:headerLen])           // no answer, authority or additional records
	return out
}
