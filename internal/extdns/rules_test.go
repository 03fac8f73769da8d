package extdns

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
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
		{"only ExternalDNS's labels are kept",
			&Endpoint{DNSName: "app.gslb.example.com", RecordType: "A", Targets: []string{"198.51.100.1"}, Labels: map[string]string{"owner": "east", "resource": "service/a/b", "junk": "x"}},
			&Endpoint{DNSName: "app.gslb.example.com", RecordType: "A", Targets: []string{"198.51.100.1"}, RecordTTL: 30, Labels: map[string]string{"owner": "east", "resource": "service/a/b"}}},
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
		{"a name that is not ASCII is refused as the model refuses it", ep("bücher.gslb.example.com", "A", "198.51.100.1"), "dnsName", "punycode for international names"},
		{"a name in punycode is accepted", ep("xn--bcher-kva.gslb.example.com", "A", "198.51.100.1"), "", ""},
		{"a CNAME target that is not ASCII is refused", ep("www.gslb.example.com", "CNAME", "bücher.example.net"), "targets[0]", "punycode"},
		{"a CNAME to its own name is refused", ep("www.gslb.example.com", "CNAME", "WWW.gslb.example.com."), "targets[0]", "points at the record's own name"},
		{"a probing health check on a CNAME is refused as the model refuses it", withProp(ep("www.gslb.example.com", "CNAME", "lb.example.net"), PropHealthCheck, "tcp:443"),
			"providerSpecific[webhook/meridian-health-check]", "CNAME endpoints cannot be probed"},
		{"no health check on a CNAME is accepted", withProp(ep("www.gslb.example.com", "CNAME", "lb.example.net"), PropHealthCheck, "none"), "", ""},
		{"more labels than the limit are refused", &Endpoint{DNSName: "app.gslb.example.com", RecordType: "A", Targets: []string{"198.51.100.1"}, Labels: map[string]string{"owner": "1", "resource": "service/a/b", "ownedRecord": "3"}}, "labels", "at most 2"},
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

// tenancyRules are the rules of a zone with a nameserver and the ring's
// names, where team-a is given the apex and every name below
// team-a.gslb.example.com, with unclaimed_names unclaimed.
func tenancyRules(unclaimed string) *Rules {
	d := desired()
	d.Zones[0].Nameservers = []model.Nameserver{{Name: "ns1.gslb.example.com", IPv4: []string{"192.0.2.53"}}}
	d.Zones[0].Ring = &model.ZoneRing{Names: true, Nameservers: true}
	d.Kubernetes.Claims = []model.Claim{
		{Namespaces: []string{"team-a"}, Names: []string{"gslb.example.com", "ns1.gslb.example.com"}, Suffixes: []string{"team-a.gslb.example.com"}},
	}
	d.Kubernetes.UnclaimedNames = unclaimed
	return NewRules(d, Limits{}, parseCheck)
}

// of is e as written for the object resource (kind/namespace/name).
func of(resource string, e *Endpoint) *Endpoint {
	e.Labels = map[string]string{"owner": "east", LabelResource: resource}
	return e
}

func TestCheckFollowsTheTenancyRulesOfADR0006(t *testing.T) {
	for _, tc := range []struct {
		name      string
		unclaimed string
		in        *Endpoint
		msg       string // "" = accepted
	}{
		{"a zone apex no claim lists is refused",
			"", of("service/team-b/web", ep("sub.gslb.example.com", "A", "198.51.100.1")), "sub.gslb.example.com. is the apex of zone sub.gslb.example.com."},
		{"the zone apex a claim lists for another namespace is refused",
			"", of("service/team-b/web", ep("gslb.example.com", "A", "198.51.100.1")), "gives gslb.example.com. to namespace team-a"},
		{"the zone apex may hold the addresses of the namespace a claim lists it for",
			"", of("service/team-a/web", ep("gslb.example.com", "A", "198.51.100.1")), ""},
		{"the zone apex is refused to a record without a resource label",
			"", ep("gslb.example.com", "A", "198.51.100.1"), "no labels[resource] naming a namespace"},
		{"a nameserver name is refused even to the namespace a claim lists it for",
			"", of("service/team-a/web", ep("ns1.gslb.example.com", "A", "198.51.100.1")), "ns1.gslb.example.com. is a nameserver name of zone gslb.example.com."},
		{"the ring's seed name is refused",
			"", of("service/team-b/web", ep("ring.gslb.example.com", "A", "198.51.100.1")), "the ring's seeds"},
		{"a site's ring name is refused",
			"", of("service/team-b/web", ep("east.ring.gslb.example.com", "A", "198.51.100.1")), "the ring's seeds"},
		{"a ring nameserver name is refused",
			"", of("ingress/team-b/web", ep("ns-east.gslb.example.com", "AAAA", "2001:db8::1")), "the ring's nameservers"},
		{"a name claimed by another namespace is refused and the message names the owner",
			"", of("service/team-b/web", ep("app.team-a.gslb.example.com", "A", "198.51.100.1")), "gives app.team-a.gslb.example.com. to namespace team-a; objects in namespace team-b"},
		{"a CNAME of a name claimed by another namespace is refused",
			"", of("crd/team-b/web", ep("app.team-a.gslb.example.com", "CNAME", "lb.example.net")), "namespace team-a"},
		{"a name claimed by the record's namespace is accepted",
			"", of("service/team-a/web", ep("app.team-a.gslb.example.com", "A", "198.51.100.1")), ""},
		{"a claimed name is refused to a record without a namespace",
			"", of("node/n1", ep("app.team-a.gslb.example.com", "A", "198.51.100.1")), "objects of no namespace"},
		{"a name no claim covers is accepted under unclaimed_names oldest",
			"", of("service/team-b/web", ep("app.gslb.example.com", "A", "198.51.100.1")), ""},
		{"a name no claim covers is accepted without a namespace under unclaimed_names oldest",
			"", ep("app.gslb.example.com", "A", "198.51.100.1"), ""},
		{"a name no claim covers is refused under unclaimed_names refuse",
			model.UnclaimedRefuse, of("service/team-b/web", ep("app.gslb.example.com", "A", "198.51.100.1")), "unclaimed_names is refuse"},
		{"a TXT record of the registry is not checked: it is not served",
			"", ep("a-app.team-a.gslb.example.com", "TXT", `"heritage=external-dns"`), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tenancyRules(tc.unclaimed)
			err := r.Check(r.Normalize(tc.in))
			if tc.msg == "" {
				require.NoError(t, err)
				return
			}
			var fe *FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, "dnsName", fe.Field)
			assert.Contains(t, fe.Msg, "hostname conflict: ")
			assert.Contains(t, fe.Msg, tc.msg)
		})
	}
}

