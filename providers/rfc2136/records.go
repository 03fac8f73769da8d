package rfc2136

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/xfr"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// Records implements providers.Provider: every record of zone, read by
// AXFR with TSIG, as plan records (one per name and type, values in the
// plan's forms: addresses canonical, names lower case with the dot, TXT
// strings joined, DS as plan.CanonicalDS).
func (p *Provider) Records(ctx context.Context, zone string) ([]plan.Record, error) {
	zone = model.CanonicalName(zone)
	key := p.currentKey()
	var rrs []dns.RR
	_, err := p.caller.Do(ctx, opTransfer, func(ctx context.Context) error {
		got, err := p.transfer(ctx, zone, key)
		if lbl := rcodeLabel(err); lbl != "none" { // "none": no answer, counted by the API metrics
			p.m.responses.WithLabelValues(zone, opTransfer, lbl).Inc()
		}
		if err == nil {
			rrs = got
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("rfc2136 zone %s: read by AXFR from %s: %w", zone, p.opts.Server, err)
	}
	recs, live, err := readSets(zone, rrs)
	if err != nil {
		return nil, fmt.Errorf("rfc2136 zone %s: AXFR from %s: %w", zone, p.opts.Server, err)
	}
	p.m.records.WithLabelValues(zone).Set(float64(len(rrs)))
	p.mu.Lock()
	p.live[zone] = live
	p.mu.Unlock()
	return recs, nil
}

// transfer runs one AXFR of zone signed with key and returns its records
// (the SOA included, once). It ends when the primary ends the transfer,
// a read times out (RequestTimeout per message) or ctx ends (the
// connection is closed then).
func (p *Provider) transfer(ctx context.Context, zone string, key xfr.Key) ([]dns.RR, error) {
	sg, err := newSigner(key)
	if err != nil {
		return nil, fmt.Errorf("tsig key: %w", err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", p.opts.Server)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	tr := &dns.Transfer{Conn: &dns.Conn{Conn: conn}, TsigProvider: sg, ReadTimeout: p.opts.RequestTimeout, WriteTimeout: p.opts.RequestTimeout}
	q := new(dns.Msg)
	q.SetAxfr(zone)
	q.SetTsig(key.Name, key.Algorithm, 300, time.Now().Unix())
	ch, err := tr.In(q, p.opts.Server)
	if err != nil {
		conn.Close()
		return nil, err
	}
	var out []dns.RR
	var ferr error
	msgs := 0
	for env := range ch { // closed by the transfer's goroutine when it ends (see above)
		msgs++
		switch {
		case ferr != nil:
		case env.Error != nil:
			ferr = transferError(env.Error)
		case len(out)+len(env.RR) > p.opts.MaxRecords:
			ferr = fmt.Errorf("the zone has more than %d records (the most a transfer may bring)", p.opts.MaxRecords)
			conn.Close()
		default:
			out = append(out, env.RR...)
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if ferr != nil {
		return nil, ferr
	}
	if n := sg.verified.Load(); n < int64(msgs) {
		return nil, &RcodeError{Op: opTransfer, Unsigned: true, Detail: fmt.Sprintf("%d of %d messages without a valid TSIG", int64(msgs)-n, msgs)}
	}
	if len(out) < 2 {
		return nil, fmt.Errorf("the transfer has %d records: not even the SOA at both ends", len(out))
	}
	return out[:len(out)-1], nil // the closing SOA
}

// xfrRcode reads the rcode of a refused transfer: miekg/dns reports it
// only as text ("dns: bad xfr rcode: 5").
var xfrRcode = regexp.MustCompile(`bad xfr rcode: (\d+)`)

// transferError turns a transfer's error into an *RcodeError when the
// primary answered with an error rcode or a bad signature.
func transferError(err error) error {
	if m := xfrRcode.FindStringSubmatch(err.Error()); m != nil {
		rc, _ := strconv.Atoi(m[1])
		return &RcodeError{Op: opTransfer, Rcode: rc}
	}
	switch {
	case errors.Is(err, dns.ErrAuth): // an unsigned NOTAUTH: the primary does not know the key or its MAC
		return &RcodeError{Op: opTransfer, Rcode: dns.RcodeNotAuth}
	case errors.Is(err, dns.ErrNoSig):
		return &RcodeError{Op: opTransfer, Unsigned: true}
	case errors.Is(err, dns.ErrSig) || errors.Is(err, dns.ErrSecret) || errors.Is(err, dns.ErrKeyAlg) || errors.Is(err, dns.ErrTime):
		return &RcodeError{Op: opTransfer, BadSig: true, Detail: err.Error()}
	}
	return err
}

// maintained are the types the primary's signer keeps: never Meridian's,
// left out of Records.
var maintained = map[uint16]bool{dns.TypeSOA: true, dns.TypeRRSIG: true, dns.TypeNSEC: true, dns.TypeNSEC3: true,
	dns.TypeNSEC3PARAM: true, dns.TypeZONEMD: true, dns.TypeTSIG: true, 65534: true /* BIND's signing state */}

// readSets turns a transfer into plan records and the RRsets as read (by
// key, for the prerequisites of Apply). A name outside zone is an error:
// a primary never sends one.
func readSets(zone string, rrs []dns.RR) ([]plan.Record, map[plan.Key][]dns.RR, error) {
	live := map[plan.Key][]dns.RR{}
	sets := map[plan.Key]*plan.Record{}
	var order []plan.Key
	for _, rr := range rrs {
		h := rr.Header()
		name := model.CanonicalName(h.Name)
		if !dns.IsSubDomain(zone, name) {
			return nil, nil, fmt.Errorf("record %s is outside the zone", name)
		}
		if maintained[h.Rrtype] || h.Class != dns.ClassINET {
			continue
		}
		k := plan.Key{Name: name, Type: dns.TypeToString[h.Rrtype]}
		if k.Type == "" {
			k.Type = "TYPE" + strconv.Itoa(int(h.Rrtype))
		}
		r := sets[k]
		if r == nil {
			r = &plan.Record{Name: name, Type: k.Type, TTL: h.Ttl}
			sets[k] = r
			order = append(order, k)
		}
		r.TTL = min(r.TTL, h.Ttl)
		if v := value(rr); !slices.Contains(r.Values, v) {
			r.Values = append(r.Values, v)
		}
		live[k] = append(live[k], dns.Copy(rr))
	}
	out := make([]plan.Record, 0, len(order))
	for _, k := range order {
		r := sets[k]
		r.Normalize()
		out = append(out, *r)
	}
	return out, live, nil
}

// value is rr's data in the plan's form.
func value(rr dns.RR) string {
	switch x := rr.(type) {
	case *dns.A:
		if a, ok := netip.AddrFromSlice(x.A.To4()); ok {
			return a.String()
		}
	case *dns.AAAA:
		if a, ok := netip.AddrFromSlice(x.AAAA); ok {
			return a.String()
		}
	case *dns.NS:
		return model.CanonicalName(x.Ns)
	case *dns.CNAME:
		return model.CanonicalName(x.Target)
	case *dns.TXT:
		return strings.Join(x.Txt, "")
	case *dns.DS:
		if c, ok := plan.CanonicalDS(rdata(rr)); ok {
			return c
		}
	}
	return rdata(rr)
}

// rdata is the presentation form of rr's data (what follows the header).
func rdata(rr dns.RR) string {
	return strings.TrimSpace(strings.TrimPrefix(rr.String(), rr.Header().String()))
}

// toRRs makes the records of r (for its creation, or its prerequisite
// when it was not read): TXT values as strings of at most 255 bytes, other
// values in presentation form.
func toRRs(r plan.Record) ([]dns.RR, error) {
	t, ok := dns.StringToType[r.Type]
	if !ok {
		return nil, fmt.Errorf("%s: type %s is not one RFC 2136 updates here", r.Key(), r.Type)
	}
	hdr := dns.RR_Header{Name: r.Name, Rrtype: t, Class: dns.ClassINET, Ttl: r.TTL}
	var out []dns.RR
	for _, v := range r.Values {
		if t == dns.TypeTXT {
			txt := &dns.TXT{Hdr: hdr}
			for rest := v; rest != "" || len(txt.Txt) == 0; {
				n := min(len(rest), 255)
				txt.Txt = append(txt.Txt, rest[:n])
				rest = rest[n:]
			}
			out = append(out, txt)
			continue
		}
		rr, err := dns.NewRR(fmt.Sprintf("%s %d IN %s %s", r.Name, r.TTL, r.Type, v))
		if err != nil || rr == nil {
			return nil, fmt.Errorf("%s: value %q: %v", r.Key(), v, err)
		}
		out = append(out, rr)
	}
	return out, nil
}
