package engine

import (
	"cmp"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/model"
)

// Explanation is why a snapshot answers a question the way it does: the
// answer Respond would give now and the path to it. It is built from the
// same compiled pools the query path draws from (see Explain).
type Explanation struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Zone     string `json:"zone"`  // apex of the answering zone; "" = not ours (REFUSED)
	Rcode    string `json:"rcode"` // NOERROR, NXDOMAIN, REFUSED
	Service  string `json:"service,omitempty"`
	Strategy string `json:"strategy,omitempty"`
	// Client is who asks and where they are.
	Client *ExplainClient `json:"client,omitempty"` // nil in chain steps
	// Bucket describes, for a geo service, which clusters the client's
	// location prefers and what matched.
	Bucket     string             `json:"bucket,omitempty"`
	Candidates []ExplainCandidate `json:"candidates"`
	// Latency is, for a latency service, the RTT table behind the answer.
	Latency *ExplainLatency `json:"latency,omitempty"`
	// Answer is every record this name may answer with now (presentation
	// format). A weighted pool is drawn per query: each reply carries Picks
	// of these records (0 = all of them).
	Answer    []string `json:"answer"`
	Picks     int      `json:"picks,omitempty"`
	Authority []string `json:"authority,omitempty"` // negative answers: the zone's SOA
	FailOpen  bool     `json:"fail_open"`
	Notes     []string `json:"notes"`
	// Chain explains each CNAME target in our zones that the answer may
	// point to (the reply then carries that target's answer too).
	Chain []Explanation `json:"chain,omitempty"`
	// Sticky is set for a service with sticky: subnet: the client network
	// the answer is keyed on and the records that network gets.
	Sticky *ExplainSticky `json:"sticky,omitempty"`
	// EDE is the Extended DNS Error (RFC 8914) a reply to a query with
	// EDNS carries (fail-open, REFUSED); nil: none.
	EDE *ExplainEDE `json:"ede,omitempty"`
}

// ExplainSticky is the sticky part of an Explanation.
type ExplainSticky struct {
	// Network is the client network the answer is keyed on (the /24 or
	// /56 of the ECS subnet or source address); "" without a client address.
	Network string `json:"network"`
	// Answer is what every query from that network gets now, best score
	// first (presentation format).
	Answer []string `json:"answer"`
}

// ExplainClient is the client part of an Explanation.
type ExplainClient struct {
	Addr      string `json:"addr,omitempty"`
	Bits      int    `json:"bits,omitempty"`
	Source    string `json:"source"` // "ecs" (subnet given), "client" (source address), "none"
	Located   bool   `json:"located"`
	Region    string `json:"region,omitempty"`
	Country   string `json:"country,omitempty"`
	Continent string `json:"continent,omitempty"`
	LocatedBy string `json:"located_by,omitempty"` // "custom map", "mmdb" or ""
	Network   string `json:"network,omitempty"`    // the block in which every address gets the same location
	// UsedForAnswer is true when the answer depends on the location (a geo service).
	UsedForAnswer bool `json:"used_for_answer"`
	Scope         int  `json:"scope"` // ECS scope prefix length of the reply (sent only to ECS queries)
}

// ExplainCandidate is one endpoint of the service and what became of it.
type ExplainCandidate struct {
	Target  string  `json:"target"`
	Cluster string  `json:"cluster"`
	Weight  int     `json:"weight"`
	Share   float64 `json:"share"` // percent of the chosen pool (first record of a reply); 0 when not in it
	State   string  `json:"state"` // decided health: up, down, unknown
	Drained bool    `json:"drained"`
	Kept    bool    `json:"kept"`
	Why     string  `json:"why"`
	Note    string  `json:"note,omitempty"` // administrative notes on the endpoint and its cluster
	// Score is, for a sticky service, the candidate's weighted rendezvous
	// score for the client's network (weight / -ln(hash)); the highest
	// scores answer. Rank is its place (1 = best); 0 when not in the pool.
	Score float64 `json:"score,omitempty"`
	Rank  int     `json:"rank,omitempty"`
	// Capacity is the ready fraction the weight is drawn with and why
	// (capacity-aware services only), and EffectiveWeight the configured
	// weight × that fraction.
	Capacity        *CapacityState `json:"capacity,omitempty"`
	EffectiveWeight *float64       `json:"effective_weight,omitempty"`
	// InDoubt: answered but not settled (a failed probe being re-checked,
	// down votes short of a decision, a failure within the flap window):
	// answers carrying it get the service's doubt_ttl.
	InDoubt bool `json:"in_doubt,omitempty"`
	// Returning: down but may come back soon (down less than the flap
	// window, or its hold-down ends within it): the answers it is missing
	// from get the service's doubt_ttl.
	Returning bool `json:"returning,omitempty"`
}

