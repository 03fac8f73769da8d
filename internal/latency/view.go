package latency

import (
	"maps"
	"slices"
	"time"
)

// Key names an endpoint of a service (canonical service name and address),
// as vote.Subject does.
type Key struct {
	Service string
	Target  string
}

// Measurement is one prober's smoothed RTT to one endpoint, as gossiped.
type Measurement struct {
	Prober  string
	Region  string // the prober's listed region
	Key     Key
	RTT     time.Duration
	Samples uint32    // successful probes behind it
	At      time.Time // the newest sample
}

// Entry is the RTT in effect from one region to one endpoint.
type Entry struct {
	RTT     time.Duration // median of the region's fresh measurements when it took effect
	Probers int           // how many probers' measurements it is the median of
	Samples uint32        // their samples together
	Since   time.Time     // when this value took effect
}

// Params tune Build.
type Params struct {
	MaxAge     time.Duration // a measurement counts while its newest sample is at most this old
	Hysteresis float64       // an entry changes only when the median moves more than this fraction
}

// Defaults of the view, relative to the probe interval.
const (
	DefaultHysteresis   = 0.10
	DefaultMaxAgeProbes = 18 // probe intervals: three gossip refresh periods
)

// DefaultParams are the defaults for a probe interval.
func DefaultParams(interval time.Duration) Params {
	return Params{MaxAge: DefaultMaxAgeProbes * interval, Hysteresis: DefaultHysteresis}
}

// View is the RTT table in effect: per prober region and endpoint. It is
// immutable once built; nil is an empty view.
type View struct {
	regions []string                 // sorted
	rtt     map[string]map[Key]Entry // region -> endpoint -> entry
	any     map[Key]bool             // endpoints some region has an entry for
}

// Build returns the View for the measurements ms at now, keeping prev's
// entries that the medians did not move past the hysteresis (rules 3-5 of
// the package doc). It does not modify its inputs; the result does not
// depend on the order of ms.
func Build(prev *View, ms []Measurement, now time.Time, p Params) *View {
	fresh := map[string]map[Key][]Measurement{}
	for _, m := range ms {
		if m.Region == "" || m.RTT <= 0 || now.Sub(m.At) > p.MaxAge {
			continue
		}
		byKey := fresh[m.Region]
		if byKey == nil {
			byKey = map[Key][]Measurement{}
			fresh[m.Region] = byKey
		}
		byKey[m.Key] = append(byKey[m.Key], m)
	}
	v := &View{rtt: map[string]map[Key]Entry{}, any: map[Key]bool{}}
	for region, byKey := range fresh {
		entries := make(map[Key]Entry, len(byKey))
		for k, list := range byKey {
			rtts := make([]time.Duration, len(list))
			var samples uint32
			for i, m := range list {
				rtts[i] = m.RTT
				samples += min(m.Samples, 1<<24) // bounded: 256 probers cannot wrap it
			}
			e := Entry{RTT: Median(rtts), Probers: len(list), Samples: samples, Since: now}
			if old, ok := prev.entry(region, k); ok && !moved(old.RTT, e.RTT, p.Hysteresis) {
				e = old
			}
			entries[k] = e
			v.any[k] = true
		}
		v.rtt[region] = entries
	}
	v.regions = slices.Sorted(maps.Keys(v.rtt))
	return v
}

// moved reports whether next lies more than h (a fraction) away from cur.
func moved(cur, next time.Duration, h float64) bool {
	d := float64(next - cur)
	return d > h*float64(cur) || -d > h*float64(cur)
}

// Median returns the median of xs (the mean of the middle two for an even
// count); 0 for none. xs is reordered.
func Median(xs []time.Duration) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return xs[n/2-1] + (xs[n/2]-xs[n/2-1])/2
}

func (v *View) entry(region string, k Key) (Entry, bool) {
	if v == nil {
		return Entry{}, false
	}
	e, ok := v.rtt[region][k]
	return e, ok
}

// Regions lists the regions with at least one entry, sorted.
func (v *View) Regions() []string {
	if v == nil {
		return nil
	}
	return v.regions
}

// RTT returns the entry in effect from region to the endpoint target of
// service.
func (v *View) RTT(service, region, target string) (Entry, bool) {
	return v.entry(region, Key{Service: service, Target: target})
}

// Measured reports whether any region has an entry for the endpoint.
func (v *View) Measured(service, target string) bool {
	return v != nil && v.any[Key{Service: service, Target: target}]
}

// Equal reports whether v and o hold the same entries (values and when they
// took effect): a snapshot compiled from one answers as from the other.
func (v *View) Equal(o *View) bool {
	if v == nil || o == nil {
		return v.Len() == 0 && o.Len() == 0
	}
	if !slices.Equal(v.regions, o.regions) {
		return false
	}
	for region, entries := range v.rtt {
		if !maps.Equal(entries, o.rtt[region]) {
			return false
		}
	}
	return true
}

// Len is the number of entries.
func (v *View) Len() int {
	if v == nil {
		return 0
	}
	n := 0
	for _, entries := range v.rtt {
		n += len(entries)
	}
	return n
}

// Each calls f for every entry, by region then service then target.
func (v *View) Each(f func(region string, k Key, e Entry)) {
	if v == nil {
		return
	}
	for _, region := range v.regions {
		entries := v.rtt[region]
		keys := slices.SortedFunc(maps.Keys(entries), func(a, b Key) int {
			if a.Service != b.Service {
				return compare(a.Service, b.Service)
			}
			return compare(a.Target, b.Target)
		})
		for _, k := range keys {
			f(region, k, entries[k])
		}
	}
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
