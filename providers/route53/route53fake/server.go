// Package route53fake is an in-process Amazon Route 53 for tests: an HTTP
// server that speaks the REST/XML wire protocol (paths, element names and
// error codes of aws-sdk-go-v2/service/route53), so the real AWS SDK client
// can be pointed at it with BaseEndpoint.
//
// Record sets (ListHostedZonesByName, ListResourceRecordSets,
// ChangeResourceRecordSets, GetChange): kept per hosted zone with Route 53's
// rules: atomic batches, CREATE of an existing set and DELETE of anything but
// the exact live set fail, one routing policy per name and type, equal TTLs
// in a weighted set, CNAME alone at its name, SetIdentifier with (and only
// with) a routing policy, weights 0..255, the 1,000-record and
// 32,000-character limits of a batch (UPSERT counted twice), paginated
// listing; a HealthCheckId must name an existing health check, a
// CidrRoutingConfig an existing collection and location ("*" is the
// default), the IP-based sets of a name and type one collection, and an
// alias into the same zone an existing target. Refused batches answer
// InvalidChangeBatch listing every failing change.
//
// Health checks (Create/Get/List/Update/DeleteHealthCheck,
// GetHealthCheckStatus): CallerReference idempotency (same reference and
// settings: the existing check; other settings, or a deleted check's
// reference: HealthCheckAlreadyExists), the HealthCheckConfig constraints of
// the API model, special-use addresses refused (Options.AllowPrivateIPs
// lifts it for loopback backends), HealthCheckVersion on update, the
// account quota (Options.MaxHealthChecks, 200), and deletion refused while a
// record set references the check (stricter than AWS; see
// Options.AllowDeleteInUse). Tags (ChangeTagsForResource,
// ListTagsForResource, ListTagsForResources): at most 10 a health check or
// hosted zone.
//
// CIDR collections (Create/List/Change/DeleteCidrCollection,
// ListCidrBlocks, ListCidrLocations): versioned changes
// (CidrCollectionVersionMismatchException), PUT and DELETE_IF_EXISTS of
// IPv4 /1-/24 and IPv6 /1-/48 blocks, at most 1,000 a request, a block in
// one location, a location records route by keeps a block
// (CidrBlockInUseException), a collection records route by or that is not
// empty stays (CidrCollectionInUseException).
//
// A health checker probes for real (CheckHealth, StartHealthChecks; see
// checker.go), SetHealth sets a status without sockets, and Resolve answers
// a simulated client as Route 53's routing policies would, honouring health
// (see Resolve). Faults (throttling, 5xx, delays, slow INSYNC) can be
// injected; calls are counted per operation and write batches logged.
// HealthChecks, CidrCollections and Records show the state; AddZone, Put,
// PutHealthCheck and PutCidrCollection seed it as another tool would have.
package route53fake

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	smithytime "github.com/aws/smithy-go/time"
)

// Operation names, as counted by Calls.
const (
	OpListHostedZonesByName    = "ListHostedZonesByName"
	OpListResourceRecordSets   = "ListResourceRecordSets"
	OpChangeResourceRecordSets = "ChangeResourceRecordSets"
	OpGetChange                = "GetChange"

	OpCreateHealthCheck    = "CreateHealthCheck"
	OpGetHealthCheck       = "GetHealthCheck"
	OpListHealthChecks     = "ListHealthChecks"
	OpUpdateHealthCheck    = "UpdateHealthCheck"
	OpDeleteHealthCheck    = "DeleteHealthCheck"
	OpGetHealthCheckStatus = "GetHealthCheckStatus"

	OpChangeTagsForResource = "ChangeTagsForResource"
	OpListTagsForResource   = "ListTagsForResource"
	OpListTagsForResources  = "ListTagsForResources"

	OpCreateCidrCollection = "CreateCidrCollection"
	OpListCidrCollections  = "ListCidrCollections"
	OpChangeCidrCollection = "ChangeCidrCollection"
	OpListCidrBlocks       = "ListCidrBlocks"
	OpListCidrLocations    = "ListCidrLocations"
	OpDeleteCidrCollection = "DeleteCidrCollection"
)

// Route 53's limits on one ChangeResourceRecordSets request.
const (
	MaxBatchRecords = 1000  // ResourceRecord elements, an UPSERT's counted twice
	MaxBatchChars   = 32000 // characters of all Value elements, an UPSERT's counted twice
)