// Explain tells what the snapshot answers for qname/qtype asked by client,
// and why. ecs marks client as an EDNS Client Subnet (as does client.HasECS).
// It is pure: it reads the same compiled data as Lookup but draws nothing.
func (s *Snapshot) Explain(qname string, qtype uint16, client Client, ecs bool) Explanation {
	qname = dns.Fqdn(strings.ToLower(qname))
	c := ExplainClient{Source: "none"}
	switch {
	case ecs || client.HasECS:
		c.Source = "ecs"
	case client.Addr.IsValid():
		c.Source = "client"
	}
	var loc geo.Location
	var located bool
	if client.Addr.IsValid() {
		c.Addr, c.Bits = client.Addr.String(), client.Bits
		if s.locator != nil {
			loc, located = s.locator.Lookup(client.Addr)
		}
	}
	if located {
		c.Located = true
		c.Region, c.Country, c.Continent = loc.Region, loc.Country, loc.Continent
		switch loc.Origin {
		case geo.OriginNetworks:
			c.LocatedBy = "custom map"
		case geo.OriginMMDB:
			c.LocatedBy = "mmdb"
		}
	}
	if loc.Prefix.IsValid() {
		c.Network = loc.Prefix.String()
	}
	x := &explainer{s: s, client: client, loc: loc, located: located, ecs: ecs || client.HasECS}
	e := x.step(qname, qtype, 0)
	c.UsedForAnswer = x.geoUsed
	if x.geoUsed {
		c.Scope = client.Bits
		if loc.Prefix.IsValid() {
			c.Scope = loc.Prefix.Bits()
		}
	}
	c.Scope = max(c.Scope, x.stickyScope)
	e.Client = &c
	e.Notes = append(x.clientNotes(c), e.Notes...)
	setExplainEDE(&e, qtype)
	return e
}

type explainer struct {
	s       *Snapshot
	client  Client
	loc     geo.Location
	located bool
	geoUsed bool
	ecs     bool // client is an ECS subnet
	// stickyScope is the ECS scope a sticky answer needs (0: none).
	stickyScope int
}

func (x *explainer) clientNotes(c ExplainClient) []string {
	var where string
	switch c.Source {
	case "ecs":
		where = "client subnet " + c.Addr + "/" + fmt.Sprint(c.Bits) + " (ECS)"
	case "client":
		where = "client " + c.Addr + " (source address, no ECS)"
	default:
		where = "no client address given"
	}
	switch {
	case c.Located:
		by := c.LocatedBy
		if by == "" {
			by = "the locator"
		}
		where += " located by " + by + " as " + place(c.Region, c.Country, c.Continent)
		if c.Network != "" {
			where += " (network " + c.Network + ")"
		}
	case c.Source != "none":
		where += " not located (neither the custom map nor the mmdb holds it)"
	}
	if !c.UsedForAnswer && c.Source != "none" {
		where += "; the answer does not depend on the location"
	}
	notes := []string{where}
	if c.UsedForAnswer && c.Source == "ecs" {
		notes = append(notes, fmt.Sprintf("ECS scope /%d: every client in that block gets this answer", c.Scope))
	}
	if c.Source == "ecs" && x.s.ecsTrusted != nil {
		notes = append(notes, fmt.Sprintf("geo.ecs_trusted lists %d networks: this subnet is used only in queries from them; "+
			"from any other source the source address decides and the ECS scope is 0", x.s.ecsTrusted.Len()))
	}
	return notes
}

func place(region, country, continent string) string {
	var parts []string
	for _, p := range [][2]string{{"region", region}, {"country", country}, {"continent", continent}} {
		if p[1] != "" {
			parts = append(parts, p[0]+" "+p[1])
		}
	}
	if len(parts) == 0 {
		return "nowhere"
	}
	return strings.Join(parts, ", ")
}

