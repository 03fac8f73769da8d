package engine

import (
	"fmt"
	"maps"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/model"
)

// Options are the inputs of a compile besides the desired state.
type Options struct {
	Health     Health    // observed health (default NoHealth: everything up)
	Locator    Locator   // client location for geo services (nil: every client gets the default)
	Generation uint64    // set by Store
	Now        time.Time // compile time (default time.Now())
	// Notes explain administrative overrides in force, for `explain` and the
	// status page: key NoteKey(service, target) or NoteKey("", cluster).
	Notes map[string]string
	// Signers sign zones online (DNSSEC), by canonical apex; zones without
	// one are unsigned.
	Signers map[string]ZoneSigner
	// Capacity scales the weights of capacity-aware services (default
	// NoCapacity: they draw their configured weights).
	Capacity Capacity
	// Latency is the RTT table latency services are compiled with (nil:
	// nothing measured yet: they answer by weight).
	Latency LatencyTable
	// Previous is the snapshot this compile follows (nil: none). The
	// compiled form of a service whose inputs are provably the same as in
	// Previous is shared with it instead of compiled again (see reuser);
	// the answers are the same either way. The new snapshot does not keep
	// Previous.
	Previous *Snapshot
}

// NoteKey is the key of Options.Notes for an endpoint of a service, or for
// a cluster when service is "".
func NoteKey(service, target string) string {
	if service == "" {
		return "cluster " + target
	}
	return service + " " + target
}

