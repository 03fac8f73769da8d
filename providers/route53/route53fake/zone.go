package route53fake

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/meridian-gslb/meridian/internal/model"
)

// RecordSet is a resource record set as Route 53 holds it: values in
// presentation format (TXT values quoted), names lower case with a trailing
// dot and without escapes.
type RecordSet struct {
	Name          string
	Type          string
	TTL           int64
	Values        []string
	SetID         string
	Weight        *int64
	Failover      string // PRIMARY or SECONDARY
	Geo           *GeoLocation
	Region        string // latency
	MultiValue    *bool
	HealthCheckID string
	Alias         *AliasTarget
	Cidr          *CidrRoutingConfig // IP-based routing
}

// GeoLocation of a geolocation record set; Country "*" is the default.
type GeoLocation struct {
	Continent, Country, Subdivision string
}

// AliasTarget of an alias record set.
type AliasTarget struct {
	HostedZoneID, DNSName string
	EvaluateTargetHealth  bool
}

type setKey struct{ name, typ, id string }

func (s RecordSet) key() setKey { return setKey{s.Name, s.Type, s.SetID} }

// policy names the routing policy, as Route 53's messages do.
func (s RecordSet) policy() string {
	switch {
	case s.Weight != nil:
		return "weighted"
	case s.Failover != "":
		return "failover"
	case s.Geo != nil:
		return "geolocation"
	case s.Region != "":
		return "latency"
	case s.MultiValue != nil && *s.MultiValue:
		return "multivalue"
	case s.Cidr != nil:
		return "IP-based"
	}
	return "simple"
}

// describe is the [name='…', type='…', set-identifier='…'] of Route 53's messages.
func (s RecordSet) describe() string {
	if s.SetID == "" {
		return fmt.Sprintf("[name='%s', type='%s']", s.Name, s.Type)
	}
	return fmt.Sprintf("[name='%s', type='%s', set-identifier='%s']", s.Name, s.Type, s.SetID)
}

// same reports whether a DELETE of d matches the live set s exactly.
func (s RecordSet) same(d RecordSet) bool {
	a, b := slices.Clone(s.Values), slices.Clone(d.Values)
	slices.Sort(a)
	slices.Sort(b)
	return s.key() == d.key() && s.TTL == d.TTL && slices.Equal(a, b) && eqPtr(s.Weight, d.Weight) &&
		s.Failover == d.Failover && eqPtr(s.Geo, d.Geo) && s.Region == d.Region && eqPtr(s.MultiValue, d.MultiValue) &&
		s.HealthCheckID == d.HealthCheckID && eqPtr(s.Alias, d.Alias) && eqPtr(s.Cidr, d.Cidr)
}

func eqPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

type zone struct {
	id, name, caller string
	sets             map[setKey]RecordSet
	tags             map[string]string
}

// canonicalName lower-cases name, resolves \DDD and \X escapes and adds the
// trailing dot.
func canonicalName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '\\' && i+4 <= len(name) && isDigits(name[i+1:i+4]) {
			n, _ := strconv.ParseUint(name[i+1:i+4], 8, 8)
			b.WriteByte(byte(n))
			i += 3
			continue
		}
		if c == '\\' && i+1 < len(name) {
			i++
			c = name[i]
		}
		b.WriteByte(c)
	}
	out := strings.ToLower(b.String())
	if !strings.HasSuffix(out, ".") {
		out += "."
	}
	return out
}

func isDigits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '7' {
			return false
		}
	}
	return len(s) == 3
}

// escapeName writes name the way Route 53 returns it: characters other than
// a-z, 0-9, hyphen, underscore and the dots as \ + three octal digits (so
// * is \052).
func escapeName(name string) string {
	var b strings.Builder
	for _, c := range []byte(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "\\%03o", c)
		}
	}
	return b.String()
}

// reversed is the sort key of ListResourceRecordSets: labels reversed
// (www.example.com. → com.example.www).
func reversed(name string) string {
	labels := strings.Split(strings.TrimSuffix(name, "."), ".")
	slices.Reverse(labels)
	return strings.Join(labels, ".")
}

