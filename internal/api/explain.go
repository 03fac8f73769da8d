package api

import (
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/engine"
)

// ExplainHandler serves GET /v1/explain?name=NAME[&type=A][&client=IP|&subnet=CIDR]:
// the answer the current snapshot gives and why (see engine.Snapshot.Explain).
// Without client or subnet the client is unknown (not located).
func ExplainHandler(src Source) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		name := strings.TrimSpace(q.Get("name"))
		if name == "" {
			writeError(w, http.StatusBadRequest, "parameter name is required (allowed: a domain name such as www.example.com)")
			return
		}
		if _, ok := dns.IsDomainName(name); !ok || len(name) > 253 {
			writeError(w, http.StatusBadRequest, "parameter name %q is not allowed (allowed: a domain name such as www.example.com)", name)
			return
		}
		qtype, ok := parseType(q.Get("type"))
		if !ok {
			writeError(w, http.StatusBadRequest, "parameter type %q is not allowed (allowed: a record type such as A, AAAA, CNAME, SOA, NS, TXT, ANY, or a number 1-65535)", q.Get("type"))
			return
		}
		cl, sn := q.Get("client"), q.Get("subnet")
		if cl != "" && sn != "" {
			writeError(w, http.StatusBadRequest, "parameters client and subnet are exclusive (allowed: one of them, or neither)")
			return
		}
		var client engine.Client
		ecs := false
		switch {
		case cl != "":
			ip, err := netip.ParseAddr(cl)
			if err != nil || ip.Zone() != "" {
				writeError(w, http.StatusBadRequest, "parameter client %q is not allowed (allowed: an IPv4 or IPv6 address such as 192.0.2.1)", cl)
				return
			}
			ip = ip.Unmap()
			client = engine.Client{Addr: ip, Bits: ip.BitLen()}
		case sn != "":
			p, err := netip.ParsePrefix(sn)
			if err != nil {
				writeError(w, http.StatusBadRequest, "parameter subnet %q is not allowed (allowed: an IPv4 or IPv6 network such as 192.0.2.0/24)", sn)
				return
			}
			if p.Addr().Is4In6() {
				if p.Bits() < 96 {
					writeError(w, http.StatusBadRequest, "parameter subnet %q is not allowed (allowed: an IPv4 or IPv6 network such as 192.0.2.0/24)", sn)
					return
				}
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			p = p.Masked() // an ECS option carries no host bits
			client = engine.Client{Addr: p.Addr(), Bits: p.Bits(), HasECS: true}
			ecs = true
		}
		snap := src.Load()
		if snap == nil {
			writeError(w, http.StatusServiceUnavailable, "no snapshot loaded yet")
			return
		}
		writeJSON(w, http.StatusOK, snap.Explain(name, qtype, client, ecs))
	}
}

// parseType reads a record type name (any case) or number; "" is A.
func parseType(s string) (uint16, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return dns.TypeA, true
	}
	if t, ok := dns.StringToType[strings.ToUpper(s)]; ok && t != dns.TypeNone {
		return t, true
	}
	if rest, ok := strings.CutPrefix(strings.ToUpper(s), "TYPE"); ok {
		s = rest
	}
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, false
	}
	return uint16(n), true
}