func typeName(t uint16) string {
	if n, ok := dns.TypeToString[t]; ok {
		return n
	}
	return fmt.Sprintf("TYPE%d", t)
}

func present(rr dns.RR) string { return strings.ReplaceAll(rr.String(), "\t", " ") }

func presentAll(rrs []dns.RR) []string {
	out := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		out = append(out, present(rr))
	}
	return out
}

// step explains one name, following answer() in lookup.go.
func (x *explainer) step(name string, qtype uint16, depth int) Explanation {
	s := x.s
	e := Explanation{Name: name, Type: typeName(qtype), Rcode: "NOERROR", Answer: []string{}, Candidates: []ExplainCandidate{}}
	z, n := s.find(name)
	if z == nil {
		e.Rcode = dns.RcodeToString[dns.RcodeRefused]
		e.Notes = append(e.Notes, name+" is in no zone served here: REFUSED")
		return e
	}
	e.Zone = z.apex
	if n == nil {
		e.Rcode = dns.RcodeToString[dns.RcodeNameError]
		e.Authority = []string{present(z.negSOA)}
		e.Notes = append(e.Notes, fmt.Sprintf("%s does not exist in zone %s: NXDOMAIN with the zone's SOA (negative TTL %d)", name, z.apex, z.negSOA.Hdr.Ttl))
		return e
	}
	if qtype == dns.TypeANY {
		if n.hasData() {
			e.Answer = []string{present(n.hinfo)}
			e.Notes = append(e.Notes, "ANY is answered with a single HINFO record (RFC 8482)")
		} else {
			x.noData(&e, z, "the name has no records")
		}
		return e
	}
	svc := n.svc
	if svc != nil {
		e.Service, e.Strategy = svc.name, svc.strategy
	}
	if svc != nil && svc.cname {
		x.cnameStep(&e, z, svc, qtype, depth)
	} else {
		x.dataStep(&e, z, n, qtype)
	}
	return e
}

// cnameStep explains the answer of the CNAME service svc at a name of z
// into e, and follows the kept targets that are ours (as chase does).
func (x *explainer) cnameStep(e *Explanation, z *zone, svc *service, qtype uint16, depth int) {
	x.service(e, svc, svc.cn, qtype)
	if len(e.Answer) == 0 {
		x.noData(e, z, allDownWhy(svc, "CNAME target"))
		return
	}
	if qtype == dns.TypeCNAME {
		return
	}
	if depth+1 > maxCNAMEChain {
		e.Notes = append(e.Notes, "the CNAME chain is too long: it is not followed further")
		return
	}
	for _, c := range e.Candidates {
		if !c.Kept || (e.Sticky != nil && c.Rank > len(e.Sticky.Answer)) {
			continue // a sticky answer points at its own target only
		}
		if x.s.zoneFor(c.Target) == nil {
			e.Notes = append(e.Notes, fmt.Sprintf("CNAME target %s is outside our zones: the resolver follows it", c.Target))
			continue
		}
		next := x.step(c.Target, qtype, depth+1)
		if next.Rcode != "NOERROR" {
			e.Notes = append(e.Notes, fmt.Sprintf("CNAME target %s gives %s: a reply pointing there has that rcode", c.Target, next.Rcode))
		}
		e.Chain = append(e.Chain, next)
	}
}

// dataStep explains the answer at node n of z (not a CNAME service) into
// e: a service's addresses, the static records of the apex or a
// nameserver's name, or NODATA.
func (x *explainer) dataStep(e *Explanation, z *zone, n *node, qtype uint16) {
	svc := n.svc
	var static []dns.RR
	var fam []*pool // the service's pools of the asked family (nil: it has none)
	switch qtype {
	case dns.TypeA:
		if svc != nil {
			fam = svc.v4
			x.service(e, svc, svc.v4, qtype)
		}
		static = n.a
	case dns.TypeAAAA:
		if svc != nil {
			fam = svc.v6
			x.service(e, svc, svc.v6, qtype)
		}
		static = n.aaaa
	case dns.TypeSOA:
		if n.apex {
			static = []dns.RR{z.soa}
		}
	case dns.TypeNS:
		if n.apex {
			static = z.ns
			e.Notes = append(e.Notes, "the zone's nameservers, with glue in the additional section")
		}
	default:
		if svc != nil {
			x.service(e, svc, nil, qtype)
		}
	}
	if len(static) > 0 {
		e.Answer = append(e.Answer, presentAll(static)...)
		if qtype == dns.TypeA || qtype == dns.TypeAAAA {
			e.Notes = append(e.Notes, "static address of a nameserver host (glue), always answered")
		}
	}
	if len(e.Answer) == 0 {
		why := "the name has no " + e.Type + " records"
		switch {
		case svc != nil && len(e.Candidates) > 0 && e.Type != "A" && e.Type != "AAAA":
			why = "a service name only has A and AAAA records"
		case fam != nil:
			why = allDownWhy(svc, "endpoint")
		}
		x.noData(e, z, why)
	}
}

