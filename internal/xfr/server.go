// Package xfr serves Meridian's zones to secondary name servers: AXFR and
// IXFR over TCP (RFC 5936, RFC 1995), only to allowed addresses that sign
// with the zone's TSIG key (RFC 8945, HMAC-SHA256), and NOTIFY (RFC 1996) to
// the configured secondaries on every content change.
//
// What is transferred is engine.ZoneData: the static view of the decided
// healthy set (see there). Serials are managed by the caller (internal/app
// with Serials) and are part of the snapshot, so the SOA over UDP/TCP and
// the transferred SOA always agree.
//
// IXFR is incremental when the client's serial is one of the last
// Options.History versions this process published (one condensed difference
// from it to the current version); otherwise, e.g. after a restart, the
// answer is the whole zone in AXFR form, as RFC 1995 section 4 allows.
//
// With a catalog section the server also serves a catalog zone (RFC 9432)
// listing the zones with transfers (catalog.go, catalog_serve.go).
package xfr

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/logthrottle"
)

// Source gives the current snapshot; *engine.Store implements it.
type Source interface {
	Load() *engine.Snapshot
}

// Zone is the transfer configuration of one zone.
type Zone struct {
	Apex   string         // canonical apex
	Allow  []netip.Prefix // clients allowed to transfer
	Key    Key            // the TSIG key they must sign with
	Notify []netip.AddrPort
}

// Options configure a Server.
type Options struct {
	Logger         *slog.Logger
	Registerer     prometheus.Registerer // nil: metrics are not registered
	Ready          func() error          // NOTIFY waits until it returns nil (DNS listening)
	UDPPayloadSize int                   // our EDNS0 payload size for signed queries (default engine's)
	History        int                   // versions kept per zone for IXFR (default 32)
	NotifyBackoff  []time.Duration       // delay before each NOTIFY attempt (default 0, 1s, 2s, 4s, 8s, 16s)
	NotifyTimeout  time.Duration         // wait for an answer per attempt (default 2s)
}

// Server answers transfers and TSIG-signed queries; it implements
// dnsserver.Transfers.
type Server struct {
	src  Source
	opts Options
	log  *slog.Logger
	m    *metrics
	// logs bounds the WARN lines of refusals and failed TSIG checks, which
	// anyone can cause with spoofed packets (every one is still counted in
	// meridian_xfr_requests_total).
	logs *logthrottle.Throttle

	mu    sync.RWMutex
	zones map[string]*zoneState
	cat   atomic.Pointer[engine.ZoneData] // the catalog zone's content (nil: no catalog); see SetCatalog

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	nmu    sync.Mutex
	ngen   map[string]uint64 // apex+target -> generation of the latest NOTIFY
}

type zoneState struct {
	cfg     Zone
	history []version // oldest first
}

type version struct {
	soa     *dns.SOA
	records []dns.RR
}

// New returns a server answering from src. Configure it with Configure and
// Record; stop its NOTIFY goroutines with Close.
func New(src Source, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.UDPPayloadSize <= 0 {
		opts.UDPPayloadSize = engine.DefaultUDPPayloadSize
	}
	if opts.History <= 0 {
		opts.History = 32
	}
	if opts.NotifyBackoff == nil {
		opts.NotifyBackoff = []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}
	}
	if opts.NotifyTimeout <= 0 {
		opts.NotifyTimeout = 2 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{src: src, opts: opts, log: opts.Logger, m: newMetrics(opts.Registerer), logs: logthrottle.New(0, 0, nil),
		zones: map[string]*zoneState{}, ctx: ctx, cancel: cancel, ngen: map[string]uint64{}}
}

// Close stops pending NOTIFY retries and waits for them.
func (s *Server) Close() {
	s.cancel()
	s.wg.Wait()
}

// Configure sets the zones that may be transferred; the IXFR history of
// zones that stay is kept.
func (s *Server) Configure(zones []Zone) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[string]*zoneState, len(zones))
	for _, z := range zones {
		zs := &zoneState{cfg: z}
		if old, ok := s.zones[z.Apex]; ok {
			zs.history = old.history
		}
		next[z.Apex] = zs
	}
	for apex := range s.zones {
		if _, ok := next[apex]; !ok {
			s.m.serial.DeleteLabelValues(strings.TrimSuffix(apex, "."))
		}
	}
	s.zones = next
}