func compareKeys(a, b setKey) int {
	if c := strings.Compare(reversed(a.name), reversed(b.name)); c != 0 {
		return c
	}
	if c := strings.Compare(a.typ, b.typ); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// sorted returns z's sets in Route 53's listing order.
func (z *zone) sorted() []RecordSet {
	out := slices.Collect(maps.Values(z.sets))
	slices.SortFunc(out, func(a, b RecordSet) int { return compareKeys(a.key(), b.key()) })
	return out
}

var rrTypes = []string{"A", "AAAA", "CAA", "CNAME", "DS", "HTTPS", "MX", "NAPTR", "NS", "PTR", "SOA", "SPF", "SRV", "SSHFP", "SVCB", "TLSA", "TXT"}

var continents = []string{"AF", "AN", "AS", "EU", "NA", "OC", "SA"}

// validate checks the shape of one change the way Route 53's request
// validation does (InvalidInput, refusing the whole request).
func validate(i int, c xmlChange) *apiError {
	s := c.Set
	at := func(field string) string {
		return fmt.Sprintf("changeBatch.changes.%d.member.resourceRecordSet.%s", i+1, field)
	}
	where := fmt.Sprintf("in Change with [Action=%s, Name=%s, Type=%s, SetIdentifier=%s]", c.Action, s.Name, s.Type, orNull(s.SetIdentifier))
	switch {
	case !slices.Contains([]string{"CREATE", "DELETE", "UPSERT"}, c.Action):
		return invalidInput("1 validation error detected: Value '%s' at 'changeBatch.changes.%d.member.action' failed to satisfy constraint: Member must satisfy enum value set: [CREATE, DELETE, UPSERT]", c.Action, i+1)
	case !slices.Contains(rrTypes, s.Type):
		return invalidInput("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must satisfy enum value set: [%s]", s.Type, at("type"), strings.Join(rrTypes, ", "))
	case s.Name == "" || len(s.Name) > 1024:
		return invalidInput("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must have length between 1 and 1024", s.Name, at("name"))
	case s.Weight != nil && (*s.Weight < 0 || *s.Weight > 255):
		return invalidInput("1 validation error detected: Value '%d' at '%s' failed to satisfy constraint: Member must have value %s", *s.Weight, at("weight"), map[bool]string{true: "greater than or equal to 0", false: "less than or equal to 255"}[*s.Weight < 0])
	case s.TTL != nil && (*s.TTL < 0 || *s.TTL > 2147483647):
		return invalidInput("1 validation error detected: Value '%d' at '%s' failed to satisfy constraint: Member must have value between 0 and 2147483647", *s.TTL, at("tTL"))
	case s.Failover != "" && s.Failover != "PRIMARY" && s.Failover != "SECONDARY":
		return invalidInput("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must satisfy enum value set: [PRIMARY, SECONDARY]", s.Failover, at("failover"))
	case s.Region != "" && !model.IsAWSRegion(s.Region):
		return invalidInput("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must satisfy enum value set: [%s]", s.Region, at("region"), strings.Join(model.AWSRegions, ", "))
	case s.GeoProximity != nil || s.TrafficPolicy != "":
		return invalidInput("Invalid request: the fake does not support geoproximity or traffic policy record sets %s", where)
	case s.CidrRouting != nil && s.CidrRouting.CollectionID == "":
		return invalidInput("1 validation error detected: Value null at '%s' failed to satisfy constraint: Member must not be null", at("cidrRoutingConfig.collectionId"))
	case s.CidrRouting != nil && !recordLocationRE.MatchString(s.CidrRouting.LocationName):
		return invalidInput("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must have length between 1 and 16 and satisfy regular expression pattern: [0-9A-Za-z_\\-\\*]+", s.CidrRouting.LocationName, at("cidrRoutingConfig.locationName"))
	case (s.AliasTarget == nil) == (s.TTL == nil || s.ResourceRecords == nil || len(s.ResourceRecords.RR) == 0):
		return invalidInput("Invalid request: Expected exactly one of [AliasTarget, all of [TTL, and ResourceRecords], or TrafficPolicyInstanceId], but found none %s", where)
	}
	set := s.toSet()
	policies := 0
	for _, on := range []bool{s.Weight != nil, s.Failover != "", s.GeoLocation != nil, s.Region != "", s.MultiValueAnswer != nil, s.CidrRouting != nil} {
		if on {
			policies++
		}
	}
	switch {
	case policies > 1:
		return invalidInput("Invalid request: a record set can have only one routing policy %s", where)
	case policies == 1 && s.SetIdentifier == "":
		return invalidInput("Invalid request: Missing field 'SetIdentifier' %s", where)
	case policies == 0 && s.SetIdentifier != "":
		return invalidInput("Invalid request: Missing field 'Weight' (or another routing policy) for a record set with a SetIdentifier %s", where)
	case set.Geo != nil:
		g := set.Geo
		switch {
		case g.Continent != "" && (g.Country != "" || g.Subdivision != ""):
			return invalidInput("Invalid request: a GeoLocation has either a ContinentCode or a CountryCode %s", where)
		case g.Continent == "" && g.Country == "":
			return invalidInput("Invalid request: a GeoLocation needs a ContinentCode or a CountryCode %s", where)
		case g.Continent != "" && !slices.Contains(continents, g.Continent):
			return invalidInput("Invalid request: unknown ContinentCode '%s' %s", g.Continent, where)
		case g.Country != "" && g.Country != "*" && (len(g.Country) != 2 || strings.ToUpper(g.Country) != g.Country):
			return invalidInput("Invalid request: unknown CountryCode '%s' %s", g.Country, where)
		}
	}
	return nil
}

func orNull(s string) string {
	if s == "" {
		return "null"
	}
	return s
}

// checkValues returns Route 53's messages for values it refuses.
func checkValues(s RecordSet) []string {
	var msgs []string
	bad := func(problem, v string) {
		msgs = append(msgs, fmt.Sprintf("Invalid Resource Record: 'FATAL problem: %s encountered with '%s''", problem, v))
	}
	seen := map[string]bool{}
	for _, v := range s.Values {
		if seen[v] {
			msgs = append(msgs, fmt.Sprintf("Duplicate Resource Record: '%s'", v))
		}
		seen[v] = true
		switch s.Type {
		case "A":
			if a, err := netip.ParseAddr(v); err != nil || !a.Is4() {
				bad("ARRDATAIllegalIPv4Address (Value is not a valid IPv4 address)", v)
			}
		case "AAAA":
			if a, err := netip.ParseAddr(v); err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
				bad("AAAARRDATAIllegalIPv6Address (Value is not a valid IPv6 address)", v)
			}
		case "TXT", "SPF":
			if problem := checkCharacterStrings(v); problem != "" {
				bad(problem, v)
			}
		case "CNAME":
			if v == "" || strings.ContainsAny(v, " \"") {
				bad("DomainLabelEmpty (Domain label is empty)", v)
			}
		case "DS":
			if problem := checkDS(v); problem != "" {
				bad(problem, v)
			}
		}
	}
	if s.Type == "CNAME" && len(s.Values) > 1 {
		msgs = append(msgs, fmt.Sprintf("RRSet of type CNAME with DNS name %s cannot have more than one resource record", s.Name))
	}
	return msgs
}

