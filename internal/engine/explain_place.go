package engine

import (
	"strings"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/geo"
)

// ExplainPlace is Explain for a client located at loc (no address): what
// a geo or latency service answers there. Used by what-if reports, which
// name places rather than clients.
func (s *Snapshot) ExplainPlace(qname string, qtype uint16, loc geo.Location) Explanation {
	qname = dns.Fqdn(strings.ToLower(qname))
	x := &explainer{s: s, loc: loc, located: true}
	e := x.step(qname, qtype, 0)
	e.Client = &ExplainClient{Source: "none", Located: true, Region: loc.Region, Country: loc.Country, Continent: loc.Continent, UsedForAnswer: x.geoUsed}
	return e
}
