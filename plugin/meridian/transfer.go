package meridian

import (
	"context"
	"errors"
	"sync"

	"github.com/coredns/coredns/plugin/transfer"
	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/serving"
	"github.com/meridian-gslb/meridian/internal/xfr"
)

var _ transfer.Transferer = (*Meridian)(nil)

// errNotStarted is a transfer asked before the configuration is loaded.
var errNotStarted = errors.New("meridian: not started: the configuration is not loaded yet")

// Transfer implements transfer.Transferer for CoreDNS's transfer plugin,
// which decides who may transfer (its `to` list, the tsig plugin) before it
// asks. The records and the serial are those of the current snapshot, in
// the form `meridian serve` transfers them (xfr.FullZone): the SOA, every
// record, the SOA again. An IXFR (serial not 0) from a client whose serial
// is not older than the zone's gets the SOA alone (xfr.UpToDate); an older
// one gets the whole zone, as the transfer plugin expects: the plugin keeps
// no history for incremental transfers. A zone outside the plugin's zones
// or the configuration's is transfer.ErrNotAuthoritative.
//
// It does not block: the channel holds the whole answer and is closed.
func (m *Meridian) Transfer(zone string, serial uint32) (<-chan []dns.RR, error) {
	apex := dns.CanonicalName(zone)
	if !m.inZones(apex) {
		return nil, transfer.ErrNotAuthoritative
	}
	if !m.started.Load() {
		return nil, errNotStarted
	}
	snap := m.pipe.Store().Load()
	if snap == nil {
		return nil, errNotStarted
	}
	zd, ok := snap.ZoneData(apex)
	if !ok {
		return nil, transfer.ErrNotAuthoritative
	}
	ch := make(chan []dns.RR, 1)
	if serial != 0 && xfr.UpToDate(serial, zd.SOA.Serial) {
		ch <- []dns.RR{zd.SOA}
	} else {
		ch <- xfr.FullZone(zd)
	}
	close(ch)
	return ch, nil
}

// notifier sends NOTIFY for a zone to its secondaries: CoreDNS's transfer
// plugin (*transfer.Transfer), which sends it to the addresses of its `to`.
// Notify may block for seconds (it waits for each answer).
type notifier interface {
	Notify(zone string) error
}

// notifications queues the zones to notify and sends them from one
// goroutine, so that a slow secondary never holds up a publish.
type notifications struct {
	to      notifier // nil: no transfer plugin, nothing is sent
	mu      sync.Mutex
	pending map[string]bool
	wake    chan struct{}
}

// startNotify sends NOTIFY for every zone of the snapshot at start, as
// CoreDNS's file plugin does, and then for each zone whose SOA serial
// changes (see changed), until ctx ends.
func (m *Meridian) startNotify(ctx context.Context) {
	if m.notify.to == nil {
		return
	}
	m.notify.pending, m.notify.wake = map[string]bool{}, make(chan struct{}, 1)
	m.queueNotify(m.ourZones(m.pipe.Store().Load())...)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.notifyLoop(ctx)
	}()
}

// changed is the pipeline's Changed hook: it queues a NOTIFY for every
// zone of the plugin whose SOA serial differs from the previous snapshot's
// (a zone new in the snapshot counts as changed).
func (m *Meridian) changed(prev, next *serving.State) {
	if m.notify.to == nil || prev == nil || next == nil {
		return
	}
	var zones []string
	for _, apex := range m.ourZones(next.Snapshot) {
		cur, _ := soaSerial(next.Snapshot, apex)
		if old, ok := soaSerial(prev.Snapshot, apex); !ok || old != cur {
			zones = append(zones, apex)
		}
	}
	m.queueNotify(zones...)
}

// ourZones are the apexes of snap's zones inside the plugin's zones.
func (m *Meridian) ourZones(snap *engine.Snapshot) []string {
	if snap == nil {
		return nil
	}
	var out []string
	for _, apex := range snap.Zones() {
		if m.inZones(apex) {
			out = append(out, apex)
		}
	}
	return out
}

// soaSerial is the serial of the zone at apex in snap (false: no such zone).
func soaSerial(snap *engine.Snapshot, apex string) (uint32, bool) {
	if snap == nil {
		return 0, false
	}
	var r engine.Result
	snap.Lookup(apex, dns.TypeSOA, engine.Client{}, &r)
	if r.Zone != apex {
		return 0, false
	}
	for _, rr := range r.Answer {
		if soa, ok := rr.(*dns.SOA); ok {
			return soa.Serial, true
		}
	}
	return 0, false
}

// queueNotify adds zones to the pending set and wakes the sender.
func (m *Meridian) queueNotify(zones ...string) {
	if len(zones) == 0 || m.notify.wake == nil {
		return
	}
	m.notify.mu.Lock()
	for _, z := range zones {
		m.notify.pending[z] = true
	}
	m.notify.mu.Unlock()
	select {
	case m.notify.wake <- struct{}{}:
	default:
	}
}

// notifyLoop sends the pending NOTIFYs, one zone after the other; a zone
// queued again while its NOTIFY is out is sent once more afterwards.
func (m *Meridian) notifyLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.notify.wake:
		}
		m.notify.mu.Lock()
		pending := m.notify.pending
		m.notify.pending = map[string]bool{}
		m.notify.mu.Unlock()
		for zone := range pending {
			if ctx.Err() != nil {
				return
			}
			if err := m.notify.to.Notify(zone); err != nil {
				log.Warningf("NOTIFY for zone %s: %v", zone, err)
			} else {
				log.Debugf("NOTIFY sent for zone %s", zone)
			}
		}
	}
}
