package dnsserver

import (
	"encoding/binary"
	"net"
	"strings"
	"unsafe"

	"github.com/miekg/dns"
)

// The fast path of the embedded server: a wire parser for the common query
// and a packer for the common answer, so that answering it neither
// allocates nor runs miekg/dns's general (un)packing. It changes only the
// translation between wire and dns.Msg: the answer itself is still decided
// by engine.RespondGated, as for every other query and for the CoreDNS
// plugin. Whatever these two functions do not fully understand they refuse
// (false), and the query goes the general way (dns.Msg.Unpack,
// dns.Msg.PackBuffer, Truncate). TestFastPathAgreesWithGeneralPath and
// FuzzServe check that both ways give the same bytes.

// parseFast fills w.req from in when in is the common query: a header
// with QR clear, one question whose name is uncompressed and spelled with
// letters, digits, '-' and '_' only, no answer or authority records, and
// either no additional record or one OPT record without options, ending
// exactly at the end of in, for a type other than AXFR and IXFR (those go
// to internal/xfr). It reports false, with w.req undefined, for any other
// packet.
//
// The question name is a string over the worker's own buffer (no
// allocation): it is valid until the next query of this worker, which is
// as long as anything of a query is kept (the RRL keys on a hash of it).
// With the DO bit the name is copied to the heap, because signing may keep
// it in the signer's cache.
func (w *worker) parseFast(in []byte) bool {
	if len(in) < headerLen+5 {
		return false
	}
	bits := binary.BigEndian.Uint16(in[2:])
	if bits&0x8000 != 0 || binary.BigEndian.Uint16(in[4:]) != 1 || binary.BigEndian.Uint16(in[6:]) != 0 ||
		binary.BigEndian.Uint16(in[8:]) != 0 {
		return false
	}
	arcount := binary.BigEndian.Uint16(in[10:])
	if arcount > 1 {
		return false
	}
	off, n, ok := readPlainName(in, &w.qname)
	if !ok || off+4 > len(in) {
		return false // not a plain name, or no type and class
	}
	qtype := binary.BigEndian.Uint16(in[off:])
	qclass := binary.BigEndian.Uint16(in[off+2:])
	if qtype == dns.TypeAXFR || qtype == dns.TypeIXFR {
		return false // for internal/xfr, which may keep the name
	}
	off += 4
	req := &w.req
	*req = dns.Msg{Question: req.Question[:0], Extra: req.Extra[:0]}
	if arcount == 1 {
		// An OPT record without options: root owner, type, class (the
		// UDP size), TTL (extended rcode, version, flags), RDLENGTH 0.
		if off+11 != len(in) || in[off] != 0 || binary.BigEndian.Uint16(in[off+1:]) != dns.TypeOPT ||
			binary.BigEndian.Uint16(in[off+9:]) != 0 {
			return false
		}
		w.reqOpt = dns.OPT{Hdr: dns.RR_Header{
			Name:   ".",
			Rrtype: dns.TypeOPT,
			Class:  binary.BigEndian.Uint16(in[off+3:]),
			Ttl:    binary.BigEndian.Uint32(in[off+5:]),
		}}
		req.Extra = append(req.Extra, &w.reqOpt)
	} else if off != len(in) {
		return false
	}
	req.Id = binary.BigEndian.Uint16(in)
	setHeaderBits(req, bits)
	name := unsafe.String(&w.qname[0], n)
	if arcount == 1 {
		req.Rcode |= int(w.reqOpt.ExtendedRcode())
		if w.reqOpt.Do() {
			name = strings.Clone(name)
		}
	}
	req.Question = append(req.Question, dns.Question{Name: name, Qtype: qtype, Qclass: qclass})
	return true
}

// readPlainName reads the question name of the query in (at headerLen)
// into qname in presentation form, and returns the offset after it and
// the name's length in qname. It reports false for a name that is not
// plain: compressed, with an extended label type or a byte that needs
// escaping (see plainLabelByte), the root name, or longer than 255 octets.
func readPlainName(in []byte, qname *[256]byte) (off, n int, ok bool) {
	off = headerLen
	for {
		if off >= len(in) {
			return 0, 0, false
		}
		l := int(in[off])
		off++
		if l == 0 {
			break
		}
		if l > 63 || off+l > len(in) || n+l+1 > len(qname) {
			return 0, 0, false // a pointer, an extended label type, or too long
		}
		for _, c := range in[off : off+l] {
			if !plainLabelByte(c) {
				return 0, 0, false // needs escaping in presentation form
			}
		}
		n += copy(qname[n:], in[off:off+l])
		qname[n] = '.'
		n++
		off += l
	}
	if n == 0 || off-headerLen > 255 {
		return 0, 0, false // the root name, or a name longer than 255 octets
	}
	return off, n, true
}