// Record remembers the published content of a zone for IXFR. Call it after
// every publish; a serial equal to the last recorded one is ignored.
func (s *Server) Record(zd engine.ZoneData) {
	s.mu.Lock()
	defer s.mu.Unlock()
	zs, ok := s.zones[zd.Apex]
	if !ok {
		return
	}
	s.m.serial.WithLabelValues(label(zd.Apex)).Set(float64(zd.SOA.Serial))
	if n := len(zs.history); n > 0 && zs.history[n-1].soa.Serial == zd.SOA.Serial {
		return
	}
	h := append(zs.history, version{soa: zd.SOA, records: zd.Records})
	if len(h) > s.opts.History {
		h = append([]version(nil), h[len(h)-s.opts.History:]...)
	}
	zs.history = h
}

func label(apex string) string { return strings.TrimSuffix(apex, ".") }

// Wants reports whether req is for us: AXFR, IXFR, TSIG-signed, or a
// query of class IN into the catalog zone (another class is left to the
// engine, which refuses it: the catalog is an IN zone). It is called for
// every query and is cheap.
func (s *Server) Wants(req *dns.Msg) bool {
	if req.IsTsig() != nil {
		return true
	}
	if len(req.Question) == 1 {
		t := req.Question[0].Qtype
		return t == dns.TypeAXFR || t == dns.TypeIXFR || req.Question[0].Qclass == dns.ClassINET && s.inCatalog(req.Question[0].Name)
	}
	return false
}

// Answer answers req (wire form in) with one message: TSIG-signed queries
// over UDP or TCP, and AXFR/IXFR over UDP (refused, resp. the current SOA).
func (s *Server) Answer(req *dns.Msg, in []byte, src netip.Addr, tcp bool) []byte {
	out := s.handle(req, in, src, tcp)
	wires, err := out.pack()
	if err != nil || len(wires) == 0 {
		s.log.Warn("xfr: packing the answer failed", "client", src.String(), "err", err)
		return servfail(req)
	}
	return wires[0]
}

// ServeTCP answers an AXFR or IXFR read from c, writing every message of
// the answer with RFC 7766 framing. It returns false, doing nothing, for
// other queries; an error means the connection should be closed.
func (s *Server) ServeTCP(c net.Conn, in []byte, src netip.Addr) (bool, error) {
	if t := qtype(in); t != dns.TypeAXFR && t != dns.TypeIXFR {
		return false, nil
	}
	req := new(dns.Msg)
	if err := req.Unpack(in); err != nil {
		return true, err
	}
	start := time.Now()
	out := s.handle(req, in, src, true)
	wires, err := out.pack()
	if err != nil {
		s.log.Warn("xfr: packing the transfer failed", "zone", out.zone, "client", src.String(), "err", err)
		wires = [][]byte{servfail(req)}
	}
	var frame []byte
	for _, w := range wires {
		frame = binary.BigEndian.AppendUint16(frame[:0], uint16(len(w)))
		frame = append(frame, w...)
		c.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := c.Write(frame); err != nil {
			return true, err
		}
	}
	if out.logTransfer != nil {
		d := time.Since(start)
		s.m.duration.WithLabelValues(out.kind).Observe(d.Seconds())
		out.logTransfer(len(wires), d)
	}
	return true, nil
}

// qtype returns the type of the only question of a wire-format query, or 0.
func qtype(in []byte) uint16 {
	if len(in) < 12 || binary.BigEndian.Uint16(in[4:]) != 1 {
		return 0
	}
	i := 12
	for i < len(in) {
		l := int(in[i])
		if l == 0 {
			break
		}
		if l&0xC0 != 0 {
			return 0
		}
		i += 1 + l
	}
	if i+3 > len(in) {
		return 0
	}
	return binary.BigEndian.Uint16(in[i+1:])
}

func servfail(req *dns.Msg) []byte {
	m := new(dns.Msg)
	m.SetRcode(req, dns.RcodeServerFailure)
	m.Question = nil
	b, _ := m.Pack()
	return b
}

// answer is what handle decided: messages and how to sign them.
type answer struct {
	msgs        []*dns.Msg
	key         *Key   // sign with it (nil: unsigned)
	tsigName    string // the request's key name and algorithm, echoed in TSIG errors
	tsigAlg     string
	tsigErr     uint16 // TSIG error (BADKEY, BADSIG: unsigned; BADTIME: signed)
	reqMAC      string
	zone        string
	kind        string
	logTransfer func(messages int, d time.Duration)
}

