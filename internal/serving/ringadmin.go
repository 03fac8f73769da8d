package serving

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/model"
)

// RingAdmin is what the pipeline asks the ring about overrides
// (*ring.Ring implements it): whether this node may change traffic, its
// signature on the entries it writes, and the check of another writer's.
type RingAdmin interface {
	MayChangeTraffic() error
	SignEntry(msg []byte) []byte
	KeyID() string
	MayWrite(node string) error // cheap: the writer is known and has the capability
	VerifyEntry(node string, msg, sig []byte) error
	WriterOrigin(node string) string // the identity (key) behind a writer: the caps per writer hold per origin
}

type ringAdmin struct{ RingAdmin }

// SetRing makes the overrides this node writes signed by its ring
// identity, refuses changes when that identity may not make them, and
// checks entries from the ring against their writers (nil: the ring
// stopped; no ring entry is accepted). Ring states that arrive before it is
// set are kept and checked when it is.
func (p *Pipeline) SetRing(r RingAdmin) {
	if r == nil {
		p.ring.Store(nil)
		return
	}
	p.ring.Store(&ringAdmin{r})
	if p.opts.Admin != nil {
		p.opts.Admin.SetOrigin(r.WriterOrigin)
	}
	p.sawRing.Store(true)
	p.signEntries()
	p.retryPending()
}

// signEntries signs this node's entries with its current ring key (again
// when a renewed credential rotated it).
func (p *Pipeline) signEntries() {
	if r := p.ring.Load(); r != nil && p.opts.Admin != nil {
		p.opts.Admin.Sign(r.SignEntry, r.KeyID())
	}
}

// MayChange refuses a change on a node whose ring identity has no admin
// capability: its peers would refuse the entry, and one node answering
// differently from the others is worse than a clear error.
func (p *Pipeline) MayChange() error {
	r := p.ring.Load()
	if r == nil {
		return nil
	}
	if err := r.MayChangeTraffic(); err != nil {
		return fmt.Errorf("%w: %v", admin.ErrNoCapability, err)
	}
	p.signEntries()
	return nil
}

// maxBadSignatures is how many entries of one ring state may fail their
// signature check before the rest of that state is refused unchecked:
// forged entries cost an Ed25519 verification each.
const maxBadSignatures = 16

// checkWriters keeps the entries of other that this node would take (newer
// than the version held) and that their writer signed and may write: a
// trusted prober with the admin capability, named by the entry's stamp,
// with who bound to it (admin.CheckOrigin).
func (p *Pipeline) checkWriters(other admin.State) (admin.State, []admin.EntryError) {
	out := admin.State{Entries: make(map[string]admin.Entry, len(other.Entries))}
	var refused []admin.EntryError
	r := p.ring.Load()
	bad := 0
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range other.Entries {
			if !yield(id) {
				return
			}
		}
	})
	for _, id := range ids {
		e := other.Entries[id]
		held, ok := p.opts.Admin.Get(id)
		if ok && !e.Newer(held) {
			continue // nothing to take
		}
		var heldp *admin.Entry
		if ok {
			heldp = &held
		}
		if rj := admin.CheckOrigin(id, e, heldp); rj != nil {
			refused = append(refused, *rj)
			continue
		}
		var err error
		switch {
		case r == nil:
			err = fmt.Errorf("%w: this node has no ring to check writer %q against", admin.ErrNoCapability, e.Stamp.Node)
		case r.MayWrite(e.Stamp.Node) != nil:
			err = r.MayWrite(e.Stamp.Node)
		case bad >= maxBadSignatures:
			err = fmt.Errorf("%w: not checked, the state already had %d bad signatures", admin.ErrBadSignature, bad)
		default:
			err = r.VerifyEntry(e.Stamp.Node, admin.SigInput(id, e), e.Sig)
		}
		switch {
		case errors.Is(err, admin.ErrNoCapability):
			refused = append(refused, admin.EntryError{ID: id, Reason: admin.RejectCapability, Err: err})
		case err != nil:
			if bad < maxBadSignatures {
				bad++
			}
			refused = append(refused, admin.EntryError{ID: id, Reason: admin.RejectSignature, Err: err})
		default:
			out.Entries[id] = e
		}
	}
	return out, refused
}

