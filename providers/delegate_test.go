package providers

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers/plan"
)

func ns(name string, addrs ...string) model.Nameserver {
	n := model.Nameserver{Name: name}
	for _, a := range addrs {
		if strings.Contains(a, ":") {
			n.IPv6 = append(n.IPv6, a)
		} else {
			n.IPv4 = append(n.IPv4, a)
		}
	}
	return n
}

// csk is a fresh combined signing key of zone, as its DNSKEY RRset.
func csk(t *testing.T, zone string) []dns.RR {
	t.Helper()
	k, err := dnssec.Generate(zone, dns.ECDSAP256SHA256, 3600)
	require.NoError(t, err)
	return []dns.RR{k.DNSKEY}
}

func lines(recs []plan.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.String())
	}
	return out
}

func TestDelegationRecords(t *testing.T) {
	key := csk(t, "gslb.example.com.")
	ds := dnssec.DSSet(key, 0)[0]
	dsLine := "gslb.example.com. 600 DS " + DSValue(ds)
	require.Regexp(t, `^\d+ 13 2 [0-9A-F]{64}$`, DSValue(ds))
	for _, tc := range []struct {
		name  string
		zones []DelegatedZone
		want  []string
		err   string
	}{
		{name: "in-zone nameservers get NS and their glue",
			zones: []DelegatedZone{{Apex: "gslb.example.com.", TTL: 600, Nameservers: []model.Nameserver{ns("ns1.gslb.example.com", "192.0.2.53"), ns("NS2.gslb.example.com.", "192.0.2.54", "2001:db8::54")}}},
			want: []string{"gslb.example.com. 600 NS ns1.gslb.example.com.,ns2.gslb.example.com.", "ns1.gslb.example.com. 600 A 192.0.2.53",
				"ns2.gslb.example.com. 600 A 192.0.2.54", "ns2.gslb.example.com. 600 AAAA 2001:db8::54"}},
		{name: "a nameserver outside the zone gets NS only: it is resolved on its own",
			zones: []DelegatedZone{{Apex: "gslb.example.com.", TTL: 600, Nameservers: []model.Nameserver{ns("ns1.example.net"), ns("ns2.example.com", "192.0.2.60")}}},
			want:  []string{"gslb.example.com. 600 NS ns1.example.net.,ns2.example.com."}},
		{name: "a signed zone gets the DS of its key beside the NS",
			zones: []DelegatedZone{{Apex: "gslb.example.com.", TTL: 600, Nameservers: []model.Nameserver{ns("ns1.gslb.example.com", "192.0.2.53")}, Signed: true, DNSKEY: key}},
			want:  []string{dsLine, "gslb.example.com. 600 NS ns1.gslb.example.com.", "ns1.gslb.example.com. 600 A 192.0.2.53"}},
		{name: "a removed nameserver leaves no glue behind",
			zones: []DelegatedZone{{Apex: "gslb.example.com.", TTL: 600, Nameservers: []model.Nameserver{ns("ns2.gslb.example.com", "192.0.2.54")}}},
			want:  []string{"gslb.example.com. 600 NS ns2.gslb.example.com.", "ns2.gslb.example.com. 600 A 192.0.2.54"}},
		{name: "an in-zone nameserver without an address is left out (unreachable)",
			zones: []DelegatedZone{{Apex: "gslb.example.com.", TTL: 600, Nameservers: []model.Nameserver{ns("ns1.gslb.example.com"), ns("ns2.gslb.example.com", "192.0.2.54")}}},
			want:  []string{"gslb.example.com. 600 NS ns2.gslb.example.com.", "ns2.gslb.example.com. 600 A 192.0.2.54"}},
		{name: "a shared nameserver's glue is written once with every address",
			zones: []DelegatedZone{
				{Apex: "gslb.example.com.", TTL: 600, Nameservers: []model.Nameserver{ns("ns1.gslb.example.com", "192.0.2.53")}},
				{Apex: "a.gslb.example.com.", TTL: 300, Nameservers: []model.Nameserver{ns("ns1.gslb.example.com", "192.0.2.53", "192.0.2.99")}}},
			want: []string{"a.gslb.example.com. 300 NS ns1.gslb.example.com.", "gslb.example.com. 600 NS ns1.gslb.example.com.", "ns1.gslb.example.com. 600 A 192.0.2.53"}},
		{name: "no nameserver left is an error, never an empty NS set",
			zones: []DelegatedZone{{Apex: "gslb.example.com.", TTL: 600, Nameservers: []model.Nameserver{ns("ns1.gslb.example.com")}}},
			err:   "zone gslb.example.com.: no nameserver to delegate to (1 listed, none outside the zone or with an address): an empty NS set is never written"},
		{name: "an empty list is an error too",
			zones: []DelegatedZone{{Apex: "gslb.example.com.", TTL: 600}},
			err:   "no nameserver to delegate to (0 listed"},
		{name: "a signed zone without a loaded key is an error rather than a delegation without DS",
			zones: []DelegatedZone{{Apex: "gslb.example.com.", TTL: 600, Nameservers: []model.Nameserver{ns("ns1.example.net")}, Signed: true}},
			err:   "zone gslb.example.com. is signed but has no key loaded yet: the delegation is not written without its DS"},
		{name: "an address that is not one is refused naming it",
			zones: []DelegatedZone{{Apex: "gslb.example.com.", TTL: 600, Nameservers: []model.Nameserver{{Name: "ns1.gslb.example.com", IPv4: []string{"192.0.2.300"}}}}},
			err:   `zone gslb.example.com.: nameserver ns1.gslb.example.com.: address "192.0.2.300" is not an IP address`},
		{name: "an IPv6 address given as IPv4 is refused",
			zones: []DelegatedZone{{Apex: "gslb.example.com.", TTL: 600, Nameservers: []model.Nameserver{{Name: "ns1.gslb.example.com", IPv4: []string{"2001:db8::1"}}}}},
			err:   `address "2001:db8::1" is not an IPv4 address`},
		{name: "a name that is not one is refused",
			zones: []DelegatedZone{{Apex: "gslb.example.com.", TTL: 600, Nameservers: []model.Nameserver{{Name: "ns 1.gslb.example.com"}}}},
			err:   `nameserver "ns 1.gslb.example.com" is not a domain name`},
		{name: "a zone outside the parent is refused",
			zones: []DelegatedZone{{Apex: "gslb.example.net.", TTL: 600, Nameservers: []model.Nameserver{ns("ns1.example.net")}}},
			err:   "zone gslb.example.net. is not below the parent zone example.com."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := Delegation("example.com.", tc.zones)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, lines(recs))
		})
	}
}

