package dnsserver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime/debug"
	"slices"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/engine"
)

// worker holds the per-goroutine state of answering: reused messages and
// buffers, and a private cache of metric series. A worker is used by one
// goroutine at a time.
type worker struct {
	s      *Server
	req    dns.Msg
	rep    engine.Reply
	out    []byte
	frame  []byte
	cc     *counterCache
	udpDur prometheus.Observer
	tcpDur prometheus.Observer
	slips  uint32 // limited responses since the last slip (RRL)

	// The fast path (fastpath.go): qname holds the question name parseFast
	// read (presentation form), reqOpt the OPT record it read; general
	// turns the fast path off, so that tests can compare both ways.
	qname   [256]byte
	reqOpt  dns.OPT
	general bool

	// The RRL identity of the last response serve built: its class (for
	// the metrics), its bucket kind and the name the bucket is keyed on
	// (see rrlBucket).
	rrlClass  rrlClass
	rrlBucket rrlBucket
	rrlName   string
	// rrlLimited counts limited responses by class; rrlExempt counts
	// responses to sources in RRL.Exempt.
	rrlLimited [rrlClasses]prometheus.Counter
	rrlExempt  prometheus.Counter

	signLimitedUDP, signLimitedTCP prometheus.Counter

	// qopt is the OPT record of the query serve read (nil: none, or not
	// read); ede the Extended DNS Error of the reply it built, counted in
	// edeSent once sent (see ede.go).
	qopt    *dns.OPT
	ede     engine.ExtendedError
	edeSent [engine.EDECount]prometheus.Counter
}

func (s *Server) newWorker() *worker {
	w := &worker{
		s:      s,
		out:    make([]byte, dns.MaxMsgSize),
		frame:  make([]byte, dns.MaxMsgSize+2),
		cc:     newCounterCache(s.m),
		udpDur: s.m.Duration.WithLabelValues("udp"),
		tcpDur: s.m.Duration.WithLabelValues("tcp"),

		signLimitedUDP: s.m.SignLimited.WithLabelValues("udp"),
		signLimitedTCP: s.m.SignLimited.WithLabelValues("tcp"),
		rrlExempt:      s.m.RRLExempt,
		edeSent:        edeCounters(s.m.EDE),
	}
	for c := range rrlClasses {
		w.rrlLimited[c] = s.m.RRLLimited.WithLabelValues(c.String())
	}
	return w
}

const headerLen = 12

// Transfers answers zone transfers (AXFR, IXFR) and TSIG-signed queries;
// internal/xfr implements it.
type Transfers interface {
	// Wants reports whether req is for it; called for every query, cheap.
	Wants(req *dns.Msg) bool
	// Answer returns the one wire response to req (wire form in).
	Answer(req *dns.Msg, in []byte, src netip.Addr, tcp bool) []byte
	// ServeTCP answers an AXFR/IXFR with as many framed messages as it
	// takes; false for other queries. An error closes the connection.
	ServeTCP(c net.Conn, in []byte, src netip.Addr) (bool, error)
}

// errTransferPanic closes a TCP connection whose transfer panicked.
var errTransferPanic = errors.New("dns transfer panicked")

// serveTransferTCP is t.ServeTCP (an AXFR or IXFR over TCP, answered
// outside serve) under the same recover as serve: a panic is logged with
// its stack and counted in meridian_dns_panics_total, and closes the
// connection (a transfer cut short is retried by the secondary), instead
// of ending the process.
func (s *Server) serveTransferTCP(t Transfers, c net.Conn, in []byte, src netip.Addr) (handled bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			s.m.Panics.Inc()
			s.log.Error("dns transfer panic: connection closed", "client", src.String(), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			handled, err = true, errTransferPanic
		}
	}()
	return t.ServeTCP(c, in, src)
}

