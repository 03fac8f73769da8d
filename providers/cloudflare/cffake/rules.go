package cffake

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// apiErr is one refusal: HTTP status and Cloudflare's code and message.
type apiErr struct {
	status  int
	code    int
	message string
}

func (e *apiErr) Error() string { return fmt.Sprintf("%d %s", e.code, e.message) }

func refuse(status, code int, format string, args ...any) *apiErr {
	return &apiErr{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

// Error codes the fake answers with. 81044, 81053, 81057, 9005 and 10000
// are Cloudflare's; the others are representative.
const (
	CodeBadRequest     = 1004  // malformed request or parameter
	CodeNoRoute        = 7003  // unknown zone or path
	CodeHeaders        = 6003  // missing Authorization header
	CodeAuthentication = 10000 // invalid token
	CodeBadName        = 9008  // record name
	CodeBadType        = 9009  // unsupported record type
	CodeBadContentA    = 9005  // A content is not an IPv4 address
	CodeBadContentAAAA = 9006  // AAAA content is not an IPv6 address
	CodeBadContentName = 9007  // CNAME/NS/MX content is not a host name
	CodeBadContentTXT  = 9010  // TXT content too long or badly quoted
	CodeBadTTL         = 9021  // TTL not 1 nor 30..86400
	CodeNotProxiable   = 9004  // proxied on a type that cannot be
	CodeNotFound       = 81044 // record does not exist
	CodeHostConflict   = 81053 // A/AAAA/CNAME with a CNAME at the same name
	CodeCNAMEConflict  = 81054 // another type with a CNAME at the same name
	CodeNSConflict     = 81056 // NS with other records at the same name
	CodeIdentical      = 81057 // identical record
	CodeBadDS          = 9101  // DS data missing or invalid
	CodeDSPlacement    = 9102  // DS at the apex, or without an NS of its name
)

// Record types the fake accepts.
var types = map[string]bool{"A": true, "AAAA": true, "CNAME": true, "TXT": true, "NS": true, "MX": true, "SRV": true, "CAA": true, "PTR": true, "DS": true}

// proxiable types.
var proxiable = map[string]bool{"A": true, "AAAA": true, "CNAME": true}

// normalize checks r alone and puts it in Cloudflare's stored form: name
// lower case without the trailing dot (a name outside the zone is taken as
// relative, as Cloudflare does), addresses canonical, host names without
// the trailing dot, proxied records with TTL 1.
func normalize(r *Record, zone string) *apiErr {
	r.Type = strings.ToUpper(r.Type)
	if !types[r.Type] {
		return refuse(400, CodeBadType, "Unsupported record type %q.", r.Type)
	}
	r.Name = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(r.Name)), ".")
	switch {
	case r.Name == "" || r.Name == "@":
		r.Name = zone
	case r.Name != zone && !strings.HasSuffix(r.Name, "."+zone):
		r.Name += "." + zone
	}
	if !hostname(r.Name, true) {
		return refuse(400, CodeBadName, "DNS name is invalid.")
	}
	if err := normalizeContent(r, zone); err != nil {
		return err
	}
	if r.TTL != 1 && (r.TTL < 30 || r.TTL > 86400) {
		return refuse(400, CodeBadTTL, "TTL must be between 60 and 86400 seconds, or 1 for Automatic.")
	}
	if r.Proxied {
		if !proxiable[r.Type] {
			return refuse(400, CodeNotProxiable, "This record type cannot be proxied.")
		}
		r.TTL = 1
	}
	return nil
}

// normalizeContent checks r's content for its type and puts it in stored
// form (r's name already normalized).
func normalizeContent(r *Record, zone string) *apiErr {
	switch r.Type {
	case "A":
		a, err := netip.ParseAddr(r.Content)
		if err != nil || !a.Is4() {
			return refuse(400, CodeBadContentA, "Content for A record must be a valid IPv4 address.")
		}
		r.Content = a.String()
	case "AAAA":
		a, err := netip.ParseAddr(r.Content)
		if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
			return refuse(400, CodeBadContentAAAA, "Content for AAAA record must be a valid IPv6 address.")
		}
		r.Content = a.String()
	case "CNAME", "NS", "MX", "PTR":
		r.Content = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(r.Content)), ".")
		if !hostname(r.Content, false) {
			return refuse(400, CodeBadContentName, "Content for %s record is invalid: must be a host name.", r.Type)
		}
		if r.Type == "CNAME" && r.Content == r.Name {
			return refuse(400, CodeBadContentName, "Content for CNAME record is invalid: the record cannot point to itself.")
		}
	case "TXT":
		return checkTXT(r.Content)
	case "DS":
		if r.Name == zone {
			return refuse(400, CodeDSPlacement, "DS records cannot be added at the zone apex: a zone's DS belongs in its parent.")
		}
		c, err := checkDS(r.Content)
		if err != nil {
			return err
		}
		r.Content = c
	}
	return nil
}