// Compile builds a Snapshot from a normalized desired state (see
// model.Normalize). It does not modify d.
func Compile(d *model.Desired, opts Options) (*Snapshot, error) {
	if opts.Health == nil {
		opts.Health = NoHealth{}
	}
	if opts.Capacity == nil {
		opts.Capacity = NoCapacity{}
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	s := &Snapshot{
		generation: opts.Generation,
		built:      opts.Now,
		desired:    d,
		zones:      make(map[string]*zone, len(d.Zones)),
		locator:    opts.Locator,
		notes:      opts.Notes,
		health:     opts.Health,
		services:   make([]*service, len(d.Services)),
	}
	if err := s.compileECSTrust(d.Geo.ECSTrusted); err != nil {
		return nil, err
	}
	for i := range d.Zones {
		z, err := compileZone(&d.Zones[i], opts.Now)
		if err != nil {
			return nil, err
		}
		s.zones[z.apex] = z
		s.attachSigner(z, opts.Signers)
	}
	clusters := clustersByName(d.Clusters)
	reuse := newReuser(opts.Previous, d, opts, clusters)
	zs, names, err := s.compileServices(d, opts, clusters, reuse)
	if err != nil {
		return nil, err
	}
	if reuse != nil {
		s.shared = reuse.shared
	}
	if names != nil {
		reuse.shareNames(s)
	}
	if err := s.placeServices(d, zs, names, opts.Now); err != nil {
		return nil, err
	}
	if opts.Previous != nil {
		s.incremental = true
	}
	return s, nil
}

// clustersByName indexes clusters by name.
func clustersByName(clusters []model.Cluster) map[string]*model.Cluster {
	byName := make(map[string]*model.Cluster, len(clusters))
	for i := range clusters {
		byName[clusters[i].Name] = &clusters[i]
	}
	return byName
}

// compileServices compiles (or shares, see reuser) the services of d into
// s.services and returns the zone of each. The zones and the shared
// services are found in order; the services to compile anew are compiled
// on every core when there are many (see compileFresh): the result and the
// error (the first service in config order that fails) are those of a
// compile one service after the other.
//
// names is not nil when the zones' name tables can follow the previous
// snapshot's (reuser.namesShareable): it then lists the names to add,
// remove and replace there (see nameChanges). A service shared then is at
// its name already, with its TTL: its zone is not looked up (left nil).
func (s *Snapshot) compileServices(d *model.Desired, opts Options, clusters map[string]*model.Cluster, reuse *reuser) (zs []*zone, names *nameChanges, err error) {
	zs = make([]*zone, len(d.Services))
	var match *serviceMatch
	if reuse.namesShareable(d) {
		match = matchServices(reuse.prev.desired.Services, d.Services)
	}
	if match != nil {
		names = &nameChanges{removed: match.removed}
	}
	var todo []int // services to compile, in config order
	for i := range d.Services {
		ms := &d.Services[i]
		j := -1 // the previous service of the same name, when the tables follow
		if match != nil {
			if j = match.previous(i, ms.Name); j >= 0 {
				if svc := reuse.serviceAt(j, ms); svc != nil {
					s.services[i] = svc
					continue
				}
			}
		}
		z := s.zoneFor(ms.Name)
		if z == nil {
			// A service before this one may fail to compile: that error
			// comes first, as in config order.
			if err := s.compileFresh(d, opts, clusters, todo); err != nil {
				return nil, nil, err
			}
			return nil, nil, fmt.Errorf("service %s: no zone contains it", ms.Name)
		}
		zs[i] = z
		switch {
		case match == nil:
			if svc := reuse.service(i, ms); svc != nil {
				s.services[i] = svc
				continue
			}
		case j >= 0:
			names.replaced = append(names.replaced, i)
		default:
			names.added = append(names.added, i)
		}
		todo = append(todo, i)
	}
	if err := s.compileFresh(d, opts, clusters, todo); err != nil {
		return nil, nil, err
	}
	if opts.Previous != nil {
		s.fresh = todo
	}
	return zs, names, nil
}

// nameChanges is how the owner names of an incremental compile differ
// from the previous snapshot's: the services (indexes of the new desired
// state) at names it did not have, the names it had that no service has
// now, and the services compiled anew at names it had.
type nameChanges struct {
	added    []int
	removed  []string
	replaced []int
}

// serviceMatch pairs the services of a desired state with the previous
// one's of the same name. The names are unique in each (model.Validate;
// a compile fails on a name used twice), so past the longest common
// prefix and suffix of the two lists (where the positions pair) only the
// services in between are paired by name: a change of one service's name,
// or one service added or removed, costs a map of the few in between.
type serviceMatch struct {
	prefix, suffix int            // services paired by position at the start and at the end
	next, shift    int            // services now; previous index - index in the suffix
	byName         map[string]int // previous services between prefix and suffix, by name
	removed        []string       // their names no service has now
}

// matchServices returns nil when a name is used twice in next (the
// compile from scratch names the clash).
func matchServices(prev, next []model.Service) *serviceMatch {
	m := &serviceMatch{next: len(next), shift: len(prev) - len(next)}
	n := min(len(prev), len(next))
	for m.prefix < n && prev[m.prefix].Name == next[m.prefix].Name {
		m.prefix++
	}
	for m.suffix < n-m.prefix && prev[len(prev)-1-m.suffix].Name == next[len(next)-1-m.suffix].Name {
		m.suffix++
	}
	pmid, nmid := prev[m.prefix:len(prev)-m.suffix], next[m.prefix:len(next)-m.suffix]
	m.byName = make(map[string]int, len(pmid))
	for k := range pmid {
		m.byName[pmid[k].Name] = m.prefix + k
	}
	now := make(map[string]bool, len(nmid))
	for k := range nmid {
		if now[nmid[k].Name] {
			return nil
		}
		now[nmid[k].Name] = true
	}
	for k := range pmid {
		if !now[pmid[k].Name] {
			m.removed = append(m.removed, pmid[k].Name)
		}
	}
	return m
}

// previous returns the index of the previous service with the name of
// next[i], -1 when there was none.
func (m *serviceMatch) previous(i int, name string) int {
	switch {
	case i < m.prefix:
		return i
	case i >= m.next-m.suffix:
		return i + m.shift
	}
	if j, ok := m.byName[name]; ok {
		return j
	}
	return -1
}

// parallelCompileMin is the number of services to compile from which
// compileFresh uses every core (below it the goroutines cost more than
// they save, and an incremental compile usually has a handful).
var parallelCompileMin = 2048

// compileWorkers is how many goroutines compile (a variable for the tests).
var compileWorkers = func() int { return runtime.GOMAXPROCS(0) }

// compileChunk is how many services a compile worker takes at a time.
const compileChunk = 256

// compileFresh compiles the services d.Services[i] for i in todo into
// s.services[i]. compileService reads only its arguments (Health, Capacity
// and LatencyTable are read-only during a compile), so the services are
// compiled on GOMAXPROCS goroutines, each taking chunks of todo in turn.
// The error returned is the one of the first failing service in todo; a
// panic in a worker is raised again on the caller's goroutine.
func (s *Snapshot) compileFresh(d *model.Desired, opts Options, clusters map[string]*model.Cluster, todo []int) error {
	one := func(i int) error {
		ms := &d.Services[i]
		svc, err := compileService(ms, clusters, opts.Health, opts.Capacity, opts.Latency)
		if err != nil {
			return fmt.Errorf("service %s: %w", ms.Name, err)
		}
		s.services[i] = svc
		return nil
	}
	workers := min(compileWorkers(), (len(todo)+compileChunk-1)/compileChunk)
	if len(todo) < parallelCompileMin || workers < 2 {
		for _, i := range todo {
			if err := one(i); err != nil {
				return err
			}
		}
		return nil
	}
	errs, failed := compileOnWorkers(todo, workers, one)
	if !failed {
		return nil
	}
	// A worker stopped at its first error and the others at the next
	// chunk: every service before the first error in todo was compiled,
	// or its error is set; finish the ones a stop skipped, in order.
	for k, i := range todo {
		if errs[k] != nil {
			return errs[k]
		}
		if s.services[i] == nil {
			if err := one(i); err != nil {
				return err
			}
		}
	}
	return nil
}

// compileOnWorkers calls one(todo[k]) for every k on workers goroutines,
// each taking chunks of todo in turn, until a call fails. It returns the
// errors by position in todo and whether a call failed (the calls after it
// in its chunk, and the chunks not taken yet, are then skipped). A panic in
// a worker is raised again on the caller's goroutine.
func compileOnWorkers(todo []int, workers int, one func(int) error) ([]error, bool) {
	errs := make([]error, len(todo)) // by position in todo
	var (
		next     atomic.Int64
		failed   atomic.Bool
		wg       sync.WaitGroup
		panicMu  sync.Mutex
		panicked any
	)
	for range workers {
		wg.Go(func() {
			defer func() {
				if v := recover(); v != nil {
					panicMu.Lock()
					if panicked == nil {
						panicked = v
					}
					panicMu.Unlock()
					failed.Store(true)
				}
			}()
			for !failed.Load() {
				lo := int(next.Add(compileChunk)) - compileChunk
				if lo >= len(todo) {
					return
				}
				for k := lo; k < min(lo+compileChunk, len(todo)); k++ {
					if errs[k] = one(todo[k]); errs[k] != nil {
						failed.Store(true)
						break
					}
				}
			}
		})
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
	return errs, failed.Load()
}

// placeServices puts each compiled service at its name in its zone zs[i]:
// over the name tables of the previous snapshot when names is not nil
// (see reuser.shareNames), else in tables built here, with the empty
// non-terminals between the names and the apexes. A change the shared
// tables cannot take (a name that is the apex's or a nameserver's, or one
// used twice) has the tables built here too, which names a clash.
func (s *Snapshot) placeServices(d *model.Desired, zs []*zone, names *nameChanges, now time.Time) error {
	if names != nil {
		if s.placeChanges(d, zs, names) {
			return nil
		}
		for i := range d.Zones {
			fz, err := compileZone(&d.Zones[i], now)
			if err != nil {
				return err
			}
			s.zones[fz.apex].names = fz.names
		}
		for i := range zs {
			if zs[i] == nil {
				zs[i] = s.zoneFor(d.Services[i].Name) // found for the previous snapshot: not nil
			}
		}
	}
	// A service compiled here keeps its node (service.own); one shared
	// with the previous snapshot is at its node there, and gets another.
	var shared []bool
	if s.shared > 0 {
		shared = make([]bool, len(d.Services))
		for i := range shared {
			shared[i] = true
		}
		for _, i := range s.fresh {
			shared[i] = false
		}
	}
	for i := range d.Services {
		ms := &d.Services[i]
		n := zs[i].names.get(ms.Name)
		if n == nil {
			n = &node{}
			if shared == nil || !shared[i] {
				n = &s.services[i].own
			}
			n.name = ms.Name
			zs[i].names.setScratch(ms.Name, n)
		}
		if n.svc != nil || len(n.a)+len(n.aaaa) > 0 {
			return fmt.Errorf("service %s: name is already in use", ms.Name)
		}
		n.svc = s.services[i]
		n.hinfo = hinfo(ms.Name, uint32(ms.TTL))
	}
	for _, z := range s.zones {
		z.addEmptyNonTerminals()
	}
	return nil
}

// placeChanges applies names to the tables that follow the previous
// snapshot's: the removed names go first (so that a name can move from
// one service to another), then the added ones, then the services
// compiled anew at their names (a shared service is at its name already).
// It reports false when a change needs the tables built from scratch;
// what it did so far is then thrown away with the tables.
func (s *Snapshot) placeChanges(d *model.Desired, zs []*zone, names *nameChanges) bool {
	for _, name := range names.removed {
		z := s.zoneFor(name) // the same zones as the previous snapshot
		if z == nil || !z.removeName(name) {
			return false
		}
	}
	for _, i := range names.added {
		if !zs[i].addName(&d.Services[i], s.services[i]) {
			return false
		}
	}
	for _, i := range names.replaced {
		zs[i].replaceService(&d.Services[i], s.services[i])
	}
	return true
}

// compileECSTrust builds the set of sources whose ECS option is honoured
// from geo.ecs_trusted; an absent list (nil) trusts every source.
func (s *Snapshot) compileECSTrust(list []string) error {
	if list == nil {
		return nil
	}
	prefixes := make([]netip.Prefix, 0, len(list))
	for i, p := range list {
		pfx, err := netip.ParsePrefix(p)
		if err != nil {
			return fmt.Errorf("geo.ecs_trusted[%d]: %w", i, err)
		}
		prefixes = append(prefixes, pfx)
	}
	set, err := geo.NewPrefixSet(prefixes)
	if err != nil {
		return fmt.Errorf("geo.ecs_trusted: %w", err)
	}
	s.ecsTrusted = set
	return nil
}

// trustsECS reports whether the ECS option of a query from src is used.
func (s *Snapshot) trustsECS(src netip.Addr) bool {
	return s.ecsTrusted == nil || s.ecsTrusted.Contains(src)
}

// zoneFor returns the most specific zone that contains the canonical name.
func (s *Snapshot) zoneFor(name string) *zone {
	for off, end := 0, false; !end; off, end = dns.NextLabel(name, off) {
		if z, ok := s.zones[name[off:]]; ok {
			return z
		}
	}
	return nil
}

// compileZone builds a zone's SOA (serial: now when the config has none),
// its NS set with glue, and its static names (nameservers and hosts).
func compileZone(mz *model.Zone, now time.Time) (*zone, error) {
	z := &zone{apex: mz.Apex, names: newNameTable()}
	serial := mz.SOA.Serial
	if serial == 0 {
		serial = uint32(now.Unix())
	}
	z.soa = &dns.SOA{
		Hdr:     hdr(mz.Apex, dns.TypeSOA, uint32(mz.SOA.TTL)),
		Ns:      mz.SOA.MName,
		Mbox:    mz.SOA.RName,
		Serial:  serial,
		Refresh: uint32(mz.SOA.Refresh),
		Retry:   uint32(mz.SOA.Retry),
		Expire:  uint32(mz.SOA.Expire),
		Minttl:  uint32(mz.SOA.Minimum),
	}
	neg := *z.soa
	neg.Hdr.Ttl = min(z.soa.Hdr.Ttl, z.soa.Minttl)
	z.negSOA = &neg
	apex := z.ensure(mz.Apex)
	apex.apex, apex.static = true, true
	apex.hinfo = hinfo(mz.Apex, uint32(mz.SOA.TTL))
	ttl := uint32(mz.NSTTL)
	for i := range mz.Nameservers {
		z.addNameserver(&mz.Nameservers[i], ttl)
	}
	for _, h := range mz.Hosts {
		if !dns.IsSubDomain(mz.Apex, h.Name) {
			continue
		}
		n := z.ensure(h.Name)
		n.static = true
		ttl := uint32(mz.TTL)
		if n.hinfo == nil {
			n.hinfo = hinfo(h.Name, ttl)
		}
		for _, a := range h.IPv4 {
			n.a = append(n.a, &dns.A{Hdr: hdr(h.Name, dns.TypeA, ttl), A: netip.MustParseAddr(a).AsSlice()})
		}
		for _, a := range h.IPv6 {
			n.aaaa = append(n.aaaa, &dns.AAAA{Hdr: hdr(h.Name, dns.TypeAAAA, ttl), AAAA: netip.MustParseAddr(a).AsSlice()})
		}
	}
	return z, nil
}

// addNameserver adds ns to z's NS set and, when ns is inside z, its name
// with its addresses, which are also the zone's glue.
func (z *zone) addNameserver(ns *model.Nameserver, ttl uint32) {
	z.ns = append(z.ns, &dns.NS{Hdr: hdr(z.apex, dns.TypeNS, ttl), Ns: ns.Name})
	if !dns.IsSubDomain(z.apex, ns.Name) {
		return
	}
	n := z.ensure(ns.Name)
	n.static = true
	if n.hinfo == nil {
		n.hinfo = hinfo(ns.Name, ttl)
	}
	for _, a := range ns.IPv4 {
		rr := &dns.A{Hdr: hdr(ns.Name, dns.TypeA, ttl), A: netip.MustParseAddr(a).AsSlice()}
		n.a = append(n.a, rr)
		z.glue = append(z.glue, rr)
	}
	for _, a := range ns.IPv6 {
		rr := &dns.AAAA{Hdr: hdr(ns.Name, dns.TypeAAAA, ttl), AAAA: netip.MustParseAddr(a).AsSlice()}
		n.aaaa = append(n.aaaa, rr)
		z.glue = append(z.glue, rr)
	}
}

func (z *zone) ensure(name string) *node {
	n := z.names.get(name)
	if n == nil {
		n = &node{name: name}
		z.names.setScratch(name, n)
	}
	return n
}

// addEmptyNonTerminals adds every name between an owner name and the apex,
// so that such names answer NODATA rather than NXDOMAIN (RFC 8020), and
// counts in each node the owner names below it (node.below). It runs on a
// table built from scratch (all in its base), once every owner name is in.
func (z *zone) addEmptyNonTerminals() {
	for name, n := range z.names.all {
		if n.ent {
			continue // added by this loop
		}
		z.eachParent(name, func(parent string) {
			p := z.names.get(parent)
			if p == nil {
				p = &node{name: parent, ent: true}
				z.names.setScratch(parent, p)
			}
			p.below++
		})
	}
}

// eachParent calls f with each name between the owner name and the apex,
// nearest first.
func (z *zone) eachParent(name string, f func(parent string)) {
	for off, end := dns.NextLabel(name, 0); !end; off, end = dns.NextLabel(name, off) {
		parent := name[off:]
		if len(parent) <= len(z.apex) {
			return
		}
		f(parent)
	}
}

// addName puts the service svc at its name ms.Name, which the previous
// snapshot did not have, in a table that follows the previous one, with
// the empty non-terminals above it. It reports false when the name is an
// owner name of the zone already (the apex, a nameserver's, another
// service's): the table is then built from scratch. The previous nodes
// are copied, never modified.
func (z *zone) addName(ms *model.Service, svc *service) bool {
	n := node{name: ms.Name}
	if pn := z.names.get(ms.Name); pn != nil {
		if !pn.ent {
			return false
		}
		n.below = pn.below // an empty non-terminal until now
	}
	n.svc, n.hinfo = svc, hinfo(ms.Name, uint32(ms.TTL))
	z.names.setOver(ms.Name, &n)
	z.eachParent(ms.Name, func(parent string) {
		p := node{name: parent, ent: true}
		if pn := z.names.get(parent); pn != nil {
			p = *pn
		}
		p.below++
		z.names.setOver(parent, &p)
	})
	return true
}

// removeName takes the service at name, which no service has now, out of
// a table that follows the previous one: the name stays as an empty
// non-terminal while names are below it, and the empty non-terminals
// above it that have nothing below them any more go. It reports false
// for the apex's or a nameserver's name (the table is then built from
// scratch).
func (z *zone) removeName(name string) bool {
	pn := z.names.get(name)
	if pn == nil || pn.svc == nil || pn.static {
		return false
	}
	if pn.below > 0 {
		z.names.setOver(name, &node{name: name, ent: true, below: pn.below})
	} else {
		z.names.setOver(name, nil)
	}
	ok := true
	z.eachParent(name, func(parent string) {
		pp := z.names.get(parent)
		if pp == nil {
			ok = false // cannot be: every name has its parents
			return
		}
		p := *pp
		if p.below--; p.below == 0 && p.ent {
			z.names.setOver(parent, nil)
		} else {
			z.names.setOver(parent, &p)
		}
	})
	return ok
}

func hdr(name string, t uint16, ttl uint32) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: ttl}
}

