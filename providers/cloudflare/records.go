package cloudflare

import (
	"net/netip"
	"strings"

	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// Conversions between Cloudflare records (one per value, names without the
// trailing dot, TXT content quoted) and plan records (one per name and type).

// group collects Cloudflare records into plan records, sorted by key.
func group(recs []DNSRecord) []plan.Record {
	type key struct{ name, typ string }
	type set struct {
		rec   plan.Record
		ttl   map[int]bool
		proxy map[bool]bool
		seen  map[string]bool
	}
	sets := map[key]*set{}
	var order []key
	for _, r := range recs {
		k := key{fqdn(r.Name), strings.ToUpper(r.Type)}
		s, ok := sets[k]
		if !ok {
			s = &set{rec: plan.Record{Name: k.name, Type: k.typ}, ttl: map[int]bool{}, proxy: map[bool]bool{}, seen: map[string]bool{}}
			sets[k] = s
			order = append(order, k)
		}
		v := decode(k.typ, r.Content)
		if s.seen[v] { // the same value written twice (e.g. quoted and unquoted TXT)
			continue
		}
		s.seen[v] = true
		s.rec.Values = append(s.rec.Values, v)
		s.rec.IDs = append(s.rec.IDs, r.ID)
		s.ttl[r.TTL] = true
		s.proxy[r.Proxied] = true
	}
	out := make([]plan.Record, 0, len(order))
	for _, k := range order {
		s := sets[k]
		r := s.rec
		for ttl := range s.ttl {
			r.TTL = uint32(ttl)
		}
		if s.proxy[true] {
			r.Proxied = ptr(true)
		}
		if len(s.ttl) > 1 || len(s.proxy) > 1 {
			r.TTL = 0 // mixed: any desired record differs and updates them all
		}
		r.Normalize()
		out = append(out, r)
	}
	providers.SortByNameType(out)
	return out
}

// fqdn lower-cases a Cloudflare name and adds the trailing dot.
func fqdn(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, ".")) + "."
}

// cfName is a plan name as Cloudflare writes it.
func cfName(name string) string { return strings.TrimSuffix(strings.ToLower(name), ".") }

// decode turns Cloudflare content into a plan value.
func decode(typ, content string) string {
	switch typ {
	case "A", "AAAA":
		if a, err := netip.ParseAddr(content); err == nil {
			return a.String()
		}
	case "CNAME", "NS":
		return fqdn(content)
	case "TXT":
		return unquoteTXT(content)
	case "DS":
		if c, ok := plan.CanonicalDS(content); ok {
			return c
		}
	}
	return content
}

// encode turns a plan value into Cloudflare content.
func encode(typ, value string) string {
	switch typ {
	case "CNAME", "NS":
		return cfName(value)
	case "TXT":
		return quoteTXT(value)
	}
	return value
}

// maxTXTString is the longest character-string of a TXT record.
const maxTXTString = 255

// quoteTXT writes a TXT value as Cloudflare recommends: quoted, split into
// strings of at most 255 bytes, with " and \ escaped.
func quoteTXT(v string) string {
	var b strings.Builder
	for first := true; first || v != ""; first = false {
		n := min(len(v), maxTXTString)
		if !first {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		for _, c := range []byte(v[:n]) {
			if c == '"' || c == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
		b.WriteByte('"')
		v = v[n:]
	}
	return b.String()
}

// unquoteTXT reads TXT content written quoted ("a" "b" → ab) or bare (as
// is: Cloudflare stores what it was given).
func unquoteTXT(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, `"`) {
		return s
	}
	var b strings.Builder
	for t != "" {
		if t[0] != '"' {
			return s // not a sequence of quoted strings: keep it whole
		}
		i := 1
		for ; i < len(t) && t[i] != '"'; i++ {
			if t[i] == '\\' && i+1 < len(t) {
				i++
			}
			b.WriteByte(t[i])
		}
		if i == len(t) {
			return s
		}
		t = strings.TrimLeft(t[i+1:], " ")
	}
	return b.String()
}

func ptr[T any](v T) *T { return &v }
