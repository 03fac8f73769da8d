package ring

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/vote"
)

// RTT summaries: each prober gossips its smoothed RTT per endpoint
// (internal/health.RTTs) as small signed summaries, never single samples.
// They are bounded in size and rate:
//
//   - a round runs every rttRound (half the summary interval, at least
//     250ms), and early after RTTChanged, but never within 250ms of the
//     previous one; an entry is due when it moved more than rttChange (10 %) from
//     the value last sent, or was last sent rttRefresh (6 summary
//     intervals) ago; an entry whose newest sample is older than that is
//     not sent at all (the endpoint fails its probes: no round trip);
//   - a message holds at most maxRTTEntries entries and maxGossipRTT bytes
//     (one gossip packet); a round sends at most maxRTTMessages messages,
//     biggest changes first, the rest waits for the next round.
//
// Receivers check them like votes: from a listed prober only, for its own
// listed region only, stamps not beyond now + max_clock_skew nor older than
// maxRTTAge, every RTT in (0, maxRTT], every subject well formed; a bad
// message is refused as a whole and counted. Entries on endpoints the
// config does not have are skipped and counted. Push/pull syncs carry the
// envelopes of every entry held, checked the same way.
const (
	rttChange      = 0.10
	rttRefresh     = 6 // summary intervals
	maxRTTEntries  = 32
	maxRTTMessages = 8
	maxGossipRTT   = 1024
	maxRTTAge      = 5 * time.Minute
	maxRTT         = 60 * time.Second
	minRTTRound    = 250 * time.Millisecond
)

// rttMsg is one prober's RTT summary of some endpoints.
type rttMsg struct {
	Prober  string     `json:"p"`
	Region  string     `json:"r"`
	At      int64      `json:"a"` // Unix ms, when sent: a newer message's entry replaces an older one
	Entries []rttEntry `json:"e"`
}

// rttEntry is the smoothed RTT of one endpoint.
type rttEntry struct {
	Service string `json:"s"`
	Target  string `json:"t"`
	RTT     int64  `json:"m"` // microseconds, quantised to 3 significant digits
	Samples uint32 `json:"n"` // successful probes behind it
	At      int64  `json:"a"` // Unix ms of the newest sample
}

// quantise rounds d to microseconds with 3 significant digits (12345 µs →
// 12300 µs): finer than any tolerance, coarse enough that noise below 1 %
// never shows in a summary. At least 1 µs, at most maxRTT.
func quantise(d time.Duration) int64 {
	us := min(max(d.Microseconds(), 1), maxRTT.Microseconds())
	p := int64(1)
	for us/p >= 1000 {
		p *= 10
	}
	return (us + p/2) / p * p
}

// RTTReport is one prober's summary of one endpoint, as held by this node.
type RTTReport struct {
	Prober  string
	Region  string
	Subject vote.Subject
	RTT     time.Duration
	Samples uint32
	At      time.Time // the newest sample behind it
}

type rttKey struct {
	prober  string
	subject vote.Subject
}

type rttVal struct {
	region string
	e      rttEntry
	msgAt  int64  // the message it came in
	raw    []byte // that message's signed envelope (shared by its entries)
}

// rttStore holds the newest summary entry of every prober and endpoint.
type rttStore struct {
	mu sync.Mutex
	m  map[rttKey]rttVal
}

func (s *rttStore) init() {
	if s.m == nil {
		s.m = map[rttKey]rttVal{}
	}
}

// newer reports whether a message of prober stamped at would replace any
// entry we hold for subjects (a cheap check before the signature).
func (s *rttStore) newer(prober string, at int64, subjects []vote.Subject) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sub := range subjects {
		if old, ok := s.m[rttKey{prober, sub}]; !ok || at > old.msgAt {
			return true
		}
	}
	return false
}

// put stores the entries of m that are newer than what we hold; it returns
// how many were.
func (s *rttStore) put(m rttMsg, entries []rttEntry, raw []byte) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	n := 0
	for _, e := range entries {
		k := rttKey{m.Prober, vote.EndpointSubject(e.Service, e.Target)}
		if old, ok := s.m[k]; ok && m.At <= old.msgAt {
			continue
		}
		s.m[k] = rttVal{region: m.Region, e: e, msgAt: m.At, raw: raw}
		n++
	}
	return n
}