// allDownWhy says why svc, which has endpoints (each a what), answers
// nothing: when_all_down is nodata, or every endpoint is down and none may
// be answered by fail-open (drained or forced down).
func allDownWhy(svc *service, what string) string {
	if svc.noData {
		return "every " + what + " is down and when_all_down is nodata"
	}
	return "every " + what + " is down, drained or forced down, and fail-open never answers a drained or forced-down one"
}

func (x *explainer) noData(e *Explanation, z *zone, why string) {
	e.Authority = []string{present(z.negSOA)}
	e.Picks = 0
	e.Notes = append(e.Notes, fmt.Sprintf("NODATA: %s (empty answer with the zone's SOA, negative TTL %d)", why, z.negSOA.Hdr.Ttl))
}

// explained is one endpoint with the compile-time facts about it.
type explained struct {
	ep        *model.Endpoint
	st        EndpointStatus
	c         cand // cluster, priority, weight, available, drained (no records)
	family    uint16
	available bool
	poolIdx   int    // index in the chosen pool, -1 if not in it
	note      string // administrative notes (endpoint, cluster)
}

// serviceFacts is what explaining one service's answer works out, step by
// step (see explainer.service).
type serviceFacts struct {
	ms       *model.Service
	svc      *service
	clusters map[string]*model.Cluster
	qtype    uint16 // the query type
	family   uint16 // the type of the records that answer it (CNAME for a CNAME service)
	p        *pool  // the pool the query path draws from (nil: none)
	bucket   int    // p's geo or latency bucket
	chain    []group
	eps      []explained
	latWhy   map[string]string // latency notes by target
	// gi is the group of chain the pool came from (-1: none); zeroMode:
	// the pool holds weight-0 endpoints.
	gi       int
	zeroMode bool
}

// service explains the candidates of svc for one family's pools (nil: the
// query type has no endpoints at all).
func (x *explainer) service(e *Explanation, svc *service, pools []*pool, qtype uint16) {
	ms := x.s.modelService(svc)
	if ms == nil {
		e.Notes = append(e.Notes, "internal: the service's config is missing from the snapshot")
		return
	}
	f := &serviceFacts{ms: ms, svc: svc, clusters: clustersByName(x.s.desired.Clusters), qtype: qtype, family: qtype}
	if svc.cname {
		f.family = dns.TypeCNAME
	}
	f.p, f.bucket = x.drawnPool(svc, pools)
	f.chain = x.groupChain(e, ms, f.clusters)
	f.eps = x.explainEndpoints(svc, ms)
	if svc.lat != nil {
		var fam []cand
		for _, ep := range f.eps {
			if ep.family == f.family {
				fam = append(fam, ep.c)
			}
		}
		f.chain, e.Latency, f.latWhy = x.latency(svc, fam, f.bucket)
		e.Bucket = latencyBucketText(e.Latency)
	}
	f.placeInPool()
	f.poolGroup()
	var st stickyRanking
	if f.p != nil && f.p.sticky {
		st = x.stickyRanking(f.p)
	}
	var total uint32
	if f.p != nil {
		total = f.p.total()
	}
	for i := range f.eps {
		e.Candidates = append(e.Candidates, x.candidate(f, &f.eps[i], total, &st))
	}
	if ms.Capacity != nil {
		e.Notes = append(e.Notes, capacityNote(ms))
	}
	if f.p == nil {
		return
	}
	x.answerNotes(e, f, st)
	if f.p.failOpen {
		e.Notes = append(e.Notes, f.failOpenNote())
	}
}

