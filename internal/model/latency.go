package model

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// StrategyLatency answers each client with the healthy endpoints whose
// round-trip time from the client's prober region is within a tolerance of
// the best one, drawn by weight among them (docs/dns.md, internal/latency).
const StrategyLatency = "latency"

// Defaults and bounds of the latency strategy.
const (
	DefaultLatencyTolerance = 20.0  // percent above the best RTT
	MaxLatencyTolerance     = 500.0 // percent
)

// Percent is a percentage written "20%" (or a bare number, 20) in the config.
type Percent float64

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *Percent) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "%")), 64)
	if err != nil || v != v { // NaN
		return &ValueError{Value: string(b), Msg: fmt.Sprintf("%q is not a percentage (write it like 20%%)", string(b))}
	}
	*p = Percent(v)
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (p Percent) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

func (p Percent) String() string { return strconv.FormatFloat(float64(p), 'f', -1, 64) + "%" }

// Fraction returns p as a fraction (20% → 0.2).
func (p Percent) Fraction() float64 { return float64(p) / 100 }

// LatencyPolicy tunes a latency service.
type LatencyPolicy struct {
	// Tolerance is how far above the best RTT from the client's region an
	// endpoint may be and still answer, e.g. 20% (default 20%; 0%..500%).
	Tolerance *Percent `yaml:"tolerance"`
	// Regions map clients that geo.networks does not place in a prober
	// region to one, by country or continent (checked in order; the first
	// match wins). Clients placed nowhere are answered by the median RTT
	// over every region.
	Regions []LatencyRegion `yaml:"regions"`
}

// LatencyRegion sends the clients of some countries or continents to the
// RTTs measured from one prober region.
type LatencyRegion struct {
	Region     string   `yaml:"region"`     // a prober region (ring.region of a node, or a ring.peers region) (required)
	Countries  []string `yaml:"countries"`  // ISO 3166-1 alpha-2 codes
	Continents []string `yaml:"continents"` // continent codes
}

// ToleranceOr returns the policy's tolerance as a fraction, or the default.
func (p *LatencyPolicy) ToleranceOr() float64 {
	if p == nil || p.Tolerance == nil {
		return DefaultLatencyTolerance / 100
	}
	return p.Tolerance.Fraction()
}

