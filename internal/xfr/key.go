package xfr

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/secretfile"
)

// Key is a TSIG key. Transfers take HMAC-SHA256 only (ParseKey); other
// users may allow more (ParseKeyWith).
type Key struct {
	Name      string // canonical key name (lower case, trailing dot)
	Secret    string // base64, as TSIG functions of miekg/dns take it
	Algorithm string // as miekg/dns names it, e.g. dns.HmacSHA256 ("hmac-sha256.")
}

// algorithms are the TSIG algorithms a key file may name, by the names
// BIND writes, with their miekg/dns names.
var algorithms = map[string]string{"hmac-sha256": dns.HmacSHA256, "hmac-sha384": dns.HmacSHA384, "hmac-sha512": dns.HmacSHA512}

// Algorithm is the only TSIG algorithm offered.
const Algorithm = dns.HmacSHA256

// minSecret is the shortest secret accepted, in bytes (RFC 8945 section 6
// recommends at least the hash length; tsig-keygen makes 32).
const minSecret = 16

// LoadKeyFile reads a TSIG key file. Two formats are accepted:
//
//   - BIND's, as written by `tsig-keygen -a hmac-sha256 NAME` (one key per file):
//     key "NAME" { algorithm hmac-sha256; secret "BASE64"; };
//   - one line in dig/kdig -y form: hmac-sha256:NAME:BASE64 (or NAME:BASE64).
func LoadKeyFile(path string) (Key, error) { return LoadKeyFileWith(path, "hmac-sha256") }

// LoadKeyFileWith is LoadKeyFile for a key of one of the allowed algorithms
// (hmac-sha256, hmac-sha384, hmac-sha512); a key in the one-line form
// without an algorithm is hmac-sha256.
func LoadKeyFileWith(path string, allowed ...string) (Key, error) {
	b, err := secretfile.Read(path)
	if err != nil {
		return Key{}, err
	}
	k, err := ParseKeyWith(string(b), allowed...)
	if err != nil {
		return Key{}, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// ParseKey parses the content of a key file (see LoadKeyFile).
func ParseKey(s string) (Key, error) { return ParseKeyWith(s, "hmac-sha256") }

// ParseKeyWith parses the content of a key file of one of the allowed
// algorithms (see LoadKeyFileWith).
func ParseKeyWith(s string, allowed ...string) (Key, error) {
	toks, err := tokenize(s)
	if err != nil {
		return Key{}, err
	}
	if len(toks) == 0 {
		return Key{}, fmt.Errorf("empty key file")
	}
	if toks[0].text == "key" && !toks[0].quoted {
		return parseBIND(toks, allowed)
	}
	if len(toks) != 1 {
		return Key{}, fmt.Errorf("expected BIND format (key \"name\" { algorithm hmac-sha256; secret \"...\"; };) or one line hmac-sha256:name:secret")
	}
	parts := strings.Split(toks[0].text, ":")
	alg := "hmac-sha256"
	switch len(parts) {
	case 2:
	case 3:
		alg, parts = parts[0], parts[1:]
	default:
		return Key{}, fmt.Errorf("expected hmac-sha256:name:secret")
	}
	return newKey(parts[0], alg, parts[1], allowed)
}

func newKey(name, alg, secret string, allowed []string) (Key, error) {
	a := strings.ToLower(strings.TrimSuffix(alg, "."))
	if !slices.Contains(allowed, a) || algorithms[a] == "" {
		return Key{}, fmt.Errorf("algorithm %q is not supported (allowed: %s)", alg, strings.Join(allowed, ", "))
	}
	if _, ok := dns.IsDomainName(name); !ok || name == "" {
		return Key{}, fmt.Errorf("key name %q is not a domain name", name)
	}
	raw, err := base64.StdEncoding.DecodeString(secret)
	if err != nil {
		return Key{}, fmt.Errorf("secret is not base64: %w", err)
	}
	if len(raw) < minSecret {
		return Key{}, fmt.Errorf("secret is %d bytes; at least %d are required (tsig-keygen makes 32)", len(raw), minSecret)
	}
	return Key{Name: dns.CanonicalName(name), Secret: secret, Algorithm: algorithms[a]}, nil
}

type token struct {
	text   string
	quoted bool
}

// tokenize splits BIND configuration syntax: words, quoted strings, { } ;
// with #, // and /* */ comments.
func tokenize(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case unicode.IsSpace(rune(c)):
			i++
		case c == '#' || strings.HasPrefix(s[i:], "//"):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("unterminated comment")
			}
			i += end + 4
		case c == '{' || c == '}' || c == ';':
			out = append(out, token{text: string(c)})
			i++
		case c == '"':
			end := strings.IndexByte(s[i+1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("unterminated string")
			}
			out = append(out, token{text: s[i+1 : i+1+end], quoted: true})
			i += end + 2
		default:
			j := i
			for j < len(s) && !unicode.IsSpace(rune(s[j])) && !strings.ContainsRune("{};\"#", rune(s[j])) {
				j++
			}
			out = append(out, token{text: s[i:j]})
			i = j
		}
	}
	return out, nil
}

func parseBIND(toks []token, allowed []string) (Key, error) {
	bad := func(what string) (Key, error) {
		return Key{}, fmt.Errorf("BIND key syntax: %s (expected key \"name\" { algorithm hmac-sha256; secret \"...\"; };)", what)
	}
	if len(toks) < 4 || toks[2].text != "{" || toks[2].quoted {
		return bad("missing name or {")
	}
	name := toks[1].text
	var alg, secret string
	i := 3
	for ; i < len(toks) && !(toks[i].text == "}" && !toks[i].quoted); i += 3 {
		if i+2 >= len(toks) || toks[i+2].text != ";" {
			return bad("statement without ;")
		}
		switch toks[i].text {
		case "algorithm":
			alg = toks[i+1].text
		case "secret":
			secret = toks[i+1].text
		default:
			return bad(fmt.Sprintf("unknown statement %q", toks[i].text))
		}
	}
	if i >= len(toks) {
		return bad("missing }")
	}
	rest := toks[i+1:]
	if len(rest) > 0 && rest[0].text == ";" {
		rest = rest[1:]
	}
	if len(rest) > 0 {
		return bad("one key per file")
	}
	if alg == "" || secret == "" {
		return bad("algorithm and secret are required")
	}
	return newKey(name, alg, secret, allowed)
}