// guardRing applies the min_healthy rule to the drains and force-downs
// other would put in force: every one that touches a service the whole
// lot would leave below its minimum is refused (an entry forced past the
// rule by an operator, Override.Forced, is taken as it is).
func (p *Pipeline) guardRing(other admin.State) (admin.State, []admin.EntryError) {
	now := time.Now()
	inForce := map[string]admin.Override{}
	for _, o := range p.opts.Admin.Active() {
		inForce[o.ID] = o
	}
	var extra []admin.Override
	for _, e := range other.Entries {
		o := e.Override
		if e.Deleted || !o.Active(now) || o.Forced != "" || o.Kind != admin.KindDrain && o.Kind != admin.KindForceDown {
			continue
		}
		if cur, ok := inForce[o.ID]; ok && cur.Kind == o.Kind && cur.Target() == o.Target() {
			continue // in force already: no change
		}
		extra = append(extra, o)
	}
	if len(extra) == 0 {
		return other, nil
	}
	s := p.State()
	short, err := p.shortfalls(s, extra)
	if err != nil {
		p.log.Error("ring: min_healthy check of overrides from the ring failed: they wait for the next state", "err", err)
		short = map[string]admin.Shortfall{}
		for _, o := range extra {
			for _, svc := range touched(&s.Effective.Desired, o) {
				short[svc] = admin.Shortfall{Service: svc}
			}
		}
	}
	if len(short) == 0 {
		return other, nil
	}
	out := other.Clone()
	var refused []admin.EntryError
	for _, o := range extra {
		var hit []string
		for _, svc := range touched(&s.Effective.Desired, o) {
			if sf, ok := short[svc]; ok {
				hit = append(hit, sf.String())
			}
		}
		if len(hit) == 0 {
			continue
		}
		delete(out.Entries, o.ID)
		refused = append(refused, admin.EntryError{ID: o.ID, Reason: admin.RejectMinHealthy,
			Err: fmt.Errorf("%w: %s %s by %s, refused by rule min_healthy: %s", admin.ErrBelowMinHealthy, o.Kind, o.Target(), o.Who, strings.Join(hit, "; "))})
	}
	return out, refused
}

// shortfalls compiles the current inputs with extra and returns the
// services it would leave below their min_healthy, by name.
func (p *Pipeline) shortfalls(s *State, extra []admin.Override) (map[string]admin.Shortfall, error) {
	short, err := p.shortOf(s, extra)
	if err != nil {
		return nil, err
	}
	out := map[string]admin.Shortfall{}
	for _, sf := range short {
		out[sf.Service] = sf
	}
	return out, nil
}

// touched lists the services an override changes: its own, or those with
// an endpoint in its cluster.
func touched(d *model.Desired, o admin.Override) []string {
	if o.Cluster == "" {
		return []string{o.Service}
	}
	var out []string
	for _, s := range d.Services {
		if slices.ContainsFunc(s.Endpoints, func(e model.Endpoint) bool { return e.Cluster == o.Cluster }) {
			out = append(out, s.Name)
		}
	}
	return out
}

// logRefused counts every refused ring entry and logs one line per
// reason (a flood of thousands is one line each time, not thousands).
func (p *Pipeline) logRefused(refused []admin.EntryError) {
	byReason := map[string][]admin.EntryError{}
	for _, e := range refused {
		p.m.rejected.WithLabelValues("ring", e.Reason).Inc()
		byReason[e.Reason] = append(byReason[e.Reason], e)
	}
	for _, reason := range slices.Sorted(func(yield func(string) bool) {
		for r := range byReason {
			if !yield(r) {
				return
			}
		}
	}) {
		es := byReason[reason]
		level := slog.LevelWarn
		if reason == admin.RejectUnknownTarget {
			level = slog.LevelDebug // another node's config has a target ours lacks (a reload in flight)
		}
		p.log.Log(context.Background(), level, "ring: overrides from another node refused", "reason", reason, "count", len(es), "first", es[0].ID, "err", es[0].Err)
	}
}
