package dnsserver

import (
	"encoding/binary"
	"net"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/engine"
)

// Extended DNS Errors (RFC 8914) of the embedded server. The EDE of an
// answer (fail-open, REFUSED outside our zones, the signing limit over TCP)
// is decided and added by engine.RespondGated, as for the CoreDNS plugin;
// the replies this server writes on the wire itself get theirs here, with
// the values of engine.ExtendedError: the empty truncated replies of RRL
// (EDERateLimited) and of the signing limit over UDP (EDESignLimited), and
// the REFUSED answers to zone transfers that internal/xfr builds without
// an OPT record (EDETransferRefused). Only a reply to a query that carried
// EDNS gets one.

// newEDEMetric creates meridian_dns_extended_errors_total with every
// series at 0.
func newEDEMetric(f promauto.Factory) *prometheus.CounterVec {
	v := f.NewCounterVec(prometheus.CounterOpts{
		Name: "meridian_dns_extended_errors_total",
		Help: "Replies sent with an Extended DNS Error (RFC 8914; only to queries with EDNS), by INFO-CODE and reason: fail_open, not_authoritative, other_class, transfer_refused, rate_limited, sign_limited.",
	}, []string{"code", "reason"})
	for e := engine.ExtendedError(1); int(e) < engine.EDECount; e++ {
		v.WithLabelValues(e.CodeLabel(), e.Reason())
	}
	return v
}

// edeCounters resolves the series of every ExtendedError once.
func edeCounters(v *prometheus.CounterVec) (c [engine.EDECount]prometheus.Counter) {
	for e := engine.ExtendedError(1); int(e) < engine.EDECount; e++ {
		c[e] = v.WithLabelValues(e.CodeLabel(), e.Reason())
	}
	return c
}

// countEDE counts the EDE of the reply serve built (w.ede), once it is
// sent.
func (w *worker) countEDE() {
	if w.ede != engine.EDENone {
		w.edeSent[w.ede].Inc()
	}
}

// withEDE appends e to the wire reply resp (in w.out, no additional
// records) when the query carried EDNS, and records it in w.ede.
func (w *worker) withEDE(resp []byte, e engine.ExtendedError) []byte {
	if w.qopt == nil {
		return resp
	}
	w.ede = e
	return appendEDE(resp, uint16(w.s.cfg.UDPPayloadSize), w.qopt.Do(), e)
}

// appendEDE appends to the wire message resp, which must have no
// additional record, an OPT record advertising udpSize, with the DO bit
// when do is set and the EDE option of e, and counts it in ARCOUNT. It
// returns resp unchanged when resp has additional records (they may be an
// OPT or a TSIG, which must stay last) or no header. resp's rcode must not
// need the OPT's extended bits (it is below 16 on the wire).
func appendEDE(resp []byte, udpSize uint16, do bool, e engine.ExtendedError) []byte {
	if len(resp) < headerLen || binary.BigEndian.Uint16(resp[10:]) != 0 {
		return resp
	}
	text := e.Text()
	var ttl uint32
	if do {
		ttl = 0x8000 // the DO bit; extended rcode and version 0
	}
	resp = append(resp, 0) // root owner
	resp = binary.BigEndian.AppendUint16(resp, dns.TypeOPT)
	resp = binary.BigEndian.AppendUint16(resp, udpSize)
	resp = binary.BigEndian.AppendUint32(resp, ttl)
	resp = binary.BigEndian.AppendUint16(resp, uint16(4+2+len(text))) // RDLENGTH
	resp = binary.BigEndian.AppendUint16(resp, dns.EDNS0EDE)
	resp = binary.BigEndian.AppendUint16(resp, uint16(2+len(text)))
	resp = binary.BigEndian.AppendUint16(resp, e.Code())
	resp = append(resp, text...)
	binary.BigEndian.PutUint16(resp[10:], 1)
	return resp
}

// refusedBare reports whether the wire reply resp is REFUSED with no
// additional record: the refusals internal/xfr sends.
func refusedBare(resp []byte) bool {
	return len(resp) >= headerLen && int(resp[3]&0xF) == dns.RcodeRefused && binary.BigEndian.Uint16(resp[10:]) == 0
}

// transferEDE adds the refusal's EDE (engine.RefusalOf) to a REFUSED answer
// over UDP (resp, from internal/xfr) when the query (w.req) carried EDNS.
func (w *worker) transferEDE(resp []byte) []byte {
	if w.qopt == nil || !refusedBare(resp) || len(resp) > len(w.out) {
		return resp
	}
	var qtype uint16
	if len(w.req.Question) > 0 {
		qtype = w.req.Question[0].Qtype
	}
	return w.withEDE(append(w.out[:0], resp...), engine.RefusalOf(qtype))
}

// transferConn is the connection a TCP transfer is written to: it adds
// the refusal's EDE (engine.RefusalOf) to a REFUSED answer (the first message written for
// the query in, one frame), when the query carried EDNS. One per TCP
// connection; set in before each query.
type transferConn struct {
	net.Conn
	w       *worker
	in      []byte
	written bool
}

// query starts a new query in on the connection.
func (tc *transferConn) query(in []byte) { tc.in, tc.written = in, false }

// Write implements net.Conn.
func (tc *transferConn) Write(frame []byte) (int, error) {
	first := !tc.written
	tc.written = true
	if !first || len(frame) < 2 || int(binary.BigEndian.Uint16(frame)) != len(frame)-2 || !refusedBare(frame[2:]) {
		return tc.Conn.Write(frame)
	}
	var req dns.Msg
	opt := (*dns.OPT)(nil)
	if req.Unpack(tc.in) == nil {
		opt = req.IsEdns0()
	}
	if opt == nil || len(req.Question) == 0 {
		return tc.Conn.Write(frame)
	}
	e := engine.RefusalOf(req.Question[0].Qtype)
	out := appendEDE(append([]byte(nil), frame[2:]...), uint16(tc.w.s.cfg.UDPPayloadSize), opt.Do(), e)
	out = append(binary.BigEndian.AppendUint16(nil, uint16(len(out))), out...)
	if _, err := tc.Conn.Write(out); err != nil {
		return 0, err
	}
	tc.w.edeSent[e].Inc()
	return len(frame), nil
}
