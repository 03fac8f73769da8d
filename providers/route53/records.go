package route53

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/meridian-gslb/meridian/providers/plan"
)

// Records implements providers.Provider: every record set of the zone, in
// pages of 300 (Route 53's maximum). Alias record sets come back with their
// target and no values.
func (p *Provider) Records(ctx context.Context, zone string) ([]plan.Record, error) {
	zone = canonicalName(zone)
	id, err := p.zoneID(ctx, zone)
	if err != nil {
		return nil, err
	}
	var out []plan.Record
	live := map[plan.Key]types.ResourceRecordSet{}
	in := &r53.ListResourceRecordSetsInput{HostedZoneId: aws.String(id), MaxItems: aws.Int32(300)}
	for {
		var page *r53.ListResourceRecordSetsOutput
		err := p.call(ctx, opList, func(ctx context.Context) (err error) {
			page, err = p.api.ListResourceRecordSets(ctx, in)
			return answered(opList, page, err)
		})
		if err != nil {
			return nil, fmt.Errorf("route53 zone %s: list records: %w", zone, err)
		}
		for _, s := range page.ResourceRecordSets {
			r := fromSet(s)
			out = append(out, r)
			live[r.Key()] = s
		}
		if !page.IsTruncated {
			break
		}
		next := &r53.ListResourceRecordSetsInput{
			HostedZoneId: in.HostedZoneId, MaxItems: in.MaxItems,
			StartRecordName: page.NextRecordName, StartRecordType: page.NextRecordType, StartRecordIdentifier: page.NextRecordIdentifier,
		}
		if aws.ToString(next.StartRecordName) == aws.ToString(in.StartRecordName) && next.StartRecordType == in.StartRecordType &&
			aws.ToString(next.StartRecordIdentifier) == aws.ToString(in.StartRecordIdentifier) {
			return nil, fmt.Errorf("route53 zone %s: list records: the next page starts where this one did (%s %s)", zone, aws.ToString(next.StartRecordName), next.StartRecordType)
		}
		in = next
	}
	p.mu.Lock()
	p.live[zone] = live
	p.mu.Unlock()
	return out, nil
}

// liveSet is the set to DELETE for r: the set as Route 53 listed it when it
// still matches r (so fields plan.Record does not carry — multivalue
// flags, regions — match too), else r's own translation.
func (p *Provider) liveSet(zone string, r plan.Record) types.ResourceRecordSet {
	p.mu.Lock()
	s, ok := p.live[zone][r.Key()]
	p.mu.Unlock()
	if ok && fromSet(s).Equal(r) {
		return s
	}
	return toSet(r)
}

// fromSet converts a Route 53 record set: name unescaped, lower case, with
// the trailing dot; TXT and SPF values unquoted; values sorted.
func fromSet(s types.ResourceRecordSet) plan.Record {
	r := plan.Record{
		Name:     canonicalName(aws.ToString(s.Name)),
		Type:     string(s.Type),
		TTL:      uint32(aws.ToInt64(s.TTL)),
		SetID:    aws.ToString(s.SetIdentifier),
		Failover: string(s.Failover),
		Region:   string(s.Region),
	}
	for _, rr := range s.ResourceRecords {
		r.Values = append(r.Values, fromValue(r.Type, aws.ToString(rr.Value)))
	}
	if s.Weight != nil {
		w := *s.Weight
		r.Weight = &w
	}
	if g := s.GeoLocation; g != nil {
		r.Geo = &plan.GeoLocation{Continent: aws.ToString(g.ContinentCode), Country: aws.ToString(g.CountryCode), Subdivision: aws.ToString(g.SubdivisionCode)}
	}
	if c := s.CidrRoutingConfig; c != nil {
		r.CIDR = &plan.CIDRLocation{CollectionID: aws.ToString(c.CollectionId), Location: aws.ToString(c.LocationName)}
	}
	r.HealthCheckID = aws.ToString(s.HealthCheckId)
	if al := s.AliasTarget; al != nil {
		r.Alias = &plan.Alias{ZoneID: hostedZoneID(aws.ToString(al.HostedZoneId)), DNSName: canonicalName(aws.ToString(al.DNSName)), EvaluateTargetHealth: al.EvaluateTargetHealth}
	}
	r.Normalize()
	return r
}

