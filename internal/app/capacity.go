package app

import (
	"github.com/meridian-gslb/meridian/internal/capacity"
	"github.com/meridian-gslb/meridian/internal/capacity/observe"
	"github.com/meridian-gslb/meridian/internal/kube"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/serving"
)

// startCapacity runs the capacity-aware weights: it reads the sources of
// the services with a capacity section (member EndpointSlices, Prometheus)
// and hands each changed State to the pipeline. It runs whether or not a
// service has capacity now, so that a reload can add one; without any it
// reads and publishes nothing.
func (a *App) startCapacity(*serving.Loaded) error {
	opts := observe.Options{
		Desired:  func() *model.Desired { return a.pipe.State().Served },
		Publish:  a.publishCapacity,
		Logger:   a.log,
		Registry: a.reg,
	}
	if a.kube != nil {
		opts.Kube = capacityKube{a.kube}
	}
	o := observe.New(opts)
	a.capacity.Store(o)
	a.goBackground(o.Run)
	return nil
}

func (a *App) publishCapacity(st *capacity.State) {
	if err := a.pipe.SetCapacity(st); err != nil {
		a.log.Error("capacity: new fractions not published; the previous snapshot keeps serving", "err", err)
	}
}

// pokeCapacity asks the capacity loop to decide soon (an EndpointSlice or
// the config changed); it never blocks.
func (a *App) pokeCapacity() {
	if o := a.capacity.Load(); o != nil {
		o.Poke()
	}
}

// capacityKube is the capacity loop's view of the Kubernetes sources.
type capacityKube struct{ k *kubeParts }

func (c capacityKube) EnableEndpointSlices() { c.k.mgr.EnableEndpointSlices() }

func (c capacityKube) EndpointCounts(cluster, namespace, name string) (kube.SliceCounts, bool) {
	return c.k.mgr.EndpointCounts(cluster, namespace, name)
}

func (c capacityKube) Backends() map[string]map[string][]kube.Backend {
	_, res := c.k.src.Last()
	return res.Backends
}

var _ observe.Kube = capacityKube{}