// setHeaderBits sets the opcode, flags and rcode of req from the second
// 16-bit word of a message header.
func setHeaderBits(req *dns.Msg, bits uint16) {
	req.Opcode, req.Rcode = int(bits>>11)&0xF, int(bits&0xF)
	req.Authoritative, req.Truncated = bits&0x0400 != 0, bits&0x0200 != 0
	req.RecursionDesired, req.RecursionAvailable = bits&0x0100 != 0, bits&0x0080 != 0
	req.Zero, req.AuthenticatedData, req.CheckingDisabled = bits&0x0040 != 0, bits&0x0020 != 0, bits&0x0010 != 0
}

// plainLabelByte reports whether c stands for itself in a name's
// presentation form (miekg/dns escapes everything else).
func plainLabelByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// packFast writes m into buf as dns.Msg.PackBuffer (with m.Compress) would,
// when m is the common answer: one question whose name is plain (see
// plainLabelByte); answer records that are all A or AAAA owned by exactly
// the question's name (so each owner compresses to a pointer to it); no
// authority records; no additional record other than an OPT without
// options or with one Extended DNS Error; an rcode without extended bits. It reports false for any other
// message, and when the packed message would be longer than limit (the
// caller truncates the general way). Like PackBuffer, it sets the OPT's
// extended rcode.
func packFast(buf []byte, m *dns.Msg, limit int) ([]byte, bool) {
	size, opt, ok := fastSize(m)
	if !ok {
		return nil, false
	}
	q := &m.Question[0]
	if size > limit || size > len(buf) || len(q.Name) < 2 || len(q.Name) > 255 {
		return nil, false
	}
	out := buf[:size]
	packHeader(out, m)
	off, ok := packPlainName(out, headerLen, q.Name)
	if !ok {
		return nil, false
	}
	binary.BigEndian.PutUint16(out[off:], q.Qtype)
	binary.BigEndian.PutUint16(out[off+2:], q.Qclass)
	off += 4
	for _, rr := range m.Answer {
		switch rr := rr.(type) {
		case *dns.A:
			off = packRRHeader(out, off, &rr.Hdr, net.IPv4len)
			off += copy(out[off:], rr.A.To4())
		case *dns.AAAA:
			off = packRRHeader(out, off, &rr.Hdr, net.IPv6len)
			off += copy(out[off:], rr.AAAA)
		}
	}
	if opt != nil {
		off = packFastOPT(out, off, opt, m.Rcode)
	}
	if off != size {
		return nil, false // cannot happen: the sizes above are the packing's
	}
	return out, true
}

// fastSize returns the packed size of m and its OPT record (nil: none)
// when m has the shape packFast packs; it reports false otherwise. The
// question name is checked when it is packed.
func fastSize(m *dns.Msg) (size int, opt *dns.OPT, ok bool) {
	if len(m.Question) != 1 || len(m.Ns) != 0 || len(m.Extra) > 1 || m.Rcode < 0 || m.Rcode > 0xF ||
		(len(m.Answer) > 0 && !m.Compress) {
		return 0, nil, false
	}
	if len(m.Extra) == 1 {
		o, ok := m.Extra[0].(*dns.OPT)
		if !ok || o.Hdr.Name != "." {
			return 0, nil, false
		}
		if size, ok = fastOPTSize(o); !ok {
			return 0, nil, false
		}
		opt = o
	}
	q := &m.Question[0]
	size += headerLen + len(q.Name) + 1 + 4 // a plain name of n characters packs into n+1 octets
	for _, rr := range m.Answer {
		switch rr := rr.(type) {
		case *dns.A:
			if rr.Hdr.Name != q.Name || rr.Hdr.Rrtype != dns.TypeA || rr.A.To4() == nil {
				return 0, nil, false
			}
			size += 16
		case *dns.AAAA:
			if rr.Hdr.Name != q.Name || rr.Hdr.Rrtype != dns.TypeAAAA || len(rr.AAAA) != net.IPv6len {
				return 0, nil, false
			}
			size += 28
		default:
			return 0, nil, false
		}
	}
	return size, opt, true
}