func (a *answer) pack() ([][]byte, error) {
	out := make([][]byte, 0, len(a.msgs))
	mac := a.reqMAC
	now := time.Now().Unix()
	for i, m := range a.msgs {
		if a.tsigName == "" {
			b, err := m.Pack()
			if err != nil {
				return nil, err
			}
			out = append(out, b)
			continue
		}
		m.SetTsig(a.tsigName, a.tsigAlg, 300, now)
		t := m.Extra[len(m.Extra)-1].(*dns.TSIG)
		t.Error = a.tsigErr
		if a.tsigErr == dns.RcodeBadTime {
			var b [6]byte
			binary.BigEndian.PutUint16(b[0:], uint16(uint64(now)>>32))
			binary.BigEndian.PutUint32(b[2:], uint32(now))
			t.OtherLen = 6
			t.OtherData = hexString(b[:])
		}
		secret := ""
		if a.key != nil {
			secret = a.key.Secret
		}
		b, newMAC, err := dns.TsigGenerate(m, secret, mac, i > 0)
		if err != nil {
			return nil, err
		}
		mac = newMAC
		out = append(out, b)
	}
	return out, nil
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 2*len(b))
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&0xF]
	}
	return string(out)
}

func reply(req *dns.Msg, rcode int) *dns.Msg {
	m := new(dns.Msg)
	m.SetRcode(req, rcode)
	return m
}

// request is one query as handle sees it, with what the zone
// configuration says about it (read under the server's lock).
type request struct {
	msg   *dns.Msg
	in    []byte // wire form, for the TSIG check
	src   netip.Addr
	tcp   bool
	name  string // the question's name, canonical
	qtype uint16
	xfr   bool      // AXFR or IXFR
	tsig  *dns.TSIG // nil: unsigned

	found   bool // a transfer zone matches (for AXFR/IXFR: the name is its apex)
	cfg     Zone
	history []version
	key     *Key // the key the TSIG names, when we have it (nil: unknown)
}

// handle decides the answer to req. Order of checks for AXFR/IXFR: zone
// configured, source allowed, TSIG present, TSIG valid.
func (s *Server) handle(req *dns.Msg, in []byte, src netip.Addr, tcp bool) *answer {
	a := &answer{kind: "query"}
	if len(req.Question) != 1 {
		return s.fail(a, req, dns.RcodeFormatError, "formerr")
	}
	r := s.newRequest(req, in, src, tcp)
	if r.xfr {
		a.kind = strings.ToLower(dns.TypeToString[r.qtype])
	}
	if r.found {
		a.zone = label(r.cfg.Apex)
	}
	if r.xfr {
		if reason := r.refusal(); reason != "" {
			return s.refuse(r, a, reason)
		}
	}
	if r.tsig != nil {
		if bad := s.checkTSIG(r, a); bad != nil {
			return bad
		}
	}
	if !r.xfr {
		if cat := s.catalogOf(r); cat != nil {
			return s.catalogQuery(r, a, cat)
		}
		if r.tsig == nil { // a catalog query while the catalog is being removed
			return s.refuse(r, a, "refused_not_configured")
		}
		return s.signedQuery(req, r.src, tcp, a)
	}
	if !tcp && r.qtype == dns.TypeAXFR {
		return s.refuse(r, a, "refused_udp")
	}
	return s.transfer(r, a)
}

// newRequest reads req's question (there is one) and finds its transfer
// zone and the key its TSIG names.
func (s *Server) newRequest(req *dns.Msg, in []byte, src netip.Addr, tcp bool) *request {
	q := req.Question[0]
	r := &request{msg: req, in: in, src: src.Unmap(), tcp: tcp, name: dns.CanonicalName(q.Name), qtype: q.Qtype, tsig: req.IsTsig()}
	r.xfr = q.Qtype == dns.TypeAXFR || q.Qtype == dns.TypeIXFR
	s.mu.RLock()
	defer s.mu.RUnlock()
	var zs *zoneState
	if r.xfr {
		zs = s.zones[r.name]
	} else {
		zs = s.zoneFor(r.name)
	}
	if zs != nil {
		r.found, r.cfg, r.history = true, zs.cfg, zs.history
	}
	if r.tsig != nil {
		r.key = s.keyFor(dns.CanonicalName(r.tsig.Hdr.Name), zs, r.xfr)
	}
	return r
}

// keyFor returns the key named kn: the zone's or, for a query that is not
// a transfer, any configured zone's (nil: none). Call it under s.mu.
func (s *Server) keyFor(kn string, zs *zoneState, isXfr bool) *Key {
	if zs != nil && zs.cfg.Key.Name == kn {
		k := zs.cfg.Key
		return &k
	}
	if isXfr {
		return nil
	}
	for _, z := range s.zones {
		if z.cfg.Key.Name == kn {
			k := z.cfg.Key
			return &k
		}
	}
	return nil
}

