package kube

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/model"
)

// The annotations Meridian reads on Services and Ingresses, and the one it writes.
const (
	AnnoHostname      = "meridian.io/hostname"       // global name(s) this object serves, comma-separated
	AnnoStrategy      = "meridian.io/strategy"       // weighted, failover, geo, roundrobin or latency (service-level)
	AnnoWeight        = "meridian.io/weight"         // this cluster's traffic weight, 0..1000
	AnnoFailoverOrder = "meridian.io/failover-order" // cluster names, primary first (service-level)
	AnnoTTL           = "meridian.io/ttl"            // answer TTL: seconds or a duration like 30s (service-level)
	AnnoHealthCheck   = "meridian.io/health-check"   // e.g. http:8080/healthz, https:443/, tcp:443, dns:53, none (service-level)
	AnnoGeo           = "meridian.io/geo"            // places this cluster serves: regions, countries, continents
	AnnoDrain         = "meridian.io/drain"          // true takes this cluster's endpoints out of the answers
	AnnoSticky        = "meridian.io/sticky"         // off or subnet: each client network keeps its answer (service-level)
	// AnnoFallbackAnswer is the service's fallback_answer: auto, on or off
	// (service-level; default auto).
	AnnoFallbackAnswer = "meridian.io/fallback-answer"
	AnnoCapacity       = "meridian.io/capacity" // true: weights × ready fraction of the Services behind the object (service-level)
	AnnoStatus         = "meridian.io/status"   // written by Meridian: what it serves for this object
	// AnnoLatencyTolerance is a latency service's tolerance, e.g. 30%
	// (service-level; default 20%).
	AnnoLatencyTolerance = "meridian.io/latency-tolerance"
	// AnnoMinHealthy is the service's min_healthy guard for operators'
	// drains and force-downs, 0..1000 (service-level; default:
	// decision.min_healthy).
	AnnoMinHealthy = "meridian.io/min-healthy"
	// AnnoHostnamesFromSpec "true" on a Gateway API route without
	// meridian.io/hostname serves its spec.hostnames.
	AnnoHostnamesFromSpec = "meridian.io/hostnames-from-spec"
)

// InputAnnotations lists the annotations Meridian reads, in documentation order.
var InputAnnotations = []string{AnnoHostname, AnnoStrategy, AnnoWeight, AnnoFailoverOrder, AnnoTTL, AnnoHealthCheck, AnnoGeo, AnnoDrain, AnnoSticky, AnnoCapacity, AnnoLatencyTolerance, AnnoMinHealthy, AnnoFallbackAnswer}

// Settings is what one object's annotations ask for. Zero values mean "not set".
type Settings struct {
	Hostnames     []string     // canonical, sorted, at least one
	Strategy      string       // "" = not set
	Weight        *int         // nil = not set (model default)
	FailoverOrder []string     // nil = not set
	TTL           int          // 0 = not set
	HealthCheck   *model.Check // nil = not set
	Geo           *GeoPlaces   // nil = not set
	Drain         bool
	Sticky        string // "" = not set
	// FallbackAnswer is meridian.io/fallback-answer ("" = not set).
	FallbackAnswer string
	Capacity       *bool // nil = not set; true: capacity-aware weights (source kubernetes)
	// LatencyTolerance is meridian.io/latency-tolerance (nil = not set).
	LatencyTolerance *model.Percent
	// MinHealthy is meridian.io/min-healthy (nil = not set).
	MinHealthy *int
}

// GeoPlaces are the client locations one cluster serves.
type GeoPlaces struct {
	Regions, Countries, Continents []string
}

// FieldError is one rejected annotation value.
type FieldError struct {
	Annotation string
	Value      string
	Msg        string // what is wrong and what is allowed
}

func (e FieldError) Error() string { return fmt.Sprintf("%s: %q %s", e.Annotation, e.Value, e.Msg) }

// Watched reports whether an object carries meridian.io/hostname.
func Watched(annotations map[string]string) bool {
	_, ok := annotations[AnnoHostname]
	return ok
}

// ParseAnnotations reads the meridian.io/* annotations of one object. It
// returns every rejected value; a caller keeps the object's last valid
// Settings when the list is not empty.
func ParseAnnotations(a map[string]string) (Settings, []FieldError) {
	var s Settings
	var errs []FieldError
	host, ok := a[AnnoHostname]
	switch hs, err := parseHostnames(host); {
	case !ok:
		errs = append(errs, FieldError{Annotation: AnnoHostname, Msg: "is missing (allowed: fully qualified names separated by commas, e.g. app.gslb.example.com)"})
	case err != nil:
		errs = append(errs, FieldError{Annotation: AnnoHostname, Value: host, Msg: err.Error()})
	default:
		s.Hostnames = hs
	}
	for _, r := range settingReaders {
		if v, ok := a[r.anno]; ok {
			if err := r.read(v, &s); err != nil {
				errs = append(errs, FieldError{Annotation: r.anno, Value: v, Msg: err.Error()})
			}
		}
	}
	return s, errs
}