// Options of a Server.
type Options struct {
	Faults     Faults        // injected faults (default none); SetFaults changes them later
	PendingFor time.Duration // a change reports PENDING this long after it is accepted (default 0: INSYNC at once)
	Seed       uint64        // seed of the fault dice (default 1), so runs repeat

	// AllowPrivateIPs accepts health checks of addresses Route 53 refuses:
	// private, loopback, link-local, shared, documentation, multicast and
	// other special-use ranges (RFC 5735, RFC 6598, RFC 5156). Default
	// false: refused with InvalidInput, as AWS does. Tests whose health
	// checks probe backends on loopback set it.
	AllowPrivateIPs bool
	// MaxHealthChecks is the account's quota of health checks (default
	// 200, Route 53's default); CreateHealthCheck beyond it answers
	// TooManyHealthChecks. Seeded (PutHealthCheck) checks count.
	MaxHealthChecks int
	// AllowDeleteInUse lets DeleteHealthCheck delete a check that record
	// sets still reference, as real Route 53 does (its API reference: it
	// "does not prevent you from deleting a health check even if the health
	// check is associated with one or more resource record sets"). Default
	// false: refused with HealthCheckInUse, stricter than AWS, so that an
	// adapter deleting a check before the records using it is caught.
	AllowDeleteInUse bool
	// ProbeTimeout bounds one probe of the fake's health checker: connect,
	// request and response (default 4s, the time Route 53 gives an
	// endpoint to accept the TCP connection).
	ProbeTimeout time.Duration
}

// Faults are injected before a call is served. A throttled or failed call
// changes nothing.
type Faults struct {
	Throttle    float64       // share of calls answered 400 Throttling "Rate exceeded"
	ServerError float64       // share of calls answered 500 InternalFailure
	Delay       time.Duration // every call waits this long first (cut short when the client gives up)
	Ops         []string      // operations the faults apply to (default: all)
}

// Batch is one ChangeResourceRecordSets request that reached validation.
type Batch struct {
	Zone       string    // hosted zone id
	Start, End time.Time // when the request arrived and was answered
	Changes    int       // Change elements
	Records    int       // ResourceRecord elements, UPSERT counted twice (limit 1,000)
	Chars      int       // characters of Value elements, UPSERT counted twice (limit 32,000)
	ChangeID   string    // the accepted change's id; empty when refused
	Err        string    // the error code and message when refused
}

// Server is a fake Route 53 endpoint. Its methods are safe for concurrent use.
type Server struct {
	srv *httptest.Server

	mu         sync.Mutex
	opts       Options
	faults     Faults
	dice       *rand.Rand
	zones      map[string]*zone
	changes    map[string]time.Time // change id → accepted at
	calls      map[string]int
	throttled  int
	failed     int
	batches    []Batch
	writing    int // ChangeResourceRecordSets in flight
	maxWriting int
	seq        int

	checks      map[string]*healthCheck
	deletedRefs map[string]bool // caller references of deleted health checks
	collections map[string]*cidrCollection

	rounds   sync.Mutex         // one CheckHealth round at a time
	life     context.Context    // ends at Close, ending the StartHealthChecks loops
	end      context.CancelFunc //
	checkers sync.WaitGroup     // StartHealthChecks loops
}

