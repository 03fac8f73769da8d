package xfr

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
)

// KeySource gives the TSIG key of a transfer section's tsig_key_file as it
// was read last (internal/zonekeys reads the files, off the publish path).
// TSIGKey must not read the disk: it is called under the serving
// pipeline's lock.
type KeySource interface {
	TSIGKey(file string) (Key, bool)
}

// Publisher is the zone transfer side of the serving pipeline: it publishes
// snapshots to the pipeline's store with managed serials for the zones
// with a transfer section, and keeps the transfer server's zones, IXFR
// history and NOTIFYs in step. Its calls are serialized by the caller (the
// pipeline's lock).
type Publisher struct {
	st      *engine.Store
	srv     *Server
	serials *Serials
	keys    KeySource
	log     *slog.Logger
	known   map[string]bool // zones notified at least once by this process
}

// NewPublisher returns a publisher to st, with a transfer server answering
// from st (see New for opts), serials kept in serials (nil: in memory) and
// TSIG keys from keys.
func NewPublisher(st *engine.Store, keys KeySource, serials *Serials, opts Options) *Publisher {
	if serials == nil {
		serials, _ = OpenSerials("") // in memory: cannot fail
	}
	srv := New(st, opts)
	return &Publisher{st: st, srv: srv, serials: serials, keys: keys, log: srv.log, known: map[string]bool{}}
}

// Server is the transfer server for the DNS front end.
func (x *Publisher) Server() *Server { return x.srv }

// zones builds the transfer configuration of d's zones with the TSIG keys
// of the key source. A key the source never read fails the publish with the
// reason (the source refuses a config whose keys it cannot read, so this
// is a key source that was not given the config).
func (x *Publisher) zones(d *model.Desired) ([]Zone, error) {
	var out []Zone
	for i, z := range d.Zones {
		if z.Transfer == nil {
			continue
		}
		xz, err := x.transferZone(z.Apex, fmt.Sprintf("zones[%d].transfer", i), z.Transfer)
		if err != nil {
			return nil, err
		}
		out = append(out, xz)
	}
	return out, nil
}

// transferZone is the transfer configuration of zone apex from its
// transfer section t (p is the section's path, for errors).
func (x *Publisher) transferZone(apex, p string, t *model.Transfer) (Zone, error) {
	key, ok := x.keys.TSIGKey(t.TSIGKeyFile)
	if !ok {
		return Zone{}, fmt.Errorf("%s.tsig_key_file: %s: not read", p, t.TSIGKeyFile)
	}
	xz := Zone{Apex: apex, Key: key}
	for j, s := range t.Allow {
		pfx, err := model.ParseAllow(s)
		if err != nil {
			return Zone{}, fmt.Errorf("%s.allow[%d]: %w", p, j, err)
		}
		xz.Allow = append(xz.Allow, pfx)
	}
	for j, s := range t.Notify {
		ap, err := model.ParseNotifyTarget(s)
		if err != nil {
			return Zone{}, fmt.Errorf("%s.notify[%d]: %w", p, j, err)
		}
		xz.Notify = append(xz.Notify, ap)
	}
	return xz, nil
}