// settingReaders read the optional annotations into Settings, in the
// order their errors are reported; each returns what is wrong with a
// rejected value (the FieldError's Msg) and leaves the setting unset.
var settingReaders = []struct {
	anno string
	read func(v string, s *Settings) error
}{
	{AnnoStrategy, func(v string, s *Settings) (err error) {
		s.Strategy, err = oneOf(v, model.Strategies, "a strategy")
		return err
	}},
	{AnnoWeight, readWeight},
	{AnnoFailoverOrder, readFailoverOrder},
	{AnnoTTL, func(v string, s *Settings) (err error) { s.TTL, err = parseTTL(v); return err }},
	{AnnoHealthCheck, func(v string, s *Settings) (err error) { s.HealthCheck, err = ParseHealthCheck(v); return err }},
	{AnnoGeo, func(v string, s *Settings) (err error) { s.Geo, err = parseGeo(v); return err }},
	{AnnoLatencyTolerance, readLatencyTolerance},
	{AnnoMinHealthy, readMinHealthy},
	{AnnoDrain, readDrain},
	{AnnoSticky, func(v string, s *Settings) (err error) {
		s.Sticky, err = oneOf(v, model.StickyModes, "a sticky mode")
		return err
	}},
	{AnnoFallbackAnswer, func(v string, s *Settings) (err error) {
		s.FallbackAnswer, err = oneOf(v, model.FallbackModes, "a fallback mode")
		return err
	}},
	{AnnoCapacity, readCapacity},
}

// oneOf reads a value that must be one of allowed (what names it in the
// error): "" and an error for anything else.
func oneOf(v string, allowed []string, what string) (string, error) {
	v = strings.TrimSpace(v)
	if !slices.Contains(allowed, v) {
		return "", fmt.Errorf("is not %s (allowed: %s)", what, strings.Join(allowed, ", "))
	}
	return v, nil
}

// readWeight reads meridian.io/weight.
func readWeight(v string, s *Settings) error {
	w, ok := boundedInt(v, model.MaxWeight)
	if !ok {
		return fmt.Errorf("is not a weight (allowed: an integer 0..%d; 0 = only when every weighted endpoint is down)", model.MaxWeight)
	}
	s.Weight = &w
	return nil
}

// boundedInt reads an integer 0..limit; ok is false for anything else.
func boundedInt(v string, limit int) (n int, ok bool) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	return n, err == nil && n >= 0 && n <= limit
}

// readFailoverOrder reads meridian.io/failover-order.
func readFailoverOrder(v string, s *Settings) error {
	order, err := parseList(v)
	if err != nil || len(order) == 0 {
		return errors.New("is not a cluster list (allowed: cluster names separated by commas, primary first, e.g. east,west)")
	}
	if d := firstDuplicate(order); d != "" {
		return fmt.Errorf("names cluster %q twice (allowed: each cluster once)", d)
	}
	s.FailoverOrder = order
	return nil
}

// readLatencyTolerance reads meridian.io/latency-tolerance.
func readLatencyTolerance(v string, s *Settings) error {
	var p model.Percent
	if err := p.UnmarshalText([]byte(v)); err != nil || p < 0 || p > model.MaxLatencyTolerance {
		return fmt.Errorf("is not a tolerance (allowed: a percentage 0%%..%v%%, e.g. 30%%)", model.MaxLatencyTolerance)
	}
	s.LatencyTolerance = &p
	return nil
}

// readMinHealthy reads meridian.io/min-healthy.
func readMinHealthy(v string, s *Settings) error {
	n, ok := boundedInt(v, model.MaxMinHealthy)
	if !ok {
		return fmt.Errorf("is not a min_healthy (allowed: an integer 0..%d; 0 = no guard)", model.MaxMinHealthy)
	}
	s.MinHealthy = &n
	return nil
}

// readDrain reads meridian.io/drain.
func readDrain(v string, s *Settings) error {
	d, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return errors.New("is not a boolean (allowed: true, false)")
	}
	s.Drain = d
	return nil
}

// readCapacity reads meridian.io/capacity.
func readCapacity(v string, s *Settings) error {
	switch strings.TrimSpace(v) {
	case "true":
		s.Capacity = new(true)
	case "false":
		s.Capacity = new(false)
	default:
		return errors.New("is not a boolean (allowed: true: weights follow the ready fraction of the Services behind the object, false)")
	}
	return nil
}

// parseList splits a comma-separated list, trimming blanks; an empty item is an error.
func parseList(v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("is empty")
	}
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("has an empty item")
		}
		out = append(out, item)
	}
	return out, nil
}

func firstDuplicate(xs []string) string {
	seen := map[string]bool{}
	for _, x := range xs {
		if seen[x] {
			return x
		}
		seen[x] = true
	}
	return ""
}

