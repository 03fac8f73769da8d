package plan

import (
	"fmt"
	"slices"
	"strings"
)

// OwnerPrefix is the label in front of an owned name where Meridian keeps
// its ownership TXT record: _meridian-owner.app.example.com.
const OwnerPrefix = "_meridian-owner."

// ownerHeritage starts every ownership TXT value.
const ownerHeritage = "heritage=meridian"

// OwnerName returns the name of the ownership TXT record of name.
func OwnerName(name string) string { return OwnerPrefix + name }

// OwnerValue is the ownership TXT value for owner and the managed types.
func OwnerValue(owner string, types []string) string {
	types = slices.Clone(types)
	slices.Sort(types)
	types = slices.Compact(types)
	return fmt.Sprintf("%s,owner=%s,types=%s", ownerHeritage, owner, strings.Join(types, "+"))
}

// ParseOwner reads an ownership TXT value; ok is false for anything else.
func ParseOwner(v string) (owner string, types []string, ok bool) {
	v = strings.Trim(v, `"`)
	if !strings.HasPrefix(v, ownerHeritage+",") {
		return "", nil, false
	}
	for _, part := range strings.Split(v, ",")[1:] {
		k, val, _ := strings.Cut(part, "=")
		switch k {
		case "owner":
			owner = val
		case "types":
			if val != "" {
				types = strings.Split(val, "+")
			}
		}
	}
	return owner, types, owner != ""
}

// WrittenTypes are the record types Meridian writes (answers: A, AAAA,
// CNAME; delegations: NS, glue A/AAAA, DS), besides its ownership TXT. A
// record of another type is never deleted, whatever the ownership TXT's
// types= lists: whoever may write that TXT (a key limited to TXT, for
// ACME) cannot make Meridian delete an MX or a TXT with its broader key.
var WrittenTypes = []string{"A", "AAAA", "CNAME", "NS", "DS"}

// Input of a plan.
type Input struct {
	Owner   string   // this installation's owner id
	Desired []Record // records Meridian wants, without ownership records
	Current []Record // every record of the zone as the provider has it
}

// Plan is the outcome: the changes to make and what could not be done.
type Plan struct {
	Changes   Changes
	Conflicts []Conflict
}

// Compute diffs desired against current. Only names whose ownership TXT
// carries Input.Owner are changed or deleted; a desired record at a name
// that exists without our ownership (or with another owner) is a conflict
// and is left alone, and so is a DS at a name with someone else's NS. Ownership TXT records are created, updated and deleted
// with the records they cover. The result is sorted and deterministic.
func Compute(in Input) Plan {
	var p Plan
	cur := readCurrent(in.Current)
	desired := map[Key]Record{}
	desiredTypes := map[string][]string{}
	for _, r := range in.Desired {
		if c, ok := cur.conflict(r, in.Owner); ok {
			p.Conflicts = append(p.Conflicts, c)
			continue
		}
		desired[r.Key()] = r
		desiredTypes[r.Name] = append(desiredTypes[r.Name], r.Type)
	}
	p.Changes = cur.recordChanges(desired, desiredTypes, in.Owner)
	cur.ownerChanges(&p.Changes, desiredTypes, in.Owner)
	sortRecords(p.Changes.Creates)
	sortRecords(p.Changes.Deletes)
	slices.SortFunc(p.Changes.Updates, func(a, b Update) int { return compareKey(a.New.Key(), b.New.Key()) })
	slices.SortFunc(p.Conflicts, func(a, b Conflict) int { return compareKey(a.Key, b.Key) })
	return p
}

// current is the zone as read, indexed for Compute.
type current struct {
	records map[Key]Record
	types   map[[2]string]bool   // name, type present (other than ownership TXT)
	named   map[string]bool      // names with any record (other than ownership TXT)
	owners  map[string]ownership // by the name the ownership TXT covers
}