func hinfo(name string, ttl uint32) dns.RR {
	return &dns.HINFO{Hdr: hdr(name, dns.TypeHINFO, ttl), Cpu: "RFC8482", Os: ""}
}

// service is a compiled global service.
type service struct {
	name     string
	strategy string
	sticky   bool // services[].sticky: subnet
	cname    bool
	noData   bool    // when_all_down: nodata
	v4, v6   []*pool // one pool per geo bucket (index 0 for non-geo); nil entry = nothing to answer
	cn       []*pool // CNAME services
	geo      *geoIndex
	lat      *latencyIndex // latency services: client location -> RTT bucket
	status   []EndpointStatus

	// A lookup reads the node, the service, its pool and records one after
	// the other: they are kept together where they can be, so that it
	// reads a few blocks of memory rather than one per step (with 10 000
	// names, each step apart is a cache miss). own is the node of the
	// compile that made the service (placeServices; own.name is "" until
	// then), pool the first family's pool when the family has one.
	own    node
	pool   pool
	pools  [1]*pool
	a      []dns.A
	aaaa   []dns.AAAA
	ipData []byte
}

// EndpointStatus is the effective state of one endpoint in a snapshot.
type EndpointStatus struct {
	Target  string // address or CNAME target
	Cluster string
	Weight  int   // configured (after operator overrides)
	State   State // observed health combined with the config's state
	Drained bool
	// Forced: an operator or the config said down (the endpoint's or its
	// cluster's state: down, e.g. meridian force down). Like Drained, it is
	// never answered, not even by fail-open; a lost heartbeat or failed
	// probes are not Forced (fail-open exists for those being wrong).
	Forced bool
	// Capacity is the ready fraction the weight is drawn with (nil: the
	// service is not capacity-aware). See DrawWeight and EffectiveWeight.
	Capacity *CapacityState
	// Doubt: answered but in doubt (DoubtHealth): answers carrying it get
	// the service's doubt_ttl.
	Doubt bool
	// Returning: down by its own health (not drained, forced down or its
	// cluster's state) but may come back soon (DoubtHealth): the answers of
	// the pools it is missing from get the service's doubt_ttl.
	Returning bool
}