func parseHostnames(v string) ([]string, error) {
	items, err := parseList(v)
	if err != nil {
		return nil, fmt.Errorf("is not a host name list (allowed: fully qualified names separated by commas, e.g. app.gslb.example.com)")
	}
	var out []string
	for _, h := range items {
		if _, ok := dns.IsDomainName(h); !ok || !hostChars(h) || strings.Count(strings.Trim(h, "."), ".") < 1 {
			return nil, fmt.Errorf("has %q, which is not a host name (allowed: fully qualified names such as app.gslb.example.com: letters, digits, hyphens, underscores and dots, no wildcards)", h)
		}
		out = append(out, model.CanonicalName(h))
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// hostChars reports whether h has only the characters of a host name. It
// keeps out wildcards, escapes, blanks and non-ASCII bytes (which lower
// casing would turn into longer, invalid labels).
func hostChars(h string) bool {
	for i := 0; i < len(h); i++ {
		switch c := h[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.':
		default:
			return false
		}
	}
	return true
}

func parseTTL(v string) (int, error) {
	v = strings.TrimSpace(v)
	n, err := strconv.Atoi(v)
	if err != nil {
		d, derr := time.ParseDuration(v)
		if derr != nil || d%time.Second != 0 {
			return 0, fmt.Errorf("is not a TTL (allowed: whole seconds 1..%d, or a duration such as 30s or 5m)", model.MaxTTL)
		}
		n = int(d / time.Second)
	}
	if n < 1 || n > model.MaxTTL {
		return 0, fmt.Errorf("is out of range (allowed: 1..%d seconds)", model.MaxTTL)
	}
	return n, nil
}

// ParseHealthCheck reads meridian.io/health-check: KIND[:PORT][/PATH], e.g.
// http:8080/healthz, https:443/, tcp:443, dns:53, none. A path only goes
// with http and https; tcp needs a port.
func ParseHealthCheck(v string) (*model.Check, error) {
	const allowed = "(allowed: none, http[:PORT][/PATH], https[:PORT][/PATH], tcp:PORT, dns[:PORT]; e.g. http:8080/healthz)"
	v = strings.TrimSpace(v)
	spec, path := v, ""
	if i := strings.IndexByte(v, '/'); i >= 0 {
		spec, path = v[:i], v[i:]
	}
	kind, port := spec, ""
	if i := strings.IndexByte(spec, ':'); i >= 0 {
		kind, port = spec[:i], spec[i+1:]
	}
	if !slices.Contains(model.CheckKinds, kind) {
		return nil, fmt.Errorf("has kind %q %s", kind, allowed)
	}
	c := &model.Check{Kind: kind}
	if kind == model.CheckNone {
		if port != "" || path != "" {
			return nil, fmt.Errorf("none takes no port or path %s", allowed)
		}
		return c, nil
	}
	if port != "" {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("has port %q, not 1..65535 %s", port, allowed)
		}
		c.Port = p
	} else if kind == model.CheckTCP {
		return nil, fmt.Errorf("tcp needs a port %s", allowed)
	}
	if path != "" {
		if kind != model.CheckHTTP && kind != model.CheckHTTPS {
			return nil, fmt.Errorf("a path only goes with http and https %s", allowed)
		}
		c.Path = path
	}
	return c, nil
}

// parseGeo reads meridian.io/geo: a comma-separated list of places. A
// continent code (AF AN AS EU NA OC SA) is a continent, another two
// upper-case letters a country, anything else a region; prefix with
// region:, country: or continent: to say which explicitly.
func parseGeo(v string) (*GeoPlaces, error) {
	items, err := parseList(v)
	if err != nil {
		return nil, fmt.Errorf("is not a place list (allowed: regions, ISO country codes and continent codes separated by commas, e.g. eu-west,DE,EU)")
	}
	g := &GeoPlaces{}
	for _, it := range items {
		kind, val, explicit := strings.Cut(it, ":")
		if !explicit {
			val = it
			switch {
			case slices.Contains(model.Continents, it):
				kind = "continent"
			case isCountryCode(it):
				kind = "country"
			default:
				kind = "region"
			}
		}
		switch kind {
		case "continent":
			if !slices.Contains(model.Continents, val) {
				return nil, fmt.Errorf("has continent %q (allowed: %s)", val, strings.Join(model.Continents, " "))
			}
			g.Continents = append(g.Continents, val)
		case "country":
			if !isCountryCode(val) {
				return nil, fmt.Errorf("has country %q (allowed: ISO 3166-1 alpha-2 codes such as DE)", val)
			}
			g.Countries = append(g.Countries, val)
		case "region":
			if val == "" {
				return nil, fmt.Errorf("has an empty region")
			}
			g.Regions = append(g.Regions, val)
		default:
			return nil, fmt.Errorf("has prefix %q (allowed: region:, country:, continent:)", kind)
		}
	}
	return g, nil
}

func isCountryCode(s string) bool {
	return len(s) == 2 && s[0] >= 'A' && s[0] <= 'Z' && s[1] >= 'A' && s[1] <= 'Z'
}