// reports returns every entry held, sorted by subject then prober.
func (s *rttStore) reports() []RTTReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]RTTReport, 0, len(s.m))
	for k, v := range s.m {
		out = append(out, RTTReport{Prober: k.prober, Region: v.region, Subject: k.subject,
			RTT: time.Duration(v.e.RTT) * time.Microsecond, Samples: v.e.Samples, At: time.UnixMilli(v.e.At)})
	}
	slices.SortFunc(out, func(a, b RTTReport) int {
		return cmp.Or(compareSubject(a.Subject, b.Subject), cmpString(a.Prober, b.Prober))
	})
	return out
}

// envelopes returns the signed messages behind the entries held, each once.
func (s *rttStore) envelopes() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[*byte]bool{}
	var out [][]byte
	for _, v := range s.m {
		if len(v.raw) == 0 || seen[&v.raw[0]] {
			continue
		}
		seen[&v.raw[0]] = true
		out = append(out, v.raw)
	}
	return out
}

// drop forgets the entries of probers gone reports true for, of subjects
// keep rejects (nil: all kept), and those whose message is older than
// before (Unix ms).
func (s *rttStore) drop(gone func(string) bool, keep func(vote.Subject) bool, before int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.m {
		if (gone != nil && gone(k.prober)) || (keep != nil && !keep(k.subject)) || v.msgAt < before {
			delete(s.m, k)
		}
	}
}

// RTTs returns every prober's latest RTT summary entry this node holds
// (its own included), sorted by subject then prober.
func (r *Ring) RTTs() []RTTReport { return r.rtt.reports() }

// checkRTT validates an RTT summary from prober p: everything but the
// signature and the subjects' presence in the config.
func checkRTT(m rttMsg, origin string, p peer, c clock) *rejection {
	switch {
	case m.Prober != origin:
		return reject(ReasonImpersonation, "RTT summary signed by %q in the name of %q", origin, m.Prober)
	case m.Region != p.Region:
		return reject(ReasonRegion, "RTT summary of %q for region %q (listed: %q)", origin, m.Region, p.Region)
	case c.futureMs(m.At):
		return reject(ReasonFuture, "RTT summary of %q sent at %s, beyond now + %s", origin, time.UnixMilli(m.At).UTC().Format(time.RFC3339), c.skew)
	case c.now.Sub(time.UnixMilli(m.At)) > maxRTTAge:
		return reject(ReasonStale, "RTT summary of %q from %s (at most %s old: a replay?)", origin, time.UnixMilli(m.At).UTC().Format(time.RFC3339), maxRTTAge)
	case len(m.Entries) == 0 || len(m.Entries) > maxRTTEntries:
		return reject(ReasonInvalid, "RTT summary of %q with %d entries (allowed 1..%d)", origin, len(m.Entries), maxRTTEntries)
	}
	seen := make(map[vote.Subject]bool, len(m.Entries))
	for i, e := range m.Entries {
		if rj := checkSubject(e.Service, e.Target); rj != nil {
			return rj
		}
		s := vote.EndpointSubject(e.Service, e.Target)
		switch {
		case e.Service == "":
			return reject(ReasonInvalid, "RTT summary of %q, entry %d: %q is a cluster, not an endpoint", origin, i, e.Target)
		case seen[s]:
			return reject(ReasonInvalid, "RTT summary of %q lists %s twice", origin, s)
		case e.RTT <= 0 || e.RTT > maxRTT.Microseconds():
			return reject(ReasonInvalid, "RTT summary of %q: %s has an RTT of %d µs (allowed 1 µs..%s)", origin, s, e.RTT, maxRTT)
		case e.Samples == 0:
			return reject(ReasonInvalid, "RTT summary of %q: %s has no samples behind it", origin, s)
		case c.futureMs(e.At):
			return reject(ReasonFuture, "RTT summary of %q: %s sampled at %s, beyond now + %s", origin, s, time.UnixMilli(e.At).UTC().Format(time.RFC3339), c.skew)
		case e.At <= 0 || e.At > m.At:
			return reject(ReasonInvalid, "RTT summary of %q: %s sampled at %d ms, after the message was sent (%d ms)", origin, s, e.At, m.At)
		}
		seen[s] = true
	}
	return nil
}

