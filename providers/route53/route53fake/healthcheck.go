package route53fake

import (
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"time"

	smithytime "github.com/aws/smithy-go/time"

	"github.com/meridian-gslb/meridian/internal/model"
)

// HealthCheckConfig is a health check's configuration as Route 53 holds it,
// defaults applied: Port 80/443 for the HTTP/HTTPS types when none was
// given, RequestInterval 30, FailureThreshold 3.
type HealthCheckConfig struct {
	Type                     string // HTTP, HTTPS, HTTP_STR_MATCH, HTTPS_STR_MATCH or TCP (others only by PutHealthCheck)
	IPAddress                string
	Port                     int32
	ResourcePath             string
	FullyQualifiedDomainName string
	SearchString             string
	RequestInterval          int32
	FailureThreshold         int32
	MeasureLatency           bool
	Inverted                 bool
	Disabled                 bool
	EnableSNI                bool
	Regions                  []string
	HealthThreshold          int32    // CALCULATED checks, seeded by PutHealthCheck only
	ChildHealthChecks        []string // CALCULATED checks, seeded by PutHealthCheck only
}

// equal reports whether two configurations are the same settings (the
// test of CreateHealthCheck's CallerReference idempotency).
func (c HealthCheckConfig) equal(d HealthCheckConfig) bool {
	norm := func(c HealthCheckConfig) HealthCheckConfig {
		if len(c.Regions) == 0 {
			c.Regions = nil
		}
		if len(c.ChildHealthChecks) == 0 {
			c.ChildHealthChecks = nil
		}
		return c
	}
	return reflect.DeepEqual(norm(c), norm(d))
}

func (c HealthCheckConfig) clone() HealthCheckConfig {
	c.Regions, c.ChildHealthChecks = slices.Clone(c.Regions), slices.Clone(c.ChildHealthChecks)
	return c
}

// HealthCheck is a health check as HealthChecks reports it and
// PutHealthCheck seeds it.
type HealthCheck struct {
	ID              string
	CallerReference string
	Config          HealthCheckConfig
	Version         int64
	Tags            map[string]string
	Healthy         bool // the status Resolve uses (Disabled and Inverted applied); ignored by PutHealthCheck
}

// healthCheck is the fake's state of one health check.
type healthCheck struct {
	id, caller string
	cfg        HealthCheckConfig
	version    int64
	tags       map[string]string
	gen        int  // bumped on every update, so a probe of an older configuration is dropped
	up         bool // the endpoint's status as the checkers decided, before Disabled and Inverted
	streak     int  // consecutive probe results that disagree with up
	last       observation
}

// observation is the last probe result, as GetHealthCheckStatus reports it.
type observation struct {
	at     time.Time
	status string // "" until the first probe
}

// healthy is the status record sets see: a disabled check is healthy, and
// Inverted inverts (a disabled inverted check is unhealthy), as Route 53
// documents.
func (h *healthCheck) healthy() bool {
	up := h.up || h.cfg.Disabled
	return up != h.cfg.Inverted
}

func (h *healthCheck) export() HealthCheck {
	return HealthCheck{ID: h.id, CallerReference: h.caller, Config: h.cfg.clone(), Version: h.version, Tags: maps.Clone(h.tags), Healthy: h.healthy()}
}

// Health check limits and enumerations from the Route 53 API reference.
const (
	DefaultMaxHealthChecks = 200 // Route 53's default quota of health checks per account
	MaxTagsPerResource     = 10  // tags on one health check or hosted zone
	maxListHealthChecks    = 1000
)

var (
	healthCheckTypes = []string{"HTTP", "HTTPS", "HTTP_STR_MATCH", "HTTPS_STR_MATCH", "TCP", "CALCULATED", "CLOUDWATCH_METRIC", "RECOVERY_CONTROL"}
	checkerRegions   = []string{"us-east-1", "us-west-1", "us-west-2", "eu-west-1", "ap-southeast-1", "ap-southeast-2", "ap-northeast-1", "sa-east-1"}
	resettable       = []string{"FullyQualifiedDomainName", "Regions", "ResourcePath", "ChildHealthChecks"}
)

