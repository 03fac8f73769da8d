package cloudflare

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// Operations of one Cloudflare request, also the metric operation names.
const (
	opEdit   = "update_record" // PATCH: change a record in place
	opCreate = "create_record"
	opDelete = "delete_record"
)

// op is one per-value request that makes part of a plan change.
type op struct {
	kind   string    // opEdit, opCreate or opDelete
	change int       // index into the changes of the plan
	rec    DNSRecord // the record to write (opEdit: with ID); opDelete: ID, Name, Type, Content
	phase  int       // execution order, see phases
}

// Phases: in-place updates first, then creates, then deletes, so that a
// name never goes through a moment without records. Ownership TXT records
// are created before and deleted after the records they cover. A name that
// changes between CNAME and A/AAAA cannot hold both: its old records are
// deleted right before the new ones are created. A DS sits beside the NS
// of its delegation: it is created after and deleted before NS records.
const (
	phaseEdit = iota
	phaseOwnerCreate
	phaseSwapDelete
	phaseCreate
	phaseCreateDS
	phaseDeleteDS
	phaseDelete
	phaseOwnerDelete
)

// change is one plan change as reported in a Result.
type change struct {
	key plan.Key
	op  string // create, update, delete (FailedChange.Op)
	err error  // refused before any request (e.g. a Route53-only policy)
}

// ops turns a plan into per-value requests, in execution order. It is pure.
// For an update, a removed value and an added value are paired into one
// in-place edit of the removed value's record; only the values left over
// are deleted or created. A TTL or proxied change edits the kept records.
func ops(cs plan.Changes) ([]change, []op) {
	var changes []change
	var out []op
	add := func(key plan.Key, name string) int {
		changes = append(changes, change{key: key, op: name})
		return len(changes) - 1
	}
	for _, r := range cs.Creates {
		c := add(r.Key(), "create")
		if err := expressible(r); err != nil {
			changes[c].err = err
			continue
		}
		for _, v := range r.Values {
			out = append(out, op{kind: opCreate, change: c, rec: write(r, "", v)})
		}
	}
	for _, u := range cs.Updates {
		c := add(u.New.Key(), "update")
		var err error
		if out, err = updateOps(out, c, u); err != nil {
			changes[c].err = err
		}
	}
	for _, r := range cs.Deletes {
		c := add(r.Key(), "delete")
		if len(r.IDs) != len(r.Values) {
			changes[c].err = fmt.Errorf("%s: the record has no Cloudflare record ids (read it with Records)", r.Key())
			continue
		}
		for i, v := range r.Values {
			out = append(out, op{kind: opDelete, change: c, rec: write(r, r.IDs[i], v)})
		}
	}
	setPhases(out)
	slices.SortStableFunc(out, func(a, b op) int { return a.phase - b.phase })
	return changes, out
}

// updateOps appends to out the requests of update u, change c of the plan;
// an update that cannot be made is an error and appends none.
func updateOps(out []op, c int, u plan.Update) ([]op, error) {
	if err := expressible(u.New); err != nil {
		return out, err
	}
	if len(u.Old.IDs) != len(u.Old.Values) {
		return out, fmt.Errorf("%s: the current record has no Cloudflare record ids (read it with Records)", u.Old.Key())
	}
	ids := map[string]string{}
	for i, v := range u.Old.Values {
		ids[v] = u.Old.IDs[i]
	}
	var kept, removed, added []string
	for _, v := range u.Old.Values {
		if slices.Contains(u.New.Values, v) {
			kept = append(kept, v)
		} else {
			removed = append(removed, v)
		}
	}
	for _, v := range u.New.Values {
		if _, ok := ids[v]; !ok {
			added = append(added, v)
		}
	}
	slices.Sort(removed)
	slices.Sort(added)
	for len(removed) > 0 && len(added) > 0 {
		out = append(out, op{kind: opEdit, change: c, rec: write(u.New, ids[removed[0]], added[0])})
		removed, added = removed[1:], added[1:]
	}
	if u.Old.TTL != u.New.TTL || proxied(u.Old) != proxied(u.New) {
		for _, v := range kept {
			out = append(out, op{kind: opEdit, change: c, rec: write(u.New, ids[v], v)})
		}
	}
	for _, v := range added {
		out = append(out, op{kind: opCreate, change: c, rec: write(u.New, "", v)})
	}
	for _, v := range removed {
		out = append(out, op{kind: opDelete, change: c, rec: write(u.Old, ids[v], v)})
	}
	return out, nil
}

// setPhases gives every request its phase (see the phase constants); a
// delete at a name that gets a CNAME while losing A/AAAA, or the reverse,
// goes right before the creates.
func setPhases(out []op) {
	creating := map[string][]string{}
	for _, o := range out {
		if o.kind == opCreate {
			creating[o.rec.Name] = append(creating[o.rec.Name], o.rec.Type)
		}
	}
	for i := range out {
		o := &out[i]
		owner := o.rec.Type == "TXT" && strings.HasPrefix(o.rec.Name, plan.OwnerPrefix)
		switch {
		case o.kind == opEdit:
			o.phase = phaseEdit
		case o.kind == opCreate && owner:
			o.phase = phaseOwnerCreate
		case o.kind == opCreate && o.rec.Type == "DS":
			o.phase = phaseCreateDS
		case o.kind == opCreate:
			o.phase = phaseCreate
		case owner:
			o.phase = phaseOwnerDelete
		case o.rec.Type == "DS":
			o.phase = phaseDeleteDS
		case exclusive(o.rec.Type, creating[o.rec.Name]):
			o.phase = phaseSwapDelete
		default:
			o.phase = phaseDelete
		}
	}
}

