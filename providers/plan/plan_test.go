package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func w(n int64) *int64 { return &n }

func a(name string, ttl uint32, values ...string) Record {
	return Record{Name: name, Type: "A", TTL: ttl, Values: values}
}

func owned(name, owner string, types ...string) Record {
	return Record{Name: OwnerName(name), Type: "TXT", TTL: ownerTTL, Values: []string{OwnerValue(owner, types)}}
}

func keys(rs []Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Key().String())
	}
	return out
}

func TestCompute(t *testing.T) {
	tests := []struct {
		name      string
		desired   []Record
		current   []Record
		creates   []string
		updates   []string
		deletes   []string
		conflicts []string
	}{
		{
			name:    "a new name is created with its ownership record",
			desired: []Record{a("app.example.com.", 30, "192.0.2.1")},
			creates: []string{"_meridian-owner.app.example.com. TXT", "app.example.com. A"},
		},
		{
			name:    "an owned record with the same content changes nothing",
			desired: []Record{a("app.example.com.", 30, "192.0.2.1")},
			current: []Record{a("app.example.com.", 30, "192.0.2.1"), owned("app.example.com.", "me", "A")},
		},
		{
			name:    "an owned record with other values is updated",
			desired: []Record{a("app.example.com.", 30, "192.0.2.2")},
			current: []Record{a("app.example.com.", 30, "192.0.2.1"), owned("app.example.com.", "me", "A")},
			updates: []string{"app.example.com. A"},
		},
		{
			name:    "an owned name no longer desired is deleted with its ownership record",
			current: []Record{a("old.example.com.", 30, "192.0.2.1"), owned("old.example.com.", "me", "A")},
			deletes: []string{"_meridian-owner.old.example.com. TXT", "old.example.com. A"},
		},
		{
			name:      "a record without ownership is never changed",
			desired:   []Record{a("app.example.com.", 30, "192.0.2.2")},
			current:   []Record{a("app.example.com.", 30, "192.0.2.1")},
			conflicts: []string{"app.example.com. A"},
		},
		{
			name:      "a record owned by another installation is never changed",
			desired:   []Record{a("app.example.com.", 30, "192.0.2.2")},
			current:   []Record{a("app.example.com.", 30, "192.0.2.1"), owned("app.example.com.", "them", "A")},
			conflicts: []string{"app.example.com. A"},
		},
		{
			name:      "a foreign CNAME at a wanted name is a conflict",
			desired:   []Record{a("cdn.example.com.", 30, "192.0.2.1")},
			current:   []Record{{Name: "cdn.example.com.", Type: "CNAME", TTL: 300, Values: []string{"cdn.provider.net."}}},
			conflicts: []string{"cdn.example.com. A"},
		},
		{
			name:      "a wanted CNAME where foreign records are is a conflict",
			desired:   []Record{{Name: "www.example.com.", Type: "CNAME", TTL: 30, Values: []string{"app.example.com."}}},
			current:   []Record{{Name: "www.example.com.", Type: "MX", TTL: 300, Values: []string{"10 mx.example.com."}}},
			conflicts: []string{"www.example.com. CNAME"},
		},
		{
			name:    "records without ownership are never deleted",
			current: []Record{a("other.example.com.", 30, "192.0.2.1"), owned("x.example.com.", "them", "A"), a("x.example.com.", 30, "192.0.2.9")},
		},
		{
			name:    "a type Meridian did not create at an owned name is left alone",
			desired: []Record{a("app.example.com.", 30, "192.0.2.1")},
			current: []Record{a("app.example.com.", 30, "192.0.2.1"), {Name: "app.example.com.", Type: "MX", TTL: 300, Values: []string{"10 mx.example.com."}}, owned("app.example.com.", "me", "A")},
		},
		{
			name:    "an ownership record that lists a type Meridian never writes does not get it deleted",
			current: []Record{{Name: "mail.example.com.", Type: "MX", TTL: 300, Values: []string{"10 mx.example.com."}}, {Name: "mail.example.com.", Type: "TXT", TTL: 300, Values: []string{`"v=spf1 -all"`}}, owned("mail.example.com.", "me", "MX", "TXT")},
			deletes: []string{"_meridian-owner.mail.example.com. TXT"},
		},
		{
			name:    "a name with only other types is claimed for the new type",
			desired: []Record{a("app.example.com.", 30, "192.0.2.1")},
			current: []Record{{Name: "app.example.com.", Type: "MX", TTL: 300, Values: []string{"10 mx.example.com."}}},
			creates: []string{"_meridian-owner.app.example.com. TXT", "app.example.com. A"},
		},
		{
			name: "a weighted member with a new set identifier is a delete and a create",
			desired: []Record{
				{Name: "app.example.com.", Type: "A", TTL: 30, Values: []string{"192.0.2.1"}, SetID: "east-192.0.2.1", Weight: w(255)},
			},
			current: []Record{
				{Name: "app.example.com.", Type: "A", TTL: 30, Values: []string{"192.0.2.1"}, SetID: "192.0.2.1", Weight: w(255)},
				owned("app.example.com.", "me", "A"),
			},
			creates: []string{"app.example.com. A [east-192.0.2.1]"},
			deletes: []string{"app.example.com. A [192.0.2.1]"},
		},
		{
			name:    "a type no longer desired at a name still desired is deleted and the ownership updated",
			desired: []Record{a("app.example.com.", 30, "192.0.2.1")},
			current: []Record{a("app.example.com.", 30, "192.0.2.1"), {Name: "app.example.com.", Type: "AAAA", TTL: 30, Values: []string{"2001:db8::1"}}, owned("app.example.com.", "me", "A", "AAAA")},
			updates: []string{"_meridian-owner.app.example.com. TXT"},
			deletes: []string{"app.example.com. AAAA"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Compute(Input{Owner: "me", Desired: tc.desired, Current: tc.current})
			assert.Equal(t, tc.creates, keys(p.Changes.Creates), "creates")
			var ups []string
			for _, u := range p.Changes.Updates {
				ups = append(ups, u.New.Key().String())
			}
			assert.Equal(t, tc.updates, ups, "updates")
			assert.Equal(t, tc.deletes, keys(p.Changes.Deletes), "deletes")
			var cs []string
			for _, c := range p.Conflicts {
				cs = append(cs, c.Key.String())
			}
			assert.Equal(t, tc.conflicts, cs, "conflicts")
		})
	}
}