// dsDigestLen is the hex length of the digest of each DS digest type
// Cloudflare takes: SHA-1 (1), SHA-256 (2), SHA-384 (4).
var dsDigestLen = map[uint64]int{1: 40, 2: 64, 4: 96}

// checkDS checks DS content "key-tag algorithm digest-type digest" (made
// from the request's data) and returns it as Cloudflare shows it: single
// spaces, the digest in upper case.
func checkDS(c string) (string, *apiErr) {
	f := strings.Fields(c)
	if len(f) != 4 {
		return "", refuse(400, CodeBadDS, "DS record data must have key_tag, algorithm, digest_type and digest.")
	}
	tag, err1 := strconv.ParseUint(f[0], 10, 16)
	alg, err2 := strconv.ParseUint(f[1], 10, 8)
	dt, err3 := strconv.ParseUint(f[2], 10, 8)
	switch {
	case err1 != nil:
		return "", refuse(400, CodeBadDS, "DS key_tag must be 0..65535.")
	case err2 != nil || alg == 0:
		return "", refuse(400, CodeBadDS, "DS algorithm must be 1..255.")
	case err3 != nil || dsDigestLen[dt] == 0:
		return "", refuse(400, CodeBadDS, "DS digest_type must be 1, 2 or 4.")
	}
	digest := strings.ToUpper(f[3])
	if len(digest) != dsDigestLen[dt] || strings.Trim(digest, "0123456789ABCDEF") != "" {
		return "", refuse(400, CodeBadDS, "DS digest must be %d hex digits for digest_type %d.", dsDigestLen[dt], dt)
	}
	return fmt.Sprintf("%d %d %d %s", tag, alg, dt, digest), nil
}

// checkTXT allows bare content up to 2048 characters, or a sequence of
// quoted strings of at most 255 characters each.
func checkTXT(c string) *apiErr {
	if c == "" {
		return refuse(400, CodeBadContentTXT, "Content for TXT record is required.")
	}
	if len(c) > 2048 {
		return refuse(400, CodeBadContentTXT, "Content for TXT record must be at most 2048 characters.")
	}
	if !strings.HasPrefix(c, `"`) {
		return nil
	}
	for t := c; t != ""; {
		if t[0] != '"' {
			return refuse(400, CodeBadContentTXT, "Content for TXT record is badly quoted.")
		}
		n, i := 0, 1
		for ; i < len(t) && t[i] != '"'; i++ {
			if t[i] == '\\' {
				i++
			}
			n++
		}
		if i >= len(t) {
			return refuse(400, CodeBadContentTXT, "Content for TXT record is badly quoted.")
		}
		if n > 255 {
			return refuse(400, CodeBadContentTXT, "Content for TXT record has a string longer than 255 characters.")
		}
		t = strings.TrimLeft(t[i+1:], " ")
	}
	return nil
}

// hostname checks a name of labels of 1..63 letters, digits, - and _
// (and *, as the first label of an owner name).
func hostname(s string, owner bool) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for i, l := range strings.Split(s, ".") {
		if l == "" || len(l) > 63 {
			return false
		}
		if owner && i == 0 && l == "*" {
			continue
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// conflict checks r against the other records of the zone (self excluded).
// An NS shares its name with nothing but its DS; a DS needs an NS of its
// name (it describes the zone that NS delegates to).
func conflict(r Record, others []*Record, self string) *apiErr {
	delegated := false
	for _, o := range others {
		if o.ID == self || o.Name != r.Name {
			continue
		}
		delegated = delegated || o.Type == "NS"
		switch {
		case o.Type == r.Type && o.Content == r.Content:
			return refuse(400, CodeIdentical, "An identical record already exists.")
		case r.Type == "NS" && o.Type != "NS" && o.Type != "DS", o.Type == "NS" && r.Type != "NS" && r.Type != "DS":
			return refuse(400, CodeNSConflict, "An NS record cannot share its name with other records (except DS).")
		case (r.Type == "CNAME" || o.Type == "CNAME") && addressOrCNAME(r.Type) && addressOrCNAME(o.Type):
			return refuse(400, CodeHostConflict, "An A, AAAA, or CNAME record with that host already exists.")
		case r.Type == "CNAME" || o.Type == "CNAME":
			return refuse(400, CodeCNAMEConflict, "A CNAME record with that host already exists.")
		}
	}
	if r.Type == "DS" && !delegated {
		return refuse(400, CodeDSPlacement, "DS records can only be added to a delegated subdomain: add its NS records first.")
	}
	return nil
}

// orphansDS reports whether deleting record id (an NS) would leave a DS of
// its name without any NS.
func orphansDS(others []*Record, id string) bool {
	var del *Record
	for _, o := range others {
		if o.ID == id {
			del = o
		}
	}
	if del == nil || del.Type != "NS" {
		return false
	}
	ns, ds := 0, false
	for _, o := range others {
		if o.Name == del.Name {
			ns += b2i(o.Type == "NS")
			ds = ds || o.Type == "DS"
		}
	}
	return ds && ns == 1
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func addressOrCNAME(t string) bool { return t == "A" || t == "AAAA" || t == "CNAME" }
