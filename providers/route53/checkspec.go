package route53

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
)

// Route 53's limits on a health check (API reference, HealthCheckConfig).
const (
	maxResourcePath   = 255 // characters of ResourcePath
	maxSearchString   = 255 // characters of SearchString
	maxFQDN           = 255 // characters of FullyQualifiedDomainName
	maxChildChecks    = 256 // ChildHealthChecks of a CALCULATED check
	maxTagValue       = 256 // characters of a tag value
	maxCallerRef      = 64  // characters of a CallerReference
	fastInterval      = 10  // RequestInterval, seconds, for services probed every 10 s or more often
	standardInterval  = 30  // RequestInterval otherwise
	maxFailure        = 10  // FailureThreshold range 1..10
	calculatedAtLeast = 1   // HealthThreshold of our CALCULATED checks: healthy while one child is
)

// Tags on every health check Meridian creates.
const (
	tagOwner = "meridian-owner" // the installation's owner id
	tagZone  = "meridian-zone"  // the zone whose record sets use it (canonical name)
	tagName  = "Name"           // what it checks, for the console
)

// checkSpec is one health check Meridian wants: an endpoint check (HTTP,
// HTTPS, their _STR_MATCH forms, TCP) or a CALCULATED one over others.
type checkSpec struct {
	Type     types.HealthCheckType
	IP       string   // endpoint address; "" for a CNAME target
	FQDN     string   // Host header and SNI of an address check; the target of a CNAME check
	Port     int32    // endpoint checks
	Path     string   // HTTP(S) ResourcePath
	Search   string   // _STR_MATCH SearchString
	Interval int32    // RequestInterval: 10 or 30 (cannot change after creation)
	Failure  int32    // FailureThreshold 1..10 (updated in place)
	Children []string // CALCULATED: child check ids, sorted
	Name     string   // the Name tag
}

// key is the spec's identity: what cannot change without another check.
// FailureThreshold is left out (it is updated in place).
func (s checkSpec) key() string {
	if s.Type == types.HealthCheckTypeCalculated {
		return "CALCULATED " + strings.Join(s.Children, ",")
	}
	return fmt.Sprintf("%s ip=%s fqdn=%s port=%d path=%s search=%q every=%d", s.Type, s.IP, s.FQDN, s.Port, s.Path, s.Search, s.Interval)
}

// hash is the key's digest as it appears in the CallerReference.
func (s checkSpec) hash() string { return digest(s.key())[:32] }

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// refPrefix is the start of the CallerReference of every check of owner in
// zone: "meridian-" and 12 hex digits of owner and zone. The whole
// reference is refPrefix + spec hash + "-" + generation: deterministic, so
// a create repeated after a lost answer or a restart gets the check already
// made instead of a second one; the generation moves on only when Route 53
// answers HealthCheckAlreadyExists (a reference once used by a deleted check
// is never accepted again).
func refPrefix(owner, zone string) string {
	return "meridian-" + digest(owner + "|" + canonicalName(zone))[:12] + "-"
}

// callerRef is the CallerReference of spec's check, generation gen.
func callerRef(prefix string, s checkSpec, gen int) string {
	return prefix + s.hash() + "-" + strconv.Itoa(gen)
}

// parseRef splits one of our CallerReferences into spec hash and
// generation; ok is false for references of anyone else.
func parseRef(prefix, ref string) (hash string, gen int, ok bool) {
	rest, found := strings.CutPrefix(ref, prefix)
	if !found {
		return "", 0, false
	}
	hash, g, found := strings.Cut(rest, "-")
	if !found || len(hash) != 32 {
		return "", 0, false
	}
	gen, err := strconv.Atoi(g)
	if err != nil || gen < 0 {
		return "", 0, false
	}
	return hash, gen, true
}

// endpointCheck is the check of endpoint e of service v from the service's
// health_check: kind http → HTTP (HTTP_STR_MATCH with body_contains), https
// → HTTPS (HTTPS_STR_MATCH), tcp → TCP. An address endpoint is checked at
// its address with the health_check's host as Host header and SNI; a CNAME
// endpoint at its target, which Route 53 resolves and sends as Host. The
// reason says why there is none (dns and none have no Route 53 equivalent;
// values beyond Route 53's limits). Pure.
func endpointCheck(v providers.ServiceView, e providers.EndpointView) (spec checkSpec, reason string) {
	c := v.HealthCheck
	if c == nil || c.Kind == "" || c.Kind == model.CheckNone {
		return checkSpec{}, "the service has no health_check"
	}
	s := checkSpec{Port: int32(c.Port), Interval: standardInterval, Failure: int32(min(max(c.Fall, 1), maxFailure))}
	if c.Interval.D() > 0 && c.Interval.D() <= fastInterval*time.Second {
		s.Interval = fastInterval
	}
	switch c.Kind {
	case model.CheckHTTP, model.CheckHTTPS:
		if reason := outsidePassing(c.ExpectStatus); reason != "" {
			return checkSpec{}, reason
		}
		s.Type, s.Path, s.Search = types.HealthCheckTypeHttp, c.Path, c.BodyContains
		if c.Kind == model.CheckHTTPS {
			s.Type = types.HealthCheckTypeHttps
		}
		if s.Search != "" {
			s.Type += "_STR_MATCH"
		}
		if s.Path == "" {
			s.Path = model.DefaultHTTPPath
		}
		s.FQDN = strings.TrimSuffix(strings.ToLower(c.Host), ".")
	case model.CheckTCP:
		s.Type = types.HealthCheckTypeTcp
	default:
		return checkSpec{}, fmt.Sprintf("health_check kind %s has no Route 53 equivalent (http, https and tcp have)", c.Kind)
	}
	switch e.Type {
	case "CNAME":
		s.FQDN = strings.TrimSuffix(e.Target, ".")
	default:
		a, err := netip.ParseAddr(e.Target)
		if err != nil {
			return checkSpec{}, fmt.Sprintf("endpoint %q is not an address", e.Target)
		}
		s.IP = a.Unmap().String()
	}
	switch {
	case s.Port < 1 || s.Port > 65535:
		return checkSpec{}, fmt.Sprintf("port %d is out of range 1..65535", s.Port)
	case len(s.Path) > maxResourcePath:
		return checkSpec{}, fmt.Sprintf("path is longer than Route 53's %d characters", maxResourcePath)
	case len(s.Search) > maxSearchString:
		return checkSpec{}, fmt.Sprintf("body_contains is longer than Route 53's %d characters", maxSearchString)
	case len(s.FQDN) > maxFQDN:
		return checkSpec{}, fmt.Sprintf("host %q is longer than Route 53's %d characters", s.FQDN, maxFQDN)
	}
	target := s.IP
	if target == "" {
		target = s.FQDN
	}
	s.Name = fmt.Sprintf("meridian %s %s port %d%s", strings.ToLower(string(s.Type)), target, s.Port, s.Path)
	return s, ""
}