// readCurrent indexes the current records, ownership TXT records apart.
func readCurrent(records []Record) current {
	c := current{records: map[Key]Record{}, types: map[[2]string]bool{}, named: map[string]bool{}, owners: map[string]ownership{}}
	for _, r := range records {
		if strings.HasPrefix(r.Name, OwnerPrefix) && r.Type == "TXT" && r.SetID == "" {
			name := strings.TrimPrefix(r.Name, OwnerPrefix)
			o := ownership{record: r}
			for _, v := range r.Values {
				if owner, types, ok := ParseOwner(v); ok {
					o.owner, o.types = owner, types
				}
			}
			c.owners[name] = o
			continue
		}
		c.records[r.Key()] = r
		c.types[[2]string{r.Name, r.Type}] = true
		c.named[r.Name] = true
	}
	return c
}

// mine reports whether owner owns name.
func (c current) mine(name, owner string) bool {
	o, ok := c.owners[name]
	return ok && o.owner == owner
}

// conflict reports why the desired record r cannot be written at a name
// owner does not own (ok false: it can).
func (c current) conflict(r Record, owner string) (Conflict, bool) {
	// A CNAME shares its name with nothing: a foreign CNAME blocks every
	// type, and a CNAME cannot go where foreign records are.
	cnameClash := r.Type != "CNAME" && c.types[[2]string{r.Name, "CNAME"}] || r.Type == "CNAME" && c.named[r.Name]
	// A DS describes the zone the NS beside it delegates to: it is never
	// added to a delegation someone else made.
	dsClash := r.Type == "DS" && c.types[[2]string{r.Name, "NS"}]
	if c.mine(r.Name, owner) || !(c.types[[2]string{r.Name, r.Type}] || cnameClash || dsClash || c.owners[r.Name].owner != "") {
		return Conflict{}, false
	}
	reason := "the name has records Meridian does not own (no ownership TXT " + OwnerName(r.Name) + ")"
	if o := c.owners[r.Name]; o.owner != "" && o.owner != owner {
		reason = fmt.Sprintf("the name is owned by another Meridian installation (owner %q)", o.owner)
	}
	return Conflict{Key: r.Key(), Reason: reason}, true
}

// recordChanges creates and updates the desired records, and deletes ours
// of the types our ownership records list or that we write at the name.
func (c current) recordChanges(desired map[Key]Record, desiredTypes map[string][]string, owner string) Changes {
	var ch Changes
	for k, d := range desired {
		cur, ok := c.records[k]
		switch {
		case !ok:
			ch.Creates = append(ch.Creates, d)
		case !cur.Equal(d):
			d.IDs = cur.IDs
			ch.Updates = append(ch.Updates, Update{Old: cur, New: d})
		}
	}
	for k, cur := range c.records {
		if _, want := desired[k]; want || !c.mine(k.Name, owner) {
			continue
		}
		if !slices.Contains(WrittenTypes, k.Type) {
			continue // the ownership TXT says so, but Meridian never wrote it
		}
		if slices.Contains(c.owners[k.Name].types, k.Type) || slices.Contains(desiredTypes[k.Name], k.Type) {
			ch.Deletes = append(ch.Deletes, cur)
		}
	}
	return ch
}

// ownerChanges adds to ch the ownership records that follow the names we
// write: created or updated where we write, deleted where we no longer do.
func (c current) ownerChanges(ch *Changes, desiredTypes map[string][]string, owner string) {
	for name, types := range desiredTypes {
		want := Record{Name: OwnerName(name), Type: "TXT", TTL: ownerTTL, Values: []string{OwnerValue(owner, types)}}
		o, ok := c.owners[name]
		switch {
		case !ok:
			ch.Creates = append(ch.Creates, want)
		case !o.record.Equal(want):
			want.IDs = o.record.IDs
			ch.Updates = append(ch.Updates, Update{Old: o.record, New: want})
		}
	}
	for name, o := range c.owners {
		if o.owner == owner && len(desiredTypes[name]) == 0 {
			ch.Deletes = append(ch.Deletes, o.record)
		}
	}
}

// ownerTTL is the TTL of ownership TXT records.
const ownerTTL = 300

type ownership struct {
	record Record
	owner  string
	types  []string
}

func sortRecords(rs []Record) {
	slices.SortFunc(rs, func(a, b Record) int { return compareKey(a.Key(), b.Key()) })
}

func compareKey(a, b Key) int {
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	if c := strings.Compare(a.Type, b.Type); c != 0 {
		return c
	}
	return strings.Compare(a.SetID, b.SetID)
}
