// Package dnssec signs a zone's answers online: keys in BIND format files
// (ECDSA P-256 SHA-256, algorithm 13, or Ed25519, algorithm 15), RRSIGs
// made on demand and cached per RRset, and the helpers of the `meridian
// dnssec` commands (key generation, DS records for the parent).
package dnssec

import (
	"bytes"
	"crypto"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/secretfile"
)

// Key is a zone signing key: its DNSKEY record and the private key.
type Key struct {
	DNSKEY *dns.DNSKEY
	Signer crypto.Signer // nil for a public key read without its private half
}

// Tag is the key tag of the key (RFC 4034 appendix B).
func (k *Key) Tag() uint16 { return k.DNSKEY.KeyTag() }

// FlagsCSK are the DNSKEY flags of a combined signing key: zone key + secure
// entry point (257).
const FlagsCSK = dns.ZONE | dns.SEP

// ParseAlgorithm maps a name (ecdsap256, ecdsap256sha256, ed25519) or number
// (13, 15) to a supported DNSSEC algorithm.
func ParseAlgorithm(s string) (uint8, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "ecdsap256", "ecdsap256sha256", "ecdsa", "13":
		return dns.ECDSAP256SHA256, nil
	case "ed25519", "15":
		return dns.ED25519, nil
	}
	return 0, fmt.Errorf("algorithm %q is not supported (allowed: ecdsap256 (13), ed25519 (15))", s)
}

func supported(alg uint8) bool { return alg == dns.ECDSAP256SHA256 || alg == dns.ED25519 }

// Generate makes a new combined signing key (flags 257) for zone.
func Generate(zone string, alg uint8, ttl uint32) (*Key, error) {
	if !supported(alg) {
		return nil, fmt.Errorf("algorithm %d is not supported (allowed: 13, 15)", alg)
	}
	if _, ok := dns.IsDomainName(zone); !ok {
		return nil, fmt.Errorf("zone %q is not a valid domain name", zone)
	}
	k := &dns.DNSKEY{
		Hdr:       dns.RR_Header{Name: dns.CanonicalName(zone), Rrtype: dns.TypeDNSKEY, Class: dns.ClassINET, Ttl: ttl},
		Flags:     FlagsCSK,
		Protocol:  3,
		Algorithm: alg,
	}
	priv, err := k.Generate(256) // both algorithms have 256-bit keys
	if err != nil {
		return nil, err
	}
	s, ok := priv.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("generated key of type %T cannot sign", priv)
	}
	return &Key{DNSKEY: k, Signer: s}, nil
}

// BaseName is the BIND file name of k without extension:
// K<zone>+<alg>+<tag>.
func (k *Key) BaseName() string {
	return fmt.Sprintf("K%s+%03d+%05d", k.DNSKEY.Hdr.Name, k.DNSKEY.Algorithm, k.Tag())
}

// Write stores k in dir as BIND files: BaseName().key (the DNSKEY record)
// and BaseName().private (mode 0600). It returns both paths and refuses to
// overwrite existing files.
func (k *Key) Write(dir string) (keyPath, privPath string, err error) {
	return k.WriteAs(dir, k.BaseName())
}

// WriteAs is Write under the base name name (NAME.key, NAME.private): the
// names a Kubernetes Secret can hold (its keys cannot contain '+').
func (k *Key) WriteAs(dir, name string) (keyPath, privPath string, err error) {
	if k.Signer == nil {
		return "", "", fmt.Errorf("key %d has no private key", k.Tag())
	}
	base := filepath.Join(dir, name)
	keyPath, privPath = base+".key", base+".private"
	priv := k.DNSKEY.PrivateKeyString(k.Signer)
	if priv == "" {
		return "", "", fmt.Errorf("cannot encode a private key of type %T", k.Signer)
	}
	pub := fmt.Sprintf("; This is a combined signing key (CSK), keyid %d, for %s\n%s\n", k.Tag(), k.DNSKEY.Hdr.Name, k.DNSKEY.String())
	if err := writeNew(privPath, priv, 0o600); err != nil {
		return "", "", err
	}
	if err := writeNew(keyPath, pub, 0o644); err != nil {
		os.Remove(privPath)
		return "", "", err
	}
	return keyPath, privPath, nil
}

