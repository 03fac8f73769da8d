package dnssec

import (
	"cmp"
	"slices"

	"github.com/miekg/dns"
)

// The records a signed zone gives its parent, derived in one place so that
// what Meridian writes into the parent (DS, through a provider) and what it
// publishes at its own apex for parents that poll (CDS and CDNSKEY, RFC 7344
// and RFC 8078) always name the same keys with the same digest.

// SecureEntryKeys returns the keys of a DNSKEY RRset the parent's DS
// records point at: those with the SEP flag (KSKs and CSKs, flags 257), or
// every zone key when none has it (Meridian signs every RRset, the DNSKEY
// RRset included, with every key, so any of them anchors the chain). The
// result is sorted by key tag; records that are not DNSKEYs are skipped.
func SecureEntryKeys(dnskey []dns.RR) []*dns.DNSKEY {
	var sep, all []*dns.DNSKEY
	for _, rr := range dnskey {
		k, ok := rr.(*dns.DNSKEY)
		if !ok || k.Flags&dns.ZONE == 0 {
			continue
		}
		all = append(all, k)
		if k.Flags&dns.SEP != 0 {
			sep = append(sep, k)
		}
	}
	if len(sep) == 0 {
		sep = all
	}
	slices.SortFunc(sep, func(a, b *dns.DNSKEY) int { return cmp.Compare(a.KeyTag(), b.KeyTag()) })
	return sep
}

// DSSet returns the DS records of the zone's secure entry keys (SHA-256
// digests, RFC 4509), in key tag order, with ttl.
func DSSet(dnskey []dns.RR, ttl uint32) []*dns.DS {
	keys := SecureEntryKeys(dnskey)
	out := make([]*dns.DS, 0, len(keys))
	for _, k := range keys {
		ds := k.ToDS(dns.SHA256)
		if ds == nil {
			continue // an algorithm miekg/dns cannot digest: never one Meridian loads
		}
		ds.Hdr.Ttl = ttl
		out = append(out, ds)
	}
	return out
}

// CDS returns the CDS RRset (RFC 7344) the zone publishes at its apex: the
// DSSet as child DS records, nil when there is no key.
func CDS(dnskey []dns.RR, ttl uint32) []dns.RR {
	var out []dns.RR
	for _, ds := range DSSet(dnskey, ttl) {
		c := &dns.CDS{DS: *ds}
		c.Hdr.Rrtype = dns.TypeCDS
		out = append(out, c)
	}
	return out
}

// CDNSKEY returns the CDNSKEY RRset (RFC 7344): the secure entry keys, nil
// when there is none.
func CDNSKEY(dnskey []dns.RR, ttl uint32) []dns.RR {
	var out []dns.RR
	for _, k := range SecureEntryKeys(dnskey) {
		c := &dns.CDNSKEY{DNSKEY: *k}
		c.Hdr.Rrtype = dns.TypeCDNSKEY
		c.Hdr.Ttl = ttl
		out = append(out, c)
	}
	return out
}