// refusal is why a transfer request is refused before its TSIG is checked
// ("" when it is not): zone not configured, source not allowed, no TSIG.
func (r *request) refusal() string {
	switch {
	case !r.found:
		return "refused_not_configured"
	case !allowed(r.src, r.cfg.Allow):
		return "refused_acl"
	case r.tsig == nil:
		return "refused_no_tsig"
	}
	return ""
}

// refuse answers REFUSED and counts reason; a refused transfer is logged
// (within the throttle's budget).
func (s *Server) refuse(r *request, a *answer, reason string) *answer {
	s.count(a.zone, a.kind, reason)
	if r.xfr {
		s.warn("refused", "zone transfer refused", "zone", r.name, "type", a.kind, "client", r.src.String(), "reason", reason)
	}
	a.msgs = []*dns.Msg{reply(r.msg, dns.RcodeRefused)}
	return a
}

// fail answers rcode without records and counts result.
func (s *Server) fail(a *answer, req *dns.Msg, rcode int, result string) *answer {
	s.count(a.zone, a.kind, result)
	a.msgs = []*dns.Msg{reply(req, rcode)}
	return a
}

// checkTSIG verifies the request's TSIG and sets a up to sign the answer
// with its key. It returns the NOTAUTH answer when the check fails, nil
// when it passes.
func (s *Server) checkTSIG(r *request, a *answer) *answer {
	tsig := r.tsig
	a.tsigName, a.tsigAlg = tsig.Hdr.Name, tsig.Algorithm
	if r.key == nil || dns.CanonicalName(tsig.Algorithm) != Algorithm {
		return s.notAuth(r, a, dns.RcodeBadKey, "badkey")
	}
	switch err := dns.TsigVerify(r.in, r.key.Secret, "", false); {
	case errors.Is(err, dns.ErrTime):
		a.key, a.reqMAC = r.key, tsig.MAC
		return s.notAuth(r, a, dns.RcodeBadTime, "badtime")
	case err != nil:
		return s.notAuth(r, a, dns.RcodeBadSig, "badsig")
	}
	a.key, a.reqMAC = r.key, tsig.MAC
	return nil
}

// notAuth answers NOTAUTH with the TSIG error code (BADKEY, BADSIG:
// unsigned; BADTIME: signed), counting and logging reason.
func (s *Server) notAuth(r *request, a *answer, code uint16, reason string) *answer {
	s.count(a.zone, a.kind, reason)
	s.warn("tsig", "TSIG check failed: answered NOTAUTH", "zone", r.name, "type", a.kind, "client", r.src.String(),
		"key", r.tsig.Hdr.Name, "error", dns.RcodeToString[int(code)])
	a.tsigErr = code
	a.msgs = []*dns.Msg{reply(r.msg, dns.RcodeNotAuth)}
	return a
}

// transfer answers an AXFR or IXFR that passed the checks from the
// current snapshot, and prepares the log line written once it is sent.
func (s *Server) transfer(r *request, a *answer) *answer {
	zd, ok := s.zoneData(r.cfg.Apex)
	if !ok {
		return s.fail(a, r.msg, dns.RcodeServerFailure, "error")
	}
	clientSerial := uint32(0)
	if r.qtype == dns.TypeIXFR {
		csoa := clientSOA(r.msg)
		if csoa == nil {
			return s.fail(a, r.msg, dns.RcodeFormatError, "formerr")
		}
		clientSerial = csoa.Serial
	}
	mode, rrs := r.records(zd, clientSerial)
	a.msgs = chunk(r.msg, rrs)
	s.count(a.zone, a.kind, mode)
	name, kind, src, key, cur := r.name, a.kind, r.src, r.tsig.Hdr.Name, zd.SOA.Serial
	a.logTransfer = func(messages int, d time.Duration) {
		s.log.Info("zone transfer", "zone", name, "type", kind, "mode", mode, "client", src.String(),
			"key", key, "serial", cur, "client_serial", clientSerial, "records", len(rrs),
			"messages", messages, "duration", d.Round(time.Microsecond))
	}
	return a
}

// clientSOA is the SOA an IXFR request carries in its authority section
// (the client's version; nil: none).
func clientSOA(req *dns.Msg) *dns.SOA {
	var csoa *dns.SOA
	for _, rr := range req.Ns {
		if soa, ok := rr.(*dns.SOA); ok {
			csoa = soa
		}
	}
	return csoa
}