// packHeader writes the header of m, with one question, its answers and
// at most one additional record, into out.
func packHeader(out []byte, m *dns.Msg) {
	bits := uint16(m.Opcode)<<11 | uint16(m.Rcode) |
		flag(m.Response, 0x8000) | flag(m.Authoritative, 0x0400) | flag(m.Truncated, 0x0200) |
		flag(m.RecursionDesired, 0x0100) | flag(m.RecursionAvailable, 0x0080) | flag(m.Zero, 0x0040) |
		flag(m.AuthenticatedData, 0x0020) | flag(m.CheckingDisabled, 0x0010)
	binary.BigEndian.PutUint16(out, m.Id)
	binary.BigEndian.PutUint16(out[2:], bits)
	binary.BigEndian.PutUint16(out[4:], 1)
	binary.BigEndian.PutUint16(out[6:], uint16(len(m.Answer)))
	binary.BigEndian.PutUint16(out[8:], 0)
	binary.BigEndian.PutUint16(out[10:], uint16(len(m.Extra)))
}

// flag is bit when set, else 0: a header flag's bit.
func flag(set bool, bit uint16) uint16 {
	if set {
		return bit
	}
	return 0
}

// packPlainName writes the plain name (see plainLabelByte) with a trailing
// dot into out at off, as labels each behind its length, and returns the
// offset after it. It reports false for any other name.
func packPlainName(out []byte, off int, name string) (int, bool) {
	if name[len(name)-1] != '.' {
		return 0, false
	}
	start := 0
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '.' {
			if !plainLabelByte(c) {
				return 0, false
			}
			continue
		}
		l := i - start
		if l == 0 || l > 63 {
			return 0, false
		}
		out[off] = byte(l)
		off += 1 + copy(out[off+1:], name[start:i])
		start = i + 1
	}
	out[off] = 0
	return off + 1, true
}

// packRRHeader writes the header of an answer owned by the question's name
// (a pointer to it) with RDLENGTH rdlen at out[off:], and returns the
// offset of the RDATA.
func packRRHeader(out []byte, off int, h *dns.RR_Header, rdlen uint16) int {
	binary.BigEndian.PutUint16(out[off:], 0xC000|headerLen)
	binary.BigEndian.PutUint16(out[off+2:], h.Rrtype)
	binary.BigEndian.PutUint16(out[off+4:], h.Class)
	binary.BigEndian.PutUint32(out[off+6:], h.Ttl)
	binary.BigEndian.PutUint16(out[off+10:], rdlen)
	return off + 12
}

// fastOPTSize returns the packed size of the OPT record o when packFast
// packs it: no options, or one Extended DNS Error (engine.ExtendedError).
func fastOPTSize(o *dns.OPT) (int, bool) {
	switch len(o.Option) {
	case 0:
		return 11, true
	case 1:
		if e, ok := o.Option[0].(*dns.EDNS0_EDE); ok && len(e.ExtraText) <= 512 {
			return 11 + 6 + len(e.ExtraText), true
		}
	}
	return 0, false
}

// packFastOPT writes the OPT record opt (see fastOPTSize) of a message
// with rcode at out[off:], setting its extended rcode as PackBuffer does,
// and returns the offset after it.
func packFastOPT(out []byte, off int, opt *dns.OPT, rcode int) int {
	opt.SetExtendedRcode(uint16(rcode))
	out[off] = 0
	binary.BigEndian.PutUint16(out[off+1:], dns.TypeOPT)
	binary.BigEndian.PutUint16(out[off+3:], opt.Hdr.Class)
	binary.BigEndian.PutUint32(out[off+5:], opt.Hdr.Ttl)
	rdlen := 0
	if len(opt.Option) == 1 {
		e := opt.Option[0].(*dns.EDNS0_EDE)
		rdlen = 6 + len(e.ExtraText)
		binary.BigEndian.PutUint16(out[off+11:], dns.EDNS0EDE)
		binary.BigEndian.PutUint16(out[off+13:], uint16(2+len(e.ExtraText)))
		binary.BigEndian.PutUint16(out[off+15:], e.InfoCode)
		copy(out[off+17:], e.ExtraText)
	}
	binary.BigEndian.PutUint16(out[off+9:], uint16(rdlen))
	return off + 11 + rdlen
}