// drawnPool returns the pool of pools the query path draws from for the
// explained client, exactly as draw() picks it, and its bucket.
func (x *explainer) drawnPool(svc *service, pools []*pool) (*pool, int) {
	if len(pools) == 0 {
		return nil, 0
	}
	bucket := 0
	switch {
	case svc.geo != nil:
		x.geoUsed = true
		bucket = svc.geo.bucket(x.loc, x.located)
	case svc.lat != nil:
		x.geoUsed = true
		bucket = svc.lat.bucket(x.loc, x.located)
	}
	return pools[bucket], bucket
}

// groupChain returns the chain of groups the pool was chosen from (same
// functions as the compile; for geo the bucket index is looked up again in
// a fresh index because tag buckets are numbered in map order), and for geo
// says in e which bucket the client falls in.
func (x *explainer) groupChain(e *Explanation, ms *model.Service, clusters map[string]*model.Cluster) []group {
	switch ms.Strategy {
	case model.StrategyFailover:
		return failoverGroups(ms)
	case model.StrategyGeo:
		g, chains := geoBuckets(ms, clusters)
		b, bucketHow := g.explainBucket(x.loc, x.located)
		chain := chains[b]
		e.Bucket = bucketHow + ": prefers clusters " + groupClusters(chain[0])
		if len(chain) > 2 {
			e.Bucket += ", then the default clusters " + groupClusters(chain[1])
		}
		e.Bucket += ", then any cluster"
		return chain
	}
	return allGroup(ms)
}

// explainEndpoints returns every endpoint of ms with its status in svc,
// its family and the candidate the compile made of it.
func (x *explainer) explainEndpoints(svc *service, ms *model.Service) []explained {
	eps := make([]explained, len(ms.Endpoints))
	for i := range ms.Endpoints {
		ep := &ms.Endpoints[i]
		st := svc.status[i]
		fam := dns.TypeCNAME
		if ep.CNAME == "" {
			fam = dns.TypeAAAA
			if netip.MustParseAddr(ep.Address).Is4() {
				fam = dns.TypeA
			}
		}
		c := cand{target: st.Target, cluster: ep.Cluster, weight: drawWeight(st.Weight, st.Capacity), held: st.Drained || st.Forced, available: st.State != Down && !st.Drained}
		if ep.Priority != nil {
			c.priority = *ep.Priority
		}
		if ms.Strategy == model.StrategyRoundRobin {
			c.weight = 1
		}
		eps[i] = explained{ep: ep, st: st, c: c, family: fam, available: c.available, poolIdx: -1}
		eps[i].note = x.note(svc.name, eps[i])
	}
	return eps
}

// placeInPool sets the pool index of every endpoint whose record is in the
// drawn pool.
func (f *serviceFacts) placeInPool() {
	if f.p == nil {
		return
	}
	for j, rr := range f.p.rrs {
		for i := range f.eps {
			if f.eps[i].family == f.family && f.eps[i].poolIdx < 0 && rrTarget(rr, f.eps[i].st.Target) {
				f.eps[i].poolIdx = j
				break
			}
		}
	}
}

// poolGroup works out which group of the chain the pool came from, and in
// which mode (with weight-0 endpoints or not).
func (f *serviceFacts) poolGroup() {
	f.gi = -1
	for _, ep := range f.eps {
		if ep.poolIdx < 0 {
			continue
		}
		if g := firstGroup(f.chain, ep.c); f.gi < 0 || (g >= 0 && g < f.gi) {
			f.gi = g
		}
		if ep.c.weight == 0 {
			f.zeroMode = true
		}
	}
}