// records is what a transfer of zd to a client at clientSerial (IXFR; 0
// for AXFR) carries, and its mode: the current SOA alone when the client
// is up to date or asks over UDP ("uptodate"), one condensed difference
// from a version in the history ("incremental"), else the whole zone
// ("full").
func (r *request) records(zd engine.ZoneData, clientSerial uint32) (mode string, rrs []dns.RR) {
	if r.qtype == dns.TypeIXFR {
		if UpToDate(clientSerial, zd.SOA.Serial) || !r.tcp {
			// Up to date, or over UDP: the current SOA alone (RFC 1995
			// section 2: "use TCP" when it is behind).
			return "uptodate", []dns.RR{zd.SOA}
		}
		for _, v := range r.history {
			if v.soa.Serial == clientSerial {
				return "incremental", ixfrDiff(v, zd)
			}
		}
	}
	return "full", FullZone(zd)
}

// signedQuery answers an ordinary query that carried a valid TSIG (a
// secondary's SOA refresh query) through the snapshot, for signing.
func (s *Server) signedQuery(req *dns.Msg, src netip.Addr, tcp bool, a *answer) *answer {
	snap := s.src.Load()
	if snap == nil {
		return s.fail(a, req, dns.RcodeServerFailure, "error")
	}
	plain := req.Copy()
	plain.Extra = plain.Extra[:len(plain.Extra)-1]
	var rep engine.Reply
	out := snap.Respond(plain, src, s.opts.UDPPayloadSize, &rep)
	m := rep.Msg.Copy()
	if len(m.Question) == 1 {
		m.Question[0].Name = req.Question[0].Name
	}
	if !tcp {
		const tsigRoom = 100 // TSIG RR with a SHA-256 MAC and a short key name
		if m.Len()+tsigRoom > out.MaxSize {
			m.Truncate(out.MaxSize - tsigRoom)
		}
	}
	s.count(a.zone, a.kind, "ok")
	a.msgs = []*dns.Msg{m}
	return a
}

// zoneFor returns the transfer zone containing name (longest match).
func (s *Server) zoneFor(name string) *zoneState {
	for off, end := 0, false; !end; off, end = dns.NextLabel(name, off) {
		if z, ok := s.zones[name[off:]]; ok {
			return z
		}
	}
	return nil
}

// warn writes a WARN line of kind unless the throttle holds it back; the
// first line written after some were held back says how many
// ("suppressed"). For lines that spoofed packets can cause.
func (s *Server) warn(kind, msg string, args ...any) {
	ok, suppressed := s.logs.Allow(kind)
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	s.log.Warn(msg, args...)
}

func (s *Server) count(zone, kind, result string) {
	s.m.requests.WithLabelValues(zone, kind, result).Inc()
}

func allowed(src netip.Addr, allow []netip.Prefix) bool {
	for _, p := range allow {
		if p.Contains(src) {
			return true
		}
	}
	return false
}

// FullZone is the whole zone zd in AXFR form: its SOA, every record, and
// the SOA again (RFC 5936 section 2.2). Server transfers it, and the
// CoreDNS plugin hands it to CoreDNS's transfer plugin: both front ends
// transfer the same records with the snapshot's serial.
func FullZone(zd engine.ZoneData) []dns.RR {
	rrs := make([]dns.RR, 0, len(zd.Records)+2)
	rrs = append(rrs, zd.SOA)
	rrs = append(rrs, zd.Records...)
	return append(rrs, zd.SOA)
}

// ixfrDiff is the IXFR answer from version old to the current content: one
// condensed difference sequence (RFC 1995 section 4).
func ixfrDiff(old version, cur engine.ZoneData) []dns.RR {
	oldSet := make(map[string]bool, len(old.records))
	for _, rr := range old.records {
		oldSet[rr.String()] = true
	}
	curSet := make(map[string]bool, len(cur.Records))
	for _, rr := range cur.Records {
		curSet[rr.String()] = true
	}
	out := []dns.RR{cur.SOA, old.soa}
	for _, rr := range old.records {
		if !curSet[rr.String()] {
			out = append(out, rr)
		}
	}
	out = append(out, cur.SOA)
	for _, rr := range cur.Records {
		if !oldSet[rr.String()] {
			out = append(out, rr)
		}
	}
	return append(out, cur.SOA)
}

// maxChunk bounds the records of one transfer message (uncompressed bytes),
// far below the 64 KiB of a TCP message.
const maxChunk = 16000

func chunk(req *dns.Msg, rrs []dns.RR) []*dns.Msg {
	newMsg := func() *dns.Msg {
		m := new(dns.Msg)
		m.SetReply(req)
		m.Authoritative = true
		m.Compress = true
		return m
	}
	var out []*dns.Msg
	m, size := newMsg(), 0
	for _, rr := range rrs {
		l := dns.Len(rr)
		if len(m.Answer) > 0 && size+l > maxChunk {
			out = append(out, m)
			m, size = newMsg(), 0
		}
		m.Answer = append(m.Answer, rr)
		size += l
	}
	return append(out, m)
}
