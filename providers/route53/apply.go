package route53

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// Route 53's limits on one ChangeResourceRecordSets request (Developer
// Guide, "Quotas" → "Elements and characters in ChangeResourceRecordSets
// requests"):
//   - at most 1,000 ResourceRecord elements; the elements of an UPSERT count
//     twice;
//   - at most 32,000 characters in all Value elements together, spaces
//     included; the characters of an UPSERT count twice.
//
// Every change carries at least one ResourceRecord (we count an alias
// DELETE, which has none, as one), so the first limit also keeps a batch at
// 1,000 changes or fewer. (Guides before 2016 also capped a request at 100
// Change elements; that limit is gone.)
const (
	maxBatchRecords = 1000
	maxBatchChars   = 32000
)

// RefusedError is why Route 53 refused a change.
type RefusedError struct {
	Code     string   // InvalidChangeBatch, InvalidInput, or TooLarge (never sent)
	Messages []string // Route 53's messages
	// WithOthers is set when the messages name other changes of the same
	// name, not this one: it was refused with them, since the changes of one
	// name go together.
	WithOthers bool
}

func (e *RefusedError) Error() string {
	msg := strings.Join(e.Messages, "; ")
	if e.WithOthers {
		return "refused with the other changes of its name: " + e.Code + ": " + msg
	}
	return e.Code + ": " + msg
}

// unit is one plan change and the Route 53 changes that make it.
type unit struct {
	key            plan.Key
	op             string // create, update, delete
	changes        []types.Change
	records, chars int // counted the way the limits count them
}

// group is every change touching one name (an ownership TXT record goes
// with the name it covers): Route 53 gets a group whole in one batch, so a
// routing-policy change (DELETE the old sets, CREATE the new ones) and the
// ownership record land together or not at all.
type group struct {
	name           string
	units          []unit
	records, chars int
}

// Apply implements providers.Provider. Creates become CREATE, updates
// UPSERT (or DELETE of the live set + CREATE when the routing policy
// changes), deletes DELETE with the live values. The changes go in batches
// within Route 53's limits, one after another, each whole name in one batch.
// When Route 53 refuses a batch (InvalidChangeBatch, InvalidInput), the
// names its messages point at are reported in Result.Failed and the rest is
// sent again; when the messages point at nothing, the batch is split in
// halves by name until the refused names are alone. Then Apply waits for INSYNC, at
// most SyncTimeout. The error is for the whole call (lookup, budget,
// throttling past MaxAttempts — wrapping providers.ErrTransient); the
// Result then counts what was applied before it.
func (p *Provider) Apply(ctx context.Context, zone string, cs plan.Changes) (providers.Result, error) {
	if cs.Empty() {
		return providers.Result{Synced: true}, nil
	}
	zone = canonicalName(zone)
	id, err := p.zoneID(ctx, zone)
	if err != nil {
		return providers.Result{}, err
	}
	a := &applier{p: p, zone: zone, id: id}
	batches, tooLarge := pack(p.groups(zone, cs))
	for _, g := range tooLarge {
		a.fail(g, &RefusedError{Code: "TooLarge", Messages: []string{fmt.Sprintf(
			"the changes of %s need %d records and %d characters, more than one request may carry (%d, %d)",
			g.name, g.records, g.chars, maxBatchRecords, maxBatchChars)}})
	}
	for _, b := range batches {
		if err := a.submit(ctx, b); err != nil {
			a.report(len(batches))
			return a.res, fmt.Errorf("route53 zone %s: apply: %w", zone, err)
		}
	}
	a.res.Synced = a.waitInSync(ctx)
	a.report(len(batches))
	return a.res, nil
}

// groups turns the plan changes into Route 53 changes, grouped by name and
// sorted; inside a group deletes come first, then updates, then creates.
func (p *Provider) groups(zone string, cs plan.Changes) []group {
	byName := map[string]*group{}
	add := func(key plan.Key, op string, changes ...types.Change) {
		u := unit{key: key, op: op, changes: changes}
		for _, c := range changes {
			n, m := max(1, len(c.ResourceRecordSet.ResourceRecords)), 0
			for _, rr := range c.ResourceRecordSet.ResourceRecords {
				m += len(aws.ToString(rr.Value))
			}
			if c.Action == types.ChangeActionUpsert {
				n, m = 2*n, 2*m
			}
			u.records += n
			u.chars += m
		}
		name := strings.TrimPrefix(key.Name, plan.OwnerPrefix)
		g := byName[name]
		if g == nil {
			g = &group{name: name}
			byName[name] = g
		}
		g.units = append(g.units, u)
		g.records += u.records
		g.chars += u.chars
	}
	change := func(action types.ChangeAction, s types.ResourceRecordSet) types.Change {
		return types.Change{Action: action, ResourceRecordSet: &s}
	}
	for _, r := range cs.Deletes {
		add(r.Key(), "delete", change(types.ChangeActionDelete, p.liveSet(zone, r)))
	}
	for _, u := range cs.Updates {
		if u.Old.Key() == u.New.Key() && u.Old.Policy() == u.New.Policy() {
			add(u.New.Key(), "update", change(types.ChangeActionUpsert, toSet(u.New)))
			continue
		}
		// Route 53 cannot UPSERT a set into another routing policy.
		add(u.New.Key(), "update", change(types.ChangeActionDelete, p.liveSet(zone, u.Old)), change(types.ChangeActionCreate, toSet(u.New)))
	}
	for _, r := range cs.Creates {
		add(r.Key(), "create", change(types.ChangeActionCreate, toSet(r)))
	}
	out := make([]group, 0, len(byName))
	for _, g := range byName {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b group) int { return strings.Compare(a.name, b.name) })
	return out
}

