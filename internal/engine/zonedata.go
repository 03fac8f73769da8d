package engine

import (
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// ZoneData is a static view of one zone as the snapshot would answer it
// now, for zone transfers to secondaries (internal/xfr).
//
// A secondary serves fixed records, so the view is the decided healthy set:
//   - the SOA, the apex NS records and the glue of in-zone nameservers;
//   - for every A/AAAA service, the records of every endpoint it could
//     answer with now: for weighted, round-robin, geo and latency services
//     every endpoint some client gets now (the union over all geo or RTT
//     buckets), for
//     failover services the endpoints of the active group. When every
//     endpoint is down the fail-open records (with the fail-open TTL) are
//     listed, or nothing with when_all_down: nodata;
//   - for a CNAME service one CNAME: the highest-weight available target
//     (a name has at most one CNAME).
//
// Weights, geo steering and max_answers need Meridian itself (or a
// provider): a secondary answers every listed record to every client. What
// secondaries add is reach and redundancy, and they follow every failover
// within one NOTIFY round.
type ZoneData struct {
	Apex    string
	SOA     *dns.SOA // copy; its serial is the snapshot's
	Records []dns.RR // copies, sorted, without the SOA
}

// ZoneData returns the static view of the zone with the canonical apex, or
// false when the snapshot has no such zone. The records are copies the
// caller may keep and modify.
func (s *Snapshot) ZoneData(apex string) (ZoneData, bool) {
	z, ok := s.zones[apex]
	if !ok {
		return ZoneData{}, false
	}
	zd := ZoneData{Apex: z.apex, SOA: dns.Copy(z.soa).(*dns.SOA)}
	seen := map[string]bool{}
	add := func(rr dns.RR) {
		k := rr.String()
		if seen[k] {
			return
		}
		seen[k] = true
		zd.Records = append(zd.Records, dns.Copy(rr))
	}
	for _, rr := range z.ns {
		add(rr)
	}
	for _, n := range z.names.all {
		for _, rr := range n.a {
			add(rr)
		}
		for _, rr := range n.aaaa {
			add(rr)
		}
		svc := n.svc
		if svc == nil {
			continue
		}
		if svc.cname {
			if rr := bestOf(svc.cn); rr != nil {
				add(rr)
			}
			continue
		}
		for _, pools := range [][]*pool{svc.v4, svc.v6} {
			for _, p := range pools {
				if p == nil {
					continue
				}
				for _, rr := range p.rrs {
					add(rr)
				}
			}
		}
	}
	slices.SortFunc(zd.Records, compareRR)
	return zd, true
}

// bestOf returns the CNAME a static view lists: from the default (first)
// pool, the first record of the highest weight.
func bestOf(pools []*pool) dns.RR {
	if len(pools) == 0 || pools[0] == nil || len(pools[0].rrs) == 0 {
		return nil
	}
	p := pools[0]
	best := 0
	for i, w := range p.weights {
		if w > p.weights[best] {
			best = i
		}
	}
	return p.rrs[best]
}

// compareRR orders records by owner name, type, then presentation form.
func compareRR(a, b dns.RR) int {
	ha, hb := a.Header(), b.Header()
	if c := strings.Compare(ha.Name, hb.Name); c != 0 {
		return c
	}
	if ha.Rrtype != hb.Rrtype {
		if ha.Rrtype < hb.Rrtype {
			return -1
		}
		return 1
	}
	return strings.Compare(a.String(), b.String())
}
