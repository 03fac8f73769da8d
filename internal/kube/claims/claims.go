package claims

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
)

// Refusal kinds: why a namespace may not serve a name.
const (
	KindTaken      = "taken"       // another namespace claimed it first (rule 4)
	KindNotAllowed = "not-allowed" // a claim gives it to other namespaces (rule 2)
	KindReserved   = "reserved"    // a zone apex or nameserver name no claim lists (rule 1)
	KindUnclaimed  = "unclaimed"   // no claim covers it and unclaimed_names is refuse (rule 3)
)

// Kinds lists the refusal kinds, for metrics.
var Kinds = []string{KindTaken, KindNotAllowed, KindReserved, KindUnclaimed}

// ConflictPrefix starts every refusal message.
const ConflictPrefix = "hostname conflict: "

// Policy is what decides ownership besides the objects.
type Policy struct {
	Claims    []model.Claim     // kubernetes.claims, names canonical
	Unclaimed string            // kubernetes.unclaimed_names; "" is oldest
	Reserved  map[string]string // canonical name -> what it is, e.g. "the apex of zone gslb.example.com."
	// RingNames are the apexes of zones whose ring serves names in them
	// (zones[].ring): ring.<apex>, the names below it and ns-<label>.<apex>
	// are reserved like the nameservers (the ring's seeds and glue).
	RingNames []string
	// ReleaseAfter is how long a rule-4 owner keeps a name after its
	// objects stopped claiming it (kubernetes.claim_release_after).
	ReleaseAfter time.Duration
}

// IsReserved reports whether name (canonical) is reserved by rule 1 (a
// zone apex, a nameserver name, or a name of the ring's), and what it is.
func (p Policy) IsReserved(name string) (string, bool) { return p.reserved(name) }

// reserved reports whether name is reserved, and what it is.
func (p Policy) reserved(name string) (string, bool) {
	if what, ok := p.Reserved[name]; ok {
		return what, true
	}
	for _, apex := range p.RingNames {
		ring := "ring." + apex
		if name == ring || below(name, ring) {
			return "a name of the ring's seeds in zone " + apex, true
		}
		if label, ok := strings.CutSuffix(name, "."+apex); ok && strings.HasPrefix(label, "ns-") && !strings.Contains(label, ".") {
			return "a name of the ring's nameservers in zone " + apex, true
		}
	}
	return "", false
}

// PolicyFrom takes the policy of a normalized desired state: its claims,
// unclaimed_names, and its zones' apexes and nameserver names as reserved.
func PolicyFrom(d *model.Desired) Policy {
	p := Policy{Unclaimed: d.Kubernetes.UnclaimedNames, Reserved: map[string]string{}, ReleaseAfter: d.Kubernetes.ClaimReleaseAfter.D()}
	if p.ReleaseAfter <= 0 { // d is not normalized
		p.ReleaseAfter = model.DefaultClaimReleaseAfter
	}
	for _, c := range d.Kubernetes.Claims { // canonical, also when d is not normalized
		p.Claims = append(p.Claims, model.Claim{Namespaces: c.Namespaces, Names: canonical(c.Names), Suffixes: canonical(c.Suffixes)})
	}
	for _, z := range d.Zones {
		apex := model.CanonicalName(z.Apex)
		for _, ns := range z.Nameservers {
			n := model.CanonicalName(ns.Name)
			if _, ok := p.Reserved[n]; !ok {
				p.Reserved[n] = "a nameserver name of zone " + apex
			}
		}
	}
	for _, z := range d.Zones { // an apex is named as such even if also a nameserver
		apex := model.CanonicalName(z.Apex)
		p.Reserved[apex] = "the apex of zone " + apex
		if z.Ring != nil {
			p.RingNames = append(p.RingNames, apex)
		}
	}
	return p
}

// Claim is one object's claim on one name.
type Claim struct {
	Name      string    // canonical host name
	Namespace string    // the object's namespace (in any cluster)
	Created   time.Time // the object's creationTimestamp
	// Export is true for a ServiceExport's claim: its name,
	// <service>.<namespace>.<kubernetes.mcs.zone>, holds its namespace, so
	// it is that namespace's whoever claimed it first (rule 4).
	Export bool
}

