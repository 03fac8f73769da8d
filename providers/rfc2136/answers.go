package rfc2136

import (
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// Translate maps the services inside zone to the records of a direct-mode
// zone (providers.rfc2136[].mode: direct): per service and record type (A,
// AAAA, CNAME) one plain RRset with the service's TTL. A plain name server
// has no weighted, failover or geolocation records, so the RRset holds the
// decided answer set, the targets that receive traffic now:
//
//   - weighted, roundrobin, latency: every endpoint with an effective
//     weight (available; weight-0 standbys only when no weighted endpoint
//     is); the weights themselves cannot be written, resolvers rotate
//     through the set evenly;
//   - failover: the available endpoints of the first failover group that
//     has one;
//   - geo: the endpoints of the geo.default clusters (a plain server does
//     not know where the client is);
//   - nothing available (fail-open): the endpoints Meridian itself answers
//     with then;
//   - a CNAME service: one CNAME to its highest-weighted available target.
//
// Each decision that changes the set changes the RRset on the next pass.
// These are the plain records of providers.PlainRecords, which Cloudflare's
// plain records share: one translation for every provider that holds plain
// records. Pure; sorted by name and type.
func Translate(views []providers.ServiceView, zone string) []plan.Record {
	return providers.PlainRecords(views, zone)
}
