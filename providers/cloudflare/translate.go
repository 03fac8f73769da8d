package cloudflare

import (
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// Translate maps service views to plain Cloudflare DNS records (direct
// mode): the decided answer set of each service in zone
// (providers.PlainRecords). TTL is ttl when non-zero (1 = automatic), else
// the service's TTL; proxied records get TTL 1, as Cloudflare stores them.
// Proxied is set only when proxied is true. It is pure.
func Translate(views []providers.ServiceView, zone string, ttl int, proxied bool) []plan.Record {
	out := providers.PlainRecords(views, zone)
	for i := range out {
		r := &out[i]
		if ttl != 0 {
			r.TTL = uint32(ttl)
		}
		if proxied {
			r.TTL, r.Proxied = 1, ptr(true)
		}
		r.Normalize()
	}
	return out
}