// Decision says who owns one name.
type Decision struct {
	Name   string
	Owners []string // namespaces whose objects serve the name, sorted; empty: none may
	Rule   string   // "claim" (rule 2), "mcs" or "first" (rule 4), or the refusal kind when nobody may
	// Refused is the kind of refusal for namespaces not in Owners:
	// KindNotAllowed, KindTaken, KindReserved or KindUnclaimed.
	Refused string
	why     string // for reserved: what the name is; for a released rule-4 owner: how long it holds the name
	// record is rule 4's ledger record of the owner (nil for other rules).
	record *Record
}

// Record is the ledger record of the name's owner under rule 4 (ok false
// for the other rules).
func (d Decision) Record() (Record, bool) {
	if d.record == nil {
		return Record{}, false
	}
	return *d.record, true
}

// Held says, for a name whose rule-4 owner no longer claims it, how long
// the owner keeps it; "" otherwise.
func (d Decision) Held() string {
	if d.record == nil || d.record.Released == nil {
		return ""
	}
	return d.why
}

// Rules of a Decision.
const (
	RuleClaim = "claim"
	RuleFirst = "first"
	RuleMCS   = "mcs" // rule 4: a ServiceExport's name is its namespace's
)

// Allows reports whether objects of namespace ns serve the name.
func (d Decision) Allows(ns string) bool {
	_, ok := slices.BinarySearch(d.Owners, ns)
	return ok
}

// Refusal is the message for an object of namespace ns that is refused the
// name; it names the owner namespaces, never their objects or clusters.
func (d Decision) Refusal(ns string) string {
	owners := strings.Join(d.Owners, ", ")
	who := "objects in namespace " + ns
	if ns == "" {
		who = "objects of no namespace"
	}
	switch d.Refused {
	case KindReserved:
		return fmt.Sprintf("%s%s is %s: it is served from Kubernetes only when a kubernetes.claims entry lists it in names", ConflictPrefix, d.Name, d.why)
	case KindUnclaimed:
		return fmt.Sprintf("%sno kubernetes.claims entry covers %s and kubernetes.unclaimed_names is refuse: it is not served from Kubernetes", ConflictPrefix, d.Name)
	case KindNotAllowed:
		if d.Rule == RuleMCS {
			return fmt.Sprintf("%s%s belongs to namespace %s, whose ServiceExport names it (<service>.<namespace>.<kubernetes.mcs.zone>); %s are not served for it", ConflictPrefix, d.Name, owners, who)
		}
		return fmt.Sprintf("%skubernetes.claims gives %s to namespace %s; %s are not served for it", ConflictPrefix, d.Name, owners, who)
	default:
		msg := fmt.Sprintf("%s%s belongs to namespace %s, whose object claimed it first; %s are not served for it (one namespace per name unless kubernetes.claims gives it to several)", ConflictPrefix, d.Name, owners, who)
		if held := d.Held(); held != "" {
			msg += "; " + held
		}
		return msg
	}
}

// Decide returns the decision for every name in cs, keyed by name, and
// the ledger of rule 4's owners after it (see [Record]): first is the
// ledger before (nil: empty), now the time of this decision. It is pure:
// it reads no clock, and the order of cs does not matter.
func Decide(p Policy, cs []Claim, first Ledger, now time.Time) (map[string]Decision, Ledger) {
	byName := map[string][]Claim{}
	claimed := map[string]map[string]bool{}
	for _, c := range cs {
		byName[c.Name] = append(byName[c.Name], c)
		if claimed[c.Name] == nil {
			claimed[c.Name] = map[string]bool{}
		}
		claimed[c.Name][c.Namespace] = true
	}
	out := make(map[string]Decision, len(byName))
	for name, g := range byName {
		rec, ok := first[name]
		var held *Record
		if ok && !rec.expired(now, p.ReleaseAfter) {
			switch {
			case claimed[name][rec.Namespace]:
				rec.Released = nil // held again (or still)
			case rec.Released == nil:
				t := now // released by this decision
				rec.Released = &t
			}
			held = &rec
		}
		out[name] = decideOne(p, name, g, held, now)
	}
	return out, next(p, first, out, now)
}

