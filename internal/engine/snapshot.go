// Package engine compiles the desired state and the decided health into an
// immutable, query-optimised Snapshot and answers DNS questions from it.
//
// A Snapshot is built once per change (config reload, health change) and
// published through an atomic pointer (see Store). The query path reads it
// without locks; for a weighted A answer it allocates nothing, because every
// record is built at compile time and a draw only picks pointers.
//
// The embedded server (internal/dnsserver) and the CoreDNS plugin both answer
// through (*Snapshot).Respond: there is exactly one implementation of
// answering.
package engine

import (
	"net/netip"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/model"
)

// Locator finds where a client is. *geo.Locator implements it.
type Locator interface {
	Lookup(addr netip.Addr) (geo.Location, bool)
}

// Snapshot is one compiled, immutable view of the desired state and health.
// All methods are safe for concurrent use.
type Snapshot struct {
	generation uint64
	built      time.Time
	desired    *model.Desired
	zones      map[string]*zone // by canonical apex
	locator    Locator
	services   []*service // in config order, for status views
	notes      map[string]string
	signed     bool // some zone is signed (see sign.go)
	// ecsTrusted holds the sources whose ECS option is used (geo.ecs_trusted);
	// nil: every source's.
	ecsTrusted *geo.PrefixSet
	health     Health // what the services were compiled with (for Options.Previous)
	shared     int    // services shared with Options.Previous
	// incremental: compiled after Options.Previous; fresh are the indexes
	// of the services compiled (not shared) then.
	incremental bool
	fresh       []int
}

type zone struct {
	apex   string
	soa    *dns.SOA // as served for SOA queries
	negSOA *dns.SOA // TTL = min(SOA TTL, minimum), for negative answers
	ns     []dns.RR
	glue   []dns.RR // A/AAAA of in-zone nameservers, for the additional section
	names  nameTable
	signer ZoneSigner // nil: unsigned
	dnskey []dns.RR   // the DNSKEY RRset of a signed zone
	// cds and cdnskey are the CDS and CDNSKEY RRsets of a signed zone
	// (RFC 7344): its secure entry keys, for parents that poll them; the
	// same keys and digest a provider writes as the DS (dnssec.DSSet).
	cds, cdnskey []dns.RR
}

// node is an owner name that exists in a zone.
type node struct {
	name string
	apex bool
	// static: the apex or a nameserver's name (compileZone), not a
	// service's; ent: an empty non-terminal, there only because names
	// are below it. below counts the names other than empty
	// non-terminals below this one: an incremental compile adds and
	// removes empty non-terminals by it (see zone.addName).
	static bool
	ent    bool
	below  int32
	svc    *service
	a      []dns.RR // static A (nameserver hosts)
	aaaa   []dns.RR // static AAAA (nameserver hosts)
	hinfo  dns.RR   // RFC 8482 answer to ANY
}

func (n *node) hasData() bool {
	return n.apex || n.svc != nil || len(n.a)+len(n.aaaa) > 0
}

// DNSKEY returns the DNSKEY RRset the zone with the canonical apex serves:
// nil when the zone is not signed or not in the snapshot. Callers must not
// modify it.
func (s *Snapshot) DNSKEY(apex string) []dns.RR {
	if z := s.zones[apex]; z != nil {
		return z.dnskey
	}
	return nil
}

// Generation counts snapshots published by one process; it increases by one
// with every compile of a Store.
func (s *Snapshot) Generation() uint64 { return s.generation }

// Note returns the administrative note on an endpoint of a service (or on
// a cluster with service ""), "" when none.
func (s *Snapshot) Note(service, target string) string { return s.notes[NoteKey(service, target)] }

// SharedServices is how many compiled services the snapshot shares with
// the snapshot it followed (Options.Previous); the others were compiled.
func (s *Snapshot) SharedServices() int { return s.shared }

// Built is when the snapshot was compiled.
func (s *Snapshot) Built() time.Time { return s.built }

// Desired is the desired state the snapshot was compiled from. Callers must
// not modify it.
func (s *Snapshot) Desired() *model.Desired { return s.desired }

// Zones returns the canonical apexes of the snapshot's zones.
func (s *Snapshot) Zones() []string {
	out := make([]string, 0, len(s.zones))
	for apex := range s.zones {
		out = append(out, apex)
	}
	return out
}

// ServiceStatus is the effective state of one service in a snapshot.
type ServiceStatus struct {
	Name      string
	Strategy  string
	Endpoints []EndpointStatus
}

// Services returns the state of every service, in config order.
func (s *Snapshot) Services() []ServiceStatus {
	out := make([]ServiceStatus, len(s.services))
	for i, svc := range s.services {
		out[i] = svc.statusOf()
	}
	return out
}

// Recompiled returns the state of the services the snapshot compiled
// rather than shared with the snapshot it followed (Options.Previous), in
// config order: every service when it followed none. A service not in it
// has the same state in both snapshots.
func (s *Snapshot) Recompiled() []ServiceStatus {
	if !s.incremental {
		return s.Services()
	}
	out := make([]ServiceStatus, len(s.fresh))
	for i, k := range s.fresh {
		out[i] = s.services[k].statusOf()
	}
	return out
}

// Service returns the state of the service with the canonical name, ok
// false when the snapshot has none.
func (s *Snapshot) Service(name string) (st ServiceStatus, ok bool) {
	z := s.zoneFor(name)
	if z == nil {
		return st, false
	}
	n := z.names.get(name)
	if n == nil || n.svc == nil {
		return st, false
	}
	return n.svc.statusOf(), true
}

func (svc *service) statusOf() ServiceStatus {
	return ServiceStatus{Name: svc.name, Strategy: svc.strategy, Endpoints: svc.status}
}
