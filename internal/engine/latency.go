package engine

import (
	"slices"
	"time"

	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/latency"
	"github.com/meridian-gslb/meridian/internal/model"
)

// LatencyTable gives the RTTs latency services are compiled with: the
// latency view in effect (*latency.View implements it; nil: none yet).
type LatencyTable interface {
	Regions() []string                                          // prober regions with entries, sorted
	RTT(service, region, target string) (latency.Entry, bool)   // the RTT in effect from region to an endpoint
	Measured(service, target string) bool                       // some region has an RTT for the endpoint
	Each(f func(region string, k latency.Key, e latency.Entry)) // every entry (explain)
}

var _ LatencyTable = (*latency.View)(nil)

// latencyIndex maps a client location to a latency bucket of a service:
// bucket 0 answers by every region's median RTT, bucket i > 0 by the RTTs
// from regions[i] (the package doc of internal/latency, rule 6). Like the
// geo index it is read on the query path without allocating.
type latencyIndex struct {
	regions            []string       // bucket -> prober region ("" for bucket 0)
	region             map[string]int // a client's geo region equal to a prober region
	country, continent map[string]int // latency.regions entries (the first listing a place wins)
	tolerance          float64
	table              LatencyTable // the view the pools were compiled from (explain)
}

// newLatencyIndex builds the index of a latency service: one bucket per
// prober region that has RTTs, and the latency.regions entries that point
// at one of them.
func newLatencyIndex(ms *model.Service, lt LatencyTable) *latencyIndex {
	li := &latencyIndex{regions: []string{""}, region: map[string]int{}, country: map[string]int{}, continent: map[string]int{},
		tolerance: ms.Latency.ToleranceOr(), table: lt}
	if isNilTable(lt) {
		li.table = nil
		return li
	}
	for _, r := range lt.Regions() {
		li.region[r] = len(li.regions)
		li.regions = append(li.regions, r)
	}
	if ms.Latency != nil {
		for _, rule := range ms.Latency.Regions {
			b, ok := li.region[rule.Region]
			if !ok {
				continue // no RTTs from there yet: those clients get the median
			}
			for _, c := range rule.Countries {
				if _, set := li.country[c]; !set {
					li.country[c] = b
				}
			}
			for _, c := range rule.Continents {
				if _, set := li.continent[c]; !set {
					li.continent[c] = b
				}
			}
		}
	}
	return li
}

func isNilTable(lt LatencyTable) bool {
	if lt == nil {
		return true
	}
	v, ok := lt.(*latency.View)
	return ok && v == nil
}

// bucket returns the client's bucket (rule 6: its geo region when probers
// measure from there, then the latency.regions entries by country and
// continent, else the median bucket).
func (li *latencyIndex) bucket(loc geo.Location, found bool) int {
	b, _ := li.explainBucket(loc, found)
	return b
}

// How a client was mapped to its latency bucket.
const (
	latByRegion    = "region"    // geo.networks placed it in a prober region
	latByCountry   = "country"   // a latency.regions entry lists its country
	latByContinent = "continent" // a latency.regions entry lists its continent
	latByMedian    = "median"    // none of those: every region's median
)

func (li *latencyIndex) explainBucket(loc geo.Location, found bool) (int, string) {
	if found {
		if b, ok := li.region[loc.Region]; ok && loc.Region != "" {
			return b, latByRegion
		}
		if b, ok := li.country[loc.Country]; ok && loc.Country != "" {
			return b, latByCountry
		}
		if b, ok := li.continent[loc.Continent]; ok && loc.Continent != "" {
			return b, latByContinent
		}
	}
	return 0, latByMedian
}

// rtt returns the RTT of the endpoint target from bucket b's region, or for
// bucket 0 the median over the regions that measured it.
func (li *latencyIndex) rtt(service, target string, b int) (latency.Entry, bool) {
	if li.table == nil {
		return latency.Entry{}, false
	}
	if b > 0 {
		return li.table.RTT(service, li.regions[b], target)
	}
	var rtts []time.Duration
	var e latency.Entry
	for _, r := range li.regions[1:] {
		if x, ok := li.table.RTT(service, r, target); ok {
			rtts = append(rtts, x.RTT)
			e.Probers += x.Probers
			e.Samples += x.Samples
		}
	}
	if len(rtts) == 0 {
		return latency.Entry{}, false
	}
	e.RTT = latency.Median(rtts)
	return e, true
}

// latencyCands returns the latency candidates of one family's endpoints
// for bucket b, with their RTT entries.
func (li *latencyIndex) candidates(service string, cands []cand, b int) ([]latency.Candidate, []latency.Entry) {
	weighted := slices.ContainsFunc(cands, func(c cand) bool { return c.available && c.weight > 0 })
	out := make([]latency.Candidate, len(cands))
	entries := make([]latency.Entry, len(cands))
	for i, c := range cands {
		e, ok := li.rtt(service, c.target, b)
		entries[i] = e
		out[i] = latency.Candidate{
			Rankable:  c.available && (c.weight > 0 || !weighted),
			Measured:  ok,
			RTT:       e.RTT,
			Elsewhere: !ok && b > 0 && li.table != nil && li.table.Measured(service, c.target),
		}
	}
	return out, entries
}

// chains returns one chain of groups per bucket for one family's
// candidates (see chain).
func (li *latencyIndex) chains(service string, cands []cand) [][]group {
	out := make([][]group, len(li.regions))
	for b := range li.regions {
		out[b], _, _, _ = li.chain(service, cands, b)
	}
	return out
}

// chain is bucket b's chain for one family's candidates: the endpoints in
// tolerance (latency.Select), then any endpoint (which only matters for the
// fail-open answer when nothing is available). It also returns what the
// selection was made from, for explain.
func (li *latencyIndex) chain(service string, cands []cand, b int) ([]group, latency.Selection, []latency.Candidate, []latency.Entry) {
	lc, entries := li.candidates(service, cands, b)
	sel := latency.Select(lc, li.tolerance)
	var in []string
	for i, c := range cands {
		if sel.In[i] {
			in = append(in, c.target)
		}
	}
	return []group{{byTarget: true, targets: in}, {}}, sel, lc, entries
}
