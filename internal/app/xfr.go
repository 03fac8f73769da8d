package app

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/dnsserver"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/xfr"
)

// SerialStateEnv overrides where zone serials persist (default:
// meridian-serials.json beside the config file; the embedded demo keeps
// them in memory).
const SerialStateEnv = "MERIDIAN_SERIAL_STATE"

// xfrState is the zone transfer side of an App: the transfer server, the
// persisted serials and the TSIG keys.
type xfrState struct {
	once    sync.Once
	mu      sync.Mutex // serializes publishSnapshot
	srv     *xfr.Server
	serials *xfr.Serials
	keys    map[string]xfr.Key // last good key by file, for when a file goes bad
	known   map[string]bool    // zones notified at least once by this process
}

// serialStatePath is $MERIDIAN_SERIAL_STATE, else serials.json in the
// state directory; legacy is the older default beside the config file.
func (a *App) serialStatePath() (path, legacy string) {
	if p := os.Getenv(SerialStateEnv); p != "" {
		return p, ""
	}
	if a.opts.ConfigPath != "" {
		legacy = filepath.Join(filepath.Dir(a.opts.ConfigPath), "meridian-serials.json")
	}
	return filepath.Join(a.state, "serials.json"), legacy
}

func (a *App) xfrInit() *xfrState {
	x := &a.xfr
	x.once.Do(func() {
		x.srv = xfr.New(&a.store, xfr.Options{
			Logger:     a.log,
			Registerer: a.reg,
			Ready:      a.ready,
		})
		var err error
		path, legacy := a.serialStatePath()
		a.adopt(path, legacy, "zone serials")
		x.serials, err = xfr.OpenSerials(path)
		if err != nil {
			a.log.Warn("zone serial state unreadable: serials restart from the Unix time", "file", path, "err", err)
		}
		x.keys = map[string]xfr.Key{}
		x.known = map[string]bool{}
	})
	return x
}

// transfers is the dnsserver hook for AXFR/IXFR and TSIG-signed queries.
func (a *App) transfers() dnsserver.Transfers { return a.xfrInit().srv }

// xfrZones builds the transfer configuration of d's zones, reading the TSIG
// key files. A key file that cannot be read keeps the last good key of that
// file (so a health-driven publish never fails on it); without one the
// publish fails with the reason.
func (a *App) xfrZones(x *xfrState, d *model.Desired) ([]xfr.Zone, error) {
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
			a.log.Warn("TSIG key file unreadable: keeping the last good key", "zone", z.Apex, "file", t.TSIGKeyFile, "err", err)
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

// publishSnapshot is publishSigned with managed serials for zones that have
// transfers: it compiles once to see each zone's content, gives a zone
// whose content changed the next serial (RFC 1982; persisted, so it also
// increases across restarts), publishes with those serials in the SOA, then
// records the versions for IXFR and sends NOTIFY for the changed zones.
func (a *App) publishSnapshot(d *model.Desired, opts engine.Options) (*engine.Snapshot, error) {
	x := a.xfrInit()
	x.mu.Lock()
	defer x.mu.Unlock()
	zones, err := a.xfrZones(x, d)
	if err != nil {
		return nil, err
	}
	if len(zones) == 0 {
		x.srv.Configure(nil)
		return a.publishSigned(d, opts)
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
			a.log.Info("zone content changed: new serial", "zone", z.Apex, "serial", serial, "previous", prev.Serial, "had_previous", hadPrev)
		}
	}
	if len(changed) > 0 {
		if err := x.serials.Save(); err != nil {
			a.log.Warn("zone serials not persisted: a restart may reuse a serial", "file", x.serials.Path(), "err", err)
		}
	}
	snap, err := a.publishSigned(&withSerials, opts) // DNSSEC signers (dnssec.go), then Store.Publish
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