// serveUDP is serve for a UDP query received at now, with response rate
// limiting: the response is built first, because its identity (bucket kind
// and name) decides its bucket and its size its cost; a limited response is
// not sent at all (dropped), or replaced by an empty truncated reply
// (slipped, never larger than the query) so that a real client retries
// over TCP.
func (w *worker) serveUDP(in []byte, src netip.Addr, now time.Time) []byte {
	resp := w.serve(in, src, false)
	l := w.s.rrl
	if l == nil || resp == nil {
		if resp != nil {
			w.countEDE()
		}
		return resp
	}
	switch l.check(src, rrlIdentity(w.rrlBucket, w.rrlName), len(resp), now, &w.slips) {
	case rrlExempt:
		w.rrlExempt.Inc()
	case rrlDrop:
		w.s.m.RRLDropped.Inc()
		w.rrlLimited[w.rrlClass].Inc()
		return nil
	case rrlSlip:
		w.rrlLimited[w.rrlClass].Inc()
		if resp := slipReply(w.out, in); resp != nil {
			w.s.m.RRLSlipped.Inc()
			w.ede = engine.EDENone
			resp = w.withEDE(resp, engine.EDERateLimited)
			w.countEDE()
			return resp
		}
		w.s.m.RRLDropped.Inc()
		return nil
	}
	w.countEDE()
	return resp
}

// classify sets the RRL identity of the response to q (see rrlBucket):
// zone is the apex of the zone that answered, answered whether the answer
// section has records, ns the authority section.
func (w *worker) classify(rcode int, zone string, answered bool, ns []dns.RR) {
	w.unclassify()
	switch {
	case rcode == dns.RcodeNameError:
		w.rrlClass, w.rrlBucket, w.rrlName = rrlNXDomain, rrlByZone, zone
	case rcode != dns.RcodeSuccess || len(w.req.Question) == 0:
	case answered:
		w.rrlClass, w.rrlBucket, w.rrlName = rrlAnswer, rrlByName, w.req.Question[0].Name
	case compactDenial(ns):
		w.rrlClass, w.rrlBucket, w.rrlName = rrlNXDomain, rrlByZone, zone
	default:
		w.rrlClass, w.rrlBucket, w.rrlName = rrlNoData, rrlByName, w.req.Question[0].Name
	}
}

// unclassify sets the RRL identity to an error (until an answer says
// otherwise).
func (w *worker) unclassify() {
	w.rrlClass, w.rrlBucket, w.rrlName = rrlError, rrlByError, ""
}

// compactDenial reports whether an authority section denies a name that
// does not exist with a compact denial (RFC 9824): NOERROR on the wire,
// but its NSEC lists NXNAME.
func compactDenial(ns []dns.RR) bool {
	for _, rr := range ns {
		if n, ok := rr.(*dns.NSEC); ok && slices.Contains(n.TypeBitMap, dns.TypeNXNAME) {
			return true
		}
	}
	return false
}

// serve answers one wire-format query and returns the wire response, or nil
// when nothing should be sent. The returned slice is valid until the next
// call. A panic while answering is recovered and answered SERVFAIL.
func (w *worker) serve(in []byte, src netip.Addr, tcp bool) (resp []byte) {
	if len(in) < headerLen || in[2]&0x80 != 0 {
		return nil // too short for a header, or a response (never answer those)
	}
	w.unclassify()
	w.qopt, w.ede = nil, engine.EDENone
	defer func() {
		if v := recover(); v != nil {
			w.s.recoverPanic(v)
			w.unclassify()
			w.qopt, w.ede = nil, engine.EDENone
			resp = w.headerOnly(in, dns.RcodeServerFailure)
		}
	}()
	if w.general || !w.parseFast(in) {
		if err := w.req.Unpack(in); err != nil {
			w.s.m.Malformed.Inc()
			return w.headerOnly(in, dns.RcodeFormatError)
		}
	}
	w.qopt = w.req.IsEdns0()
	if t := w.s.cfg.Transfers; t != nil && t.Wants(&w.req) {
		return w.transfer(t, in, src, tcp)
	}
	snap := w.s.src.Load()
	if snap == nil {
		return w.headerOnly(in, dns.RcodeServerFailure)
	}
	gate := w.s.signUDP
	if tcp {
		gate = w.s.signTCP
	}
	out := snap.RespondGated(&w.req, src, w.s.cfg.UDPPayloadSize, gate, &w.rep)
	if out.ECSIgnored {
		w.s.m.ECSIgnored.Inc()
	}
	if out.SignLimited {
		if !tcp {
			return w.signLimitedUDPReply(in)
		}
		w.signLimitedTCP.Inc() // and answered with the SERVFAIL Respond built
	}
	m := &w.rep.Msg
	w.classify(out.Rcode, out.Zone, len(m.Answer) > 0, m.Ns)
	wire := w.pack(m, out.MaxSize, tcp)
	restoreQuestionCase(wire, in)
	var qtype uint16
	if len(w.req.Question) > 0 {
		qtype = w.req.Question[0].Qtype
	}
	w.cc.query(queryKey{zone: out.Zone, strategy: out.Strategy, qtype: qtype, rcode: out.Rcode}).Inc()
	if out.FailOpen {
		w.cc.failOpen(out.Zone).Inc()
	}
	w.ede = out.EDE
	if tcp {
		w.countEDE()
	}
	return wire
}