// cand is one endpoint as a compile sees it.
type cand struct {
	target    string // address or CNAME target
	cluster   string
	priority  int
	weight    uint32
	available bool // not down and not drained
	held      bool // drained or forced down: an operator's "not this one", never answered
	rr        dns.RR
	rrOpen    dns.RR // the same record with the fail-open TTL
	rrDoubt   dns.RR // the same record with the doubt TTL, when it or the service has an endpoint in doubt (else nil)
	doubt     bool   // answered but in doubt: answers carrying it get rrDoubt
	returning bool   // down by its own health but may come back soon: the pools it is missing from answer rrDoubt
}

// compileService compiles one service: its endpoints' records and status,
// and each family's pools (one per geo or latency bucket).
func compileService(ms *model.Service, clusters map[string]*model.Cluster, h Health, capa Capacity, lt LatencyTable) (*service, error) {
	svc := &service{name: ms.Name, strategy: ms.Strategy, noData: ms.WhenAllDown == model.WhenAllDownNoData, sticky: ms.Sticky == model.StickySubnet}
	svc.records(ms)
	v4, v6, cn := svc.candidates(ms, clusters, h, capa)
	chains := [][]group{allGroup(ms)}
	switch ms.Strategy {
	case model.StrategyFailover:
		chains = [][]group{failoverGroups(ms)}
	case model.StrategyGeo:
		svc.geo, chains = geoBuckets(ms, clusters)
	case model.StrategyLatency:
		svc.lat = newLatencyIndex(ms, lt)
	}
	b := poolBuilder{svc: svc, ms: ms, maxAnswers: ms.MaxAnswers}
	if len(cn) > 0 {
		b.maxAnswers = 1 // a name has at most one CNAME
	}
	svc.v4, svc.v6, svc.cn = b.build(v4, chains), b.build(v6, chains), b.build(cn, chains)
	svc.cname = len(cn) > 0
	return svc, nil
}

