package app

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/leader"
	"github.com/meridian-gslb/meridian/internal/serving"
)

// notifyHandover is how long a node that is not the writer keeps the
// events of decided changes: a writer lost with its region is replaced
// after about leader.DefaultLease plus a tick, and the change that lost it
// may be decided just before; twice that is kept.
const notifyHandover = 2 * (leader.DefaultLease + leader.DefaultFresh)

// writerRole is this node's part in the ring's one-writer election
// (internal/leader over the ring's writer votes): the writer pushes to the
// DNS providers, sends the notifications of decided changes and steps the
// progressive shifts. Every node decides the same changes, so one sender
// is what receivers want, and one stepper keeps a shift's progress from
// racing between nodes. Without the ring this process is the only node
// and always writes. Until the election starts nobody writes.
type writerRole struct {
	el    atomic.Pointer[leader.Elector]
	solo  atomic.Bool
	gauge prometheus.Gauge

	mu   sync.Mutex
	subs []func(writer bool)
}

// Writer reports whether this node writes now. Safe for concurrent use.
func (w *writerRole) Writer() bool {
	if el := w.el.Load(); el != nil {
		return el.Writer()
	}
	return w.solo.Load()
}

// OnChange calls f with the role now and at every change (from the
// election's goroutine; f must not block).
func (w *writerRole) OnChange(f func(writer bool)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.subs = append(w.subs, f)
	f(w.Writer())
}

func (w *writerRole) changed(writer bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gauge != nil {
		w.gauge.Set(b2f(writer))
	}
	for _, f := range w.subs {
		f(writer)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// startWriter runs the ring's writer election (after the ring has started;
// without the ring this process writes).
func (a *App) startWriter(*serving.Loaded) error {
	a.writer.gauge = prometheus.NewGauge(prometheus.GaugeOpts{Name: "meridian_ring_writer",
		Help: "1 while this node is the ring's elected writer: it pushes to the DNS providers, sends the notifications of decided changes and steps progressive shifts."})
	a.reg.MustRegister(a.writer.gauge)
	h := a.probing.Load()
	if h == nil {
		a.writer.solo.Store(true)
		a.writer.changed(true)
		return nil
	}
	d := &a.current().Desired
	cands := d.WriterCandidates(h.ring.Name())
	switch {
	case len(cands) == 1 && cands[0] == h.ring.Name() && len(d.Ring.Seeds) > 0:
		a.log.Warn("ring writer: this node is the only candidate it knows (providers.writers is empty and ring.peers names no prober in full): "+
			"every such node sends notifications and steps shifts; list the candidates in providers.writers", "node", h.ring.Name())
	case !slices.Contains(cands, h.ring.Name()):
		a.log.Info("ring writer: this node is not a candidate (providers.writers): another node sends notifications and steps shifts", "candidates", cands)
	}
	el := &leader.Elector{Transport: ringTransport{h.ring}, Candidates: cands, Logger: a.log, OnChange: a.writer.changed}
	a.writer.el.Store(el)
	a.writer.changed(false)
	a.goBackground(el.Run)
	return nil
}
