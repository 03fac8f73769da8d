package extdns

import (
	"cmp"
	"slices"
	"strings"
)

// MediaType is the webhook API's media type (Content-Type and Accept).
const MediaType = "application/external.dns.webhook+json;version=1"

// Meridian's provider-specific properties: ExternalDNS maps the annotation
// external-dns.kubernetes.io/webhook-<key> (the prefix of --annotation-prefix)
// to webhook/<key>.
const (
	PropWeight      = "webhook/meridian-weight"       // 0..1000: the weight of each target of the record
	PropHealthCheck = "webhook/meridian-health-check" // like meridian.io/health-check: http:8080/healthz, tcp:443, none
)

// LabelResource is ExternalDNS's label naming the object a record comes
// from: kind/namespace/name (service/team-a/web, ingress/team-a/web,
// crd/team-a/web), or kind/name for a cluster-scoped object (node/n1).
const LabelResource = "resource"

// Record types the webhook accepts.
const (
	TypeA     = "A"
	TypeAAAA  = "AAAA"
	TypeCNAME = "CNAME"
	TypeTXT   = "TXT"
)

// Endpoint is ExternalDNS's endpoint.Endpoint as the webhook API carries it
// (sigs.k8s.io/external-dns/endpoint, JSON).
type Endpoint struct {
	DNSName          string            `json:"dnsName,omitempty"`
	Targets          []string          `json:"targets,omitempty"`
	RecordType       string            `json:"recordType,omitempty"`
	SetIdentifier    string            `json:"setIdentifier,omitempty"`
	RecordTTL        int64             `json:"recordTTL,omitempty"`
	Labels           map[string]string `json:"labels,omitempty"`
	ProviderSpecific []Property        `json:"providerSpecific,omitempty"`
}

// Property is one provider-specific property of an Endpoint.
type Property struct {
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
}

// Changes is the body of POST /records (ExternalDNS's plan.Changes).
type Changes struct {
	Create    []*Endpoint `json:"create,omitempty"`
	UpdateOld []*Endpoint `json:"updateOld,omitempty"`
	UpdateNew []*Endpoint `json:"updateNew,omitempty"`
	Delete    []*Endpoint `json:"delete,omitempty"`
}

// Len is the number of records the changes name.
func (c *Changes) Len() int {
	return len(c.Create) + len(c.UpdateOld) + len(c.UpdateNew) + len(c.Delete)
}

// Key identifies a record of one cluster: ExternalDNS's name, type and
// set identifier.
type Key struct {
	Name, Type, SetIdentifier string
}

// Key is e's key (e normalized).
func (e *Endpoint) Key() Key {
	return Key{Name: e.DNSName, Type: e.RecordType, SetIdentifier: e.SetIdentifier}
}

// Namespace is the namespace of the object e comes from, read from its
// resource label ("": none, or a cluster-scoped object).
func (e *Endpoint) Namespace() string {
	parts := strings.Split(e.Labels[LabelResource], "/")
	if len(parts) != 3 {
		return ""
	}
	return parts[1]
}

// Prop is the value of the provider-specific property name ("" when unset).
func (e *Endpoint) Prop(name string) string {
	for _, p := range e.ProviderSpecific {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

// size is what e weighs against Limits.MaxBytes: its strings' bytes.
func (e *Endpoint) size() int {
	n := len(e.DNSName) + len(e.RecordType) + len(e.SetIdentifier)
	for _, t := range e.Targets {
		n += len(t)
	}
	for k, v := range e.Labels {
		n += len(k) + len(v)
	}
	for _, p := range e.ProviderSpecific {
		n += len(p.Name) + len(p.Value)
	}
	return n
}

// clone is a deep copy of e.
func (e *Endpoint) clone() *Endpoint {
	c := *e
	c.Targets = slices.Clone(e.Targets)
	c.ProviderSpecific = slices.Clone(e.ProviderSpecific)
	if e.Labels != nil {
		c.Labels = make(map[string]string, len(e.Labels))
		for k, v := range e.Labels {
			c.Labels[k] = v
		}
	}
	return &c
}

// sortEndpoints orders records by key, the order GET /records gives.
func sortEndpoints(eps []*Endpoint) {
	slices.SortFunc(eps, func(a, b *Endpoint) int {
		return cmp.Or(strings.Compare(a.DNSName, b.DNSName), strings.Compare(a.RecordType, b.RecordType),
			strings.Compare(a.SetIdentifier, b.SetIdentifier))
	})
}