// exclusive reports whether a record of type typ must go before records of
// the types in creating can be created at the same name: a CNAME shares its
// name with no other record.
func exclusive(typ string, creating []string) bool {
	for _, t := range creating {
		if t == "CNAME" || typ == "CNAME" {
			return true
		}
	}
	return false
}

// expressible reports why r cannot be a Cloudflare DNS record, if it cannot.
func expressible(r plan.Record) error {
	if r.Policy() != "simple" || r.SetID != "" {
		return fmt.Errorf("%s: %s routing policies are Route53 only; Cloudflare DNS records are simple record sets", r.Key(), r.Policy())
	}
	return nil
}

func proxied(r plan.Record) bool { return r.Proxied != nil && *r.Proxied }

// write is the Cloudflare record for value v of r.
func write(r plan.Record, id, v string) DNSRecord {
	ttl := int(r.TTL)
	if ttl == 0 {
		ttl = 1 // automatic
	}
	return DNSRecord{ID: id, Name: cfName(r.Name), Type: r.Type, Content: encode(r.Type, v), TTL: ttl, Proxied: proxied(r)}
}

// Apply makes the changes, one request per value (see ops for the order and
// the in-place updates). A change the API refuses is reported in
// Result.Failed with Cloudflare's codes and messages and the others go on;
// an invalid token, ctx ending (also while waiting for the request
// budget), or a request still failing after its retries stops the whole
// Apply with an error (wrapping providers.ErrTransient unless it is the
// token); the changes already made stay made and are counted in Applied. Result.Calls
// counts write requests, retries included.
func (p *Provider) Apply(ctx context.Context, zone string, cs plan.Changes) (providers.Result, error) {
	var res providers.Result
	if cs.Empty() {
		res.Synced = true
		return res, nil
	}
	zid, err := p.zoneID(ctx, zone)
	if err != nil {
		return res, err
	}
	changes, todo := ops(cs)
	pending := make([]int, len(changes)) // requests of each change not yet made
	for _, o := range todo {
		pending[o.change]++
	}
	var abort error
	for _, o := range todo {
		n, err := p.run(ctx, zid, o)
		res.Calls += n
		if err == nil {
			pending[o.change]--
			continue
		}
		log := p.log.With("zone", zone, "name", o.rec.Name, "type", o.rec.Type, "operation", o.kind)
		if errors.Is(err, providers.ErrTransient) || isAuth(err) || !isAPIError(err) {
			log.Error("cloudflare: apply stopped", "err", err)
			abort = fmt.Errorf("zone %s: %s %s %s: %w", zone, o.kind, o.rec.Name, o.rec.Type, err)
			break
		}
		// Each value is its own record on Cloudflare: the other values of
		// the change go on, and the change reports its first refusal.
		log.Warn("cloudflare: change refused", "content", o.rec.Content, "err", err)
		pending[o.change]--
		if changes[o.change].err == nil {
			changes[o.change].err = fmt.Errorf("%s %s %s %q: %w", o.kind, o.rec.Name, o.rec.Type, o.rec.Content, err)
		}
	}
	for i, c := range changes {
		switch {
		case c.err != nil:
			res.Failed = append(res.Failed, providers.FailedChange{Key: c.key, Op: c.op, Err: c.err})
		case pending[i] == 0:
			res.Applied++
		}
	}
	res.Synced = abort == nil // Cloudflare serves a write as soon as it accepts it
	p.log.Info("cloudflare: applied", "zone", zone, "changes", len(changes), "applied", res.Applied, "failed", len(res.Failed), "calls", res.Calls)
	return res, abort
}

func isAPIError(err error) bool {
	var ae *APIError
	return errors.As(err, &ae)
}

// run makes one request. A create that meets its own record (an earlier
// attempt went through before a 5xx) and a delete of a record that is
// already gone count as done.
func (p *Provider) run(ctx context.Context, zid string, o op) (int, error) {
	n, err := p.do(ctx, o.kind, func(ctx context.Context) error {
		var err error
		switch o.kind {
		case opEdit:
			_, err = p.api.EditDNSRecord(ctx, zid, o.rec)
		case opCreate:
			_, err = p.api.CreateDNSRecord(ctx, zid, o.rec)
		case opDelete:
			err = p.api.DeleteDNSRecord(ctx, zid, o.rec.ID)
		}
		return err
	})
	var ae *APIError
	switch {
	case err == nil:
	case o.kind == opCreate && n > 1 && errors.As(err, &ae) && ae.HasCode(CodeIdentical):
		err = nil
	case o.kind == opDelete && errors.As(err, &ae) && (ae.Status == 404 || ae.HasCode(CodeRecordNotFound)):
		err = nil
	}
	return n, err
}