// candidates records the status of each endpoint of ms in svc and returns
// the endpoints as candidates with their records, by family.
func (svc *service) candidates(ms *model.Service, clusters map[string]*model.Cluster, h Health, capa Capacity) (v4, v6, cn []cand) {
	ttl, openTTL, doubtTTL := uint32(ms.TTL), uint32(ms.FailOpenTTL), uint32(ms.DoubtTTL)
	returning := false
	for i := range ms.Endpoints {
		e := &ms.Endpoints[i]
		st := endpointStatus(ms, e, clusters, h, capa)
		svc.status = append(svc.status, st)
		target, drained := st.Target, st.Drained
		x := cand{target: target, cluster: e.Cluster, weight: drawWeight(*e.Weight, st.Capacity), available: st.State != Down && !drained, held: drained || st.Forced,
			doubt: st.Doubt && doubtTTL < ttl, returning: st.Returning && doubtTTL < ttl}
		returning = returning || x.returning
		if e.Priority != nil {
			x.priority = *e.Priority
		}
		if ms.Strategy == model.StrategyRoundRobin {
			x.weight = 1
		}
		dst := &v4
		switch {
		case e.CNAME != "":
			x.rr = &dns.CNAME{Hdr: hdr(ms.Name, dns.TypeCNAME, ttl), Target: e.CNAME}
			x.rrOpen = &dns.CNAME{Hdr: hdr(ms.Name, dns.TypeCNAME, openTTL), Target: e.CNAME}
			dst = &cn
		default:
			ip := netip.MustParseAddr(e.Address)
			if ip.Is4() {
				x.rr, x.rrOpen = svc.newA(ms.Name, ttl, ip), svc.newA(ms.Name, openTTL, ip)
			} else {
				x.rr, x.rrOpen = svc.newAAAA(ms.Name, ttl, ip), svc.newAAAA(ms.Name, openTTL, ip)
				dst = &v6
			}
		}
		if x.doubt {
			x.rrDoubt = withTTL(x.rr, doubtTTL)
		}
		*dst = append(*dst, x)
	}
	if returning { // every record may have to be answered with the doubt TTL (choose)
		for _, list := range [][]cand{v4, v6, cn} {
			for i := range list {
				if list[i].rrDoubt == nil {
					list[i].rrDoubt = withTTL(list[i].rr, doubtTTL)
				}
			}
		}
	}
	return v4, v6, cn
}