// Static decides name (canonical) by rules 1 to 3, which read the policy
// alone: ok is false when only rule 4 can decide it (no claim covers the
// name, it is not reserved and unclaimed_names is oldest), which needs the
// claims of every object and the ledger.
func (p Policy) Static(name string) (d Decision, ok bool) {
	d = Decision{Name: name}
	owners, covered := p.allowed(name)
	what, reserved := p.reserved(name)
	switch {
	case covered:
		d.Owners, d.Rule, d.Refused = owners, RuleClaim, KindNotAllowed
	case reserved:
		d.Rule, d.Refused, d.why = KindReserved, KindReserved, what
	case p.Unclaimed == model.UnclaimedRefuse:
		d.Rule, d.Refused = KindUnclaimed, KindUnclaimed
	default:
		return d, false
	}
	return d, true
}

// Refuses says why a writer of namespace ns may not serve name (both
// canonical) by rules 1 to 3; refused is false when it may, or when only
// rule 4 decides the name. ns "" is no namespace (a cluster-scoped object,
// or a record that names none): it may serve no name that rules 1 to 3
// decide.
func (p Policy) Refuses(ns, name string) (refusal string, refused bool) {
	d, ok := p.Static(name)
	if !ok || (ns != "" && d.Allows(ns)) {
		return "", false
	}
	return d.Refusal(ns), true
}

// decideOne decides name from its claims g; held is rule 4's live record
// of its owner (nil: none).
func decideOne(p Policy, name string, g []Claim, held *Record, now time.Time) Decision {
	d, static := p.Static(name)
	switch {
	case static:
	case slices.ContainsFunc(g, func(c Claim) bool { return c.Export }):
		// A ServiceExport's name holds its namespace: that namespace's,
		// before any first claimant (no squatting on another's export).
		for _, c := range g {
			if c.Export {
				d.Owners = append(d.Owners, c.Namespace)
			}
		}
		slices.Sort(d.Owners)
		d.Owners, d.Rule, d.Refused = slices.Compact(d.Owners), RuleMCS, KindNotAllowed
	case held != nil:
		// Sticky: the recorded first claimant keeps the name, whatever the
		// age of the objects that claim it now.
		d.Owners, d.Rule, d.Refused, d.record = []string{held.Namespace}, RuleFirst, KindTaken, held
		if held.Released != nil {
			d.why = heldText(*held, p.ReleaseAfter)
		}
	default:
		// No owner yet (or the last one's hold expired): among the
		// namespaces claiming it now, the oldest object's.
		first := slices.MinFunc(g, func(a, b Claim) int {
			return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Namespace, b.Namespace))
		})
		d.Owners, d.Rule, d.Refused = []string{first.Namespace}, RuleFirst, KindTaken
		d.record = &Record{Namespace: first.Namespace, Since: now}
	}
	return d
}

// allowed returns the namespaces the most specific claims give name to
// (sorted, unique), and whether any claim covers it. A suffix never covers
// a reserved name.
func (p Policy) allowed(name string) ([]string, bool) {
	var exact, bySuffix []string
	best := -1 // length of the longest covering suffix
	_, reserved := p.reserved(name)
	for _, c := range p.Claims {
		if slices.Contains(c.Names, name) {
			exact = append(exact, c.Namespaces...)
		}
		if reserved {
			continue
		}
		for _, s := range c.Suffixes {
			if !below(name, s) {
				continue
			}
			switch {
			case len(s) > best:
				best, bySuffix = len(s), slices.Clone(c.Namespaces)
			case len(s) == best:
				bySuffix = append(bySuffix, c.Namespaces...)
			}
		}
	}
	owners := exact
	if len(exact) == 0 {
		if best < 0 {
			return nil, false
		}
		owners = bySuffix
	}
	slices.Sort(owners)
	return slices.Compact(owners), true
}

// below reports whether name lies strictly below suffix (both canonical).
func below(name, suffix string) bool {
	return len(name) > len(suffix) && strings.HasSuffix(name, suffix) && name[len(name)-len(suffix)-1] == '.'
}

func canonical(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = model.CanonicalName(n)
	}
	return out
}