// dsDigestLen is the hex length of the digest of each DS digest type
// Route 53 takes: SHA-1 (1), SHA-256 (2), SHA-384 (4).
var dsDigestLen = map[uint64]int{1: 40, 2: 64, 4: 96}

// checkDS checks a DS value, "key-tag algorithm digest-type digest" (RFC
// 4034 section 5.3): the numbers in range, the digest hex of its type's
// length. It returns Route 53's problem text, "" when valid.
func checkDS(v string) string {
	f := strings.Fields(v)
	if len(f) < 4 {
		return "DSRRDATATooFewFields (DS record must have key tag, algorithm, digest type and digest)"
	}
	if _, err := strconv.ParseUint(f[0], 10, 16); err != nil {
		return "DSRRDATAIllegalKeyTag (Key tag must be 0..65535)"
	}
	if alg, err := strconv.ParseUint(f[1], 10, 8); err != nil || alg == 0 {
		return "DSRRDATAIllegalAlgorithm (Algorithm must be 1..255)"
	}
	dt, err := strconv.ParseUint(f[2], 10, 8)
	if err != nil || dsDigestLen[dt] == 0 {
		return "DSRRDATAIllegalDigestType (Digest type must be 1, 2 or 4)"
	}
	digest := strings.Join(f[3:], "")
	if len(digest) != dsDigestLen[dt] || strings.Trim(strings.ToUpper(digest), "0123456789ABCDEF") != "" {
		return "DSRRDATAIllegalDigest (Digest is not a hex string of the digest type's length)"
	}
	return ""
}