// withTTL is a copy of rr with the TTL given.
func withTTL(rr dns.RR, ttl uint32) dns.RR {
	c := dns.Copy(rr)
	c.Header().Ttl = ttl
	return c
}

// poolBuilder builds the pools of a service's families (compileService).
type poolBuilder struct {
	svc        *service
	ms         *model.Service
	maxAnswers int
	kept       bool // svc.pools holds a family's pools
}

// build returns the pools of one family's candidates: one per chain of
// groups (one chain per bucket; for latency the chains are made here, from
// the family's RTTs). The first family with one pool keeps it in the
// service itself. (chains is a parameter, not a field, so that it stays
// on the stack.)
func (b *poolBuilder) build(cands []cand, chains [][]group) []*pool {
	if len(cands) == 0 {
		return nil
	}
	svc := b.svc
	if svc.lat != nil { // one chain per RTT bucket, from this family's RTTs
		chains = svc.lat.chains(b.ms.Name, cands)
	}
	keep := len(chains) == 1 && !b.kept // the first family with one pool: kept in the service
	var pools []*pool
	if keep {
		b.kept, pools = true, svc.pools[:1:1]
	} else {
		pools = make([]*pool, len(chains))
	}
	for i, chain := range chains {
		pools[i] = choose(cands, chain, b.maxAnswers, svc.noData)
		if pools[i] != nil && b.ms.Sticky == model.StickySubnet {
			pools[i].makeSticky()
		}
		if p := pools[i]; p != nil && b.ms.FallbackAnswer != model.FallbackOff && p.max == 1 && !p.failOpen && !p.sticky {
			p.addFallback(cands, chain, b.ms.FallbackAnswer != model.FallbackOn) // auto, or unset (the default)
		}
	}
	if keep && pools[0] != nil {
		svc.pool = *pools[0]
		pools[0] = &svc.pool
	}
	return pools
}

// records reserves arenas in svc for the address records of ms's
// endpoints (newA, newAAAA): each endpoint has a record and its fail-open
// twin.
func (svc *service) records(ms *model.Service) {
	n4, n6 := 0, 0
	for i := range ms.Endpoints {
		if e := &ms.Endpoints[i]; e.CNAME == "" {
			if strings.Contains(e.Address, ":") {
				n6++
			} else {
				n4++
			}
		}
	}
	svc.a = make([]dns.A, 0, 2*n4)
	svc.aaaa = make([]dns.AAAA, 0, 2*n6)
	svc.ipData = make([]byte, 0, 2*(n4*net.IPv4len+n6*net.IPv6len))
}

// newA is an A record of svc, in the arena records reserved (a record of
// its own when the arena is full).
func (svc *service) newA(name string, ttl uint32, ip netip.Addr) *dns.A {
	b := ip.As4()
	return inCapacity(&svc.a, dns.A{Hdr: hdr(name, dns.TypeA, ttl), A: svc.addr(b[:])})
}

