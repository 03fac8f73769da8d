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
// sets the zero fields of an enabled RRL to 200/s, 15s, /24 and /56 (Slip 0
// is meaningful and kept).
//
// Responses are counted per response identity, as in BIND's and Knot's RRL:
// client prefix + response class (see rrlClass) + the name and type the
// class is keyed on. So a resolver asking for many names has a budget per
// name, and a flood of random names that do not exist is one budget (their
// zone's NXDOMAIN class).
type RRL struct {
	Enabled         bool
	ResponsesPerSec int // sustained responses per second per client prefix and response identity (1..1000000)
	Window          int // seconds of credit a quiet prefix saves up: a burst of ResponsesPerSec×Window
	Slip            int // every Slip-th limited response is sent truncated (TC=1); 0 = drop all, 1 = truncate all
	IPv4Prefix      int // client prefix length for IPv4 (1..32)
	IPv6Prefix      int // client prefix length for IPv6 (1..64)
	// Exempt: sources never limited (e.g. known resolvers); nil = none.
	Exempt *geo.PrefixSet
}

// rrlClass is the class of a response that RRL counts it in. Like BIND
// and Knot, the class decides what else identifies the bucket:
//
//   - answer and nodata: the query name and type, so each name a client
//     asks for has its own budget;
//   - nxdomain: the zone (its apex), whatever the name and type, so a flood
//     of random names is one bucket per client prefix and zone;
//   - error (REFUSED, FORMERR, SERVFAIL, NOTIMP, ...): nothing else, so
//     every error to one client prefix shares one bucket.
//
// The engine serves no delegations and no wildcards, so there is no
// referral or wildcard class: those responses cannot occur.
type rrlClass uint8

const (
	rrlAnswer   rrlClass = iota // NOERROR with records in the answer section
	rrlNoData                   // NOERROR without answer records
	rrlNXDomain                 // NXDOMAIN
	rrlError                    // any other rcode
	rrlClasses                  // number of classes
)

var rrlClassNames = [rrlClasses]string{"answer", "nodata", "nxdomain", "error"}

func (c rrlClass) String() string {
	if c < rrlClasses {
		return rrlClassNames[c]
	}
	return "unknown"
}

// rrlIdentity hashes a response identity (without the client prefix): its
// class, the name it is keyed on (ASCII case folded, so 0x20-randomised
// names share a bucket) and its type. FNV-1a; the limiter mixes the result
// with a random seed, so the identity need not be unpredictable itself.
func rrlIdentity(class rrlClass, name string, qtype uint16) uint64 {
	h := uint64(14695981039346656037) ^ uint64(class)<<16 ^ uint64(qtype)
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
// state is its "theoretical arrival time" tat, advanced by one interval
// (1/rate) per response sent; a response is allowed while tat stays within
// window seconds of now. So a prefix that was quiet may send rate×window
// responses at once, and a flood gets rate responses per second; limited
// queries cost nothing (they do not extend the limit).
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

// allow reports whether a response of identity id (see rrlIdentity) to src
// may be sent at now and charges it when it may.
func (l *limiter) allow(src netip.Addr, id uint64, now time.Time) bool {
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
		tat = max(tat, t) + l.interval
		if tat-t > l.burst {
			return false
		}
		if slot.CompareAndSwap(old, tag<<rrlTimeBits|tat&rrlTimeMask) {
			return true
		}
	}
}

// check decides about a response of identity id to src. slipCount is the
// caller's counter of limited responses (one per reader goroutine, so no
// shared state): every slip-th limited response is slipped. Exempt sources
// are never limited (and not charged).
func (l *limiter) check(src netip.Addr, id uint64, now time.Time, slipCount *uint32) rrlAction {
	if l.exempt.Contains(src) {
		return rrlExempt
	}
	if l.allow(src, id, now) {
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