// candidate explains one endpoint: kept in the pool (with its share, and
// for a sticky pool its score and rank from st) or why not. total is the
// pool's total weight.
func (x *explainer) candidate(f *serviceFacts, ep *explained, total uint32, st *stickyRanking) ExplainCandidate {
	ms, p := f.ms, f.p
	ec := ExplainCandidate{Target: ep.st.Target, Cluster: ep.st.Cluster, Weight: ep.st.Weight, State: ep.st.State.String(), Drained: ep.st.Drained, InDoubt: ep.st.Doubt, Returning: ep.st.Returning}
	ec.Note = ep.note
	if cp := ep.st.Capacity; cp != nil {
		c, eff := *cp, ep.st.EffectiveWeight()
		ec.Capacity, ec.EffectiveWeight = &c, &eff
	}
	switch {
	case ep.family != f.family:
		ec.Why = fmt.Sprintf("%s endpoint: answers %s queries, not %s", typeName(ep.family), typeName(ep.family), typeName(f.qtype))
	case ep.poolIdx >= 0:
		ec.Kept = true
		if total > 0 {
			ec.Share = math.Round(1000*float64(p.weights[ep.poolIdx])/float64(total)) / 10
		}
		ec.Why = x.keptWhy(ms, *ep, f.chain, f.gi, p.failOpen, f.zeroMode) + capacityWhy(ep.st, ms.Strategy)
		if p.sticky {
			ec.Score, ec.Rank = math.Round(1000*st.scores[ep.poolIdx])/1000, st.rank[ep.poolIdx]
		}
		if w := f.latWhy[ep.st.Target]; w != "" && !p.failOpen {
			ec.Why += "; " + w
		}
	case p == nil && f.svc.noData:
		ec.Why = x.downWhy(*ep, f.clusters) + "; when_all_down is nodata"
	case p == nil && ep.c.held && ep.family == f.family:
		ec.Why = x.downWhy(*ep, f.clusters) + "; fail-open never answers an endpoint that is drained or forced down"
	default:
		ec.Why = x.droppedWhy(ms, *ep, f.chain, f.gi, p != nil && p.failOpen, f.zeroMode, f.clusters)
		if w := f.latWhy[ep.st.Target]; w != "" && ep.available && ep.family == f.family {
			ec.Why = w
		}
	}
	return ec
}

// answerNotes puts the drawn pool's records in e's answer and says how many
// of them a reply carries and how they are chosen.
func (x *explainer) answerNotes(e *Explanation, f *serviceFacts, st stickyRanking) {
	p := f.p
	e.Answer = append(e.Answer, presentAll(p.rrs)...)
	e.FailOpen = p.failOpen
	ttl := p.rrs[0].Header().Ttl
	switch {
	case p.sticky:
		if p.max < len(p.rrs) {
			e.Picks = p.max
		}
		x.stickyNotes(e, p, st, ttl)
	case len(p.rrs) == 1:
		e.Notes = append(e.Notes, fmt.Sprintf("one candidate is left: every reply carries it (TTL %d)", ttl))
	case p.max >= len(p.rrs):
		e.Notes = append(e.Notes, fmt.Sprintf("every reply carries all %d kept records (max_answers %d, TTL %d)", len(p.rrs), f.ms.MaxAnswers, ttl))
	case p.max == 1:
		e.Picks = 1
		e.Notes = append(e.Notes, fmt.Sprintf("each reply carries one of the %d kept records, drawn by weight (the shares above; TTL %d)", len(p.rrs), ttl))
	default:
		e.Picks = p.max
		e.Notes = append(e.Notes, fmt.Sprintf("each reply carries %d of the %d kept records: the first drawn by share, each next by weight among the rest (TTL %d)", p.max, len(p.rrs), ttl))
	}
	if p.fb != nil {
		var fbs []string
		for i, rr := range p.fb.rrs {
			fbs = append(fbs, rrTargetString(rr)+" ("+p.fb.owner[i]+")")
		}
		mode := cmp.Or(f.ms.FallbackAnswer, model.FallbackAuto)
		e.Notes = append(e.Notes, "fallback_answer "+mode+": each reply also carries, second, one available address of another cluster than the first's, drawn by weight from the first group that has one: "+
			strings.Join(fbs, ", ")+"; a client whose first address refuses connections moves to it without asking DNS again")
	}
	if m := p.fbMoved; m != nil {
		e.Notes = append(e.Notes, fmt.Sprintf("fallback_answer auto: no fallback address: behind a resolver that shuffles records, a second address would move %s's share of first addresses from %s to %s (set fallback_answer: on to add it anyway)",
			m.Target, sharePercent(m.Set), sharePercent(m.Shuffled)))
	}
	if p.failOpen {
		return
	}
	var doubted []string
	for _, ep := range f.eps {
		if ep.poolIdx >= 0 && ep.st.Doubt && ep.family == f.family {
			doubted = append(doubted, ep.st.Target)
		}
	}
	if len(p.awaits) > 0 {
		e.Notes = append(e.Notes, fmt.Sprintf("out but may come back soon (down less than decision.flap_window, or its hold-down ends within it): %s; every reply has TTL %d (doubt_ttl) instead of %d, so resolvers see its return soon",
			strings.Join(p.awaits, ", "), f.ms.DoubtTTL, f.ms.TTL))
	}
	if len(doubted) > 0 && f.ms.DoubtTTL < f.ms.TTL {
		how := "replies carrying it have TTL %d (doubt_ttl) instead of %d, so resolvers ask again soon"
		if p.max > 1 && len(p.rrs) > 1 {
			how = "every reply has TTL %d (doubt_ttl, one TTL per RRset) instead of %d, so resolvers ask again soon"
		}
		e.Notes = append(e.Notes, fmt.Sprintf("in doubt (a failed probe being re-checked, down votes short of a decision, or a failure within the flap window): %s; "+how,
			strings.Join(doubted, ", "), f.ms.DoubtTTL, f.ms.TTL))
	}
}