// checkCharacterStrings checks a TXT value: one or more quoted strings of at
// most 255 characters each, separated by spaces.
func checkCharacterStrings(v string) string {
	if !strings.HasPrefix(v, `"`) {
		return "InvalidCharacterString (Value should be enclosed in quotation marks)"
	}
	for i := 0; i < len(v); {
		if v[i] == ' ' {
			i++
			continue
		}
		if v[i] != '"' {
			return "InvalidCharacterString (Value should be enclosed in quotation marks)"
		}
		n := 0
		i++
		for ; i < len(v) && v[i] != '"'; i++ {
			if v[i] == '\\' {
				if i+3 < len(v) && isDigits(v[i+1:i+4]) {
					i += 3
				} else {
					i++
				}
			}
			n++
		}
		if i >= len(v) {
			return "InvalidCharacterString (Value should be enclosed in quotation marks)"
		}
		i++ // closing quote
		if n > 255 {
			return "CharacterStringTooLong (Value is too long)"
		}
	}
	return ""
}

// lookups are the account's objects a record set may reference.
type lookups struct {
	checks      map[string]*healthCheck
	collections map[string]*cidrCollection
}

// apply runs a change batch against z: all or nothing. It returns Route 53's
// error for the batch, or nil once every change is applied.
func (z *zone) apply(changes []xmlChange, refs lookups) *apiError {
	for i, c := range changes {
		if err := validate(i, c); err != nil {
			return err
		}
	}
	work := maps.Clone(z.sets)
	var msgs []string
	var written []RecordSet // created or upserted, for the checks on the result
	touched := map[string]bool{}
	for _, c := range changes {
		s := c.Set.toSet()
		touched[s.Name] = true
		if s.Name != z.name && !strings.HasSuffix(s.Name, "."+z.name) {
			msgs = append(msgs, fmt.Sprintf("RRSet with DNS name %s is not permitted in zone %s", s.Name, z.name))
			continue
		}
		if c.Action != "DELETE" {
			m := checkValues(s)
			m = append(m, refs.check(s)...)
			if len(m) > 0 {
				msgs = append(msgs, m...)
				continue
			}
		}
		live, exists := work[s.key()]
		switch c.Action {
		case "CREATE":
			if exists {
				msgs = append(msgs, fmt.Sprintf("Tried to create resource record set %s but it already exists", s.describe()))
				continue
			}
			work[s.key()] = s
			written = append(written, s)
		case "UPSERT":
			work[s.key()] = s
			written = append(written, s)
		case "DELETE":
			switch {
			case !exists:
				msgs = append(msgs, fmt.Sprintf("Tried to delete resource record set %s but it was not found", s.describe()))
			case !live.same(s):
				msgs = append(msgs, fmt.Sprintf("Tried to delete resource record set %s but the values provided do not match the current values", s.describe()))
			default:
				delete(work, s.key())
			}
		}
	}
	msgs = append(msgs, z.checkResult(work, written, touched)...)
	msgs = append(msgs, z.checkAliases(work, written)...)
	if len(msgs) > 0 {
		return invalidChangeBatch(slices.Compact(msgs))
	}
	z.sets = work
	return nil
}

// checkResult checks the zone as the batch leaves it, at the names the batch
// touched: Route 53 validates a batch as a whole, so a DELETE and a CREATE in
// one batch may replace a CNAME by an A or a simple set by weighted ones.
func (z *zone) checkResult(work map[setKey]RecordSet, written []RecordSet, touched map[string]bool) []string {
	byName := map[string][]RecordSet{}
	for _, s := range work {
		if touched[s.Name] {
			byName[s.Name] = append(byName[s.Name], s)
		}
	}
	var msgs []string
	for _, w := range written {
		if _, still := work[w.key()]; still {
			msgs = append(msgs, z.checkWritten(w, byName[w.Name])...)
		}
	}
	msgs = append(msgs, z.checkDelegations(touched, byName)...)
	if touched[z.name] {
		msgs = append(msgs, checkApex(byName[z.name])...)
	}
	return msgs
}