// isSpecial reports whether Route 53 refuses to check a ("local,
// private, non-routable, or multicast ranges": RFC 5735, RFC 6598,
// RFC 5156): the same ranges check-config refuses.
func isSpecial(a netip.Addr) bool {
	_, ok := model.NonPublic(a)
	return ok
}

// config turns a request's HealthCheckConfig into the stored one, defaults
// applied.
func (x xmlHealthCheckConfig) config() HealthCheckConfig {
	c := HealthCheckConfig{
		Type: x.Type, IPAddress: x.IPAddress, ResourcePath: deref(x.ResourcePath), FullyQualifiedDomainName: deref(x.FullyQualifiedDomainName),
		SearchString: deref(x.SearchString), RequestInterval: 30, FailureThreshold: 3,
		MeasureLatency: deref(x.MeasureLatency), Inverted: deref(x.Inverted), Disabled: deref(x.Disabled), EnableSNI: deref(x.EnableSNI),
		HealthThreshold: deref(x.HealthThreshold),
	}
	if x.Port != nil {
		c.Port = *x.Port
	} else {
		c.Port = defaultPort(c.Type)
	}
	if x.RequestInterval != nil {
		c.RequestInterval = *x.RequestInterval
	}
	if x.FailureThreshold != nil {
		c.FailureThreshold = *x.FailureThreshold
	}
	if x.Regions != nil {
		c.Regions = slices.Clone(x.Regions.Regions)
	}
	if x.ChildHealthChecks != nil {
		c.ChildHealthChecks = slices.Clone(x.ChildHealthChecks.IDs)
	}
	return c
}