// newAAAA is newA for an AAAA record.
func (svc *service) newAAAA(name string, ttl uint32, ip netip.Addr) *dns.AAAA {
	b := ip.As16()
	return inCapacity(&svc.aaaa, dns.AAAA{Hdr: hdr(name, dns.TypeAAAA, ttl), AAAA: svc.addr(b[:])})
}

// inCapacity appends v to list when it has spare capacity (never growing
// it: the earlier elements are pointed to) and returns where v is kept.
func inCapacity[T any](list *[]T, v T) *T {
	if len(*list) == cap(*list) {
		return &v
	}
	*list = append(*list, v)
	return &(*list)[len(*list)-1]
}

// addr is a copy of the address b in the arena records reserved (of its
// own when the arena is full).
func (svc *service) addr(b []byte) []byte {
	if cap(svc.ipData)-len(svc.ipData) < len(b) {
		return slices.Clone(b)
	}
	at := len(svc.ipData)
	svc.ipData = append(svc.ipData, b...)
	return svc.ipData[at:len(svc.ipData):len(svc.ipData)]
}

// group is a set of endpoints answered together: those of the listed
// clusters (nil = every cluster), or those of one failover priority.
type group struct {
	clusters   []string
	byPriority bool
	priority   int
	byTarget   bool     // latency: the endpoints in tolerance
	targets    []string // with byTarget
}

func (g group) has(c cand) bool {
	if g.byPriority {
		return c.priority == g.priority
	}
	if g.byTarget {
		return slices.Contains(g.targets, c.target)
	}
	return g.clusters == nil || slices.Contains(g.clusters, c.cluster)
}

func allGroup(*model.Service) []group { return []group{{}} }

// failoverGroups orders the endpoints of a failover service: by cluster
// order, or by priority (lower first) when no order is given.
func failoverGroups(ms *model.Service) []group {
	if ms.Failover != nil && len(ms.Failover.Order) > 0 {
		out := make([]group, len(ms.Failover.Order))
		for i, c := range ms.Failover.Order {
			out[i] = group{clusters: []string{c}}
		}
		return out
	}
	levels := map[int]bool{}
	for _, e := range ms.Endpoints {
		levels[*e.Priority] = true
	}
	prios := slices.Sorted(maps.Keys(levels))
	out := make([]group, len(prios))
	for i, p := range prios {
		out[i] = group{byPriority: true, priority: p}
	}
	return out
}

// choose returns the pool a chain of groups answers with: the first group
// that has an available endpoint. Inside a group, endpoints with weight > 0
// are drawn by weight; weight-0 endpoints only when no weighted one is
// available (then with equal shares). When no group has an available
// endpoint the answer fails open (as if every endpoint that is not drained
// or forced down were healthy, with the fail-open TTL) or, with noData, is
// empty (nil). Fail-open never answers a drained or forced-down endpoint:
// it is for probes that may be wrong, not for an operator who said "not
// this one"; when every endpoint is drained or forced down the answer is
// empty (nil) whatever when_all_down says.
//
// An endpoint that is down but may come back soon (cand.returning) in the
// chosen group or a group before it would change the pool when it returns:
// the pool answers every record with the doubt TTL (pool.awaits names it),
// so that resolvers see the return soon. One in a later group would not.
func choose(cands []cand, chain []group, max int, noData bool) *pool {
	var awaits []string
	for _, g := range chain {
		weighted := slices.ContainsFunc(cands, func(c cand) bool { return c.available && c.weight > 0 && g.has(c) })
		for _, c := range cands {
			// A weight-0 standby's return changes nothing while a weighted
			// endpoint of its group answers.
			if c.returning && g.has(c) && !(weighted && c.weight == 0) && !slices.Contains(awaits, c.target) {
				awaits = append(awaits, c.target)
			}
		}
		if p := fromGroup(cands, g, max, func(c cand) bool { return c.available }, false, len(awaits) > 0); p != nil {
			p.awaits = awaits
			return p
		}
	}
	if noData {
		return nil
	}
	for _, g := range chain {
		if p := fromGroup(cands, g, max, func(c cand) bool { return !c.held }, true, false); p != nil {
			return p
		}
	}
	return nil
}

// fromGroup is the pool of group g's usable candidates: the weighted ones,
// else the weight-0 ones. Records in doubt carry the doubt TTL, every
// record does with short.
func fromGroup(cands []cand, g group, max int, usable func(cand) bool, failOpen, short bool) *pool {
	const noDoubt = ^uint32(0)
	for _, zeroWeight := range []bool{false, true} {
		var rrs []dns.RR
		var weights []uint32
		doubtTTL := noDoubt
		for _, c := range cands {
			if !g.has(c) || !usable(c) || (c.weight == 0) != zeroWeight {
				continue
			}
			rr, w := c.rr, c.weight
			switch {
			case failOpen:
				rr = c.rrOpen
			case c.doubt || short && c.rrDoubt != nil:
				rr = c.rrDoubt
				doubtTTL = min(doubtTTL, rr.Header().Ttl)
			}
			if zeroWeight {
				w = 1
			}
			rrs = append(rrs, rr)
			weights = append(weights, w)
		}
		if len(rrs) > 0 {
			if doubtTTL != noDoubt && max > 1 && len(rrs) > 1 {
				// A reply carries several of these records: one RRset,
				// one TTL (RFC 2181 5.2), the doubt's.
				for i, rr := range rrs {
					if rr.Header().Ttl != doubtTTL {
						rrs[i] = withTTL(rr, doubtTTL)
					}
				}
			}
			return newPool(rrs, weights, max, failOpen)
		}
	}
	return nil
}