// Publish stores d in the store with managed serials for zones that have
// transfers: it compiles once to see each zone's content, gives a zone
// whose content changed the next serial (RFC 1982; persisted, so it also
// increases across restarts), publishes with those serials in the SOA, then
// records the versions for IXFR and sends NOTIFY for the changed zones.
// It writes the serial file when a serial changed; it reads no file.
func (x *Publisher) Publish(d *model.Desired, opts engine.Options) (*engine.Snapshot, error) {
	zones, err := x.zones(d)
	if err != nil {
		return nil, err
	}
	cat, err := x.catalogZone(d)
	if err != nil {
		return nil, err
	}
	if len(zones) == 0 && cat == nil {
		x.srv.SetCatalog(nil)
		x.srv.Configure(nil)
		return x.st.Publish(d, opts)
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	withSerials, changed, err := x.nextSerials(d, zones, opts)
	if err != nil {
		return nil, err
	}
	snap, err := x.st.Publish(withSerials, opts)
	if err != nil {
		return nil, err
	}
	x.configure(zones, cat, opts.Now)
	for _, z := range zones {
		zd, _ := snap.ZoneData(z.Apex)
		x.srv.Record(zd)
		x.notifyOnce(z.Apex, zd.SOA.Serial, changed[z.Apex])
	}
	return snap, nil
}

// notifyOnce sends NOTIFY for a zone whose content changed, or that this
// process has not notified yet.
func (x *Publisher) notifyOnce(apex string, serial uint32, changed bool) {
	if changed || !x.known[apex] {
		x.known[apex] = true
		x.srv.Notify(apex, serial)
	}
}

// nextSerials returns a copy of d whose transfer zones carry their managed
// serials, and the zones whose content changed (given the next serial,
// persisted).
func (x *Publisher) nextSerials(d *model.Desired, _ []Zone, opts engine.Options) (*model.Desired, map[string]bool, error) {
	return managedSerials(d, x.serials, func(z *model.Zone) bool { return z.Transfer != nil }, opts, x.log)
}

// managedSerials returns a copy of d whose zones that managed selects carry
// their managed serials from serials, and those whose content changed
// (given the next serial, persisted when serials has a file).
func managedSerials(d *model.Desired, serials *Serials, managed func(*model.Zone) bool, opts engine.Options, log *slog.Logger) (*model.Desired, map[string]bool, error) {
	withSerials := *d
	withSerials.Zones = slices.Clone(d.Zones)
	var idx []int
	for i := range withSerials.Zones {
		if managed(&withSerials.Zones[i]) {
			idx = append(idx, i)
			withSerials.Zones[i].SOA.Serial = 1 // any fixed value: the content hash leaves it out
		}
	}
	preview, err := engine.Compile(&withSerials, opts)
	if err != nil {
		return nil, nil, err
	}
	changed := map[string]bool{}
	for _, i := range idx {
		apex := withSerials.Zones[i].Apex
		zd, _ := preview.ZoneData(apex)
		prev, hadPrev := serials.Get(apex)
		serial, ch := serials.Next(apex, ContentHash(zd), d.Zones[i].SOA.Serial, opts.Now)
		withSerials.Zones[i].SOA.Serial = serial
		if ch {
			changed[apex] = true
			log.Info("zone content changed: new serial", "zone", apex, "serial", serial, "previous", prev.Serial, "had_previous", hadPrev)
		}
	}
	if len(changed) > 0 {
		saveSerials(serials, log)
	}
	return &withSerials, changed, nil
}

// saveSerials writes the serials' file, warning when it cannot.
func saveSerials(serials *Serials, log *slog.Logger) {
	if err := serials.Save(); err != nil {
		log.Warn("zone serials not persisted: a restart may reuse a serial", "file", serials.Path(), "err", err)
	}
}

// SerialPublisher publishes to a store with managed serials for every
// zone, as Publisher does for the zones with a transfer section: a zone
// whose content changed gets the next serial (RFC 1982), so that a
// secondary sees every change. The CoreDNS plugin uses it when its server
// block has CoreDNS's transfer plugin, which serves the zones' transfers
// and NOTIFYs; its serials are kept in memory. Calls are serialized by the
// caller (the pipeline's lock).
type SerialPublisher struct {
	st      *engine.Store
	serials *Serials
	log     *slog.Logger
}

// NewSerialPublisher returns a serial-managing publisher to st.
func NewSerialPublisher(st *engine.Store, log *slog.Logger) *SerialPublisher {
	serials, _ := OpenSerials("") // in memory: cannot fail
	if log == nil {
		log = slog.Default()
	}
	return &SerialPublisher{st: st, serials: serials, log: log}
}

// Publish stores d with every zone's managed serial.
func (x *SerialPublisher) Publish(d *model.Desired, opts engine.Options) (*engine.Snapshot, error) {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	withSerials, _, err := managedSerials(d, x.serials, func(*model.Zone) bool { return true }, opts, x.log)
	if err != nil {
		return nil, err
	}
	return x.st.Publish(withSerials, opts)
}