// New starts a server; Close it when done.
func New(opts Options) *Server {
	seed := opts.Seed
	if seed == 0 {
		seed = 1
	}
	s := &Server{
		opts: opts, faults: opts.Faults, dice: rand.New(rand.NewPCG(seed, seed)),
		zones: map[string]*zone{}, changes: map[string]time.Time{}, calls: map[string]int{},
		checks: map[string]*healthCheck{}, deletedRefs: map[string]bool{}, collections: map[string]*cidrCollection{},
	}
	s.life, s.end = context.WithCancel(context.Background())
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2013-04-01/hostedzonesbyname", s.serve(OpListHostedZonesByName, s.listZones))
	mux.HandleFunc("GET /2013-04-01/hostedzone/{id}/rrset", s.serve(OpListResourceRecordSets, s.listSets))
	mux.HandleFunc("POST /2013-04-01/hostedzone/{id}/rrset", s.serve(OpChangeResourceRecordSets, s.change))
	mux.HandleFunc("GET /2013-04-01/change/{id}", s.serve(OpGetChange, s.getChange))
	mux.HandleFunc("POST /2013-04-01/healthcheck", s.serve(OpCreateHealthCheck, s.createHealthCheck))
	mux.HandleFunc("GET /2013-04-01/healthcheck", s.serve(OpListHealthChecks, s.listHealthChecks))
	mux.HandleFunc("GET /2013-04-01/healthcheck/{id}", s.serve(OpGetHealthCheck, s.getHealthCheck))
	mux.HandleFunc("POST /2013-04-01/healthcheck/{id}", s.serve(OpUpdateHealthCheck, s.updateHealthCheck))
	mux.HandleFunc("DELETE /2013-04-01/healthcheck/{id}", s.serve(OpDeleteHealthCheck, s.deleteHealthCheck))
	mux.HandleFunc("GET /2013-04-01/healthcheck/{id}/status", s.serve(OpGetHealthCheckStatus, s.healthCheckStatus))
	mux.HandleFunc("POST /2013-04-01/tags/{type}/{id}", s.serve(OpChangeTagsForResource, s.changeTags))
	mux.HandleFunc("GET /2013-04-01/tags/{type}/{id}", s.serve(OpListTagsForResource, s.listTags))
	mux.HandleFunc("POST /2013-04-01/tags/{type}", s.serve(OpListTagsForResources, s.listTagsForResources))
	mux.HandleFunc("POST /2013-04-01/cidrcollection", s.serve(OpCreateCidrCollection, s.createCollection))
	mux.HandleFunc("GET /2013-04-01/cidrcollection", s.serve(OpListCidrCollections, s.listCollections))
	mux.HandleFunc("POST /2013-04-01/cidrcollection/{id}", s.serve(OpChangeCidrCollection, s.changeCollection))
	mux.HandleFunc("GET /2013-04-01/cidrcollection/{id}", s.serve(OpListCidrLocations, s.listLocations))
	mux.HandleFunc("GET /2013-04-01/cidrcollection/{id}/cidrblocks", s.serve(OpListCidrBlocks, s.listBlocks))
	mux.HandleFunc("DELETE /2013-04-01/cidrcollection/{id}", s.serve(OpDeleteCidrCollection, s.deleteCollection))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, "", &apiError{http.StatusBadRequest, "InvalidAction", fmt.Sprintf("the fake does not serve %s %s", r.Method, r.URL.Path)})
	})
	s.srv = httptest.NewServer(mux)
	return s
}

// URL is the endpoint to give the SDK (BaseEndpoint).
func (s *Server) URL() string { return s.srv.URL }

// Close stops the health checker loops (StartHealthChecks), waits for
// them, and stops the server.
func (s *Server) Close() {
	s.end()
	s.checkers.Wait()
	s.srv.Close()
}

// SetFaults replaces the injected faults.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
}

// AddZone creates a public hosted zone with its SOA and NS records and
// returns its id (without the /hostedzone/ prefix).
func (s *Server) AddZone(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	id := fmt.Sprintf("Z%012dFAKE%d", s.seq, s.seq%10)
	name = canonicalName(name)
	z := &zone{id: id, name: name, caller: fmt.Sprintf("fake-%d", s.seq), sets: map[setKey]RecordSet{}}
	ns := []string{"ns-1.awsdns-01.org.", "ns-2.awsdns-02.co.uk.", "ns-3.awsdns-03.com.", "ns-4.awsdns-04.net."}
	z.sets[setKey{name, "NS", ""}] = RecordSet{Name: name, Type: "NS", TTL: 172800, Values: ns}
	z.sets[setKey{name, "SOA", ""}] = RecordSet{Name: name, Type: "SOA", TTL: 900,
		Values: []string{"ns-1.awsdns-01.org. awsdns-hostmaster.amazon.com. 1 7200 900 1209600 86400"}}
	s.zones[id] = z
	return id
}

// Put stores record sets in a zone as another tool would have written them,
// without Route 53's checks. It panics on an unknown zone.
func (s *Server) Put(zoneID string, sets ...RecordSet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	z := s.mustZone(zoneID)
	for _, rs := range sets {
		rs.Name = canonicalName(rs.Name)
		rs.Values = slices.Clone(rs.Values)
		z.sets[rs.key()] = rs
	}
}

// Records returns a zone's record sets in Route 53's listing order.
func (s *Server) Records(zoneID string) []RecordSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mustZone(zoneID).sorted()
}

func (s *Server) mustZone(id string) *zone {
	z, ok := s.zones[id]
	if !ok {
		panic("route53fake: no hosted zone " + id)
	}
	return z
}

// Calls returns the number of requests per operation, faulted ones included.
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.calls))
	for k, v := range s.calls {
		out[k] = v
	}
	return out
}

