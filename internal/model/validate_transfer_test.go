package model

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateTransfer(t *testing.T) {
	d := minimal()
	d.Zones[0].Transfer = &Transfer{Allow: []string{"192.0.2.53", "2001:db8::/64"}, TSIGKeyFile: "xfr.key", Notify: []string{"192.0.2.53", "[2001:db8::53]:5300"}}
	require.NoError(t, Validate(d))

	d.Zones[0].Transfer = &Transfer{Allow: []string{"bogus"}, Notify: []string{"192.0.2.53:0", "x", "192.0.2.1", "192.0.2.1:53"}}
	err := Validate(d)
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		"zones[0].transfer.allow[0]: \"bogus\" is not an IP address or prefix",
		"zones[0].transfer.tsig_key_file: is required",
		"zones[0].transfer.notify[0]:",
		"zones[0].transfer.notify[1]:",
		"zones[0].transfer.notify[3]: duplicate notify target",
	} {
		assert.Contains(t, msg, want)
	}
	assert.Equal(t, 5, strings.Count(msg, "zones[0].transfer"), msg)

	d.Zones[0].Transfer = &Transfer{TSIGKeyFile: "k"}
	assert.ErrorContains(t, Validate(d), "zones[0].transfer.allow: at least one")
}

func TestParseAllowAndNotify(t *testing.T) {
	p, err := ParseAllow("::ffff:192.0.2.1")
	require.NoError(t, err)
	assert.Equal(t, "192.0.2.1/32", p.String())
	p, err = ParseAllow("10.1.2.3/8")
	require.NoError(t, err)
	assert.Equal(t, "10.0.0.0/8", p.String())
	ap, err := ParseNotifyTarget("2001:db8::1")
	require.NoError(t, err)
	assert.Equal(t, "[2001:db8::1]:53", ap.String())
}
