package dnssec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadPublicKeyReadsTheFirstRecordAndRefusesAnythingButAZoneKey(t *testing.T) {
	const key = "example.test. 3600 IN DNSKEY 257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ=="
	cases := []struct {
		name    string
		content string
		wantErr string // empty: the key is read
	}{
		{"a file with one zone key is read", key + "\n", ""},
		{"a zone key followed by other records is read from its first record", key + "\nexample.test. 300 IN A 192.0.2.1\n", ""},
		{"an empty file has no DNSKEY record", "; nothing here\n", "no DNSKEY record"},
		{"an A record where the key should be is refused", "example.test. 300 IN A 192.0.2.1\n" + key + "\n", "A record where a DNSKEY was expected"},
		{"an RSA key is refused with the allowed algorithms", "example.test. 3600 IN DNSKEY 257 3 8 AwEAAa==\n", "algorithm 8 is not supported (allowed: 13 ECDSAP256SHA256, 15 ED25519)"},
		{"a key without the zone flag is refused", "example.test. 3600 IN DNSKEY 0 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==\n", "not a zone key (flags 0, protocol 3)"},
		{"a file that does not parse reports the parser's error", "example.test. 3600 IN DNSKEY not-a-number\n", "bad DNSKEY Flags"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "Kexample.test.+013+00001.key")
			require.NoError(t, os.WriteFile(p, []byte(tc.content), 0o644))
			k, err := ReadPublicKey(p)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "example.test.", k.DNSKEY.Hdr.Name)
			assert.Equal(t, uint8(13), k.DNSKEY.Algorithm)
		})
	}
}

func TestZoneKeyFilesFindsTheZonesKeysInADirectory(t *testing.T) {
	dir := t.TempDir()
	k, err := Generate("gslb.example.com.", dns.ECDSAP256SHA256, 3600)
	require.NoError(t, err)
	_, priv, err := k.WriteAs(dir, "zone")
	require.NoError(t, err)
	other, err := Generate("other.example.com.", dns.ECDSAP256SHA256, 3600)
	require.NoError(t, err)
	_, _, err = other.Write(dir)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "key"), []byte("a gossip key beside them"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "lonely.private"), []byte("no .key beside it"), 0o600))

	files, err := ZoneKeyFiles("gslb.example.com.", nil, dir)
	require.NoError(t, err)
	assert.Equal(t, []string{priv}, files, "only the zone's key, whatever its name")
	files, err = ZoneKeyFiles("gslb.example.com", []string{"/etc/listed.private"}, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"/etc/listed.private"}, files)
	_, err = ZoneKeyFiles("third.example.com.", nil, dir)
	assert.ErrorContains(t, err, "no key of zone third.example.com.")
	_, err = ZoneKeyFiles("gslb.example.com.", nil, filepath.Join(dir, "missing"))
	assert.ErrorContains(t, err, "key_directory")
}