// Route 53 HTTP(S) checks pass on these status codes and no others.
const (
	passingFrom = 200
	passingTo   = 399
)

// outsidePassing says why a service whose expect_status accepts a code
// Route 53's HTTP(S) checks fail on (outside 200..399: 401 for a login
// page, 404 for a catch-all) gets no check: Route 53 would take out an
// endpoint Meridian counts healthy, on every node's outage and while
// Meridian runs ("" when every accepted code is in 200..399; empty
// expect_status is the default 200-399). A check narrower than 200-399 is
// kept: Route 53 is only more lenient there. Pure.
func outsidePassing(expect []string) string {
	for _, st := range expect {
		lo, hi, ok := model.ParseStatusRange(st)
		if !ok {
			return fmt.Sprintf("expect_status %q is not a status code or range", st)
		}
		if lo < passingFrom || hi > passingTo {
			return fmt.Sprintf("expect_status %s accepts codes outside 200-399, on which Route 53's HTTP(S) checks fail", st)
		}
	}
	return ""
}

// calculatedCheck is the CALCULATED check of a record set holding several
// endpoints: healthy while at least one child is (HealthThreshold 1).
// targets name them in the Name tag.
func calculatedCheck(children, targets []string) checkSpec {
	children = slices.Clone(children)
	slices.Sort(children)
	children = slices.Compact(children)
	name := "meridian any of " + strings.Join(targets, " ")
	if len(name) > maxTagValue {
		name = name[:maxTagValue-3] + "..."
	}
	return checkSpec{Type: types.HealthCheckTypeCalculated, Children: children, Name: name}
}

// config is the HealthCheckConfig that creates s.
func (s checkSpec) config() *types.HealthCheckConfig {
	if s.Type == types.HealthCheckTypeCalculated {
		return &types.HealthCheckConfig{Type: s.Type, ChildHealthChecks: s.Children, HealthThreshold: aws.Int32(calculatedAtLeast)}
	}
	c := &types.HealthCheckConfig{
		Type: s.Type, Port: aws.Int32(s.Port), RequestInterval: aws.Int32(s.Interval), FailureThreshold: aws.Int32(s.Failure),
		IPAddress: nonEmpty(s.IP), FullyQualifiedDomainName: nonEmpty(s.FQDN), ResourcePath: nonEmpty(s.Path), SearchString: nonEmpty(s.Search),
	}
	if s.Type == types.HealthCheckTypeHttps || s.Type == types.HealthCheckTypeHttpsStrMatch {
		c.EnableSNI = aws.Bool(s.FQDN != "")
	}
	return c
}

// drift lists what differs between a live check's config and s among what
// UpdateHealthCheck can change (empty: nothing); Disabled and Inverted are
// drift too: a disabled check counts as healthy, an inverted one upside
// down, and either would void the backstop.
func (s checkSpec) drift(live *types.HealthCheckConfig) []string {
	if live == nil {
		return []string{"config"}
	}
	var out []string
	diff := func(what string, differs bool) {
		if differs {
			out = append(out, what)
		}
	}
	diff("disabled", aws.ToBool(live.Disabled))
	diff("inverted", aws.ToBool(live.Inverted))
	if s.Type == types.HealthCheckTypeCalculated {
		kids := slices.Clone(live.ChildHealthChecks)
		slices.Sort(kids)
		diff("children", !slices.Equal(kids, s.Children))
		diff("health threshold", aws.ToInt32(live.HealthThreshold) != calculatedAtLeast)
		return out
	}
	diff("failure threshold", aws.ToInt32(live.FailureThreshold) != s.Failure)
	diff("port", aws.ToInt32(live.Port) != s.Port)
	diff("ip address", aws.ToString(live.IPAddress) != s.IP)
	diff("domain name", !strings.EqualFold(strings.TrimSuffix(aws.ToString(live.FullyQualifiedDomainName), "."), s.FQDN))
	diff("path", aws.ToString(live.ResourcePath) != s.Path)
	diff("search string", aws.ToString(live.SearchString) != s.Search)
	return out
}
