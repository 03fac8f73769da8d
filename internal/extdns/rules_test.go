package extdns

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   *Endpoint
		want *Endpoint
	}{
		{"names lose case and the final dot and the type is upper case",
			ep("App.GSLB.example.com.", "a", "198.51.100.1"), withTTL(ep("app.gslb.example.com", "A", "198.51.100.1"), 30)},
		{"targets are canonical, sorted and unique",
			ep("app.gslb.example.com", "AAAA", "2001:DB8::2", "2001:db8:0::1", "2001:db8::2"),
			withTTL(ep("app.gslb.example.com", "AAAA", "2001:db8::1", "2001:db8::2"), 30)},
		{"a CNAME target loses case and the final dot",
			ep("www.gslb.example.com", "CNAME", "LB.Example.NET."), withTTL(ep("www.gslb.example.com", "CNAME", "lb.example.net"), 30)},
		{"a TTL of 0 becomes the ttl of the most specific zone",
			ep("x.sub.gslb.example.com", "A", "198.51.100.1"), withTTL(ep("x.sub.gslb.example.com", "A", "198.51.100.1"), 60)},
		{"a TTL that is set stays",
			withTTL(ep("app.gslb.example.com", "A", "198.51.100.1"), 5), withTTL(ep("app.gslb.example.com", "A", "198.51.100.1"), 5)},
		{"other providers' properties are dropped and Meridian's sorted",
			withProp(withProp(withProp(ep("app.gslb.example.com", "A", "198.51.100.1"), "aws/weight", "10"), PropWeight, " 70 "), PropHealthCheck, "none"),
			withProp(withProp(withTTL(ep("app.gslb.example.com", "A", "198.51.100.1"), 30), PropHealthCheck, "none"), PropWeight, "70")},
		{"TXT values are kept as they are",
			ep("a-app.gslb.example.com", "TXT", `"heritage=external-dns,external-dns/owner=east"`),
			withTTL(ep("a-app.gslb.example.com", "TXT", `"heritage=external-dns,external-dns/owner=east"`), 30)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rules().Normalize(tc.in)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, got, rules().Normalize(got), "normalizing twice changes nothing")
		})
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    *Endpoint
		field string // "" = accepted
		msg   string
	}{
		{"an A record under a served zone is accepted", ep("app.gslb.example.com", "A", "198.51.100.1"), "", ""},
		{"the zone apex may hold addresses", ep("gslb.example.com", "A", "198.51.100.1"), "", ""},
		{"a name outside the served zones is refused", ep("app.example.org", "A", "198.51.100.1"), "dnsName", "not under a served zone"},
		{"a name is required", ep("", "A", "198.51.100.1"), "dnsName", "is required"},
		{"a wildcard is refused", ep("*.gslb.example.com", "A", "198.51.100.1"), "dnsName", "not a host name"},
		{"a CNAME at the apex is refused", ep("gslb.example.com", "CNAME", "lb.example.net"), "dnsName", "zone apex"},
		{"an MX record is refused", ep("app.gslb.example.com", "MX", "10 mx.example.net"), "recordType", "allowed: A, AAAA, CNAME, TXT"},
		{"an IPv6 address in an A record is refused", ep("app.gslb.example.com", "A", "2001:db8::1"), "targets[0]", "not an IPv4 address"},
		{"an IPv4 address in an AAAA record is refused", ep("app.gslb.example.com", "AAAA", "198.51.100.1"), "targets[0]", "not an IPv6 address"},
		{"a target that is no address is refused", ep("app.gslb.example.com", "A", "198.51.100.1", "lb"), "targets[1]", "not an IPv4 address"},
		{"a CNAME with two targets is refused", ep("www.gslb.example.com", "CNAME", "a.example.net", "b.example.net"), "targets", "one target"},
		{"a record without targets is refused", ep("app.gslb.example.com", "A"), "targets", "is empty"},
		{"more targets than the limit are refused", ep("app.gslb.example.com", "A", "198.51.100.1", "198.51.100.2", "198.51.100.3", "198.51.100.4"), "targets", "allowed at most 3"},
		{"a TXT value longer than the limit is refused", ep("a-app.gslb.example.com", "TXT", string(make([]byte, 65))), "targets[0]", "longer than 64 bytes"},
		{"a set identifier is refused", &Endpoint{DNSName: "app.gslb.example.com", RecordType: "A", Targets: []string{"198.51.100.1"}, SetIdentifier: "east"}, "setIdentifier", "not supported"},
		{"a TTL beyond a week is refused", withTTL(ep("app.gslb.example.com", "A", "198.51.100.1"), 700000), "recordTTL", "out of range"},
		{"a weight that is not a number is refused", withProp(ep("app.gslb.example.com", "A", "198.51.100.1"), PropWeight, "lots"), "providerSpecific[webhook/meridian-weight]", "not a weight"},
		{"a weight above 1000 is refused", withProp(ep("app.gslb.example.com", "A", "198.51.100.1"), PropWeight, "1001"), "providerSpecific[webhook/meridian-weight]", "0..1000"},
		{"a health check that does not parse is refused", withProp(ep("app.gslb.example.com", "A", "198.51.100.1"), PropHealthCheck, "bogus"), "providerSpecific[webhook/meridian-health-check]", "kind"},
		{"more labels than the limit are refused", &Endpoint{DNSName: "app.gslb.example.com", RecordType: "A", Targets: []string{"198.51.100.1"}, Labels: map[string]string{"a": "1", "b": "2", "c": "3"}}, "labels", "at most 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rules()
			err := r.Check(r.Normalize(tc.in))
			if tc.field == "" {
				require.NoError(t, err)
				return
			}
			var fe *FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tc.field, fe.Field)
			assert.Contains(t, fe.Msg, tc.msg)
		})
	}
}

func TestApexesAreTheDomainFilter(t *testing.T) {
	assert.Equal(t, []string{"gslb.example.com", "sub.gslb.example.com"}, rules().Apexes())
}
