package engine

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// ExplainLatency is the RTT table behind a latency service's answer.
type ExplainLatency struct {
	// Region is the prober region whose RTTs answer this client; "" when
	// the client is mapped to none (every region's median RTT answers).
	Region string `json:"region"`
	// MatchedBy says how: region (geo.networks placed the client in a
	// prober region), country or continent (a latency.regions entry), or
	// median (none of those).
	MatchedBy        string       `json:"matched_by"`
	TolerancePercent float64      `json:"tolerance_percent"`
	BestMs           float64      `json:"best_ms,omitempty"`  // the smallest RTT among the available endpoints (0: none measured)
	BoundMs          float64      `json:"bound_ms,omitempty"` // best × (1 + tolerance): the largest RTT in tolerance
	Regions          []string     `json:"regions"`            // every prober region with RTTs
	RTTs             []ExplainRTT `json:"rtts"`               // the endpoints of the queried family
}

// ExplainRTT is one endpoint's row of the RTT table.
type ExplainRTT struct {
	Target      string             `json:"target"`
	Cluster     string             `json:"cluster"`
	Measured    bool               `json:"measured"`         // has an RTT from Region (or, for the median, from any region)
	RTTMs       float64            `json:"rtt_ms,omitempty"` // that RTT
	Probers     int                `json:"probers,omitempty"`
	Samples     uint32             `json:"samples,omitempty"`
	ByRegionMs  map[string]float64 `json:"by_region_ms,omitempty"` // the RTT from every region that has one
	InTolerance bool               `json:"in_tolerance"`           // in the set the answer is drawn from
}

func millis(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// latency explains bucket b of a latency service for one family's
// candidates: the chain the pool came from, the RTT table, and why each
// available endpoint is in or out.
func (x *explainer) latency(svc *service, fam []cand, b int) ([]group, *ExplainLatency, map[string]string) {
	li := svc.lat
	chain, sel, lc, entries := li.chain(svc.name, fam, b)
	_, how := li.explainBucket(x.loc, x.located)
	el := &ExplainLatency{Region: li.regions[b], MatchedBy: how, TolerancePercent: math.Round(li.tolerance*1e4) / 100,
		BestMs: millis(sel.Best), BoundMs: millis(sel.Bound), Regions: append([]string{}, li.regions[1:]...), RTTs: []ExplainRTT{}}
	from := "from region " + el.Region
	if b == 0 {
		from = "(median over the regions)"
	}
	why := map[string]string{}
	for i, c := range fam {
		row := ExplainRTT{Target: c.target, Cluster: c.cluster, Measured: lc[i].Measured, InTolerance: sel.In[i]}
		if lc[i].Measured {
			row.RTTMs, row.Probers, row.Samples = millis(entries[i].RTT), entries[i].Probers, entries[i].Samples
		}
		for _, r := range el.Regions {
			if li.table == nil {
				break
			}
			if e, ok := li.table.RTT(svc.name, r, c.target); ok {
				if row.ByRegionMs == nil {
					row.ByRegionMs = map[string]float64{}
				}
				row.ByRegionMs[r] = millis(e.RTT)
			}
		}
		el.RTTs = append(el.RTTs, row)
		if !lc[i].Rankable {
			continue // down, drained, or a weight-0 standby: said elsewhere
		}
		rtt := fmt.Sprintf("RTT %s ms %s", fmtMs(row.RTTMs), from)
		switch {
		case sel.Best == 0:
			why[c.target] = fmt.Sprintf("no RTT %s yet for any available endpoint: every one answers by weight", from)
		case sel.In[i] && lc[i].Measured && entries[i].RTT == sel.Best:
			why[c.target] = "the lowest " + rtt
		case sel.In[i] && lc[i].Measured:
			why[c.target] = fmt.Sprintf("%s, within %s%% of the best %s ms (bound %s ms)", rtt, fmtMs(el.TolerancePercent), fmtMs(el.BestMs), fmtMs(el.BoundMs))
		case sel.In[i]:
			why[c.target] = "not measured from any region yet: answers until it is"
		case lc[i].Measured:
			why[c.target] = fmt.Sprintf("%s is beyond %s%% of the best %s ms (bound %s ms)", rtt, fmtMs(el.TolerancePercent), fmtMs(el.BestMs), fmtMs(el.BoundMs))
		default:
			why[c.target] = fmt.Sprintf("measured from other regions but not %s: the probers there do not reach it", from)
		}
	}
	return chain, el, why
}

func fmtMs(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

// latencyBucketText is the Explanation.Bucket line of a latency service.
func latencyBucketText(el *ExplainLatency) string {
	tol := fmtMs(el.TolerancePercent) + "%"
	switch el.MatchedBy {
	case latByRegion:
		return fmt.Sprintf("RTTs from region %s (geo.networks places the client there); endpoints within %s of the best answer", el.Region, tol)
	case latByCountry, latByContinent:
		return fmt.Sprintf("RTTs from region %s (a latency.regions entry lists the client's %s); endpoints within %s of the best answer", el.Region, el.MatchedBy, tol)
	}
	if len(el.Regions) == 0 {
		return "no RTTs measured yet: every available endpoint answers by weight"
	}
	return fmt.Sprintf("the client is in no prober region: the median RTT over %s; endpoints within %s of the best answer", strings.Join(el.Regions, ", "), tol)
}
