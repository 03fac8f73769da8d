package serving

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/xfr"
)

// transfers is the zone transfer side of the pipeline: the transfer
// server, the persisted serials and the TSIG keys. It is used under the
// pipeline's lock.
type transfers struct {
	srv     *xfr.Server
	serials *xfr.Serials
	keys    map[string]xfr.Key // last good key by file, for when a file goes bad
	known   map[string]bool    // zones notified at least once by this process
}

func (x *transfers) init(srv *xfr.Server, serials *xfr.Serials) {
	if srv != nil && serials == nil {
		serials, _ = xfr.OpenSerials("") // in memory
	}
	x.srv, x.serials = srv, serials
	x.keys, x.known = map[string]xfr.Key{}, map[string]bool{}
}

// zones builds the transfer configuration of d's zones, reading the TSIG
// key files. A key file that cannot be read keeps the last good key of that
// file (so a health-driven publish never fails on it); without one the
// publish fails with the reason.
func (x *transfers) zones(d *model.Desired, log *slog.Logger) ([]xfr.Zone, error) {
	var out []xfr.Zone
	for i, z := range d.Zones {
		t := z.Transfer
		if t == nil {
			continue
		}
		p := fmt.Sprintf("zones[%d].transfer", i)
		key, err := xfr.LoadKeyFile(t.TSIGKeyFile)
		if err != nil {
			old, ok := x.keys[t.TSIGKeyFile]
			if !ok {
				return nil, fmt.Errorf("%s.tsig_key_file: %w", p, err)
			}
			log.Warn("TSIG key file unreadable: keeping the last good key", "zone", z.Apex, "file", t.TSIGKeyFile, "err", err)
			key = old
		}
		x.keys[t.TSIGKeyFile] = key
		xz := xfr.Zone{Apex: z.Apex, Key: key}
		for j, s := range t.Allow {
			pfx, err := model.ParseAllow(s)
			if err != nil {
				return nil, fmt.Errorf("%s.allow[%d]: %w", p, j, err)
			}
			xz.Allow = append(xz.Allow, pfx)
		}
		for j, s := range t.Notify {
			ap, err := model.ParseNotifyTarget(s)
			if err != nil {
				return nil, fmt.Errorf("%s.notify[%d]: %w", p, j, err)
			}
			xz.Notify = append(xz.Notify, ap)
		}
		out = append(out, xz)
	}
	return out, nil
}

// publish stores d in st with managed serials for zones that have
// transfers: it compiles once to see each zone's content, gives a zone
// whose content changed the next serial (RFC 1982; persisted, so it also
// increases across restarts), publishes with those serials in the SOA, then
// records the versions for IXFR and sends NOTIFY for the changed zones.
// Without a transfer server it is st.Publish.
func (x *transfers) publish(st *engine.Store, d *model.Desired, opts engine.Options, log *slog.Logger) (*engine.Snapshot, error) {
	if x.srv == nil {
		return st.Publish(d, opts)
	}
	zones, err := x.zones(d, log)
	if err != nil {
		return nil, err
	}
	if len(zones) == 0 {
		x.srv.Configure(nil)
		return st.Publish(d, opts)
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	withSerials := *d
	withSerials.Zones = slices.Clone(d.Zones)
	idx := map[string]int{}
	for i, z := range withSerials.Zones {
		if z.Transfer != nil {
			idx[z.Apex] = i
			withSerials.Zones[i].SOA.Serial = 1 // any fixed value: the content hash leaves it out
		}
	}
	preview, err := engine.Compile(&withSerials, opts)
	if err != nil {
		return nil, err
	}
	changed := map[string]bool{}
	for _, z := range zones {
		i := idx[z.Apex]
		zd, _ := preview.ZoneData(z.Apex)
		prev, hadPrev := x.serials.Get(z.Apex)
		serial, ch := x.serials.Next(z.Apex, xfr.ContentHash(zd), d.Zones[i].SOA.Serial, opts.Now)
		withSerials.Zones[i].SOA.Serial = serial
		if ch {
			changed[z.Apex] = true
			log.Info("zone content changed: new serial", "zone", z.Apex, "serial", serial, "previous", prev.Serial, "had_previous", hadPrev)
		}
	}
	if len(changed) > 0 {
		if err := x.serials.Save(); err != nil {
			log.Warn("zone serials not persisted: a restart may reuse a serial", "file", x.serials.Path(), "err", err)
		}
	}
	snap, err := st.Publish(&withSerials, opts)
	if err != nil {
		return nil, err
	}
	x.srv.Configure(zones)
	for _, z := range zones {
		zd, _ := snap.ZoneData(z.Apex)
		x.srv.Record(zd)
		if changed[z.Apex] || !x.known[z.Apex] {
			x.known[z.Apex] = true
			x.srv.Notify(z.Apex, zd.SOA.Serial)
		}
	}
	return snap, nil
}