// geoIndex maps a client location to a bucket (an index into the pools).
type geoIndex struct {
	country, region, continent          map[string]int // explicit rules
	tagCountry, tagRegion, tagContinent map[string]int // clusters' own tags
	def                                 int
}

func (g *geoIndex) bucket(loc geo.Location, found bool) int {
	if !found {
		return g.def
	}
	for _, m := range [...]struct {
		idx map[string]int
		key string
	}{
		{g.region, loc.Region}, {g.country, loc.Country}, {g.continent, loc.Continent},
		{g.tagRegion, loc.Region}, {g.tagCountry, loc.Country}, {g.tagContinent, loc.Continent},
	} {
		if m.key == "" {
			continue
		}
		if b, ok := m.idx[m.key]; ok {
			return b
		}
	}
	return g.def
}

// geoBuckets builds the geo index of a service and one chain of groups per
// bucket: the matched clusters, then the default clusters, then every cluster.
func geoBuckets(ms *model.Service, clusters map[string]*model.Cluster) (*geoIndex, [][]group) {
	g := &geoIndex{
		country: map[string]int{}, region: map[string]int{}, continent: map[string]int{},
		tagCountry: map[string]int{}, tagRegion: map[string]int{}, tagContinent: map[string]int{},
	}
	var def []string
	if ms.Geo != nil {
		def = ms.Geo.Default
	}
	var chains [][]group
	keys := map[string]int{}
	// bucketOf returns the bucket of a set of clusters, adding it (and its
	// chain) when it is new.
	bucketOf := func(set []string) int {
		set = slices.Clone(set)
		slices.Sort(set)
		set = slices.Compact(set)
		key := strings.Join(set, ",")
		if b, ok := keys[key]; ok {
			return b
		}
		chain := []group{{clusters: set}}
		if def != nil && !slices.Equal(set, def) {
			chain = append(chain, group{clusters: def})
		}
		chain = append(chain, group{})
		chains = append(chains, chain)
		keys[key] = len(chains) - 1
		return len(chains) - 1
	}
	// The default bucket first: index 0.
	if def != nil {
		g.def = bucketOf(def)
	} else {
		chains = append(chains, []group{{}})
		keys["*"] = 0
		g.def = 0
	}
	if ms.Geo != nil {
		g.ruleBuckets(ms.Geo.Rules, bucketOf)
	}
	g.tagBuckets(ms, clusters, bucketOf)
	return g, chains
}

// ruleBuckets fills g's explicit maps from the service's geo rules: each
// rule's countries, regions and continents go to the bucket of its
// clusters (bucketOf), the first rule naming one winning.
func (g *geoIndex) ruleBuckets(rules []model.GeoRule, bucketOf func([]string) int) {
	for _, r := range rules {
		b := bucketOf(r.Clusters)
		for _, c := range r.Countries {
			setIfAbsent(g.country, c, b)
		}
		for _, c := range r.Regions {
			setIfAbsent(g.region, c, b)
		}
		for _, c := range r.Continents {
			setIfAbsent(g.continent, c, b)
		}
	}
}

// tagBuckets fills g's tag maps: the clusters the service has endpoints
// in, grouped by their country, region and continent tags, each group a
// bucket (bucketOf).
func (g *geoIndex) tagBuckets(ms *model.Service, clusters map[string]*model.Cluster, bucketOf func([]string) int) {
	byTag := [3]map[string][]string{{}, {}, {}}
	seen := map[string]bool{}
	for _, e := range ms.Endpoints {
		if seen[e.Cluster] {
			continue
		}
		seen[e.Cluster] = true
		c := clusters[e.Cluster]
		for i, tag := range [3]string{c.Country, c.Region, c.Continent} {
			if tag != "" {
				byTag[i][tag] = append(byTag[i][tag], c.Name)
			}
		}
	}
	// In tag order, so that the buckets are numbered alike by every compile
	// of the service (a snapshot is a function of its inputs).
	var buf [8]string
	for i, m := range [3]map[string]int{g.tagCountry, g.tagRegion, g.tagContinent} {
		tags := buf[:0]
		for tag := range byTag[i] {
			tags = append(tags, tag)
		}
		slices.Sort(tags)
		for _, tag := range tags {
			m[tag] = bucketOf(byTag[i][tag])
		}
	}
}

// setIfAbsent sets m[k] to b unless m has k already.
func setIfAbsent(m map[string]int, k string, b int) {
	if _, ok := m[k]; !ok {
		m[k] = b
	}
}