// pack fills batches with whole groups, in order, within the limits. A
// group too large for any batch is returned apart.
func pack(groups []group) (batches [][]group, tooLarge []group) {
	var cur []group
	records, chars := 0, 0
	for _, g := range groups {
		if g.records > maxBatchRecords || g.chars > maxBatchChars {
			tooLarge = append(tooLarge, g)
			continue
		}
		if len(cur) > 0 && (records+g.records > maxBatchRecords || chars+g.chars > maxBatchChars) {
			batches = append(batches, cur)
			cur, records, chars = nil, 0, 0
		}
		cur = append(cur, g)
		records += g.records
		chars += g.chars
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches, tooLarge
}

// applier is the state of one Apply.
type applier struct {
	p        *Provider
	zone, id string
	res      providers.Result
	pending  []pendingChange
}

type pendingChange struct {
	id   string
	sent time.Time
}

// submit sends one batch. When Route 53 refuses it, the names its messages
// point at are reported failed and the others sent again; when they point
// at none, each half is sent again, down to single names.
func (a *applier) submit(ctx context.Context, groups []group) error {
	var changes []types.Change
	units := 0
	for _, g := range groups {
		for _, u := range g.units {
			changes = append(changes, u.changes...)
			units++
		}
	}
	in := &r53.ChangeResourceRecordSetsInput{
		HostedZoneId: aws.String(a.id),
		ChangeBatch:  &types.ChangeBatch{Changes: changes, Comment: aws.String("meridian")},
	}
	var out *r53.ChangeResourceRecordSetsOutput
	var sent time.Time
	err := a.p.call(ctx, opChange, func(ctx context.Context) (err error) {
		a.res.Calls++
		sent = a.p.opts.Now()
		out, err = a.p.api.ChangeResourceRecordSets(ctx, in)
		return answered(opChange, out, err)
	})
	if err == nil {
		a.res.Applied += units
		a.p.noteApplied(a.zone, groups)
		info := out.ChangeInfo
		if info == nil || info.Status == types.ChangeStatusInsync {
			a.p.m.Propagation.WithLabelValues(providerLabel).Observe(a.p.opts.Now().Sub(sent).Seconds())
			return nil
		}
		a.pending = append(a.pending, pendingChange{id: aws.ToString(info.Id), sent: sent})
		return nil
	}
	refused := refusal(err)
	if refused == nil {
		return err
	}
	if len(groups) == 1 {
		a.fail(groups[0], refused)
		return nil
	}
	if bad, rest := blame(refused, groups); len(bad) > 0 {
		// Route 53 named the refused sets: report their names, resend the
		// rest (which is split further if refused again).
		a.p.log.Debug("route53 batch refused, resending without the named changes", "zone", a.zone, "names", len(groups), "refused", len(bad), "err", err)
		for _, g := range bad {
			a.fail(g, refused)
		}
		if len(rest) == 0 {
			return nil
		}
		return a.submit(ctx, rest)
	}
	a.p.log.Debug("route53 batch refused, splitting", "zone", a.zone, "names", len(groups), "err", err)
	mid := len(groups) / 2
	if err := a.submit(ctx, groups[:mid]); err != nil {
		return err
	}
	return a.submit(ctx, groups[mid:])
}

// noteApplied brings the zone's last listing up to date with an accepted
// batch, so that it holds what Route 53 holds now: DELETE drops a set,
// CREATE and UPSERT put it. CollectObjects reads it to keep the checks
// record sets still use.
func (p *Provider) noteApplied(zone string, groups []group) {
	p.mu.Lock()
	defer p.mu.Unlock()
	live := p.live[zone]
	if live == nil {
		live = map[plan.Key]types.ResourceRecordSet{}
		p.live[zone] = live
	}
	for _, g := range groups {
		for _, u := range g.units {
			for _, c := range u.changes {
				s := *c.ResourceRecordSet
				if c.Action == types.ChangeActionDelete {
					delete(live, fromSet(s).Key())
				} else {
					live[fromSet(s).Key()] = s
				}
			}
		}
	}
}

// refusal returns Route 53's refusal of a batch, or nil for other errors.
func refusal(err error) *RefusedError {
	var icb *types.InvalidChangeBatch
	if errors.As(err, &icb) {
		msgs := icb.Messages
		if len(msgs) == 0 {
			// The usual form: every message in one, in brackets.
			msgs = []string{strings.TrimSuffix(strings.TrimPrefix(icb.ErrorMessage(), "["), "]")}
		}
		return &RefusedError{Code: icb.ErrorCode(), Messages: msgs}
	}
	var ii *types.InvalidInput
	if errors.As(err, &ii) {
		return &RefusedError{Code: ii.ErrorCode(), Messages: []string{ii.ErrorMessage()}}
	}
	return nil
}

// changeIndex finds "changeBatch.changes.N." in request validation messages.
var changeIndex = regexp.MustCompile(`changeBatch\.changes\.(\d+)\.`)

// blame splits groups into those Route 53's messages name (by record set,
// or by the 1-based position of a change in the request) and the rest.
func blame(refused *RefusedError, groups []group) (bad, rest []group) {
	var named []int // 0-based change positions
	for _, m := range refused.Messages {
		for _, sub := range changeIndex.FindAllStringSubmatch(m, -1) {
			if n, err := strconv.Atoi(sub[1]); err == nil {
				named = append(named, n-1)
			}
		}
	}
	pos := 0
	for _, g := range groups {
		hit := false
		for _, u := range g.units {
			for range u.changes {
				hit = hit || slices.Contains(named, pos)
				pos++
			}
			for _, m := range refused.Messages {
				hit = hit || mentions(m, u)
			}
		}
		if hit {
			bad = append(bad, g)
		} else {
			rest = append(rest, g)
		}
	}
	return bad, rest
}

// fail reports every change of g as refused; the changes Route 53's
// messages do not name were refused with the others of their name.
func (a *applier) fail(g group, refused *RefusedError) {
	for _, u := range g.units {
		err := &RefusedError{Code: refused.Code}
		for _, m := range refused.Messages {
			if mentions(m, u) {
				err.Messages = append(err.Messages, m)
			}
		}
		if len(err.Messages) == 0 {
			err.Messages, err.WithOthers = refused.Messages, len(g.units) > 1
		}
		a.res.Failed = append(a.res.Failed, providers.FailedChange{Key: u.key, Op: u.op, Err: err})
		a.p.log.Warn("route53 change refused", "zone", a.zone, "record", u.key.String(), "op", u.op, "err", err)
	}
}

// mentions reports whether a Route 53 message names one of u's sets: by
// "[name='…', type='…'" or by "DNS name … type …" (and the set identifier
// when the message names one).
func mentions(m string, u unit) bool {
	for _, c := range u.changes {
		s := c.ResourceRecordSet
		name, typ, id := aws.ToString(s.Name), string(s.Type), aws.ToString(s.SetIdentifier)
		named := strings.Contains(m, "name='"+name+"', type='"+typ+"'") ||
			(strings.Contains(m, "DNS name "+name+" ") || strings.Contains(m, "DNS name "+name+",")) &&
				(strings.Contains(m, "type "+typ+" ") || strings.Contains(m, "type "+typ+","))
		if !named {
			continue
		}
		if strings.Contains(m, "set-identifier='") || strings.Contains(m, "SetIdentifier ") {
			if id == "" || !(strings.Contains(m, "set-identifier='"+id+"'") || strings.Contains(m, "SetIdentifier "+id+" ")) {
				continue
			}
		}
		return true
	}
	return false
}

// waitInSync polls GetChange every PollInterval until every accepted batch
// is INSYNC, at most SyncTimeout, observing each one's propagation time.
// Changes are applied either way: not INSYNC in time is not an error.
func (a *applier) waitInSync(ctx context.Context) bool {
	if len(a.pending) == 0 {
		return true
	}
	if a.p.opts.SyncTimeout < 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, a.p.opts.SyncTimeout)
	defer cancel()
	for len(a.pending) > 0 {
		if err := a.p.opts.Sleep(ctx, a.p.opts.PollInterval); err != nil {
			a.p.log.Warn("route53 changes not in sync in time", "zone", a.zone, "pending", len(a.pending), "timeout", a.p.opts.SyncTimeout)
			return false
		}
		var still []pendingChange
		for _, c := range a.pending {
			var out *r53.GetChangeOutput
			err := a.p.call(ctx, opGetChange, func(ctx context.Context) (err error) {
				out, err = a.p.api.GetChange(ctx, &r53.GetChangeInput{Id: aws.String(c.id)})
				return answered(opGetChange, out, err)
			})
			if err != nil {
				a.p.log.Warn("route53 change status unknown", "zone", a.zone, "change", c.id, "err", err)
				return false
			}
			if out.ChangeInfo != nil && out.ChangeInfo.Status == types.ChangeStatusInsync {
				a.p.m.Propagation.WithLabelValues(providerLabel).Observe(a.p.opts.Now().Sub(c.sent).Seconds())
				continue
			}
			still = append(still, c)
		}
		a.pending = still
	}
	return true
}

func (a *applier) report(batches int) {
	a.p.log.Info("route53 changes applied", "zone", a.zone, "applied", a.res.Applied, "failed", len(a.res.Failed),
		"batches", batches, "calls", a.res.Calls, "synced", a.res.Synced)
}
