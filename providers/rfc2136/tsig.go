package rfc2136

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"sync/atomic"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/xfr"
)

// signer is the TSIG of one exchange (a dns.TsigProvider): it signs with
// the key and counts the messages whose signature it verified, so that an
// answer without one (miekg/dns lets unsigned messages through) is caught.
type signer struct {
	name, alg string
	secret    []byte
	verified  atomic.Int64
}

func newSigner(k xfr.Key) (*signer, error) {
	raw, err := base64.StdEncoding.DecodeString(k.Secret)
	if err != nil {
		return nil, err
	}
	return &signer{name: dns.CanonicalName(k.Name), alg: dns.CanonicalName(k.Algorithm), secret: raw}, nil
}

func (s *signer) mac(msg []byte, t *dns.TSIG) ([]byte, error) {
	if dns.CanonicalName(t.Hdr.Name) != s.name {
		return nil, dns.ErrSecret // signed with another key
	}
	if dns.CanonicalName(t.Algorithm) != s.alg {
		return nil, dns.ErrKeyAlg
	}
	var h hash.Hash
	switch s.alg {
	case dns.HmacSHA256:
		h = hmac.New(sha256.New, s.secret)
	case dns.HmacSHA384:
		h = hmac.New(sha512.New384, s.secret)
	case dns.HmacSHA512:
		h = hmac.New(sha512.New, s.secret)
	}
	if h == nil {
		return nil, dns.ErrKeyAlg
	}
	h.Write(msg)
	return h.Sum(nil), nil
}

// Generate implements dns.TsigProvider.
func (s *signer) Generate(msg []byte, t *dns.TSIG) ([]byte, error) { return s.mac(msg, t) }

// Verify implements dns.TsigProvider.
func (s *signer) Verify(msg []byte, t *dns.TSIG) error {
	want, err := s.mac(msg, t)
	if err != nil {
		return err
	}
	got, err := hex.DecodeString(t.MAC)
	if err != nil || !hmac.Equal(want, got) {
		return dns.ErrSig
	}
	s.verified.Add(1)
	return nil
}