func defaultPort(typ string) int32 {
	switch typ {
	case "HTTP", "HTTP_STR_MATCH":
		return 80
	case "HTTPS", "HTTPS_STR_MATCH":
		return 443
	}
	return 0
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func ptr[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

func (c HealthCheckConfig) toXML() xmlHealthCheckConfig {
	x := xmlHealthCheckConfig{
		IPAddress: c.IPAddress, Port: ptr(c.Port), Type: c.Type, ResourcePath: ptr(c.ResourcePath),
		FullyQualifiedDomainName: ptr(c.FullyQualifiedDomainName), SearchString: ptr(c.SearchString),
		RequestInterval: ptr(c.RequestInterval), FailureThreshold: ptr(c.FailureThreshold),
		MeasureLatency: &c.MeasureLatency, Inverted: &c.Inverted, Disabled: &c.Disabled, EnableSNI: &c.EnableSNI,
		HealthThreshold: ptr(c.HealthThreshold),
	}
	if len(c.Regions) > 0 {
		x.Regions = &xmlRegions{Regions: slices.Clone(c.Regions)}
	}
	if len(c.ChildHealthChecks) > 0 {
		x.ChildHealthChecks = &xmlChildren{IDs: slices.Clone(c.ChildHealthChecks)}
	}
	return x
}

func (h *healthCheck) toXML() xmlHealthCheck {
	return xmlHealthCheck{ID: h.id, CallerReference: h.caller, HealthCheckConfig: h.cfg.toXML(), HealthCheckVersion: h.version}
}

// constraints collects the violations of the API model's constraints the
// way Route 53 reports them ("2 validation errors detected: …; …").
type constraints []string

func (c *constraints) add(cond bool, value any, field, constraint string) {
	if cond {
		*c = append(*c, fmt.Sprintf("Value '%v' at '%s' failed to satisfy constraint: Member must %s", value, field, constraint))
	}
}

func (c constraints) err() *apiError {
	switch len(c) {
	case 0:
		return nil
	case 1:
		return invalidInput("1 validation error detected: %s", c[0])
	}
	return invalidInput("%d validation errors detected: %s", len(c), strings.Join(c, "; "))
}

// checkConfig validates a health check configuration as CreateHealthCheck
// and UpdateHealthCheck do. at is the field prefix of the messages.
func checkConfig(c HealthCheckConfig, at string, allowPrivate bool) *apiError {
	var m constraints
	m.add(!slices.Contains(healthCheckTypes, c.Type), c.Type, at+"type", "satisfy enum value set: ["+strings.Join(healthCheckTypes, ", ")+"]")
	m.add(len(c.IPAddress) > 45, c.IPAddress, at+"iPAddress", "have length less than or equal to 45")
	m.add(c.Port < 0 || c.Port > 65535, c.Port, at+"port", "have value between 1 and 65535")
	m.add(len(c.ResourcePath) > 255, c.ResourcePath, at+"resourcePath", "have length less than or equal to 255")
	m.add(len(c.FullyQualifiedDomainName) > 255, c.FullyQualifiedDomainName, at+"fullyQualifiedDomainName", "have length less than or equal to 255")
	m.add(len(c.SearchString) > 255, c.SearchString, at+"searchString", "have length less than or equal to 255")
	m.add(c.RequestInterval < 10 || c.RequestInterval > 30, c.RequestInterval, at+"requestInterval", "have value between 10 and 30")
	m.add(c.FailureThreshold < 1 || c.FailureThreshold > 10, c.FailureThreshold, at+"failureThreshold", "have value between 1 and 10")
	m.add(len(c.Regions) > 0 && len(c.Regions) < 3, c.Regions, at+"regions", "have length greater than or equal to 3")
	for _, r := range c.Regions {
		m.add(!slices.Contains(checkerRegions, r), r, at+"regions.member", "satisfy enum value set: ["+strings.Join(checkerRegions, ", ")+"]")
	}
	if err := m.err(); err != nil {
		return err
	}
	strMatch := strings.HasSuffix(c.Type, "_STR_MATCH")
	var ip netip.Addr
	if c.IPAddress != "" {
		var err error
		if ip, err = netip.ParseAddr(c.IPAddress); err != nil || ip.Zone() != "" {
			return invalidInput("Invalid parameter: IPAddress '%s' is not a valid IPv4 or IPv6 address", c.IPAddress)
		}
	}
	switch {
	case c.Type == "CALCULATED":
		return checkCalculated(c)
	case c.Type == "CLOUDWATCH_METRIC" || c.Type == "RECOVERY_CONTROL":
		return invalidInput("Invalid parameter: the fake does not create health checks of type %s (seed them with PutHealthCheck)", c.Type)
	case ip.IsValid() && !allowPrivate && isSpecial(ip.Unmap()):
		return invalidInput("Invalid parameter: IPAddress '%s' is in a local, private, non-routable, or multicast range, which Route 53 can't check (RFC 5735, RFC 6598, RFC 5156)", c.IPAddress)
	case c.IPAddress == "" && c.FullyQualifiedDomainName == "":
		return invalidInput("Invalid parameter: a health check of type %s needs an IPAddress or a FullyQualifiedDomainName", c.Type)
	case c.Port == 0:
		return invalidInput("Invalid parameter: a health check of type %s needs a Port", c.Type)
	case c.ResourcePath != "" && c.Type == "TCP":
		return invalidInput("Invalid parameter: ResourcePath is not valid for a health check of type TCP")
	case c.ResourcePath != "" && !strings.HasPrefix(c.ResourcePath, "/"):
		return invalidInput("Invalid parameter: ResourcePath '%s' must start with '/'", c.ResourcePath)
	case strMatch && c.SearchString == "":
		return invalidInput("Invalid parameter: a health check of type %s needs a SearchString", c.Type)
	case !strMatch && c.SearchString != "":
		return invalidInput("Invalid parameter: SearchString is only valid for the types HTTP_STR_MATCH and HTTPS_STR_MATCH, not %s", c.Type)
	case c.RequestInterval != 10 && c.RequestInterval != 30:
		return invalidInput("Invalid parameter: RequestInterval must be 10 or 30, not %d", c.RequestInterval)
	}
	return nil
}

func readXML(r *http.Request, v any) *apiError {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return invalidInput("unreadable body: %v", err)
	}
	if err := xml.Unmarshal(body, v); err != nil {
		return invalidInput("Could not parse the request: %v", err)
	}
	return nil
}

func noSuchHealthCheck(id string) *apiError {
	return &apiError{http.StatusNotFound, "NoSuchHealthCheck", "No health check exists with the specified ID " + id}
}

func (s *Server) createHealthCheck(r *http.Request, _ string) (any, *apiError) {
	var req xmlCreateHealthCheckRequest
	if err := readXML(r, &req); err != nil {
		return nil, err
	}
	var m constraints
	ref := deref(req.CallerReference)
	m.add(req.CallerReference == nil, "null", "callerReference", "not be null")
	m.add(req.CallerReference != nil && (len(ref) < 1 || len(ref) > 64), ref, "callerReference", "have length between 1 and 64")
	m.add(req.HealthCheckConfig == nil, "null", "healthCheckConfig", "not be null")
	if err := m.err(); err != nil {
		return nil, err
	}
	cfg := req.HealthCheckConfig.config()
	if req.HealthCheckConfig.AlarmIdentifier != nil || req.HealthCheckConfig.RoutingControlArn != "" {
		return nil, invalidInput("Invalid parameter: the fake does not support AlarmIdentifier or RoutingControlArn")
	}
	if err := checkConfig(cfg, "healthCheckConfig.", s.opts.AllowPrivateIPs); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.checks {
		if h.caller != ref {
			continue
		}
		if !h.cfg.equal(cfg) {
			return nil, healthCheckExists()
		}
		return created{xmlHealthCheckResponse{XMLName: response("CreateHealthCheck"), HealthCheck: h.toXML()}, s.URL() + "/2013-04-01/healthcheck/" + h.id}, nil
	}
	if s.deletedRefs[ref] {
		return nil, healthCheckExists()
	}
	if len(s.checks) >= s.maxHealthChecks() {
		return nil, &apiError{http.StatusBadRequest, "TooManyHealthChecks", fmt.Sprintf("This health check can't be created because the current account has reached the limit on the number of active health checks (%d).", s.maxHealthChecks())}
	}
	h := s.addCheck(ref, cfg)
	return created{xmlHealthCheckResponse{XMLName: response("CreateHealthCheck"), HealthCheck: h.toXML()}, s.URL() + "/2013-04-01/healthcheck/" + h.id}, nil
}

func healthCheckExists() *apiError {
	return &apiError{http.StatusConflict, "HealthCheckAlreadyExists", "A different health check has already been created with the specified caller reference."}
}

func (s *Server) maxHealthChecks() int {
	if s.opts.MaxHealthChecks > 0 {
		return s.opts.MaxHealthChecks
	}
	return DefaultMaxHealthChecks
}

// addCheck stores a new health check; a new check is healthy until its
// probes say otherwise. Called with s.mu held.
func (s *Server) addCheck(ref string, cfg HealthCheckConfig) *healthCheck {
	s.seq++
	h := &healthCheck{id: uuid(s.seq), caller: ref, cfg: cfg.clone(), version: 1, tags: map[string]string{}, up: true}
	s.checks[h.id] = h
	return h
}

func (s *Server) getHealthCheck(r *http.Request, _ string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.checks[r.PathValue("id")]
	if !ok {
		return nil, noSuchHealthCheck(r.PathValue("id"))
	}
	return xmlHealthCheckResponse{XMLName: response("GetHealthCheck"), HealthCheck: h.toXML()}, nil
}

func (s *Server) listHealthChecks(r *http.Request, _ string) (any, *apiError) {
	q := r.URL.Query()
	maxItems, aerr := maxItemsParam(q.Get("maxitems"), 100, maxListHealthChecks)
	if aerr != nil {
		return nil, aerr
	}
	marker := q.Get("marker")
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := slices.Sorted(maps.Keys(s.checks))
	i, _ := slices.BinarySearch(ids, marker)
	out := xmlListHealthChecksResponse{Marker: marker, MaxItems: maxItems, HealthChecks: []xmlHealthCheck{}}
	for ; i < len(ids); i++ {
		if len(out.HealthChecks) == maxItems {
			out.IsTruncated, out.NextMarker = true, ids[i]
			break
		}
		out.HealthChecks = append(out.HealthChecks, s.checks[ids[i]].toXML())
	}
	return out, nil
}

func (s *Server) updateHealthCheck(r *http.Request, _ string) (any, *apiError) {
	var req xmlUpdateHealthCheckRequest
	if err := readXML(r, &req); err != nil {
		return nil, err
	}
	if req.AlarmIdentifier != nil || req.InsufficientDataHealthStatus != "" {
		return nil, invalidInput("Invalid parameter: the fake does not support AlarmIdentifier or InsufficientDataHealthStatus")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.PathValue("id")
	h, ok := s.checks[id]
	if !ok {
		return nil, noSuchHealthCheck(id)
	}
	if req.HealthCheckVersion != nil && *req.HealthCheckVersion != h.version {
		return nil, &apiError{http.StatusConflict, "HealthCheckVersionMismatch",
			fmt.Sprintf("The value of HealthCheckVersion in the request (%d) doesn't match the value of HealthCheckVersion in the health check (%d).", *req.HealthCheckVersion, h.version)}
	}
	cfg, aerr := req.apply(h.cfg.clone())
	if aerr != nil {
		return nil, aerr
	}
	if err := checkConfig(cfg, "", s.opts.AllowPrivateIPs); err != nil {
		return nil, err
	}
	h.cfg, h.version, h.gen, h.streak = cfg, h.version+1, h.gen+1, 0
	return xmlHealthCheckResponse{XMLName: response("UpdateHealthCheck"), HealthCheck: h.toXML()}, nil
}

// apply merges an UpdateHealthCheck request into cfg.
func (req xmlUpdateHealthCheckRequest) apply(cfg HealthCheckConfig) (HealthCheckConfig, *apiError) {
	switch {
	case req.IPAddress != nil && *req.IPAddress != "" && cfg.IPAddress == "":
		return cfg, invalidInput("Invalid parameter: you can't update a health check to add an IPAddress; it was created without one")
	case req.IPAddress != nil && *req.IPAddress == "" && cfg.IPAddress != "":
		return cfg, invalidInput("Invalid parameter: you can't update a health check to remove its IPAddress")
	}
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&cfg.IPAddress, req.IPAddress)
	set(&cfg.ResourcePath, req.ResourcePath)
	set(&cfg.FullyQualifiedDomainName, req.FullyQualifiedDomainName)
	set(&cfg.SearchString, req.SearchString)
	for dst, v := range map[*int32]*int32{&cfg.Port: req.Port, &cfg.FailureThreshold: req.FailureThreshold, &cfg.HealthThreshold: req.HealthThreshold} {
		if v != nil {
			*dst = *v
		}
	}
	for dst, v := range map[*bool]*bool{&cfg.Inverted: req.Inverted, &cfg.Disabled: req.Disabled, &cfg.EnableSNI: req.EnableSNI} {
		if v != nil {
			*dst = *v
		}
	}
	if req.Regions != nil {
		cfg.Regions = slices.Clone(req.Regions.Regions)
	}
	if req.ChildHealthChecks != nil {
		cfg.ChildHealthChecks = slices.Clone(req.ChildHealthChecks.IDs)
	}
	if req.ResetElements != nil {
		for i, e := range req.ResetElements.Names {
			switch e {
			case "FullyQualifiedDomainName":
				if cfg.IPAddress == "" {
					return cfg, invalidInput("Invalid parameter: you can't reset the FullyQualifiedDomainName of a health check without an IPAddress")
				}
				cfg.FullyQualifiedDomainName = ""
			case "Regions":
				cfg.Regions = nil
			case "ResourcePath":
				cfg.ResourcePath = ""
			case "ChildHealthChecks":
				cfg.ChildHealthChecks = nil
			default:
				return cfg, invalidInput("1 validation error detected: Value '%s' at 'resetElements.%d.member' failed to satisfy constraint: Member must satisfy enum value set: [%s]", e, i+1, strings.Join(resettable, ", "))
			}
		}
	}
	return cfg, nil
}

func (s *Server) deleteHealthCheck(r *http.Request, _ string) (any, *apiError) {
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.checks[id]
	if !ok {
		return nil, noSuchHealthCheck(id)
	}
	if !s.opts.AllowDeleteInUse {
		if rs, used := s.healthCheckUser(id); used {
			return nil, &apiError{http.StatusBadRequest, "HealthCheckInUse",
				fmt.Sprintf("The health check %s is still referenced by the resource record set %s in hosted zone %s.", id, rs.describe(), rs.zone)}
		}
	}
	delete(s.checks, id)
	s.deletedRefs[h.caller] = true
	return xmlEmptyResponse{XMLName: response("DeleteHealthCheck")}, nil
}

type usedBy struct {
	RecordSet
	zone string
}

// healthCheckUser finds a record set that references health check id.
// Called with s.mu held.
func (s *Server) healthCheckUser(id string) (usedBy, bool) {
	for _, zid := range slices.Sorted(maps.Keys(s.zones)) {
		for _, rs := range s.zones[zid].sorted() {
			if rs.HealthCheckID == id {
				return usedBy{rs, zid}, true
			}
		}
	}
	return usedBy{}, false
}

func (s *Server) healthCheckStatus(r *http.Request, _ string) (any, *apiError) {
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.checks[id]
	if !ok {
		return nil, noSuchHealthCheck(id)
	}
	if h.cfg.Type == "CALCULATED" {
		return nil, invalidInput("Invalid parameter: GetHealthCheckStatus does not report CALCULATED health checks")
	}
	// The fake has one checker; it reports its last result for every
	// region the check runs in, the way Route 53's checkers each report
	// theirs.
	regions := h.cfg.Regions
	if len(regions) == 0 {
		regions = checkerRegions
	}
	status, at := h.last.status, h.last.at
	if status == "" {
		status = "Unknown: the health checkers have not checked this endpoint yet"
	}
	out := xmlHealthCheckStatusResponse{Observations: []xmlObservation{}}
	for _, region := range regions {
		var o xmlObservation
		o.Region, o.IPAddress = region, "127.0.0.1"
		o.StatusReport.Status = status
		if !at.IsZero() {
			o.StatusReport.CheckedTime = smithytime.FormatDateTime(at.UTC())
		}
		out.Observations = append(out.Observations, o)
	}
	return out, nil
}

// uuid is a deterministic, unique, random-looking UUID for sequence number
// n (splitmix64 is a bijection), the form of Route 53's health check and
// CIDR collection ids.
func uuid(n int) string {
	a, b := splitmix(uint64(n)), splitmix(uint64(n)^0x9e3779b97f4a7c15)
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", a>>32, (a>>16)&0xffff, a&0xfff, 0x8000|(b>>48)&0x3fff, b&0xffffffffffff)
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// HealthChecks returns every health check with its tags and status, by id.
func (s *Server) HealthChecks() []HealthCheck {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]HealthCheck, 0, len(s.checks))
	for _, id := range slices.Sorted(maps.Keys(s.checks)) {
		out = append(out, s.checks[id].export())
	}
	return out
}

// PutHealthCheck stores a health check as another tool would have created
// it, without Route 53's checks and regardless of MaxHealthChecks, and
// returns its id (hc.ID when set). The version defaults to 1 and the
// caller reference to a generated one; the check starts healthy.
func (s *Server) PutHealthCheck(hc HealthCheck) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if hc.CallerReference == "" {
		hc.CallerReference = fmt.Sprintf("foreign-%d", s.seq+1)
	}
	h := s.addCheck(hc.CallerReference, hc.Config)
	if hc.ID != "" {
		delete(s.checks, h.id)
		h.id = hc.ID
		s.checks[h.id] = h
	}
	if hc.Version > 0 {
		h.version = hc.Version
	}
	for k, v := range hc.Tags {
		h.tags[k] = v
	}
	return h.id
}
