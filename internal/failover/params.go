package failover

import (
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
)

// Params tunes Decide. Zero fields take the defaults listed on them (see
// DefaultParams), except Outliers: the zero Params has outlier detection off,
// DefaultParams and ParamsFrom turn it on.
type Params struct {
	Interval    time.Duration // probe interval: vote freshness and the brake delay (default 5s; health.interval)
	FreshVotes  int           // a vote is fresh while now-ObservedAt <= FreshVotes×Interval (default 3)
	MinRegions  int           // regions a Down verdict needs, capped at the regions of the ring (default 2)
	HoldDown    time.Duration // the ladder doubles from HoldDownMin up to this, then on from it (default 30s)
	HoldDownMax time.Duration // cap of the doubling (default 300s, at least HoldDown)
	Brake       float64       // largest share of a service's serving weight one call may remove (default 0.5; 1 = no brake)
	Outliers    bool          // ignore a prober that says Down where the others say Up (default true)

	// HoldDownMin is the base of the ladder: a second failure within
	// FlapWindow is held 2 × HoldDownMin (default 5s, at most HoldDown;
	// decision.hold_down_min).
	HoldDownMin time.Duration
	// FirstHoldDown is the hold-down of a first failure after a quiet
	// FlapWindow (default 3s, at most HoldDownMin; decision.first_hold_down).
	FirstHoldDown time.Duration
	// FlapWindow: a subject up this long since its last release forgets
	// its failures, so that its next failure is held HoldDownMin again
	// (default 60s; decision.flap_window).
	FlapWindow time.Duration
}

// DefaultParams returns the documented defaults (model.Default*).
func DefaultParams() Params {
	return Params{Outliers: true}.withDefaults()
}

// ParamsFrom reads Params from a normalized Desired: health.interval and the
// decision section. A nil d gives DefaultParams.
func ParamsFrom(d *model.Desired) Params {
	if d == nil {
		return DefaultParams()
	}
	dec := d.Decision
	return Params{
		Interval:      d.Health.Interval.D(),
		FreshVotes:    dec.FreshVotes,
		MinRegions:    dec.MinRegions,
		HoldDown:      dec.HoldDown.D(),
		HoldDownMax:   dec.HoldDownMax.D(),
		Brake:         dec.Brake,
		Outliers:      dec.Outliers == nil || *dec.Outliers,
		HoldDownMin:   dec.HoldDownMin.D(),
		FirstHoldDown: dec.FirstHoldDown.D(),
		FlapWindow:    dec.FlapWindow.D(),
	}.withDefaults()
}

// withDefaults fills zero (or nonsensical negative) fields.
func (p Params) withDefaults() Params {
	if p.Interval <= 0 {
		p.Interval = model.DefaultInterval
	}
	if p.FreshVotes <= 0 {
		p.FreshVotes = model.DefaultFreshVotes
	}
	if p.MinRegions <= 0 {
		p.MinRegions = model.DefaultMinRegions
	}
	if p.HoldDown <= 0 {
		p.HoldDown = model.DefaultHoldDown
	}
	if p.HoldDownMax <= 0 {
		p.HoldDownMax = max(model.DefaultHoldDownMax, p.HoldDown)
	}
	p.HoldDownMax = max(p.HoldDownMax, p.HoldDown)
	if p.HoldDownMin <= 0 {
		p.HoldDownMin = model.DefaultHoldDownMin
	}
	p.HoldDownMin = min(p.HoldDownMin, p.HoldDown)
	if p.FirstHoldDown <= 0 {
		p.FirstHoldDown = model.DefaultFirstHoldDown
	}
	p.FirstHoldDown = min(p.FirstHoldDown, p.HoldDownMin)
	if p.FlapWindow <= 0 {
		p.FlapWindow = model.DefaultFlapWindow
	}
	if p.Brake <= 0 {
		p.Brake = model.DefaultBrake
	}
	return p
}

// freshness is how old a vote may be and still count.
func (p Params) freshness() time.Duration {
	return time.Duration(p.FreshVotes) * p.Interval
}

// HoldFor is the hold-down after the given number of consecutive failures
// (0 counts as 1): FirstHoldDown for a first failure; from the second on
// HoldDownMin doubled per failure up to HoldDown (a doubling that would
// pass it stops on it), then doubled on from HoldDown up to HoldDownMax.
// With the defaults: 3, 10, 20, 30, 60, 120, 240, 300 s. With
// FirstHoldDown = HoldDownMin = HoldDown it is HoldDown × 2^(failures-1),
// at most HoldDownMax.
func (p Params) HoldFor(failures int) time.Duration {
	if failures <= 1 {
		return min(p.FirstHoldDown, p.HoldDownMax)
	}
	d := p.HoldDownMin
	for i := 1; i < failures && d < p.HoldDownMax; i++ {
		if d < p.HoldDown && 2*d > p.HoldDown {
			d = p.HoldDown
			continue
		}
		d *= 2
	}
	return min(d, p.HoldDownMax)
}
