package cloudflare

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/providers/plan"
)

const dsDigest = "C988EC423E3880EB8DD8A46E3F01C2E4B18D6A6D4DC3C2D2A0D5C0D8AB1A3F6F"

// TestADelegationWithDSGoesInAndOutInCloudflaresOrder: the fake refuses a
// DS without the NS of its name and the last NS under a DS, as Cloudflare
// does; the adapter orders its requests so that the delegation is created
// and removed whole, and the DS reads back as written.
func TestADelegationWithDSGoesInAndOutInCloudflaresOrder(t *testing.T) {
	e := newEnv(t, Options{})
	ns := plan.Record{Name: "gslb.example.com.", Type: "NS", TTL: 3600, Values: []string{"ns1.gslb.example.com.", "ns2.gslb.example.com."}}
	ds := plan.Record{Name: "gslb.example.com.", Type: "DS", TTL: 3600, Values: []string{"2371 13 2 " + dsDigest}}
	glue := plan.Record{Name: "ns1.gslb.example.com.", Type: "A", TTL: 3600, Values: []string{"192.0.2.53"}}

	_, res := e.sync(t, ns, ds, glue)
	require.Empty(t, res.Failed)
	assert.Contains(t, e.contents(), "gslb.example.com DS 2371 13 2 "+dsDigest+" 3600")
	assert.Contains(t, e.contents(), "gslb.example.com NS ns1.gslb.example.com 3600")

	pl, _ := e.sync(t, ns, ds, glue)
	assert.Zero(t, pl.Changes.Len(), "the DS reads back as written")

	// A new key: the DS is changed in place.
	ds2 := ds
	ds2.Values = []string{"4242 13 2 " + dsDigest}
	_, res = e.sync(t, ns, ds2, glue)
	require.Empty(t, res.Failed)
	assert.Contains(t, e.contents(), "gslb.example.com DS 4242 13 2 "+dsDigest+" 3600")

	// The delegation goes: the DS first, then the NS.
	_, res = e.sync(t)
	require.Empty(t, res.Failed)
	assert.Empty(t, e.contents())
}