// failOpenNote says why a fail-open pool answers and with what.
func (f *serviceFacts) failOpenNote() string {
	cause, what := "every endpoint is down", "the endpoints"
	for _, ep := range f.eps {
		if ep.family == f.family && ep.c.held {
			cause = "every endpoint is down, drained or forced down"
			what = "the endpoints that are not drained or forced down (an operator's \"not this one\" holds)"
		}
	}
	if f.gi >= 0 && len(f.chain) > 1 {
		what += " of " + groupName(f.ms, f.chain, f.gi)
	}
	return fmt.Sprintf("%s: fail-open answers %s as if healthy, with TTL %d", cause, what, f.ms.FailOpenTTL)
}

// modelService returns the config of a compiled service (same index).
func (s *Snapshot) modelService(svc *service) *model.Service {
	i := slices.Index(s.services, svc)
	if i < 0 || s.desired == nil || i >= len(s.desired.Services) || s.desired.Services[i].Name != svc.name {
		return nil
	}
	return &s.desired.Services[i]
}

// rrTarget reports whether a compiled record answers target.
func rrTarget(rr dns.RR, target string) bool {
	switch r := rr.(type) {
	case *dns.A:
		a, ok := netip.AddrFromSlice(r.A.To4())
		t, err := netip.ParseAddr(target)
		return ok && err == nil && a == t.Unmap()
	case *dns.AAAA:
		a, ok := netip.AddrFromSlice(r.AAAA)
		t, err := netip.ParseAddr(target)
		return ok && err == nil && a == t
	case *dns.CNAME:
		return strings.EqualFold(r.Target, target)
	}
	return false
}

func firstGroup(chain []group, c cand) int {
	for i, g := range chain {
		if g.has(c) {
			return i
		}
	}
	return -1
}

func groupClusters(g group) string {
	if g.clusters == nil {
		return "(any)"
	}
	return "[" + strings.Join(g.clusters, " ") + "]"
}

// groupName describes group i of a service's chain.
func groupName(ms *model.Service, chain []group, i int) string {
	g := chain[i]
	switch ms.Strategy {
	case model.StrategyFailover:
		if g.byPriority {
			return fmt.Sprintf("failover priority %d", g.priority)
		}
		return fmt.Sprintf("failover group %d (cluster %s)", i+1, strings.Join(g.clusters, " "))
	case model.StrategyGeo:
		switch {
		case i == 0:
			return "the client's geo bucket " + groupClusters(g)
		case g.clusters == nil:
			return "the any-cluster fallback"
		default:
			return "the default clusters " + groupClusters(g)
		}
	}
	return "the pool"
}

func (x *explainer) note(service string, ep explained) string {
	var parts []string
	if n := x.s.Note(service, ep.st.Target); n != "" {
		parts = append(parts, n)
	}
	if n := x.s.Note("", ep.st.Cluster); n != "" {
		parts = append(parts, "cluster "+ep.st.Cluster+": "+n)
	}
	return strings.Join(parts, "; ")
}

func withNote(why, note string) string {
	if note == "" {
		return why
	}
	return why + " (note: " + note + ")"
}

