package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateDNSSEC(t *testing.T) {
	in := minimal()
	in.Zones[0].DNSSEC = &DNSSEC{KeyFiles: []string{"k/Kexample.test.+013+00001.private"}}
	require.NoError(t, Validate(in))

	in.Zones[0].DNSSEC = &DNSSEC{}
	err := Validate(in)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "zones[0].dnssec.key_files: at least one key file, or key_directory, is required")

	in.Zones[0].DNSSEC = &DNSSEC{KeyDirectory: "/etc/meridian-dnssec"}
	require.NoError(t, Validate(in), "a key directory alone is enough")

	in.Zones[0].DNSSEC = &DNSSEC{KeyFiles: []string{"k/K.+013+1.private", "k/K.+013+1.key", " "}}
	err = Validate(in)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "zones[0].dnssec.key_files[1]: key \"k/K.+013+1.key\" is listed twice")
	assert.Contains(t, err.Error(), "zones[0].dnssec.key_files[2]: is empty")
}
