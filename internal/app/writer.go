package app

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/leader"
	"github.com/meridian-gslb/meridian/internal/ring"
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
	if len(d.Providers.Writers) == 0 && len(d.Ring.CA) > 0 {
		// Candidates from the credentials (ADR 0016): every prober the ring
		// lists by its credential, remembered (and saved) by a roster.
		ro := a.newRoster(h.ring, cands)
		el := &leader.Elector{Transport: ring.Election{Ring: h.ring}, CandidatesFunc: ro.candidates, Logger: a.log, OnChange: a.writer.changed}
		a.writer.el.Store(el)
		a.writer.changed(false)
		a.goBackground(el.Run)
		return nil
	}
	switch {
	case len(cands) == 1 && cands[0] == h.ring.Name() && len(d.Ring.Seeds) > 0:
		a.log.Warn("ring writer: this node is the only candidate it knows (providers.writers is empty and ring.peers names no prober in full): "+
			"every such node sends notifications and steps shifts; list the candidates in providers.writers", "node", h.ring.Name())
	case !slices.Contains(cands, h.ring.Name()):
		a.log.Info("ring writer: this node is not a candidate (providers.writers): another node sends notifications and steps shifts", "candidates", cands)
	}
	el := &leader.Elector{Transport: ring.Election{Ring: h.ring}, Candidates: cands, Logger: a.log, OnChange: a.writer.changed}
	a.writer.el.Store(el)
	a.writer.changed(false)
	a.goBackground(el.Run)
	return nil
}

// roster gives the writer election its candidates in a ring with a CA and
// no providers.writers: the fixed ones (ring.peers' full names, this node)
// and every prober the ring has listed by its credential, kept in
// leader.Roster and saved in the state directory (a restarted node counts
// the same candidates as the others). Called by the election every round.
type roster struct {
	a     *App
	ring  *ring.Ring
	fixed []string
	file  string

	mu   sync.Mutex
	r    leader.Roster
	last []string
}

func (a *App) newRoster(r *ring.Ring, fixed []string) *roster {
	ro := &roster{a: a, ring: r, fixed: fixed, file: filepath.Join(a.state, "writer-candidates.json")}
	b, err := os.ReadFile(ro.file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		a.log.Warn("writer candidates not read: the roster starts empty", "file", ro.file, "err", err)
	default:
		skipped, err := ro.r.Load(b)
		if err != nil {
			a.log.Warn("writer candidates not read: the roster starts empty", "file", ro.file, "err", err)
		}
		for _, sk := range skipped {
			a.log.Warn("writer candidates: entry skipped", "file", ro.file, "entry", sk)
		}
	}
	return ro
}

func (ro *roster) candidates() []string {
	if !ro.ring.Settled() {
		// Met nobody yet, and its seeds name others: it may be the minority
		// side of a partition it restarted into. No candidates, no writer.
		return nil
	}
	now := time.Now()
	var live []leader.Member
	for _, m := range ro.ring.Members() {
		if m.Role == ring.RoleProber && !m.CredentialExpires.IsZero() {
			live = append(live, leader.Member{Name: m.Name, Expires: m.CredentialExpires, Serial: m.CredentialSerial, Key: m.KeyFingerprint,
				Scope: m.CredentialScope, Max: m.MaxNodes})
		}
	}
	ro.mu.Lock()
	defer ro.mu.Unlock()
	changed := ro.r.Observe(now, live)
	if forgot := ro.r.Prune(now, ro.ring.Revoked); len(forgot) > 0 {
		ro.a.log.Info("writer candidates forgotten (credential expired or revoked, or out of sight for a day)", "nodes", forgot)
		changed = true
	}
	out := append(slices.Clone(ro.fixed), ro.r.Names()...)
	slices.Sort(out)
	out = slices.Compact(out)
	if !slices.Equal(out, ro.last) {
		ro.a.log.Info("writer candidates", "candidates", out)
		ro.last = out
	}
	if changed {
		ro.save()
	}
	return out
}

// save writes the roster atomically; a failure is logged, the roster in
// memory goes on.
func (ro *roster) save() {
	b, err := json.Marshal(&ro.r)
	if err == nil {
		tmp := ro.file + ".tmp"
		if err = os.WriteFile(tmp, b, 0o600); err == nil {
			err = os.Rename(tmp, ro.file)
		}
	}
	if err != nil {
		ro.a.log.Warn("writer candidates not saved: a restart forgets candidates out of sight", "file", ro.file, "err", err)
	}
}
