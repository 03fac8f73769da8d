package app

import (
	"os"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/model"
)

func TestZoneSignersLoadReuseAndKeepLastGood(t *testing.T) {
	dir := t.TempDir()
	k, err := dnssec.Generate("signed.test.", dns.ED25519, 3600)
	require.NoError(t, err)
	_, priv, err := k.Write(dir)
	require.NoError(t, err)
	d := &model.Desired{Zones: []model.Zone{
		{Apex: "signed.test.", NSTTL: 600, DNSSEC: &model.DNSSEC{KeyFiles: []string{priv}}},
		{Apex: "plain.test."},
	}}
	var warnings []string
	warn := func(msg string, _ ...any) { warnings = append(warnings, msg) }

	s1, err := zoneSigners(d, warn)
	require.NoError(t, err)
	require.Len(t, s1, 1)
	keys := s1["signed.test."].DNSKEY()
	require.Len(t, keys, 1)
	assert.Equal(t, uint32(600), keys[0].Header().Ttl)
	assert.Equal(t, k.Tag(), keys[0].(*dns.DNSKEY).KeyTag())

	s2, err := zoneSigners(d, warn)
	require.NoError(t, err)
	assert.Same(t, s1["signed.test."], s2["signed.test."], "unchanged files: same signer and cache")

	// The file goes bad after a successful load: the last good key signs on.
	require.NoError(t, os.WriteFile(priv, []byte("garbage\n"), 0o600))
	require.NoError(t, os.Chtimes(priv, time.Now().Add(time.Minute), time.Now().Add(time.Minute)))
	s3, err := zoneSigners(d, warn)
	require.NoError(t, err)
	assert.Same(t, s1["signed.test."], s3["signed.test."])
	assert.Len(t, warnings, 1)

	// A zone whose keys never loaded fails the publish.
	d.Zones[1].DNSSEC = &model.DNSSEC{KeyFiles: []string{dir + "/missing.private"}}
	_, err = zoneSigners(d, warn)
	require.ErrorContains(t, err, "zone plain.test.")

	none, err := zoneSigners(&model.Desired{Zones: []model.Zone{{Apex: "x.test."}}}, warn)
	require.NoError(t, err)
	assert.Nil(t, none)
}
