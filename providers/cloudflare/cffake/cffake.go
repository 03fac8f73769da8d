// Package cffake is an in-process fake of the Cloudflare v4 API, as much of
// it as Meridian uses: zones (looked up by name or id, each carrying the
// fake's one account), DNS records (list with pagination, create, PUT,
// PATCH, delete) and Load Balancing (monitors and pools per account, load
// balancers per zone). It keeps state per zone and account and enforces
// the real rules: a CNAME shares its name with no A/AAAA/CNAME (81053) nor
// any other record (81054), identical records are refused (81057),
// content, TTL (1 or 30..86400) and proxied (A/AAAA/CNAME only) are
// validated, per_page is at most 5000; Load Balancing objects are checked
// as Cloudflare does (lb_rules.go: 1001 not found, 1002 validation failed,
// 1005 still referenced, 1002/403 without the Load Balancing entitlement).
// It checks the API token, can throttle like Cloudflare (RateLimit) or
// inject faults (Inject), counts calls, and logs every moment a name and
// type went without records between two writes (Gaps), so a test can
// prove updates left no NXDOMAIN.
//
// For acceptance tests it also plays the resolving client and the health
// monitors: Resolve answers a name as Cloudflare's steering would
// (resolve.go), CheckHealth and StartHealthChecks probe loopback origins
// for real and apply the monitors' results (health.go), SetOriginHealth
// sets them without sockets.
package cffake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"
)

// Record is a DNS record as the fake stores it (Cloudflare's stored form).
type Record struct {
	ID      string
	Name    string // lower case, no trailing dot
	Type    string
	Content string
	TTL     int // 1 = automatic
	Proxied bool

	created, modified time.Time
}

// Gap is a moment when a name had no record of a type between two writes
// that touched it: a resolver asking then got NXDOMAIN or NODATA.
type Gap struct {
	Name, Type      string
	FromWrite       int // the write that removed the last record (writes are numbered from 1)
	ToWrite         int // the write that added one back
	From, To        time.Time
	FromOp, ToOp    string // e.g. "DELETE", "POST"
	Content         string // the content of the last record removed
	ReplacedContent string // the content of the record added back
}

// Fault makes matching requests fail or wait.
type Fault struct {
	Method     string        // match this method only ("" any)
	Path       string        // match paths containing this, e.g. "/dns_records" ("" any)
	Status     int           // answer with this status (429, 500, 502, ...); 0: only Delay, then serve
	RetryAfter time.Duration // 429: the Retry-After header, in whole seconds (0: none)
	Times      int           // fire this many times, then never (0: unlimited)
	Every      int           // fire on every n-th matching request (0 or 1: each)
	From       time.Time     // fire only at or after this time of the server clock (zero: always)
	Until      time.Time     // fire only before this time of the server clock (zero: always)
	Delay      time.Duration // wait this long (real time) before answering; with Status 0 the request is served first, so a client that times out still finds its change made

	seen, fired int
}

// Server is the fake API. Its methods are safe for concurrent use.
type Server struct {
	URL string // API base URL, ending in /client/v4/

	token string
	hs    *httptest.Server

	mu      sync.Mutex
	now     func() time.Time
	zones   map[string]*zone // by id
	faults  []*Fault
	limitN  int
	limitP  time.Duration
	recent  []time.Time // request times, for RateLimit
	calls   map[string]int
	times   []time.Time // every request's time
	writes  int
	gaps    []Gap
	emptied map[[2]string]Gap // (name, type) left without records, waiting to be refilled

	acct   *account                   // the one account: monitors and pools
	lbOff  bool                       // DisableLoadBalancing
	health map[healthKey]*originState // monitor results by (pool id, origin name)
	loops  sync.WaitGroup             // StartHealthChecks loops
	stop   []context.CancelFunc       // of the loops, for Close
}

type zone struct {
	id, name string
	records  map[string]*Record       // by id
	lbs      map[string]*LoadBalancer // by id
}

// New starts a fake that accepts token as "Authorization: Bearer token".
// Close it when done.
func New(token string) *Server {
	s := &Server{token: token, now: time.Now, zones: map[string]*zone{}, calls: map[string]int{}, emptied: map[[2]string]Gap{},
		acct:   &account{id: newID(), monitors: map[string]*Monitor{}, pools: map[string]*Pool{}},
		health: map[healthKey]*originState{}}
	s.hs = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.hs.URL + "/client/v4/"
	return s
}

// Close stops the server and the StartHealthChecks loops (and waits for
// them).
func (s *Server) Close() {
	s.mu.Lock()
	stops := s.stop
	s.stop = nil
	s.mu.Unlock()
	for _, cancel := range stops {
		cancel()
	}
	s.loops.Wait()
	s.hs.Close()
}

// SetClock replaces the clock used for record times, fault windows,
// RateLimit and CallTimes (default time.Now).
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// AddZone creates a zone and returns its id.
func (s *Server) AddZone(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := newID()
	s.zones[id] = &zone{id: id, name: strings.TrimSuffix(strings.ToLower(name), "."), records: map[string]*Record{}, lbs: map[string]*LoadBalancer{}}
	return id
}