func (r *Ring) onRTT(t *trust, e envelope, p peer, c clock, b []byte, relay bool) *rejection {
	var m rttMsg
	if err := e.decodePayload(&m); err != nil {
		return reject(ReasonMalformed, "RTT summary: %v", err)
	}
	if rj := checkRTT(m, e.origin, p, c); rj != nil {
		return rj
	}
	known := make([]rttEntry, 0, len(m.Entries))
	subjects := make([]vote.Subject, 0, len(m.Entries))
	for _, en := range m.Entries {
		s := vote.EndpointSubject(en.Service, en.Target)
		if !r.known(s) {
			r.m.RTTEntries.WithLabelValues("unknown-subject").Inc()
			continue
		}
		known = append(known, en)
		subjects = append(subjects, s)
	}
	if len(known) == 0 || !r.rtt.newer(m.Prober, m.At, subjects) {
		return nil // nothing we keep, or a repeat
	}
	if rj := t.verify(e, p); rj != nil {
		return rj
	}
	n := r.rtt.put(m, known, b)
	if n == 0 {
		return nil
	}
	r.m.RTTEntries.WithLabelValues("received").Add(float64(n))
	r.rttReceived()
	if relay && r.q.NumQueued() < maxRelayQueued {
		r.q.QueueBroadcast(&bcast{name: rttBroadcastName(m), msg: b})
	}
	return nil
}

func rttBroadcastName(m rttMsg) string {
	return "r/" + m.Prober + "/" + strconv.FormatInt(m.At, 10) + "/" + m.Entries[0].Service + "/" + m.Entries[0].Target
}

// rttSent is what this prober last sent for one endpoint.
type rttSent struct {
	rtt int64
	at  time.Time
}

// rttRound is the period of the sending rounds.
func (r *Ring) rttRound() time.Duration { return max(r.cfg.SummaryInterval/2, minRTTRound) }

// RTTChanged tells the ring that a smoothed RTT took a new sample: the
// next round runs as soon as the 250ms spacing allows, instead of at the
// next tick (a moved site is told at once). It never blocks.
func (r *Ring) RTTChanged() {
	select {
	case r.rttWake <- struct{}{}:
	default:
	}
}

// rttLoop sends this prober's RTT summaries every round until the ring
// stops: on the tick, or early after RTTChanged, at most one round per
// minRTTRound.
func (r *Ring) rttLoop() {
	defer r.wg.Done()
	t := time.NewTicker(r.rttRound())
	defer t.Stop()
	sent := map[vote.Subject]rttSent{}
	var last time.Time
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		case <-r.rttWake:
			if wait := minRTTRound - time.Since(last); wait > 0 {
				select {
				case <-r.stop:
					return
				case <-time.After(wait):
				}
			}
		}
		last = time.Now()
		if r.sendRTTs(last, sent) > 0 {
			r.rttReceived()
		}
	}
}

// rttReceived calls OnRTT (new summaries were taken, ours included).
func (r *Ring) rttReceived() {
	if r.cfg.OnRTT != nil {
		r.cfg.OnRTT()
	}
}