// toSet converts a record to the Route 53 set that creates it. An alias
// set has no TTL and no records.
func toSet(r plan.Record) types.ResourceRecordSet {
	s := types.ResourceRecordSet{Name: aws.String(r.Name), Type: types.RRType(r.Type), TTL: aws.Int64(int64(r.TTL))}
	if al := r.Alias; al != nil {
		s.TTL = nil
		s.AliasTarget = &types.AliasTarget{HostedZoneId: aws.String(al.ZoneID), DNSName: aws.String(al.DNSName), EvaluateTargetHealth: al.EvaluateTargetHealth}
	}
	for _, v := range r.Values {
		s.ResourceRecords = append(s.ResourceRecords, types.ResourceRecord{Value: aws.String(toValue(r.Type, v))})
	}
	if r.SetID != "" {
		s.SetIdentifier = aws.String(r.SetID)
	}
	if r.Weight != nil {
		s.Weight = aws.Int64(*r.Weight)
	}
	if r.Failover != "" {
		s.Failover = types.ResourceRecordSetFailover(r.Failover)
	}
	if r.Region != "" {
		s.Region = types.ResourceRecordSetRegion(r.Region)
	}
	if g := r.Geo; g != nil {
		s.GeoLocation = &types.GeoLocation{ContinentCode: nonEmpty(g.Continent), CountryCode: nonEmpty(g.Country), SubdivisionCode: nonEmpty(g.Subdivision)}
	}
	if c := r.CIDR; c != nil {
		s.CidrRoutingConfig = &types.CidrRoutingConfig{CollectionId: aws.String(c.CollectionID), LocationName: aws.String(c.Location)}
	}
	s.HealthCheckId = nonEmpty(r.HealthCheckID)
	return s
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// canonicalName reads a name as Route 53 returns it: characters outside
// a-z, 0-9, - and _ come as \ + three octal digits (\052 is *); other
// backslash escapes stand for the next character. The result is lower case
// with a trailing dot.
func canonicalName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '\\' && i+1 < len(name) {
			if n, ok := octal(name[i+1:]); ok {
				b.WriteByte(n)
				i += 3
				continue
			}
			i++
			c = name[i]
		}
		b.WriteByte(c)
	}
	out := strings.ToLower(b.String())
	if !strings.HasSuffix(out, ".") {
		out += "."
	}
	return out
}

// octal reads three octal digits at the start of s.
func octal(s string) (byte, bool) {
	if len(s) < 3 {
		return 0, false
	}
	n, err := strconv.ParseUint(s[:3], 8, 8)
	if err != nil {
		return 0, false
	}
	return byte(n), true
}

// fromValue turns a Route 53 value into Meridian's form: TXT and SPF
// character-strings unquoted, unescaped and joined (a value longer than 255
// characters is several strings); DS values in plan.CanonicalDS form.
func fromValue(typ, v string) string {
	if typ == "DS" {
		if c, ok := plan.CanonicalDS(v); ok {
			return c // Route 53 keeps the digest's case as it was written
		}
		return v
	}
	if typ != "TXT" && typ != "SPF" || !strings.HasPrefix(v, `"`) {
		return v // unquoted TXT values are read as they are
	}
	var b strings.Builder
	for i := 0; i < len(v); {
		switch c := v[i]; {
		case c == ' ':
			i++
		case c == '"':
			for i++; i < len(v) && v[i] != '"'; i++ {
				if v[i] == '\\' && i+1 < len(v) {
					if n, ok := octal(v[i+1:]); ok {
						b.WriteByte(n)
						i += 3
						continue
					}
					i++
				}
				b.WriteByte(v[i])
			}
			i++ // closing quote
		default: // an unquoted string, up to the next space
			j := strings.IndexByte(v[i:], ' ')
			if j < 0 {
				j = len(v) - i
			}
			b.WriteString(v[i : i+j])
			i += j
		}
	}
	return b.String()
}

// toValue writes a value the way Route 53 wants it: TXT and SPF values as
// quoted character-strings of at most 255 bytes, with " and \ escaped and
// bytes outside printable ASCII as \DDD.
func toValue(typ, v string) string {
	if typ != "TXT" && typ != "SPF" {
		return v
	}
	var b strings.Builder
	for first := true; first || v != ""; first = false {
		chunk := v[:min(len(v), 255)]
		v = v[len(chunk):]
		if !first {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		for _, c := range []byte(chunk) {
			switch {
			case c == '"' || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c < 0x20 || c >= 0x7f:
				fmt.Fprintf(&b, "\\%03o", c)
			default:
				b.WriteByte(c)
			}
		}
		b.WriteByte('"')
	}
	return b.String()
}