// Put adds a record to a zone as a create through the API would, with the
// same validation and conflict rules, and returns it as stored.
func (s *Server) Put(zoneID string, r Record) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, ok := s.zones[zoneID]
	if !ok {
		return Record{}, fmt.Errorf("cffake: no zone %s", zoneID)
	}
	out, err := s.create(z, r, "seed")
	if err != nil {
		return Record{}, err
	}
	return out, nil
}

// Records returns the records of a zone, sorted by name, type and content.
func (s *Server) Records(zoneID string) []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, ok := s.zones[zoneID]
	if !ok {
		return nil
	}
	return z.sorted()
}

// Inject adds a fault; faults are checked in the order they were added and
// the first that fires answers.
func (s *Server) Inject(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// RateLimit answers 429 with Retry-After, as Cloudflare does past its
// per-user limit, when a request would be the (n+1)th within period
// (n <= 0: no limit). Refused requests count too.
func (s *Server) RateLimit(n int, period time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limitN, s.limitP = n, period
}

// Calls returns how many requests matched method and a route pattern
// ("" method: any): "/zones", "/zones/{zone}", "/zones/{zone}/dns_records",
// "/zones/{zone}/dns_records/{id}", "/zones/{zone}/load_balancers",
// "/zones/{zone}/load_balancers/{id}",
// "/accounts/{account}/load_balancers/monitors",
// "/accounts/{account}/load_balancers/monitors/{id}",
// "/accounts/{account}/load_balancers/pools" or
// "/accounts/{account}/load_balancers/pools/{id}". Requests to other paths
// are counted under their path.
func (s *Server) Calls(method, route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, c := range s.calls {
		m, r, _ := strings.Cut(k, " ")
		if (method == "" || m == method) && r == route {
			n += c
		}
	}
	return n
}

// WriteCalls is the number of POST, PUT, PATCH and DELETE requests to the
// DNS record and Load Balancing routes, refused ones included.
func (s *Server) WriteCalls() int {
	n := 0
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		for _, r := range []string{"/zones/{zone}/dns_records", "/zones/{zone}/dns_records/{id}",
			routeLBs, routeLB, routeMonitors, routeMonitor, routePools, routePool} {
			n += s.Calls(m, r)
		}
	}
	return n
}

// CallTimes returns the server-clock time of every request, in order.
func (s *Server) CallTimes() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.times)
}

// Gaps returns every moment a (name, type) had no record between two
// writes, in order.
func (s *Server) Gaps() []Gap {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.gaps)
}

func (z *zone) sorted() []Record {
	out := make([]Record, 0, len(z.records))
	for _, r := range z.records {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Record) int {
		return strings.Compare(a.Type+" "+a.Name+" "+a.Content+" "+a.ID, b.Type+" "+b.Name+" "+b.Content+" "+b.ID)
	})
	return out
}

func (z *zone) list() []*Record {
	out := make([]*Record, 0, len(z.records))
	for _, r := range z.records {
		out = append(out, r)
	}
	return out
}

func (z *zone) count(name, typ string) int {
	n := 0
	for _, r := range z.records {
		if r.Name == name && r.Type == typ {
			n++
		}
	}
	return n
}

// create validates and stores r. Callers hold s.mu.
func (s *Server) create(z *zone, r Record, how string) (Record, *apiErr) {
	if err := normalize(&r, z.name); err != nil {
		return Record{}, err
	}
	if err := conflict(r, z.list(), ""); err != nil {
		return Record{}, err
	}
	r.ID = newID()
	r.created, r.modified = s.now(), s.now()
	s.write(z, how, nil, &r, func() { z.records[r.ID] = &r })
	return r, nil
}

// write numbers a write and applies it, logging gaps: old is the record
// before (nil for a create), nu after (nil for a delete).
func (s *Server) write(z *zone, how string, old, nu *Record, apply func()) {
	s.writes++
	type nt = [2]string
	var touched []nt
	before := map[nt]int{}
	for _, r := range []*Record{old, nu} {
		if r != nil && !slices.Contains(touched, nt{r.Name, r.Type}) {
			touched = append(touched, nt{r.Name, r.Type})
			before[nt{r.Name, r.Type}] = z.count(r.Name, r.Type)
		}
	}
	apply()
	for _, k := range touched {
		after := z.count(k[0], k[1])
		switch {
		case before[k] > 0 && after == 0:
			g := Gap{Name: k[0], Type: k[1], FromWrite: s.writes, From: s.now(), FromOp: how}
			if old != nil {
				g.Content = old.Content
			}
			s.emptied[k] = g
		case after > 0:
			if g, ok := s.emptied[k]; ok {
				g.ToWrite, g.To, g.ToOp = s.writes, s.now(), how
				if nu != nil {
					g.ReplacedContent = nu.Content
				}
				s.gaps = append(s.gaps, g)
				delete(s.emptied, k)
			}
		}
	}
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