// checkWritten checks one set the batch wrote against the sets at its name
// after the batch: where a DS or a CNAME may be, and whether it fits the
// other sets of its type.
func (z *zone) checkWritten(w RecordSet, atName []RecordSet) []string {
	var msgs []string
	var cname, other bool
	var sameType []RecordSet
	for _, s := range atName {
		if s.Type == "CNAME" {
			cname = true
		} else {
			other = true
		}
		if s.Type == w.Type && s.SetID != w.SetID {
			sameType = append(sameType, s)
		}
	}
	switch {
	case w.Type == "DS" && w.Name == z.name:
		// A zone's own DS belongs in its parent zone.
		msgs = append(msgs, fmt.Sprintf("RRSet of type DS with DNS name %s is not permitted in zone %s", w.Name, z.name))
	case w.Type == "CNAME" && w.Name == z.name:
		msgs = append(msgs, fmt.Sprintf("RRSet of type CNAME with DNS name %s is not permitted at apex in zone %s", w.Name, z.name))
	case w.Type == "CNAME" && other:
		msgs = append(msgs, fmt.Sprintf("RRSet of type CNAME with DNS name %s is not permitted as it conflicts with other records with the same DNS name in zone %s", w.Name, z.name))
	case w.Type != "CNAME" && cname:
		msgs = append(msgs, fmt.Sprintf("RRSet of type %s with DNS name %s is not permitted because a conflicting RRSet of type CNAME with the same DNS name already exists in zone %s", w.Type, w.Name, z.name))
	}
	for _, s := range sameType {
		if m := setConflict(w, s); m != "" {
			msgs = append(msgs, m)
			break
		}
	}
	return msgs
}

// setConflict is why w cannot stand beside s, a set of the same name and
// type ("" when it can): their routing policies, TTLs, failover roles,
// locations or CIDR collections clash.
func setConflict(w, s RecordSet) string {
	switch {
	case s.policy() != w.policy() && w.SetID == "":
		return fmt.Sprintf("RRSet with DNS name %s, type %s cannot be created as %s sets exist with the same name and type", w.Name, w.Type, s.policy())
	case s.policy() != w.policy():
		return fmt.Sprintf("RRSet with DNS name %s, type %s, SetIdentifier %s cannot be created as a non-%s set exists with the same name and type", w.Name, w.Type, w.SetID, w.policy())
	case w.policy() == "weighted" && s.TTL != w.TTL:
		return fmt.Sprintf("RRSet with DNS name %s, type %s, SetIdentifier %s has TTL %d, which differs from TTL %d of the other weighted sets with the same name and type", w.Name, w.Type, w.SetID, w.TTL, s.TTL)
	case w.Failover != "" && s.Failover == w.Failover:
		return fmt.Sprintf("RRSet with DNS name %s, type %s, SetIdentifier %s cannot be created as another %s failover set exists with the same name and type", w.Name, w.Type, w.SetID, w.Failover)
	case w.Geo != nil && s.Geo != nil && *w.Geo == *s.Geo:
		return fmt.Sprintf("RRSet with DNS name %s, type %s, SetIdentifier %s cannot be created as another set exists with the same name, type and geolocation", w.Name, w.Type, w.SetID)
	case w.Cidr != nil && s.Cidr != nil && w.Cidr.CollectionID != s.Cidr.CollectionID:
		return fmt.Sprintf("RRSet with DNS name %s, type %s, SetIdentifier %s cannot use CIDR collection %s as the other IP-based sets with the same name and type use collection %s", w.Name, w.Type, w.SetID, w.Cidr.CollectionID, s.Cidr.CollectionID)
	case w.Cidr != nil && s.Cidr != nil && w.Cidr.LocationName == s.Cidr.LocationName:
		return fmt.Sprintf("RRSet with DNS name %s, type %s, SetIdentifier %s cannot be created as another set exists with the same name, type and CIDR location %s", w.Name, w.Type, w.SetID, w.Cidr.LocationName)
	}
	return ""
}