// transfer hands the query to t (a zone transfer or a TSIG-signed query)
// and sets the RRL identity from its response.
func (w *worker) transfer(t Transfers, in []byte, src netip.Addr, tcp bool) []byte {
	resp := t.Answer(&w.req, in, src, tcp)
	if len(resp) >= headerLen {
		w.classify(int(resp[3]&0xF), "", binary.BigEndian.Uint16(resp[6:]) > 0, nil)
	}
	resp = w.transferEDE(resp)
	if tcp {
		w.countEDE()
	}
	return resp
}

// signLimitedUDPReply answers a UDP query whose denial the signing limit
// refused. The source may be spoofed: it gets an empty truncated reply, so
// that a real resolver retries over TCP (its own bucket, and an address
// that a handshake has proved).
func (w *worker) signLimitedUDPReply(in []byte) []byte {
	w.signLimitedUDP.Inc()
	if resp := slipReply(w.out, in); resp != nil {
		return w.withEDE(resp, engine.EDESignLimited)
	}
	return w.headerOnly(in, dns.RcodeServerFailure)
}

// pack writes the response m into w.out: the fast way when it can (see
// packFast), else with miekg/dns, truncated over UDP to maxSize, the
// largest response the client accepts. A packing error panics (serve
// recovers and answers SERVFAIL).
func (w *worker) pack(m *dns.Msg, maxSize int, tcp bool) []byte {
	limit := len(w.out)
	if !tcp {
		limit = maxSize
	}
	wire, ok := []byte(nil), false
	if !w.general {
		wire, ok = packFast(w.out, m, limit)
	}
	var err error
	if !ok {
		if wire, err = m.PackBuffer(w.out); err != nil {
			panic(err)
		}
	}
	if !tcp && len(wire) > maxSize {
		m.Truncate(maxSize)
		if wire, err = m.PackBuffer(w.out); err != nil {
			panic(err)
		}
		w.s.m.Truncated.Inc()
	}
	return wire
}

// headerOnly answers with the request's ID and opcode, the given rcode and
// no sections (used when the query cannot be parsed or answered).
func (w *worker) headerOnly(in []byte, rcode int) []byte {
	out := w.out[:headerLen]
	copy(out, in[:headerLen])
	out[2] = 0x80 | in[2]&0x79 // QR, keep opcode and RD
	out[3] = byte(rcode & 0xF)
	clear(out[4:])
	return out
}

// restoreQuestionCase copies the query's name, as the client spelled it,
// over the question of the response. Respond puts our canonical spelling
// there so that answer owner names compress against it; after this copy
// those pointers resolve to the client's spelling, which is what DNS 0x20
// resolvers and case-sensitive clients expect.
func restoreQuestionCase(resp, req []byte) {
	if len(resp) <= headerLen || len(req) <= headerLen || resp[5] == 0 || req[5] == 0 {
		return
	}
	i := headerLen
	for {
		if i >= len(req) || i >= len(resp) {
			return
		}
		l := int(req[i])
		if l == 0 {
			break
		}
		if l&0xC0 != 0 || i+1+l > len(req) || i+1+l > len(resp) || resp[i] != req[i] {
			return // compressed or differently shaped: leave it alone
		}
		i += 1 + l
	}
	end := i + 1
	if end > len(resp) {
		return
	}
	for j := headerLen; j < end; j++ {
		a, b := resp[j], req[j]
		if a != b && a|0x20 != b|0x20 {
			return
		}
	}
	copy(resp[headerLen:end], req[headerLen:end])
}