func TestApplyingThePlanConverges(t *testing.T) {
	desired := []Record{a("a.example.com.", 30, "192.0.2.1"), a("b.example.com.", 60, "192.0.2.2", "192.0.2.3")}
	current := []Record{a("b.example.com.", 60, "192.0.2.2"), owned("b.example.com.", "me", "A"), a("c.example.com.", 30, "192.0.2.4"), owned("c.example.com.", "me", "A")}
	p := Compute(Input{Owner: "me", Desired: desired, Current: current})
	require.False(t, p.Changes.Empty())
	// Apply it to a map, as a provider would.
	state := map[Key]Record{}
	for _, r := range current {
		state[r.Key()] = r
	}
	for _, r := range p.Changes.Deletes {
		delete(state, r.Key())
	}
	for _, u := range p.Changes.Updates {
		state[u.New.Key()] = u.New
	}
	for _, r := range p.Changes.Creates {
		state[r.Key()] = r
	}
	var after []Record
	for _, r := range state {
		after = append(after, r)
	}
	again := Compute(Input{Owner: "me", Desired: desired, Current: after})
	assert.True(t, again.Changes.Empty(), "a second plan is empty: %+v", again.Changes)
}

func TestOwnerValueRoundTrips(t *testing.T) {
	owner, types, ok := ParseOwner(`"` + OwnerValue("prod-eu", []string{"AAAA", "A", "A"}) + `"`)
	require.True(t, ok)
	assert.Equal(t, "prod-eu", owner)
	assert.Equal(t, []string{"A", "AAAA"}, types)
	_, _, ok = ParseOwner("v=spf1 -all")
	assert.False(t, ok)
}

