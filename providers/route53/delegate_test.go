package route53

import (
	"context"
	"log/slog"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/route53/route53fake"
)

// TestADelegationWithDSLandsInTheHostedZone runs the reconciler in delegate
// mode against the fake: NS, glue and DS are written in one batch, read
// back equal (no second write), and a removed nameserver takes its glue.
func TestADelegationWithDSLandsInTheHostedZone(t *testing.T) {
	e := newEnv(t, route53fake.Options{}, Options{})
	k, err := dnssec.Generate("gslb.example.com.", dns.ECDSAP256SHA256, 3600)
	require.NoError(t, err)
	ds := dnssec.DSSet([]dns.RR{k.DNSKEY}, 0)[0]
	d := &model.Desired{Zones: []model.Zone{{
		Apex: "gslb.example.com.", NSTTL: 3600, DNSSEC: &model.DNSSEC{KeyFiles: []string{"k"}},
		Nameservers: []model.Nameserver{{Name: "ns1.gslb.example.com.", IPv4: []string{"192.0.2.53"}}, {Name: "ns2.gslb.example.com.", IPv6: []string{"2001:db8::54"}}},
		Delegation:  &model.Delegation{Provider: "route53", Parent: "example.com."},
	}}}
	r := &providers.Reconciler{
		Zones: []providers.Zone{{Provider: e.p, Zone: testZone, Mode: model.ModeDelegate}},
		Owner: testOwner,
		State: func() providers.State {
			return providers.State{Desired: d, DNSKEY: func(string) []dns.RR { return []dns.RR{k.DNSKEY} }}
		},
		Logger: slog.New(slog.DiscardHandler),
	}
	res := r.Sync(context.Background(), false, false)
	require.NoError(t, res[0].Err)
	require.Empty(t, res[0].Applied.Failed)
	assert.Equal(t, 1, res[0].Applied.Calls, "one atomic batch")
	assert.ElementsMatch(t, []string{"NS  ns1.gslb.example.com.,ns2.gslb.example.com.", "DS  " + providers.DSValue(ds)}, e.sets("gslb.example.com."))
	assert.Equal(t, []string{"A  192.0.2.53"}, e.sets("ns1.gslb.example.com."))
	assert.Equal(t, []string{"AAAA  2001:db8::54"}, e.sets("ns2.gslb.example.com."))

	res = r.Sync(context.Background(), false, false)
	require.NoError(t, res[0].Err)
	assert.Zero(t, res[0].Plan.Changes.Len(), "the DS reads back as written")

	d.Zones[0].Nameservers = d.Zones[0].Nameservers[:1]
	res = r.Sync(context.Background(), false, false)
	require.NoError(t, res[0].Err)
	require.Empty(t, res[0].Applied.Failed)
	assert.Empty(t, e.sets("ns2.gslb.example.com."), "the removed nameserver's glue is gone")
	assert.Empty(t, e.sets("_meridian-owner.ns2.gslb.example.com."), "with its ownership record")
	assert.Contains(t, e.sets("gslb.example.com."), "NS  ns1.gslb.example.com.")
}