// ProberRegions lists the regions probers measure from as the config
// knows them: ring.region and the regions of ring.peers probers, sorted.
// Empty when the config names none (no ring).
func (d *Desired) ProberRegions() []string {
	var out []string
	if d.Ring.Region != "" {
		out = append(out, d.Ring.Region)
	}
	for _, p := range d.Ring.Peers {
		if p.Role == PeerProber && p.Region != "" {
			out = append(out, p.Region)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// latency checks a latency service: probes are what measure RTT, so the
// service needs a health check; the policy's regions must be prober regions
// when the config lists any.
func (v *validator) latency(p string, s *Service, proberRegions []string) {
	if s.HealthCheck == nil || s.HealthCheck.Kind == "" || s.HealthCheck.Kind == CheckNone {
		v.add(p+".health_check", "is required with strategy latency: RTTs come from the probes (kind http, https, tcp or dns)")
	}
	lp := s.Latency
	if lp == nil {
		return
	}
	if t := lp.Tolerance; t != nil && (*t < 0 || *t > MaxLatencyTolerance) {
		v.add(p+".latency.tolerance", "%s is out of range (allowed 0%%..%v%%: how far above the best RTT an endpoint may be)", *t, MaxLatencyTolerance)
	}
	known := func() string {
		if len(proberRegions) == 0 {
			return ""
		}
		return " (prober regions: " + strings.Join(proberRegions, ", ") + ")"
	}
	for i, r := range lp.Regions {
		rp := fmt.Sprintf("%s.latency.regions[%d]", p, i)
		switch {
		case r.Region == "":
			v.add(rp+".region", "is required: the prober region whose RTTs these clients get%s", known())
		case len(proberRegions) > 0 && !slices.Contains(proberRegions, r.Region):
			v.add(rp+".region", "%q is not a prober region%s", r.Region, known())
		}
		if len(r.Countries)+len(r.Continents) == 0 {
			v.add(rp, "needs at least one of countries, continents")
		}
		for k, c := range r.Countries {
			v.checkCountry(fmt.Sprintf("%s.countries[%d]", rp, k), c)
		}
		for k, c := range r.Continents {
			v.checkOneOf(fmt.Sprintf("%s.continents[%d]", rp, k), c, Continents)
		}
	}
}

// AWSRegions are the region codes Route 53 latency records accept
// (ResourceRecordSet.Region).
var AWSRegions = []string{
	"af-south-1", "ap-east-1", "ap-east-2", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1", "ap-south-2",
	"ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4", "ap-southeast-5", "ap-southeast-6", "ap-southeast-7",
	"ca-central-1", "ca-west-1", "cn-north-1", "cn-northwest-1", "eu-central-1", "eu-central-2", "eu-north-1", "eu-south-1",
	"eu-south-2", "eu-west-1", "eu-west-2", "eu-west-3", "eusc-de-east-1", "il-central-1", "me-central-1", "me-south-1",
	"mx-central-1", "sa-east-1", "us-east-1", "us-east-2", "us-gov-east-1", "us-gov-west-1", "us-west-1", "us-west-2",
}

// IsAWSRegion reports whether s is an AWS region code Route 53 latency
// records accept.
func IsAWSRegion(s string) bool {
	_, ok := slices.BinarySearch(AWSRegions, s)
	return ok
}

// AWSRegion is the AWS region of a cluster for Route 53 latency records:
// cloud_region, else region when that is an AWS region code, else "".
func (c Cluster) AWSRegion() string {
	if c.CloudRegion != "" {
		return c.CloudRegion
	}
	if IsAWSRegion(c.Region) {
		return c.Region
	}
	return ""
}

// cloudRegion checks clusters[].cloud_region.
func (v *validator) cloudRegion(p, r string) {
	if r != "" && !IsAWSRegion(r) {
		v.add(p, "%q is not an AWS region code (e.g. us-east-1, eu-west-1; allowed: %s)", r, strings.Join(AWSRegions, ", "))
	}
}

// route53Latency refuses a latency service inside a Route 53 zone (direct
// mode) when one of its endpoints' clusters names no AWS region: Route 53
// latency records need one per set.
func (v *validator) route53Latency(d *Desired) {
	clusters := map[string]Cluster{}
	for _, c := range d.Clusters {
		clusters[c.Name] = c
	}
	for zi, z := range d.Providers.Route53 {
		if z.Mode != "" && z.Mode != ModeDirect {
			continue
		}
		zone := CanonicalName(z.Zone)
		for si, s := range d.Services {
			if s.Strategy != StrategyLatency || !inZone(zone, CanonicalName(s.Name)) {
				continue
			}
			reported := map[string]bool{}
			for _, e := range s.Endpoints {
				c, ok := clusters[e.Cluster]
				if !ok || reported[c.Name] || c.AWSRegion() != "" {
					continue
				}
				reported[c.Name] = true
				v.add(fmt.Sprintf("services[%d].endpoints", si), "cluster %q names no AWS region, which Route 53 latency records need (providers.route53[%d], zone %s): set its cloud_region (e.g. us-east-1), or a region that is an AWS region code", c.Name, zi, zone)
			}
		}
	}
}

func inZone(zone, name string) bool {
	return zone != "" && (name == zone || strings.HasSuffix(name, "."+zone))
}

// latencyDefaults returns a copy of p with the default tolerance filled in.
func latencyDefaults(p *LatencyPolicy) *LatencyPolicy {
	out := &LatencyPolicy{}
	if p != nil {
		out.Regions = slices.Clone(p.Regions)
		out.Tolerance = p.Tolerance
	}
	if out.Tolerance == nil {
		t := Percent(DefaultLatencyTolerance)
		out.Tolerance = &t
	} else {
		t := *out.Tolerance
		out.Tolerance = &t
	}
	return out
}