func TestRecordRoutingFields(t *testing.T) {
	base := Record{Name: "app.example.com.", Type: "A", TTL: 30, Values: []string{"192.0.2.1"}, SetID: "ip-office", CIDR: &CIDRLocation{CollectionID: "c1", Location: "office"}}
	tests := []struct {
		name  string
		other func(r Record) Record
		equal bool
	}{
		{name: "a copy is equal", other: func(r Record) Record { c := *r.CIDR; r.CIDR = &c; return r }, equal: true},
		{name: "another health check id differs", other: func(r Record) Record { r.HealthCheckID = "hc-1"; return r }},
		{name: "another CIDR location differs", other: func(r Record) Record { r.CIDR = &CIDRLocation{CollectionID: "c1", Location: "lab"}; return r }},
		{name: "no CIDR location differs", other: func(r Record) Record { r.CIDR = nil; return r }},
		{name: "an alias differs from values", other: func(r Record) Record {
			r.Values, r.TTL, r.Alias = nil, 0, &Alias{ZoneID: "Z1", DNSName: "_geo.app.example.com."}
			return r
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.equal, base.Equal(tc.other(base)))
			assert.Equal(t, tc.equal, tc.other(base).Equal(base))
		})
	}
	assert.Equal(t, "ip", base.Policy())
	r := base
	r.HealthCheckID = "hc-1"
	assert.Equal(t, "app.example.com. 30 A 192.0.2.1 set=ip-office cidr=c1/office health-check=hc-1", r.String())
	al := Record{Name: "app.example.com.", Type: "A", SetID: "ip-default", CIDR: &CIDRLocation{CollectionID: "c1", Location: "*"},
		Alias: &Alias{ZoneID: "Z1", DNSName: "_geo.app.example.com.", EvaluateTargetHealth: true}}
	assert.Equal(t, "app.example.com. 0 A  set=ip-default cidr=c1/* alias=Z1/_geo.app.example.com. evaluate-health", al.String())
	plain := Record{Name: "app.example.com.", Type: "A", TTL: 30, Values: []string{"192.0.2.1"}}
	assert.Equal(t, "app.example.com. 30 A 192.0.2.1", plain.String(), "records without the new fields print as before")
}

func TestCanonicalDS(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		ok             bool
	}{
		{name: "the canonical form is kept", in: "2371 13 2 C988EC42", want: "2371 13 2 C988EC42", ok: true},
		{name: "a lower-case digest is upper-cased", in: "2371 13 2 c988ec42", want: "2371 13 2 C988EC42", ok: true},
		{name: "a digest split by spaces is joined", in: " 2371  13 2 C988 EC42 ", want: "2371 13 2 C988EC42", ok: true},
		{name: "a key tag above 65535 is not a DS", in: "70000 13 2 C988EC42"},
		{name: "a digest that is not hex is not a DS", in: "2371 13 2 XYZ1"},
		{name: "an odd number of digest digits is not a DS", in: "2371 13 2 C98"},
		{name: "three fields are not a DS", in: "2371 13 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := CanonicalDS(tc.in)
			assert.Equal(t, tc.ok, ok)
			if tc.ok {
				assert.Equal(t, tc.want, got)
			}
		})
	}
}

func TestADelegationWithDSIsOwnedAndChangedAsOne(t *testing.T) {
	ns := Record{Name: "gslb.example.com.", Type: "NS", TTL: 3600, Values: []string{"ns1.gslb.example.com."}}
	ds := Record{Name: "gslb.example.com.", Type: "DS", TTL: 3600, Values: []string{"2371 13 2 C988EC42"}}
	p := Compute(Input{Owner: "me", Desired: []Record{ns, ds}})
	require.Len(t, p.Changes.Creates, 3)
	assert.Equal(t, []string{"_meridian-owner.gslb.example.com. TXT", "gslb.example.com. DS", "gslb.example.com. NS"}, keys(p.Changes.Creates))
	assert.Equal(t, "heritage=meridian,owner=me,types=DS+NS", p.Changes.Creates[0].Values[0])

	// Signing turned off: the DS goes, the NS stays, ownership follows.
	p = Compute(Input{Owner: "me", Desired: []Record{ns}, Current: []Record{ns, ds, owned("gslb.example.com.", "me", "DS", "NS")}})
	assert.Equal(t, []string{"gslb.example.com. DS"}, keys(p.Changes.Deletes))
	require.Len(t, p.Changes.Updates, 1)
	assert.Equal(t, "heritage=meridian,owner=me,types=NS", p.Changes.Updates[0].New.Values[0])

	// A hand-made delegation of the same name is someone else's.
	p = Compute(Input{Owner: "me", Desired: []Record{ns, ds}, Current: []Record{ns}})
	assert.Empty(t, p.Changes.Creates)
	assert.Len(t, p.Conflicts, 2)
}
