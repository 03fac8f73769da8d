package dnsserver

import (
	"crypto/rand"
	"encoding/binary"
	"net/netip"
	"sync/atomic"
	"time"
)

// RRL configures response rate limiting on UDP. The zero value is off; New
// sets the zero fields of an enabled RRL to 200/s, 15s, /24 and /56 (Slip 0
// is meaningful and kept).
type RRL struct {
	Enabled         bool
	ResponsesPerSec int // sustained responses per second per client prefix (1..1000000)
	Window          int // seconds of credit a quiet prefix saves up: a burst of ResponsesPerSec×Window
	Slip            int // every Slip-th limited response is sent truncated (TC=1); 0 = drop all, 1 = truncate all
	IPv4Prefix      int // client prefix length for IPv4 (1..32)
	IPv6Prefix      int // client prefix length for IPv6 (1..64)
}

// rrlAction is what to do with the response to one UDP query.
type rrlAction uint8

const (
	rrlSend rrlAction = iota // within the rate: answer
	rrlDrop                  // over the rate: send nothing
	rrlSlip                  // over the rate: send an empty truncated reply (TC=1)
)

// rrlSlots is the number of client prefixes the limiter tracks at once: a
// fixed table of 2^17 words (1 MiB), allocated once.
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

// limiter is a response rate limiter keyed by client prefix. It implements
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
		slots: make([]atomic.Uint64, rrlSlots),
		seed:  binary.LittleEndian.Uint64(b[:]),
		epoch: epoch,
		v4:    cfg.IPv4Prefix,
		v6:    cfg.IPv6Prefix,
		slip:  uint32(max(cfg.Slip, 0)),
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

// allow reports whether a response to src may be sent at now and charges it
// when it may.
func (l *limiter) allow(src netip.Addr, now time.Time) bool {
	t := units(now.Sub(l.epoch)) + 1 // never 0, so an empty slot is always in the past
	h := mix(l.prefixKey(src) ^ l.seed)
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

// check decides about the response to one query from src. slipCount is the
// caller's counter of limited responses (one per reader goroutine, so no
// shared state): every slip-th limited response is slipped.
func (l *limiter) check(src netip.Addr, now time.Time, slipCount *uint32) rrlAction {
	if l.allow(src, now) {
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