func TestDelegatedZonesPicksTheZonesAParentDelegates(t *testing.T) {
	d := &model.Desired{Zones: []model.Zone{
		{Apex: "gslb.example.com.", NSTTL: 600, Nameservers: []model.Nameserver{ns("ns1.gslb.example.com.", "192.0.2.53")}},
		{Apex: "r53.example.com.", NSTTL: 600, Nameservers: []model.Nameserver{ns("ns1.example.net.")}, Delegation: &model.Delegation{Provider: "route53", Parent: "example.com."}},
		{Apex: "deep.sub.example.com.", NSTTL: 600, Nameservers: []model.Nameserver{ns("ns1.example.net.")}, Delegation: &model.Delegation{Provider: "rfc2136", Parent: "sub.example.com."}},
		{Apex: "signed.example.com.", NSTTL: 600, Nameservers: []model.Nameserver{ns("ns1.example.net.")}, DNSSEC: &model.DNSSEC{KeyFiles: []string{"k"}}},
		{Apex: "example.org.", NSTTL: 600, Nameservers: []model.Nameserver{ns("ns1.example.net.")}},
	}}
	key := csk(t, "signed.example.com.")
	dnskey := func(apex string) []dns.RR {
		if apex == "signed.example.com." {
			return key
		}
		return nil
	}
	for _, tc := range []struct {
		name, kind, parent string
		want               []string
	}{
		{name: "a delegate-mode zone delegates the zones below it that name no other entry", kind: "cloudflare", parent: "example.com.",
			want: []string{"gslb.example.com.", "signed.example.com."}},
		{name: "the entry a delegation names delegates it too", kind: "route53", parent: "example.com.",
			want: []string{"gslb.example.com.", "r53.example.com.", "signed.example.com."}},
		{name: "an explicit delegation is written by its parent, not by a grandparent", kind: "rfc2136", parent: "sub.example.com.",
			want: []string{"deep.sub.example.com."}},
		{name: "a parent with nothing below delegates nothing", kind: "route53", parent: "example.net."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, z := range DelegatedZones(d, tc.kind, tc.parent, nil, dnskey) {
				got = append(got, z.Apex)
				assert.Equal(t, z.Apex == "signed.example.com.", z.Signed, z.Apex)
				assert.Equal(t, z.Apex == "signed.example.com.", len(z.DNSKEY) == 1, "%s: the keys of signed zones only", z.Apex)
				assert.Equal(t, uint32(600), z.TTL)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestEffectiveNameserversKeepLiveOnesAndAtLeastOne(t *testing.T) {
	d := desired(t)
	for _, tc := range []struct {
		name string
		live map[string]bool
		ns   []string
	}{
		{"every live nameserver is delegated", map[string]bool{"n1": true, "n2": true}, []string{"ns1.gslb.example.com.", "ns2.gslb.example.com."}},
		{"a dead node's nameserver is left out", map[string]bool{"n1": true}, []string{"ns1.gslb.example.com."}},
		{"with every node dead all stay (never an empty delegation)", map[string]bool{}, []string{"ns1.gslb.example.com.", "ns2.gslb.example.com."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, n := range EffectiveNameservers(func(n string) bool { return tc.live[n] })(&d.Zones[0]) {
				got = append(got, n.Name)
			}
			assert.Equal(t, tc.ns, got)
		})
	}
}

func TestTheReconcilerDelegatesFromTheNameserversItIsGiven(t *testing.T) {
	mem := &memProvider{records: map[plan.Key]plan.Record{}}
	d := desired(t)
	runtime := []model.Nameserver{ns("ns7.gslb.example.com", "198.51.100.7")}
	st := State{Desired: d, Nameservers: func(z *model.Zone) []model.Nameserver { return runtime }}
	r := &Reconciler{
		Zones:  []Zone{{Provider: mem, Zone: "example.com.", Mode: model.ModeDelegate}},
		Owner:  "me",
		State:  func() State { return st },
		Logger: slog.New(slog.DiscardHandler),
	}
	res := r.Sync(context.Background(), false, false)
	require.NoError(t, res[0].Err)
	assert.Equal(t, []string{"ns7.gslb.example.com."}, mem.records[plan.Key{Name: "gslb.example.com.", Type: "NS"}].Values, "a run-time list replaces the configured one")
	assert.Equal(t, []string{"198.51.100.7"}, mem.records[plan.Key{Name: "ns7.gslb.example.com.", Type: "A"}].Values)

	runtime = nil
	res = r.Sync(context.Background(), false, false)
	require.Error(t, res[0].Err)
	assert.Contains(t, res[0].Err.Error(), "mem zone example.com.: delegation: zone gslb.example.com.: no nameserver to delegate to")
	assert.Equal(t, []string{"ns7.gslb.example.com."}, mem.records[plan.Key{Name: "gslb.example.com.", Type: "NS"}].Values, "the parent keeps the last delegation")
}