func writeNew(path, content string, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Paths returns the .key and .private file names of a key given as either
// of them or as their common base name.
func Paths(path string) (keyPath, privPath string) {
	base := strings.TrimSuffix(strings.TrimSuffix(path, ".private"), ".key")
	return base + ".key", base + ".private"
}

// ReadPublicKey reads the DNSKEY of a key file (path: .key, .private or the
// base name).
func ReadPublicKey(path string) (*Key, error) {
	keyPath, _ := Paths(path)
	f, err := os.Open(keyPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zp := dns.NewZoneParser(f, "", keyPath)
	zp.SetDefaultTTL(3600)
	rr, ok := zp.Next() // the first record is the key; later ones are not read
	if !ok {
		if err := zp.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s: no DNSKEY record", keyPath)
	}
	k, isKey := rr.(*dns.DNSKEY)
	if !isKey {
		return nil, fmt.Errorf("%s: %s record where a DNSKEY was expected", keyPath, dns.TypeToString[rr.Header().Rrtype])
	}
	if !supported(k.Algorithm) {
		return nil, fmt.Errorf("%s: algorithm %d is not supported (allowed: 13 ECDSAP256SHA256, 15 ED25519)", keyPath, k.Algorithm)
	}
	if k.Flags&dns.ZONE == 0 || k.Protocol != 3 {
		return nil, fmt.Errorf("%s: not a zone key (flags %d, protocol %d)", keyPath, k.Flags, k.Protocol)
	}
	k.Hdr.Name = dns.CanonicalName(k.Hdr.Name)
	return &Key{DNSKEY: k}, nil
}

// ReadKey reads a key pair (path: .private, .key or the base name; both
// files must exist) and checks that the halves belong together.
func ReadKey(path string) (*Key, error) {
	k, err := ReadPublicKey(path)
	if err != nil {
		return nil, err
	}
	_, privPath := Paths(path)
	b, err := secretfile.Read(privPath) // the private half: owner-only, like every secret file
	if err != nil {
		return nil, err
	}
	priv, err := k.DNSKEY.ReadPrivateKey(bytes.NewReader(b), privPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", privPath, err)
	}
	s, ok := priv.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: key of type %T cannot sign", privPath, priv)
	}
	k.Signer = s
	if err := k.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", privPath, err)
	}
	return k, nil
}

// check signs a test RRset and verifies it with the DNSKEY, so that a
// private key that does not match its .key file is found at load time.
func (k *Key) check() error {
	rr := &dns.TXT{Hdr: dns.RR_Header{Name: k.DNSKEY.Hdr.Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}, Txt: []string{"meridian key check"}}
	sig := &dns.RRSIG{Algorithm: k.DNSKEY.Algorithm, KeyTag: k.Tag(), SignerName: k.DNSKEY.Hdr.Name, Inception: 1, Expiration: 2}
	if err := sig.Sign(k.Signer, []dns.RR{rr}); err != nil {
		return err
	}
	if err := sig.Verify(k.DNSKEY, []dns.RR{rr}); err != nil {
		return fmt.Errorf("private key does not match the DNSKEY (key tag %d): %w", k.Tag(), err)
	}
	return nil
}

// DS returns the SHA-256 DS record of k for the parent zone.
func (k *Key) DS() *dns.DS { return k.DNSKEY.ToDS(dns.SHA256) }

// ZoneKeyFiles are the key files a zone signs with: files, and every
// NAME.private in dir (when dir is set) whose NAME.key beside it is a
// DNSKEY of the zone, whatever its name (K<zone>+<alg>+<tag>, or a name a
// Kubernetes Secret can hold), sorted. A dir without any key of the zone is
// an error: a signed zone is never served unsigned.
func ZoneKeyFiles(apex string, files []string, dir string) ([]string, error) {
	out := slices.Clone(files)
	if dir == "" {
		return out, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("key_directory: %w", err)
	}
	n := 0
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".private") {
			continue // a Secret volume's ..data links, other files
		}
		p := filepath.Join(dir, name)
		if k, err := ReadPublicKey(p); err != nil || !strings.EqualFold(k.DNSKEY.Hdr.Name, dns.Fqdn(apex)) {
			continue // no .key beside it, or another zone's
		}
		out = append(out, p)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("key_directory %s: no key of zone %s (NAME.private with NAME.key beside it, as `meridian dnssec keygen` writes them)", dir, apex)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