func TestTheNamespaceIsReadFromTheResourceLabel(t *testing.T) {
	for _, tc := range []struct{ resource, ns string }{
		{"service/team-a/web", "team-a"},
		{"ingress/team-b/web", "team-b"},
		{"crd/team-c/records", "team-c"},
		{"node/n1", ""},
		{"", ""},
		{"a/b/c/d", ""},
	} {
		assert.Equal(t, tc.ns, of(tc.resource, ep("x", "A")).Namespace(), tc.resource)
	}
}

func TestAddressTargetsFollowTenantTargets(t *testing.T) {
	for _, tc := range []struct {
		name     string
		loopback bool
		in       *Endpoint
		msg      string // "" = accepted
	}{
		{"a public IPv4 address is accepted", false, ep("app.gslb.example.com", "A", "198.51.100.1"), ""},
		{"a public IPv6 address is accepted", false, ep("app.gslb.example.com", "AAAA", "2001:db8::1"), ""},
		{"the unspecified IPv4 address is refused", false, ep("app.gslb.example.com", "A", "0.0.0.0"), "unspecified"},
		{"the unspecified IPv6 address is refused", false, ep("app.gslb.example.com", "AAAA", "::"), "unspecified"},
		{"the metadata service is refused", false, ep("app.gslb.example.com", "A", "198.51.100.1", "169.254.169.254"), "link-local"},
		{"a link-local IPv6 address is refused", false, ep("app.gslb.example.com", "AAAA", "fe80::1"), "link-local"},
		{"a multicast address is refused", false, ep("app.gslb.example.com", "A", "224.0.0.1"), "multicast"},
		{"a reserved address is refused", false, ep("app.gslb.example.com", "A", "240.0.0.1"), "reserved"},
		{"the broadcast address is refused", false, ep("app.gslb.example.com", "A", "255.255.255.255"), "broadcast"},
		{"loopback is refused by default", false, ep("app.gslb.example.com", "A", "127.0.0.1"), "allow_loopback"},
		{"IPv6 loopback is refused by default", false, ep("app.gslb.example.com", "AAAA", "::1"), "allow_loopback"},
		{"loopback is accepted with allow_loopback", true, ep("app.gslb.example.com", "A", "127.0.0.2"), ""},
		{"the unspecified address is refused even with allow_loopback", true, ep("app.gslb.example.com", "A", "0.0.0.0"), "unspecified"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := desired()
			d.TenantTargets.AllowLoopback = tc.loopback
			r := NewRules(d, Limits{}, parseCheck)
			err := r.Check(r.Normalize(tc.in))
			if tc.msg == "" {
				require.NoError(t, err)
				return
			}
			var fe *FieldError
			require.ErrorAs(t, err, &fe)
			assert.Contains(t, fe.Field, "targets[")
			assert.Contains(t, fe.Msg, tc.msg)
		})
	}
}

func TestATXTStringHoldsAtMost255Bytes(t *testing.T) {
	r := NewRules(desired(), Limits{}, parseCheck)
	require.NoError(t, r.Check(r.Normalize(ep("a-app.gslb.example.com", "TXT", `"`+strings.Repeat("a", 255)+`"`))), "255 bytes in quotes")
	err := r.Check(r.Normalize(ep("a-app.gslb.example.com", "TXT", strings.Repeat("a", 256))))
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "targets[0]", fe.Field)
	assert.Contains(t, fe.Msg, "has a value of 256 bytes (a TXT string holds at most 255)")
}
