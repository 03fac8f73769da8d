// Package plan holds the provider-neutral record model and the pure diff
// from desired to current records, with the ownership registry that keeps
// Meridian away from records it does not own. No I/O.
package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Record is one record set as a provider holds it: a name, a type and its
// values, optionally with a routing policy (Route53) or a proxied flag
// (Cloudflare).
type Record struct {
	Name   string   // FQDN, lower case, trailing dot
	Type   string   // A, AAAA, CNAME, TXT, NS, DS
	TTL    uint32   // seconds (Cloudflare: 1 = automatic)
	Values []string // sorted; addresses, target names, TXT strings without quotes, DS as CanonicalDS

	// Route53 routing policy. An empty SetID is a simple record set.
	SetID    string        // set identifier of a weighted/failover/geolocation member
	Weight   *int64        // weighted: 0..255
	Failover string        // PRIMARY or SECONDARY
	Geo      *GeoLocation  // geolocation
	CIDR     *CIDRLocation // IP-based: a location of a CIDR collection
	Region   string        // latency: the AWS region of the set

	// HealthCheckID is the Route 53 health check of a routing-policy set
	// (empty: none); Route 53 leaves an unhealthy set out of its answers.
	HealthCheckID string
	// Alias makes the set an alias of another name (Route 53); an alias
	// set has no TTL and no Values.
	Alias *Alias

	Proxied *bool // Cloudflare: proxied through Cloudflare

	// IDs are provider-assigned record ids (Cloudflare: one per value, in
	// Values order). They are carried, never compared.
	IDs []string
}

// GeoLocation is a Route53 geolocation. Country "*" is the default record.
type GeoLocation struct {
	Continent   string // AF AN AS EU NA OC SA
	Country     string // ISO 3166-1 alpha-2, or "*"
	Subdivision string
}

// CIDRLocation is a Route 53 IP-based routing location: a named group of
// CIDR blocks of a CIDR collection. Location "*" is the default record.
type CIDRLocation struct {
	CollectionID string
	Location     string
}

// Alias is a Route 53 alias target.
type Alias struct {
	ZoneID               string // hosted zone id of the target
	DNSName              string // target name, lower case, trailing dot
	EvaluateTargetHealth bool   // the alias is healthy only while its target is
}

// Key identifies a record set in a zone.
type Key struct {
	Name, Type, SetID string
}

func (k Key) String() string {
	if k.SetID == "" {
		return k.Name + " " + k.Type
	}
	return fmt.Sprintf("%s %s [%s]", k.Name, k.Type, k.SetID)
}

// Key returns r's identity.
func (r Record) Key() Key { return Key{Name: r.Name, Type: r.Type, SetID: r.SetID} }

// Policy names r's routing policy: simple, weighted, failover,
// geolocation or ip.
func (r Record) Policy() string {
	switch {
	case r.Weight != nil:
		return "weighted"
	case r.Failover != "":
		return "failover"
	case r.Geo != nil:
		return "geolocation"
	case r.CIDR != nil:
		return "ip"
	case r.Region != "":
		return "latency"
	}
	return "simple"
}

// Equal reports whether two records have the same content (IDs aside).
func (r Record) Equal(o Record) bool {
	return r.Key() == o.Key() && r.TTL == o.TTL && slices.Equal(r.Values, o.Values) &&
		ptrEqual(r.Weight, o.Weight) && r.Failover == o.Failover && ptrEqual(r.Geo, o.Geo) && ptrEqual(r.Proxied, o.Proxied) &&
		ptrEqual(r.CIDR, o.CIDR) && r.HealthCheckID == o.HealthCheckID && ptrEqual(r.Alias, o.Alias) && r.Region == o.Region
}

func (r Record) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d %s %s", r.Name, r.TTL, r.Type, strings.Join(r.Values, ","))
	if r.SetID != "" {
		fmt.Fprintf(&b, " set=%s", r.SetID)
	}
	if r.Weight != nil {
		fmt.Fprintf(&b, " weight=%d", *r.Weight)
	}
	if r.Failover != "" {
		fmt.Fprintf(&b, " failover=%s", r.Failover)
	}
	if r.Geo != nil {
		fmt.Fprintf(&b, " geo=%s/%s/%s", r.Geo.Continent, r.Geo.Country, r.Geo.Subdivision)
	}
	if r.CIDR != nil {
		fmt.Fprintf(&b, " cidr=%s/%s", r.CIDR.CollectionID, r.CIDR.Location)
	}
	if r.Region != "" {
		fmt.Fprintf(&b, " region=%s", r.Region)
	}
	if r.Alias != nil {
		fmt.Fprintf(&b, " alias=%s/%s", r.Alias.ZoneID, r.Alias.DNSName)
		if r.Alias.EvaluateTargetHealth {
			b.WriteString(" evaluate-health")
		}
	}
	if r.HealthCheckID != "" {
		fmt.Fprintf(&b, " health-check=%s", r.HealthCheckID)
	}
	if r.Proxied != nil {
		fmt.Fprintf(&b, " proxied=%v", *r.Proxied)
	}
	return b.String()
}

// Normalize sorts Values (keeping IDs aligned) and lower-cases the name.
func (r *Record) Normalize() {
	r.Name = strings.ToLower(r.Name)
	if !strings.HasSuffix(r.Name, ".") {
		r.Name += "."
	}
	if len(r.IDs) == len(r.Values) && len(r.IDs) > 0 {
		idx := make([]int, len(r.Values))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return strings.Compare(r.Values[a], r.Values[b]) })
		vals, ids := make([]string, len(idx)), make([]string, len(idx))
		for i, j := range idx {
			vals[i], ids[i] = r.Values[j], r.IDs[j]
		}
		r.Values, r.IDs = vals, ids
		return
	}
	slices.Sort(r.Values)
}

func ptrEqual[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// Update replaces Old by New (same Key).
type Update struct {
	Old, New Record
}

// Changes is what a provider must do to reach the desired state.
type Changes struct {
	Creates []Record
	Updates []Update
	Deletes []Record
}

// Empty reports whether there is nothing to do.
func (c Changes) Empty() bool { return len(c.Creates)+len(c.Updates)+len(c.Deletes) == 0 }

// Len is the number of changes.
func (c Changes) Len() int { return len(c.Creates) + len(c.Updates) + len(c.Deletes) }

// Conflict is a desired record that cannot be written because someone else
// owns the name.
type Conflict struct {
	Key    Key
	Reason string
}

// CanonicalDS puts a DS record value in the form plan records carry:
// "key-tag algorithm digest-type DIGEST", single spaces, the digest in
// upper-case hex with the spaces a presentation form may put inside it
// removed. ok is false when v is not a DS value (numbers out of range, a
// digest that is not hex).
func CanonicalDS(v string) (string, bool) {
	f := strings.Fields(v)
	if len(f) < 4 {
		return v, false
	}
	tag, err1 := strconv.ParseUint(f[0], 10, 16)
	alg, err2 := strconv.ParseUint(f[1], 10, 8)
	dt, err3 := strconv.ParseUint(f[2], 10, 8)
	digest := strings.ToUpper(strings.Join(f[3:], ""))
	if err1 != nil || err2 != nil || err3 != nil || len(digest)%2 != 0 || strings.Trim(digest, "0123456789ABCDEF") != "" {
		return v, false
	}
	return fmt.Sprintf("%d %d %d %s", tag, alg, dt, digest), true
}