// downWhy says why an unavailable endpoint is out.
func (x *explainer) downWhy(ep explained, clusters map[string]*model.Cluster) string {
	c := clusters[ep.ep.Cluster]
	note := ep.note
	switch {
	case ep.ep.State == model.StateDown:
		return withNote("forced down administratively (state: down)", note)
	case c != nil && c.State == model.StateDown:
		return withNote("cluster "+c.Name+" is forced down administratively (state: down)", note)
	case ep.st.State == Down:
		return withNote("down by decision", note)
	case ep.ep.Drain:
		return withNote("drained (drain: true)", note)
	case c != nil && c.Drain:
		return withNote("cluster "+c.Name+" is drained", note)
	case ep.st.Drained:
		return withNote("drained", note)
	}
	return "available"
}

func (x *explainer) keptWhy(ms *model.Service, ep explained, chain []group, gi int, failOpen, zeroMode bool) string {
	var why string
	switch {
	case failOpen:
		why = "kept by fail-open: every endpoint is down or drained"
		if ep.st.State == Down {
			why += " (this one is down too)"
		}
	case ep.st.State == Up:
		why = "up"
	default:
		why = "health unknown, counts as up"
	}
	if ms.Strategy == model.StrategyFailover || ms.Strategy == model.StrategyGeo {
		if gi == 0 {
			why += "; in " + groupName(ms, chain, gi)
			if ms.Strategy == model.StrategyFailover {
				why += ", the first group with an available endpoint"
			}
		} else if gi > 0 {
			why += "; " + groupName(ms, chain, gi) + ": the groups before it have nothing available"
		}
	}
	if zeroMode && ms.Strategy != model.StrategyRoundRobin {
		if cp := ep.st.Capacity; cp != nil && cp.Percent == 0 && ep.st.Weight > 0 {
			why += "; ready 0 %, answered because no endpoint of its group with ready capacity is available"
		} else {
			why += "; weight 0 standby, answered because every weighted endpoint of its group is out"
		}
	}
	if ms.Strategy == model.StrategyRoundRobin {
		why += "; round robin, equal share"
	}
	return why
}

func (x *explainer) droppedWhy(ms *model.Service, ep explained, chain []group, gi int, failOpen, zeroMode bool, clusters map[string]*model.Cluster) string {
	j := firstGroup(chain, ep.c)
	if j < 0 {
		return "cluster " + ep.st.Cluster + " is not in the failover order: never answered"
	}
	if !failOpen && !ep.available {
		return x.downWhy(ep, clusters)
	}
	if failOpen && ep.c.held {
		return x.downWhy(ep, clusters) + "; fail-open never answers an endpoint that is drained or forced down"
	}
	if gi >= 0 && j > gi {
		switch ms.Strategy {
		case model.StrategyFailover:
			return "lower priority group (" + groupName(ms, chain, j) + "); " + groupName(ms, chain, gi) + " has an available endpoint"
		case model.StrategyGeo:
			if j > 0 && gi == 0 {
				return "not in the client's geo bucket " + groupClusters(chain[0])
			}
			return "not in " + groupName(ms, chain, gi) + ", which has an available endpoint"
		}
	}
	if ep.c.weight == 0 && !zeroMode {
		if cp := ep.st.Capacity; cp != nil && cp.Percent == 0 && ep.st.Weight > 0 {
			return "ready 0 %: answered only when no endpoint of its group with ready capacity is available (" + cp.Source + ": " + cp.Why + ")"
		}
		return "weight 0 standby: answered only when every weighted endpoint of its group is out"
	}
	return "not in the chosen pool"
}

// explainBucket is bucket with the reason: it checks the same maps in the
// same order.
func (g *geoIndex) explainBucket(loc geo.Location, found bool) (int, string) {
	if !found {
		return g.def, "client not located: default bucket"
	}
	for _, m := range [...]struct {
		idx       map[string]int
		key, what string
	}{
		{g.region, loc.Region, "rule for region"}, {g.country, loc.Country, "rule for country"}, {g.continent, loc.Continent, "rule for continent"},
		{g.tagRegion, loc.Region, "clusters in region"}, {g.tagCountry, loc.Country, "clusters in country"}, {g.tagContinent, loc.Continent, "clusters on continent"},
	} {
		if m.key == "" {
			continue
		}
		if b, ok := m.idx[m.key]; ok {
			return b, m.what + " " + m.key
		}
	}
	return g.def, "no rule or cluster tag matches " + place(loc.Region, loc.Country, loc.Continent) + ": default bucket"
}
