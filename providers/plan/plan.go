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
	cur := map[Key]Record{}
	curTypes := map[[2]string]bool{} // name, type present (other than ownership TXT)
	curAny := map[string]bool{}      // names with any record (other than ownership TXT)
	owners := map[string]ownership{}
	for _, r := range in.Current {
		if strings.HasPrefix(r.Name, OwnerPrefix) && r.Type == "TXT" && r.SetID == "" {
			name := strings.TrimPrefix(r.Name, OwnerPrefix)
			o := ownership{record: r}
			for _, v := range r.Values {
				if owner, types, ok := ParseOwner(v); ok {
					o.owner, o.types = owner, types
				}
			}
			owners[name] = o
			continue
		}
		cur[r.Key()] = r
		curTypes[[2]string{r.Name, r.Type}] = true
		curAny[r.Name] = true
	}
	mine := func(name string) bool { o, ok := owners[name]; return ok && o.owner == in.Owner }

	desired := map[Key]Record{}
	desiredTypes := map[string][]string{}
	for _, r := range in.Desired {
		// A CNAME shares its name with nothing: a foreign CNAME blocks every
		// type, and a CNAME cannot go where foreign records are.
		cnameClash := r.Type != "CNAME" && curTypes[[2]string{r.Name, "CNAME"}] || r.Type == "CNAME" && curAny[r.Name]
		// A DS describes the zone the NS beside it delegates to: it is never
		// added to a delegation someone else made.
		dsClash := r.Type == "DS" && curTypes[[2]string{r.Name, "NS"}]
		if !mine(r.Name) && (curTypes[[2]string{r.Name, r.Type}] || cnameClash || dsClash || owners[r.Name].owner != "") {
			reason := "the name has records Meridian does not own (no ownership TXT " + OwnerName(r.Name) + ")"
			if o := owners[r.Name]; o.owner != "" && o.owner != in.Owner {
				reason = fmt.Sprintf("the name is owned by another Meridian installation (owner %q)", o.owner)
			}
			p.Conflicts = append(p.Conflicts, Conflict{Key: r.Key(), Reason: reason})
			continue
		}
		desired[r.Key()] = r
		desiredTypes[r.Name] = append(desiredTypes[r.Name], r.Type)
	}

	// Records: create, update, delete.
	for k, d := range desired {
		c, ok := cur[k]
		switch {
		case !ok:
			p.Changes.Creates = append(p.Changes.Creates, d)
		case !c.Equal(d):
			d.IDs = c.IDs
			p.Changes.Updates = append(p.Changes.Updates, Update{Old: c, New: d})
		}
	}
	for k, c := range cur {
		if _, want := desired[k]; want || !mine(k.Name) {
			continue
		}
		if slices.Contains(owners[k.Name].types, k.Type) || slices.Contains(desiredTypes[k.Name], k.Type) {
			p.Changes.Deletes = append(p.Changes.Deletes, c)
		}
	}

	// Ownership records follow the names we write.
	for name, types := range desiredTypes {
		want := Record{Name: OwnerName(name), Type: "TXT", TTL: ownerTTL, Values: []string{OwnerValue(in.Owner, types)}}
		o, ok := owners[name]
		switch {
		case !ok:
			p.Changes.Creates = append(p.Changes.Creates, want)
		case !o.record.Equal(want):
			want.IDs = o.record.IDs
			p.Changes.Updates = append(p.Changes.Updates, Update{Old: o.record, New: want})
		}
	}
	for name, o := range owners {
		if o.owner == in.Owner && len(desiredTypes[name]) == 0 {
			p.Changes.Deletes = append(p.Changes.Deletes, o.record)
		}
	}
	sortRecords(p.Changes.Creates)
	sortRecords(p.Changes.Deletes)
	slices.SortFunc(p.Changes.Updates, func(a, b Update) int { return compareKey(a.New.Key(), b.New.Key()) })
	slices.SortFunc(p.Conflicts, func(a, b Conflict) int { return compareKey(a.Key, b.Key) })
	return p
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