// Throttled is the number of calls answered Throttling.
func (s *Server) Throttled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.throttled
}

// ServerErrors is the number of calls answered with an injected 500.
func (s *Server) ServerErrors() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// Batches returns the log of write batches that reached validation, in
// arrival order.
func (s *Server) Batches() []Batch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.batches)
}

// MaxConcurrentWrites is the most ChangeResourceRecordSets requests that
// were in flight at once (1 when writes never overlapped).
func (s *Server) MaxConcurrentWrites() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxWriting
}

type handler func(r *http.Request, reqID string) (any, *apiError)

// serve counts the call, applies the faults and writes the answer.
func (s *Server) serve(op string, h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		reqID, fault, delay := s.admit(op)
		if op == OpChangeResourceRecordSets {
			defer func() {
				s.mu.Lock()
				s.writing--
				s.mu.Unlock()
			}()
		}
		if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
			writeError(w, reqID, &apiError{http.StatusForbidden, "MissingAuthenticationToken", "Missing Authentication Token"})
			return
		}
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		if fault != nil {
			writeError(w, reqID, fault)
			return
		}
		out, err := h(r, reqID)
		if err != nil {
			writeError(w, reqID, err)
			return
		}
		if c, ok := out.(created); ok {
			w.Header().Set("Location", c.location)
			writeXML(w, reqID, http.StatusCreated, c.body)
			return
		}
		writeXML(w, reqID, http.StatusOK, out)
	}
}

// admit counts one call of op (a ChangeResourceRecordSets among the
// writes in flight, which the caller ends) and rolls the faults that apply
// to it: the request id, the error to answer instead (nil: none) and the
// delay before answering.
func (s *Server) admit(op string) (reqID string, fault *apiError, delay time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	reqID = fmt.Sprintf("fake-%08d-0000-4000-8000-000000000000", s.seq)
	s.calls[op]++
	if op == OpChangeResourceRecordSets {
		s.writing++
		s.maxWriting = max(s.maxWriting, s.writing)
	}
	f := s.faults
	if len(f.Ops) != 0 && !slices.Contains(f.Ops, op) {
		return reqID, nil, 0
	}
	switch roll := s.dice.Float64(); {
	case roll < f.Throttle:
		s.throttled++
		fault = &apiError{http.StatusBadRequest, "Throttling", "Rate exceeded"}
	case roll < f.Throttle+f.ServerError:
		s.failed++
		fault = &apiError{http.StatusInternalServerError, "InternalFailure", "An internal error occurred"}
	}
	return reqID, fault, f.Delay
}