// checkDelegations checks that a DS record set sits at a delegation point:
// beside an NS record set of the same name (created in the same batch or
// before; an NS is not deleted from under its DS).
func (z *zone) checkDelegations(touched map[string]bool, byName map[string][]RecordSet) []string {
	var msgs []string
	for name := range touched {
		if name == z.name {
			continue
		}
		var ds, ns bool
		for _, s := range byName[name] {
			ds = ds || s.Type == "DS"
			ns = ns || s.Type == "NS"
		}
		if ds && !ns {
			msgs = append(msgs, fmt.Sprintf("RRSet of type DS with DNS name %s is not permitted because there is no NS RRSet with the same name in zone %s", name, z.name))
		}
	}
	return msgs
}

// checkApex checks the sets at the zone's apex: exactly one SOA, at least
// one NS.
func checkApex(apex []RecordSet) []string {
	var msgs []string
	soa, ns := 0, 0
	for _, s := range apex {
		switch s.Type {
		case "SOA":
			soa++
		case "NS":
			ns++
		}
	}
	if soa != 1 {
		msgs = append(msgs, "A HostedZone must contain exactly one SOA record.")
	}
	if ns == 0 {
		msgs = append(msgs, "A HostedZone must contain at least one NS record for the zone itself.")
	}
	return msgs
}

// batchSize counts a change batch the way Route 53's limits do: ResourceRecord
// elements and characters of Value elements, an UPSERT's counted twice.
func batchSize(changes []xmlChange) (records, chars int) {
	for _, c := range changes {
		n, m := 0, 0
		if c.Set.ResourceRecords != nil {
			for _, rr := range c.Set.ResourceRecords.RR {
				n++
				m += len(rr.Value)
			}
		}
		if c.Action == "UPSERT" {
			n, m = 2*n, 2*m
		}
		records += n
		chars += m
	}
	return records, chars
}

// check returns Route 53's messages for references of a created or
// upserted set that do not resolve: its health check, its CIDR collection
// and location.
func (refs lookups) check(s RecordSet) []string {
	var msgs []string
	if s.HealthCheckID != "" {
		if _, ok := refs.checks[s.HealthCheckID]; !ok {
			msgs = append(msgs, fmt.Sprintf("Invalid request: health check '%s' of RRSet %s does not exist", s.HealthCheckID, s.describe()))
		}
	}
	if s.Cidr != nil {
		c, ok := refs.collections[s.Cidr.CollectionID]
		switch {
		case !ok:
			msgs = append(msgs, fmt.Sprintf("Invalid request: CIDR collection '%s' of RRSet %s does not exist", s.Cidr.CollectionID, s.describe()))
		case s.Cidr.LocationName != "*" && len(c.locations[s.Cidr.LocationName]) == 0:
			msgs = append(msgs, fmt.Sprintf("Invalid request: CIDR location '%s' of RRSet %s does not exist in collection '%s'", s.Cidr.LocationName, s.describe(), s.Cidr.CollectionID))
		}
	}
	return msgs
}

// checkAliases checks the written alias sets that target this zone: the
// target must lie in the zone and exist with the alias's type.
func (z *zone) checkAliases(work map[setKey]RecordSet, written []RecordSet) []string {
	var msgs []string
	for _, w := range written {
		if w.Alias == nil || strings.TrimPrefix(w.Alias.HostedZoneID, "/hostedzone/") != z.id {
			continue
		}
		if _, still := work[w.key()]; !still {
			continue
		}
		target := w.Alias.DNSName
		if target != z.name && !strings.HasSuffix(target, "."+z.name) {
			msgs = append(msgs, fmt.Sprintf("Tried to create an alias that targets %s, type %s in zone %s, but the alias target name does not lie within the target zone", target, w.Type, z.id))
			continue
		}
		found := false
		for k := range work {
			if k.name == target && k.typ == w.Type {
				found = true
				break
			}
		}
		if !found {
			msgs = append(msgs, fmt.Sprintf("Tried to create an alias that targets %s, type %s in zone %s, but that target was not found", target, w.Type, z.id))
		}
	}
	return msgs
}
