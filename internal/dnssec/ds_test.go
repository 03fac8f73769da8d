package dnssec

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// key makes a DNSKEY of zone with flags (a fresh ECDSA P-256 key).
func key(t *testing.T, zone string, flags uint16) *dns.DNSKEY {
	t.Helper()
	k, err := Generate(zone, dns.ECDSAP256SHA256, 3600)
	require.NoError(t, err)
	k.DNSKEY.Flags = flags
	return k.DNSKEY
}

// digest is the SHA-256 DS digest of k computed from RFC 4034 section 5.1.4
// by hand: the owner name in wire form, then the DNSKEY RDATA.
func digest(t *testing.T, k *dns.DNSKEY) string {
	t.Helper()
	owner := make([]byte, 256)
	n, err := dns.PackDomainName(strings.ToLower(k.Hdr.Name), owner, 0, nil, false)
	require.NoError(t, err)
	pub, err := base64.StdEncoding.DecodeString(k.PublicKey)
	require.NoError(t, err)
	rdata := binary.BigEndian.AppendUint16(nil, k.Flags)
	rdata = append(rdata, k.Protocol, k.Algorithm)
	rdata = append(rdata, pub...)
	sum := sha256.Sum256(append(owner[:n], rdata...))
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}

func TestTheParentRecordsNameTheSecureEntryKeys(t *testing.T) {
	csk := key(t, "gslb.example.com.", 257)
	ksk := key(t, "gslb.example.com.", 257)
	zsk := key(t, "gslb.example.com.", 256)
	zsk2 := key(t, "gslb.example.com.", 256)
	for _, tc := range []struct {
		name string
		set  []dns.RR
		want []*dns.DNSKEY
	}{
		{name: "a combined signing key gets one DS", set: []dns.RR{csk}, want: []*dns.DNSKEY{csk}},
		{name: "of a KSK and a ZSK only the KSK is named", set: []dns.RR{zsk, ksk}, want: []*dns.DNSKEY{ksk}},
		{name: "two keys with the SEP flag are both named (a rollover)", set: []dns.RR{ksk, csk, zsk}, want: []*dns.DNSKEY{csk, ksk}},
		{name: "without any SEP flag every zone key is named", set: []dns.RR{zsk, zsk2}, want: []*dns.DNSKEY{zsk, zsk2}},
		{name: "an unsigned zone has none", set: nil, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := DSSet(tc.set, 600)
			cds := CDS(tc.set, 600)
			cdnskey := CDNSKEY(tc.set, 600)
			require.Len(t, ds, len(tc.want))
			require.Len(t, cds, len(tc.want))
			require.Len(t, cdnskey, len(tc.want))
			wantDigests := map[uint16]string{}
			for _, k := range tc.want {
				wantDigests[k.KeyTag()] = digest(t, k)
			}
			for i := range ds {
				assert.Equal(t, uint8(dns.SHA256), ds[i].DigestType)
				assert.Equal(t, uint32(600), ds[i].Hdr.Ttl)
				assert.Equal(t, wantDigests[ds[i].KeyTag], strings.ToUpper(ds[i].Digest), "SHA-256 over owner and RDATA of key %d", ds[i].KeyTag)
				if i > 0 {
					assert.Less(t, ds[i-1].KeyTag, ds[i].KeyTag, "in key tag order")
				}
				c := cds[i].(*dns.CDS)
				assert.Equal(t, dns.TypeCDS, c.Hdr.Rrtype)
				assert.Equal(t, ds[i].KeyTag, c.KeyTag, "the CDS names the key the DS names")
				assert.Equal(t, ds[i].Digest, c.Digest, "with the same digest")
				k := cdnskey[i].(*dns.CDNSKEY)
				assert.Equal(t, dns.TypeCDNSKEY, k.Hdr.Rrtype)
				assert.Equal(t, ds[i].KeyTag, k.KeyTag(), "the CDNSKEY is the key the DS names")
			}
		})
	}
}
