package route53

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/stretchr/testify/assert"

	"github.com/meridian-gslb/meridian/providers/plan"
)

func TestCanonicalName(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"Route 53's octal escape of a wildcard is unescaped", `\052.example.com.`, "*.example.com."},
		{"upper case is lowered and the trailing dot added", "App.Example.COM", "app.example.com."},
		{"other octal escapes are unescaped", `a\100b.example.com.`, "a@b.example.com."},
		{"a backslash before a non-digit stands for that character", `a\.b.example.com.`, "a.b.example.com."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, canonicalName(tc.in)) })
	}
}

func TestTXTValues(t *testing.T) {
	long := strings.Repeat("x", 300)
	cases := []struct{ name, value, wire string }{
		{"an ownership value is quoted once", "heritage=meridian,owner=a,types=A", `"heritage=meridian,owner=a,types=A"`},
		{"quotes and backslashes are escaped", `say "hi" \o/`, `"say \"hi\" \\o/"`},
		{"bytes outside printable ASCII become octal escapes", "é", `"\303\251"`},
		{"a value over 255 bytes is split into several strings", long, `"` + long[:255] + `" "` + long[255:] + `"`},
		{"an empty value is one empty string", "", `""`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.wire, toValue("TXT", tc.value))
			assert.Equal(t, tc.value, fromValue("TXT", tc.wire), "round trip")
		})
	}
	assert.Equal(t, "v=spf1 -all", fromValue("TXT", "v=spf1 -all"), "an unquoted value is read as is")
	assert.Equal(t, "192.0.2.1", toValue("A", "192.0.2.1"), "other types are left alone")
}

func TestSetConversion(t *testing.T) {
	w := int64(17)
	cases := []struct {
		name string
		rec  plan.Record
	}{
		{"a simple set", plan.Record{Name: "a.example.com.", Type: "A", TTL: 60, Values: []string{"192.0.2.1", "192.0.2.2"}}},
		{"a weighted set", plan.Record{Name: "a.example.com.", Type: "AAAA", TTL: 60, Values: []string{"2001:db8::1"}, SetID: "us/2001:db8::1", Weight: &w}},
		{"a failover set", plan.Record{Name: "a.example.com.", Type: "A", TTL: 5, Values: []string{"192.0.2.1"}, SetID: "primary", Failover: "PRIMARY"}},
		{"a geolocation default set", plan.Record{Name: "a.example.com.", Type: "A", TTL: 5, Values: []string{"192.0.2.1"}, SetID: "geo-default", Geo: &plan.GeoLocation{Country: "*"}}},
		{"a TXT set", plan.Record{Name: "_meridian-owner.a.example.com.", Type: "TXT", TTL: 300, Values: []string{"heritage=meridian,owner=x,types=A"}}},
		{"a weighted set with a health check", plan.Record{Name: "a.example.com.", Type: "CNAME", TTL: 60, Values: []string{"lb.example.net."}, SetID: "us/lb.example.net.", Weight: &w, HealthCheckID: "hc-1"}},
		{"an IP-based set", plan.Record{Name: "a.example.com.", Type: "A", TTL: 60, Values: []string{"192.0.2.1"}, SetID: "ip-office", CIDR: &plan.CIDRLocation{CollectionID: "c-1", Location: "office"}, HealthCheckID: "hc-2"}},
		{"an IP-based default alias", plan.Record{Name: "a.example.com.", Type: "A", SetID: "ip-default", CIDR: &plan.CIDRLocation{CollectionID: "c-1", Location: "*"},
			Alias: &plan.Alias{ZoneID: "Z1", DNSName: "_geo.a.example.com.", EvaluateTargetHealth: true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := fromSet(toSet(tc.rec))
			assert.True(t, tc.rec.Equal(got), "want %s, got %s", tc.rec, got)
		})
	}
	t.Run("an alias set has no TTL and no records", func(t *testing.T) {
		s := toSet(plan.Record{Name: "a.example.com.", Type: "A", SetID: "ip-default", CIDR: &plan.CIDRLocation{CollectionID: "c-1", Location: "*"},
			Alias: &plan.Alias{ZoneID: "Z1", DNSName: "_geo.a.example.com."}})
		assert.Nil(t, s.TTL)
		assert.Empty(t, s.ResourceRecords)
		assert.Equal(t, "Z1", aws.ToString(s.AliasTarget.HostedZoneId))
	})
	t.Run("a set without the new fields sends none of them", func(t *testing.T) {
		s := toSet(plan.Record{Name: "a.example.com.", Type: "A", TTL: 60, Values: []string{"192.0.2.1"}, SetID: "us/192.0.2.1", Weight: &w})
		assert.Nil(t, s.HealthCheckId)
		assert.Nil(t, s.CidrRoutingConfig)
		assert.Nil(t, s.AliasTarget)
	})
	t.Run("values come back sorted", func(t *testing.T) {
		s := types.ResourceRecordSet{Name: aws.String(`\052.Example.com`), Type: "A", TTL: aws.Int64(1),
			ResourceRecords: []types.ResourceRecord{{Value: aws.String("192.0.2.9")}, {Value: aws.String("192.0.2.1")}}}
		assert.Equal(t, "*.example.com. 1 A 192.0.2.1,192.0.2.9", fromSet(s).String())
	})
}

func TestPack(t *testing.T) {
	g := func(name string, records, chars int) group { return group{name: name, records: records, chars: chars} }
	batches, tooLarge := pack([]group{g("a", 600, 100), g("b", 400, 100), g("c", 1, 100), g("d", 10, 31950), g("e", 1001, 1)})
	names := func(gs []group) string {
		var s []string
		for _, g := range gs {
			s = append(s, g.name)
		}
		return strings.Join(s, ",")
	}
	var got []string
	for _, b := range batches {
		got = append(got, names(b))
	}
	assert.Equal(t, []string{"a,b", "c", "d"}, got, "whole groups, in order, each batch within 1000 records and 32000 characters")
	assert.Equal(t, "e", names(tooLarge))
}

func TestMentions(t *testing.T) {
	u := func(name, typ, id string) unit {
		s := types.ResourceRecordSet{Name: aws.String(name), Type: types.RRType(typ)}
		if id != "" {
			s.SetIdentifier = aws.String(id)
		}
		return unit{changes: []types.Change{{ResourceRecordSet: &s}}}
	}
	cases := []struct {
		name string
		msg  string
		unit unit
		want bool
	}{
		{"an existence message names its set", "Tried to create resource record set [name='a.example.com.', type='A'] but it already exists", u("a.example.com.", "A", ""), true},
		{"a longer name with the same suffix is another set", "Tried to create resource record set [name='xa.example.com.', type='A'] but it already exists", u("a.example.com.", "A", ""), false},
		{"the set identifier must match when the message has one", "Tried to delete resource record set [name='a.example.com.', type='A', set-identifier='us/1'] but it was not found", u("a.example.com.", "A", "eu/2"), false},
		{"a conflict message names the CNAME", "RRSet of type CNAME with DNS name a.example.com. is not permitted as it conflicts with other records with the same DNS name in zone example.com.", u("a.example.com.", "CNAME", ""), true},
		{"another type at the name is not named", "RRSet of type CNAME with DNS name a.example.com. is not permitted as it conflicts with other records with the same DNS name in zone example.com.", u("a.example.com.", "TXT", ""), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, mentions(tc.msg, tc.unit)) })
	}
}
