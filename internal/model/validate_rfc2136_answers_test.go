package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRFC2136ZoneModes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		zone    RFC2136Zone
		del     *Delegation
		path    string // "" = valid
		message string
	}{
		{name: "a direct-mode zone holding the services is accepted without a Meridian zone below it",
			zone: RFC2136Zone{Zone: "example.net", Server: "192.0.2.10", TSIGKeyFile: "k", Mode: ModeDirect}},
		{name: "a direct-mode zone that is a Meridian zone itself is accepted",
			zone: RFC2136Zone{Zone: "gslb.example.com", Server: "192.0.2.10", TSIGKeyFile: "k", Mode: ModeDirect}},
		{name: "an explicit mode delegate is the default",
			zone: RFC2136Zone{Zone: "example.com", Server: "192.0.2.10", TSIGKeyFile: "k", Mode: ModeDelegate}},
		{name: "a delegate-mode zone with nothing below it says how to write answers instead",
			zone: RFC2136Zone{Zone: "example.net", Server: "192.0.2.10", TSIGKeyFile: "k"},
			path: "providers.rfc2136[0].zone", message: "set mode: direct to write the answers of the services inside it instead"},
		{name: "an unknown mode is refused with the allowed ones",
			zone: RFC2136Zone{Zone: "example.com", Server: "192.0.2.10", TSIGKeyFile: "k", Mode: "answers"},
			path: "providers.rfc2136[0].mode", message: `"answers" is not allowed (allowed: direct, delegate)`},
		{name: "a direct-mode zone cannot be the parent of a delegation",
			zone: RFC2136Zone{Zone: "example.com", Server: "192.0.2.10", TSIGKeyFile: "k", Mode: ModeDirect},
			del:  &Delegation{Provider: ProviderRFC2136, Parent: "example.com"},
			path: "zones[0].delegation.parent", message: "providers.rfc2136[0] (zone example.com.) has mode direct: a delegated zone needs mode delegate there"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := delegated(tc.del)
			d.Providers.RFC2136 = []RFC2136Zone{tc.zone}
			requireFieldError(t, Validate(d), tc.path, tc.message)
		})
	}
}

func TestNormalizeKeepsAnRFC2136EntryInModeDelegateUnlessToldOtherwise(t *testing.T) {
	d := delegated(nil)
	d.Providers.RFC2136 = []RFC2136Zone{
		{Zone: "example.com", Server: "192.0.2.10", TSIGKeyFile: "k"},
		{Zone: "example.net", Server: "192.0.2.11", TSIGKeyFile: "k", Mode: ModeDirect},
	}
	out, err := Normalize(d)
	require.NoError(t, err)
	assert.Equal(t, ModeDelegate, out.Providers.RFC2136[0].Mode, "the mode of configs written before direct existed")
	assert.Equal(t, ModeDirect, out.Providers.RFC2136[1].Mode)
	assert.Empty(t, d.Providers.RFC2136[0].Mode, "the input is not changed")
}
