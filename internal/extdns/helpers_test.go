package extdns

import (
	"github.com/meridian-gslb/meridian/internal/model"
)

// desired is two clusters and the zone gslb.example.com (ttl 30).
func desired() *model.Desired {
	return &model.Desired{
		Zones:    []model.Zone{{Apex: "gslb.example.com.", TTL: 30}, {Apex: "sub.gslb.example.com.", TTL: 60}},
		Clusters: []model.Cluster{{Name: "east"}, {Name: "west"}},
	}
}

func rules() *Rules {
	return NewRules(desired(), Limits{MaxRecords: 4, MaxTargets: 3, MaxTargetBytes: 64, MaxLabels: 2}, parseCheck)
}

// parseCheck reads "tcp:PORT" and "none" (kube.ParseHealthCheck in the app).
func parseCheck(v string) (*model.Check, error) {
	switch v {
	case "none":
		return &model.Check{Kind: model.CheckNone}, nil
	case "tcp:443":
		return &model.Check{Kind: model.CheckTCP, Port: 443}, nil
	}
	return nil, errBadCheck
}

type checkError string

func (e checkError) Error() string { return string(e) }

const errBadCheck = checkError("has kind \"bogus\"")

func ep(name, typ string, targets ...string) *Endpoint {
	return &Endpoint{DNSName: name, RecordType: typ, Targets: targets}
}

func withProp(e *Endpoint, name, value string) *Endpoint {
	e.ProviderSpecific = append(e.ProviderSpecific, Property{Name: name, Value: value})
	return e
}

func withTTL(e *Endpoint, ttl int64) *Endpoint {
	e.RecordTTL = ttl
	return e
}

func intp(v int) *int { return &v }