func (s *Server) listZones(r *http.Request, _ string) (any, *apiError) {
	q := r.URL.Query()
	maxItems, aerr := maxItemsParam(q.Get("maxitems"), 100, 100)
	if aerr != nil {
		return nil, aerr
	}
	dnsName, startID := q.Get("dnsname"), q.Get("hostedzoneid")
	if startID != "" && dnsName == "" {
		return nil, invalidInput("The input is not valid: hostedzoneid requires dnsname")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	zones := make([]*zone, 0, len(s.zones))
	for _, z := range s.zones {
		zones = append(zones, z)
	}
	cmp := func(name, id string, z *zone) int {
		if c := strings.Compare(reversed(z.name), reversed(name)); c != 0 {
			return c
		}
		return strings.Compare(z.id, id)
	}
	slices.SortFunc(zones, func(a, b *zone) int { return cmp(b.name, b.id, a) })
	out := xmlZonesByNameResponse{MaxItems: maxItems}
	if dnsName != "" {
		out.DNSName = canonicalName(dnsName)
	}
	i := 0
	if dnsName != "" {
		i, _ = slices.BinarySearchFunc(zones, 0, func(z *zone, _ int) int { return cmp(canonicalName(dnsName), startID, z) })
	}
	for ; i < len(zones); i++ {
		z := zones[i]
		if len(out.HostedZones) == maxItems {
			out.IsTruncated, out.NextDNSName, out.NextHostedZoneID = true, z.name, z.id
			break
		}
		hz := xmlHostedZone{ID: "/hostedzone/" + z.id, Name: escapeName(z.name), CallerReference: z.caller, ResourceRecordSetCount: len(z.sets)}
		out.HostedZones = append(out.HostedZones, hz)
	}
	return out, nil
}

func (s *Server) listSets(r *http.Request, _ string) (any, *apiError) {
	q := r.URL.Query()
	// Route 53 returns at most 300 sets a page whatever maxitems asks.
	maxItems, aerr := maxItemsParam(q.Get("maxitems"), 100, 300)
	if aerr != nil {
		return nil, aerr
	}
	name, typ, id := q.Get("name"), q.Get("type"), q.Get("identifier")
	switch {
	case typ != "" && name == "":
		return nil, invalidInput("The input is not valid: type requires name")
	case id != "" && typ == "":
		return nil, invalidInput("The input is not valid: identifier requires type")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	z, err := s.zone(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	sets := z.sorted()
	i := 0
	if name != "" {
		start := setKey{canonicalName(name), typ, id}
		i, _ = slices.BinarySearchFunc(sets, start, func(s RecordSet, k setKey) int { return compareKeys(s.key(), k) })
	}
	out := xmlListResponse{MaxItems: maxItems}
	for ; i < len(sets); i++ {
		rs := sets[i]
		if len(out.Sets) == maxItems {
			out.IsTruncated, out.NextRecordName, out.NextRecordType, out.NextRecordIdentifier = true, escapeName(rs.Name), rs.Type, rs.SetID
			break
		}
		out.Sets = append(out.Sets, rs.toXML())
	}
	return out, nil
}

func maxItemsParam(v string, def, limit int) (int, *apiError) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, invalidInput("The input is not valid: maxitems %q", v)
	}
	return min(n, limit), nil
}

func (s *Server) zone(id string) (*zone, *apiError) {
	z, ok := s.zones[strings.TrimPrefix(id, "/hostedzone/")]
	if !ok {
		return nil, &apiError{http.StatusNotFound, "NoSuchHostedZone", "No hosted zone found with ID: " + id}
	}
	return z, nil
}

func (s *Server) change(r *http.Request, _ string) (any, *apiError) {
	start := time.Now()
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		return nil, &apiError{http.StatusBadRequest, "InvalidInput", "unreadable body: " + err.Error()}
	}
	var req xmlChangeRequest
	if err := xml.Unmarshal(body, &req); err != nil {
		return nil, invalidInput("Could not parse the request: %v", err)
	}
	changes := req.ChangeBatch.Changes
	s.mu.Lock()
	defer s.mu.Unlock()
	z, aerr := s.zone(r.PathValue("id"))
	if aerr != nil {
		return nil, aerr
	}
	records, chars := batchSize(changes)
	b := Batch{Zone: z.id, Start: start, Changes: len(changes), Records: records, Chars: chars}
	switch {
	case len(changes) == 0:
		aerr = invalidInput("1 validation error detected: Value '[]' at 'changeBatch.changes' failed to satisfy constraint: Member must have length greater than or equal to 1")
	case records > MaxBatchRecords:
		aerr = invalidChangeBatch([]string{fmt.Sprintf("Number of records limit of %d exceeded (%d ResourceRecord elements, UPSERT counted twice)", MaxBatchRecords, records)})
	case chars > MaxBatchChars:
		aerr = invalidChangeBatch([]string{fmt.Sprintf("Number of characters in Value elements limit of %d exceeded (%d, UPSERT counted twice)", MaxBatchChars, chars)})
	default:
		aerr = z.apply(changes, lookups{checks: s.checks, collections: s.collections})
	}
	var info xmlChangeInfo
	if aerr == nil {
		s.seq++
		id := fmt.Sprintf("C%012dFAKE", s.seq)
		s.changes[id] = start
		info = s.changeInfo(id, req.ChangeBatch.Comment)
		b.ChangeID = id
	} else {
		b.Err = aerr.Error()
	}
	b.End = time.Now()
	s.batches = append(s.batches, b)
	if aerr != nil {
		return nil, aerr
	}
	return xmlChangeResponse{ChangeInfo: info}, nil
}

func (s *Server) changeInfo(id, comment string) xmlChangeInfo {
	at := s.changes[id]
	status := "INSYNC"
	if time.Since(at) < s.opts.PendingFor {
		status = "PENDING"
	}
	return xmlChangeInfo{ID: "/change/" + id, Status: status, SubmittedAt: smithytime.FormatDateTime(at.UTC()), Comment: comment}
}

func (s *Server) getChange(r *http.Request, _ string) (any, *apiError) {
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.changes[id]; !ok {
		return nil, &apiError{http.StatusNotFound, "NoSuchChange", "A change with the specified change ID does not exist: " + id}
	}
	return xmlGetChangeResponse{ChangeInfo: s.changeInfo(id, "")}, nil
}