// sendRTTs runs one round: it queues the summaries of the due entries
// (see the bounds above) and records them in sent and in the store. It
// returns how many entries it sent.
func (r *Ring) sendRTTs(now time.Time, sent map[vote.Subject]rttSent) int {
	if r.cfg.RTTs == nil || r.q.NumQueued() >= maxQueued {
		return 0
	}
	list := r.dueRTTs(now, sent)
	n := 0
	for msgs := 0; msgs < maxRTTMessages && len(list) > 0; msgs++ {
		m, raw, k := r.packRTTs(now, list)
		if len(raw) > maxGossipRTT {
			r.log.Warn("ring: an RTT summary of one endpoint does not fit a gossip packet; skipped", "service", list[0].s.Service, "endpoint", list[0].s.Target, "bytes", len(raw))
			sent[list[0].s] = rttSent{rtt: list[0].e.RTT, at: now}
			list = list[1:]
			continue
		}
		r.rtt.put(m, m.Entries, raw)
		r.queue(msgRTT, rttBroadcastName(m), raw)
		for _, d := range list[:k] {
			sent[d.s] = rttSent{rtt: d.e.RTT, at: now}
		}
		n += k
		list = list[k:]
	}
	for s := range sent {
		if !r.known(s) {
			delete(sent, s)
		}
	}
	r.m.RTTEntries.WithLabelValues("sent").Add(float64(n))
	return n
}

// rttDue is one endpoint's summary due this round, with its priority.
type rttDue struct {
	s    vote.Subject
	e    rttEntry
	prio float64
}

// dueRTTs lists the endpoints whose summary is due this round, most
// urgent first: never sent, then by how much the RTT changed, then those
// due a refresh.
func (r *Ring) dueRTTs(now time.Time, sent map[vote.Subject]rttSent) []rttDue {
	refresh := rttRefresh * r.cfg.SummaryInterval
	var list []rttDue
	for s, v := range r.cfg.RTTs() {
		if s.IsCluster() || checkSubject(s.Service, s.Target) != nil || !r.known(s) || v.Samples == 0 || now.Sub(v.At) > refresh {
			continue
		}
		q := quantise(v.RTT)
		last, ok := sent[s]
		prio, due := rttPriority(q, last, ok, now, refresh)
		if !due {
			continue
		}
		// A sample taken while this round started is stamped with the round.
		e := rttEntry{Service: s.Service, Target: s.Target, RTT: q, Samples: v.Samples, At: min(v.At.UnixMilli(), now.UnixMilli())}
		list = append(list, rttDue{s: s, e: e, prio: prio})
	}
	slices.SortFunc(list, func(a, b rttDue) int {
		return cmp.Or(cmp.Compare(b.prio, a.prio), compareSubject(a.s, b.s))
	})
	return list
}

// rttPriority says whether an endpoint's summary (quantised RTT q) is due
// and how urgently: never sent (ok false) first, then a change above
// rttChange by its size, then a refresh after the refresh period.
func rttPriority(q int64, last rttSent, ok bool, now time.Time, refresh time.Duration) (float64, bool) {
	change := math.Abs(float64(q-last.rtt)) / float64(max(last.rtt, 1))
	switch {
	case !ok:
		return math.Inf(1), true
	case change > rttChange:
		return change, true
	case now.Sub(last.at) >= refresh:
		return 0, true
	}
	return 0, false
}

// packRTTs seals the first entries of list into one message that fits a
// gossip packet, shrinking by a quarter until it does; k is how many went
// in. A single entry is returned even when too large: the caller skips it.
func (r *Ring) packRTTs(now time.Time, list []rttDue) (m rttMsg, raw []byte, k int) {
	for k = min(len(list), maxRTTEntries); k > 0; k = k * 3 / 4 {
		m = rttMsg{Prober: r.cfg.NodeName, Region: r.cfg.Region, At: now.UnixMilli(), Entries: make([]rttEntry, k)}
		for i := range k {
			m.Entries[i] = list[i].e
		}
		raw = seal(r.id(), msgRTT, r.cfg.NodeName, m)
		if len(raw) <= maxGossipRTT || k == 1 {
			break
		}
	}
	return m, raw, k
}

// rttState is the part of a push/pull state with RTT summaries.
func (r *Ring) rttState() [][]byte { return r.rtt.envelopes() }

// String describes an RTT report for logs.
func (x RTTReport) String() string {
	return fmt.Sprintf("%s@%s %s %s (%d samples)", x.Prober, x.Region, x.Subject, x.RTT, x.Samples)
}
