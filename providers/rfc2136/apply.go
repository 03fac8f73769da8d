package rfc2136

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/xfr"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/apicall"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// RcodeError is a primary's refusal of a transfer or an update: its rcode
// (and TSIG error), or an answer whose signature did not verify or was
// missing.
type RcodeError struct {
	Op        string // transfer or update
	Rcode     int
	TSIGError uint16 // BADSIG, BADKEY, BADTIME... of a NOTAUTH answer (0: none)
	BadSig    bool   // the answer's TSIG did not verify
	Unsigned  bool   // the answer had no TSIG
	Detail    string // what the primary or the check said
}

func (e *RcodeError) Error() string {
	var s string
	switch {
	case e.Unsigned:
		s = fmt.Sprintf("%s answer not signed with the key", e.Op)
	case e.BadSig:
		s = fmt.Sprintf("%s answer's TSIG does not verify", e.Op)
	default:
		s = fmt.Sprintf("%s answered %s", e.Op, dns.RcodeToString[e.Rcode])
		if e.TSIGError != 0 {
			s += " (TSIG error " + dns.RcodeToString[int(e.TSIGError)] + ": is the key known to the primary, and the clocks within 5 minutes?)"
		}
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// perName reports whether the refusal may concern some names of a
// message only (a prerequisite, the primary's update policy, a name
// outside the zone): the message is then split to find them. NOTAUTH (the
// key, the zone), NOTIMP (no updates at all) and bad signatures concern
// every message.
func (e *RcodeError) perName() bool {
	if e.BadSig || e.Unsigned {
		return false
	}
	switch e.Rcode {
	case dns.RcodeNameError, dns.RcodeYXDomain, dns.RcodeYXRrset, dns.RcodeNXRrset, dns.RcodeRefused, dns.RcodeNotZone, dns.RcodeFormatError:
		return true
	}
	return false
}

// rcodeLabel is the rcode label of an exchange's outcome; "" for an error
// without an answer (network, timeout), which the API metrics count.
func rcodeLabel(err error) string {
	var re *RcodeError
	switch {
	case err == nil:
		return "NOERROR"
	case errors.As(err, &re) && re.Unsigned:
		return "UNSIGNED"
	case errors.As(err, &re) && re.BadSig:
		return "BADSIG"
	case errors.As(err, &re):
		return dns.RcodeToString[re.Rcode]
	}
	return "none"
}

// classify sorts an attempt's error for the retry loop: SERVFAIL, timeouts
// and broken connections are retried; refusals are not.
func classify(_ context.Context, err error) apicall.Verdict {
	var re *RcodeError
	if errors.As(err, &re) {
		if re.Rcode == dns.RcodeServerFailure && !re.BadSig && !re.Unsigned {
			return apicall.Verdict{Class: apicall.Retryable}
		}
		return apicall.Verdict{Class: apicall.Refused}
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed) {
		return apicall.Verdict{Class: apicall.Retryable}
	}
	return apicall.Verdict{Class: apicall.Refused}
}

// change is one plan change as UPDATE records: its prerequisites and its
// updates.
type change struct {
	key     plan.Key
	op      string // create, update, delete
	order   int    // place in its name's message part (see order)
	pre, up []dns.RR
}

// group is every change of one name (an ownership TXT goes with the name
// it covers): it goes whole into one message.
type group struct {
	name    string
	changes []change
	size    int // records
}

// order puts a name's changes in the order a primary accepts them: deletes
// (a DS before its NS), then updates, then creates (an NS before its DS).
func order(op, typ string) int {
	switch op {
	case "delete":
		if typ == "DS" {
			return 0
		}
		return 1
	case "update":
		return 2
	}
	if typ == "DS" {
		return 4
	}
	return 3
}

// Apply implements providers.Provider: the changes go in UPDATE messages
// of at most BatchRecords records, each name whole in one message, one
// message after another. A message the primary refuses for some of its
// names (a prerequisite, its update policy) is split in halves by name
// until the refused names are alone; they are reported in Result.Failed
// with the rcode and the rest is applied. NOTAUTH, a bad or missing
// signature, NOTIMP, or SERVFAIL and network errors past the retries end
// Apply with an error (the last ones wrapping providers.ErrTransient);
// the changes applied before are counted.
func (p *Provider) Apply(ctx context.Context, zone string, cs plan.Changes) (providers.Result, error) {
	var res providers.Result
	if cs.Empty() {
		res.Synced = true
		return res, nil
	}
	zone = model.CanonicalName(zone)
	a := &applier{p: p, zone: zone, key: p.currentKey(), res: &res}
	groups := a.groups(cs)
	for _, b := range pack(groups, p.opts.BatchRecords) {
		if err := a.submit(ctx, b); err != nil {
			p.forget(zone)
			return res, fmt.Errorf("rfc2136 zone %s: update at %s: %w", zone, p.opts.Server, err)
		}
	}
	p.forget(zone)
	res.Synced = true // the primary applies an UPDATE before it answers
	p.log.Info("rfc2136: applied", "zone", zone, "server", p.opts.Server, "changes", cs.Len(), "applied", res.Applied, "failed", len(res.Failed), "calls", res.Calls)
	return res, nil
}

// forget drops the RRsets read of zone: after a write the next pass reads
// again.
func (p *Provider) forget(zone string) {
	p.mu.Lock()
	delete(p.live, zone)
	p.mu.Unlock()
}

type applier struct {
	p    *Provider
	zone string
	key  xfr.Key
	res  *providers.Result
}

// groups turns the plan changes into per-name groups, sorted by name. A
// change whose records cannot be made is reported failed at once.
func (a *applier) groups(cs plan.Changes) []group {
	by := map[string]*group{}
	add := func(key plan.Key, op string, old, nu *plan.Record) {
		c := change{key: key, op: op, order: order(op, key.Type)}
		var err error
		if old != nil {
			c.pre, err = a.liveRRs(*old)
			for _, rr := range c.pre {
				rr.Header().Ttl = 0 // RFC 2136 section 2.4.2: the TTL of a prerequisite is 0
			}
		} else if t, ok := dns.StringToType[nu.Type]; ok {
			// RRset does not exist: class NONE, the type, no data.
			c.pre = []dns.RR{&dns.ANY{Hdr: dns.RR_Header{Name: nu.Name, Rrtype: t, Class: dns.ClassNONE}}}
		}
		if err == nil && old != nil {
			t := dns.StringToType[old.Type]
			c.up = append(c.up, &dns.ANY{Hdr: dns.RR_Header{Name: old.Name, Rrtype: t, Class: dns.ClassANY}})
		}
		if err == nil && nu != nil {
			var rrs []dns.RR
			rrs, err = toRRs(*nu)
			c.up = append(c.up, rrs...)
		}
		if err != nil {
			a.res.Failed = append(a.res.Failed, providers.FailedChange{Key: key, Op: op, Err: err})
			return
		}
		name := strings.TrimPrefix(key.Name, plan.OwnerPrefix)
		g := by[name]
		if g == nil {
			g = &group{name: name}
			by[name] = g
		}
		g.changes = append(g.changes, c)
		g.size += len(c.pre) + len(c.up)
	}
	for i := range cs.Deletes {
		add(cs.Deletes[i].Key(), "delete", &cs.Deletes[i], nil)
	}
	for i := range cs.Updates {
		add(cs.Updates[i].New.Key(), "update", &cs.Updates[i].Old, &cs.Updates[i].New)
	}
	for i := range cs.Creates {
		add(cs.Creates[i].Key(), "create", nil, &cs.Creates[i])
	}
	out := make([]group, 0, len(by))
	for _, g := range by {
		slices.SortStableFunc(g.changes, func(x, y change) int { return x.order - y.order })
		out = append(out, *g)
	}
	slices.SortFunc(out, func(x, y group) int { return strings.Compare(x.name, y.name) })
	return out
}

// liveRRs are the records of r as the primary had them when read (exact
// data for a value-dependent prerequisite), or r's own when not read.
func (a *applier) liveRRs(r plan.Record) ([]dns.RR, error) {
	a.p.mu.Lock()
	live := a.p.live[a.zone][r.Key()]
	a.p.mu.Unlock()
	if len(live) > 0 {
		out := make([]dns.RR, len(live))
		for i, rr := range live {
			out[i] = dns.Copy(rr)
		}
		return out, nil
	}
	return toRRs(r)
}

// pack puts groups into batches of at most limit records (a group bigger
// than limit goes alone).
func pack(groups []group, limit int) [][]group {
	var out [][]group
	var cur []group
	n := 0
	for _, g := range groups {
		if len(cur) > 0 && n+g.size > limit {
			out = append(out, cur)
			cur, n = nil, 0
		}
		cur = append(cur, g)
		n += g.size
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// message is the UPDATE of batch b.
func (a *applier) message(b []group) *dns.Msg {
	m := new(dns.Msg)
	m.SetUpdate(a.zone)
	for _, g := range b {
		for _, c := range g.changes {
			m.Answer = append(m.Answer, c.pre...)
			m.Ns = append(m.Ns, c.up...)
		}
	}
	return m
}

// submit sends batch b, splitting it on a refusal of some of its names.
// The recursion halves b each time, so it is at most log2(len(b)) deep.
func (a *applier) submit(ctx context.Context, b []group) error {
	m := a.message(b)
	if len(b) > 1 && m.Len() > maxMessageBytes {
		return a.halves(ctx, b)
	}
	n, err := a.p.caller.Do(ctx, opUpdate, func(ctx context.Context) error { return a.p.exchange(ctx, a.zone, m, a.key) })
	a.res.Calls += n
	var re *RcodeError
	switch {
	case err == nil:
		for _, g := range b {
			a.res.Applied += len(g.changes)
		}
		return nil
	case errors.As(err, &re) && re.perName() && len(b) > 1:
		return a.halves(ctx, b)
	case errors.As(err, &re) && re.perName():
		a.p.log.Warn("rfc2136: change refused", "zone", a.zone, "name", b[0].name, "err", err)
		for _, c := range b[0].changes {
			a.res.Failed = append(a.res.Failed, providers.FailedChange{Key: c.key, Op: c.op, Err: re})
		}
		return nil
	}
	return err
}

func (a *applier) halves(ctx context.Context, b []group) error {
	half := len(b) / 2
	if err := a.submit(ctx, b[:half]); err != nil {
		return err
	}
	return a.submit(ctx, b[half:])
}

// exchange sends one UPDATE (signed afresh: a retry is a new message with
// a new time) and checks the answer: signed with the key, NOERROR.
func (p *Provider) exchange(ctx context.Context, zone string, m *dns.Msg, key xfr.Key) error {
	sg, err := newSigner(key)
	if err != nil {
		return fmt.Errorf("tsig key: %w", err)
	}
	q := m.Copy()
	q.Id = dns.Id()
	q.SetTsig(key.Name, key.Algorithm, 300, time.Now().Unix())
	c := &dns.Client{Net: "tcp", TsigProvider: sg, Timeout: p.opts.RequestTimeout}
	r, _, err := c.ExchangeContext(ctx, q, p.opts.Server)
	err = answerError(r, err, sg)
	if lbl := rcodeLabel(err); lbl != "none" { // "none": no answer, counted by the API metrics
		p.m.responses.WithLabelValues(zone, opUpdate, lbl).Inc()
	}
	return err
}

// answerError is the error of an UPDATE's answer r (exchange error err).
func answerError(r *dns.Msg, err error, sg *signer) error {
	if err != nil {
		if errors.Is(err, dns.ErrAuth) { // NOTAUTH with a TSIG error and no MAC: the primary refused our signature
			return &RcodeError{Op: opUpdate, Rcode: dns.RcodeNotAuth, Detail: "the primary did not accept the request's TSIG"}
		}
		if errors.Is(err, dns.ErrSig) || errors.Is(err, dns.ErrSecret) || errors.Is(err, dns.ErrKeyAlg) || errors.Is(err, dns.ErrTime) {
			return &RcodeError{Op: opUpdate, BadSig: true, Detail: err.Error()}
		}
		return err
	}
	t := r.IsTsig()
	if r.Rcode != dns.RcodeSuccess {
		e := &RcodeError{Op: opUpdate, Rcode: r.Rcode}
		if t != nil {
			e.TSIGError = t.Error
		}
		return e
	}
	if t == nil || sg.verified.Load() == 0 {
		return &RcodeError{Op: opUpdate, Unsigned: true}
	}
	return nil
}
