package cloudflare

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
)

// Operations of the Load Balancing requests, also the metric operation names.
const (
	opGetZone       = "get_zone"
	opListMonitors  = "list_monitors"
	opCreateMonitor = "create_monitor"
	opUpdateMonitor = "update_monitor"
	opDeleteMonitor = "delete_monitor"
	opListPools     = "list_pools"
	opCreatePool    = "create_pool"
	opUpdatePool    = "update_pool"
	opDeletePool    = "delete_pool"
	opListLBs       = "list_load_balancers"
	opCreateLB      = "create_load_balancer"
	opUpdateLB      = "update_load_balancer"
	opDeleteLB      = "delete_load_balancer"
)

var _ providers.ObjectSyncer = (*Provider)(nil)

// lbZone is what one pass of PrepareObjects settled for a zone, for Desired
// (which names the load balancers serve) and CollectObjects (what to delete).
type lbZone struct {
	active   bool            // load balancers are in use this pass
	served   map[string]bool // service FQDNs a load balancer of ours serves (or, in a dry run, would)
	zoneID   string
	account  string
	lbs      []LoadBalancer // the zone's load balancers after the pass (dry run: as planned)
	pools    []Pool         // the account's pools after the pass
	monitors []Monitor      // the account's monitors after the pass
	wantLB   map[string]bool
	wantPool map[string]bool
	monitor  map[string]string // desired monitor key -> the id kept
}

func (p *Provider) lbEnabled() bool {
	return p.opts.LoadBalancing == model.LoadBalancingRequired || p.opts.LoadBalancing == model.LoadBalancingPreferred
}

// served reports the names load balancers serve in zone (nil: none).
func (p *Provider) served(zone string) map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st := p.lbZones[model.CanonicalName(zone)]; st != nil && st.active {
		return st.served
	}
	return nil
}

// PrepareObjects creates and updates, in that order, the monitors, pools and
// load balancers the views need (load_balancing required or preferred).
// Only objects marked with the owner id are changed; a load balancer name
// or pool name held by someone else's object is a failed change and that
// service keeps its plain records. When Cloudflare answers that the
// account has no Load Balancing, required fails the sync and preferred
// carries on with plain records (ObjectResult.Notice).
//
// With load_balancing off, the first pass of the process looks for our
// objects left from an earlier setting: a load balancer of ours would hide
// the plain records of its name, so they are written first and
// CollectObjects then deletes every object of ours in the zone. Later
// passes make no request.
func (p *Provider) PrepareObjects(ctx context.Context, zone string, views []providers.ServiceView, dryRun bool) (providers.ObjectResult, error) {
	var res providers.ObjectResult
	zone = model.CanonicalName(zone)
	cleanup := !p.lbEnabled()
	p.mu.Lock()
	done := p.lbCleaned[zone]
	p.mu.Unlock()
	if cleanup && done {
		return res, nil
	}
	st := &lbZone{served: map[string]bool{}, wantLB: map[string]bool{}, wantPool: map[string]bool{}, monitor: map[string]string{}}
	p.mu.Lock()
	p.lbZones[zone] = st // inactive until the lists succeed
	p.mu.Unlock()

	var err error
	if st.zoneID, err = p.zoneID(ctx, zone); err != nil {
		return res, err
	}
	if st.account, err = p.accountID(ctx, st.zoneID); err != nil {
		return res, err
	}
	err = p.listObjects(ctx, st)
	switch {
	case cleanup && err != nil:
		p.leftoversUnlisted(zone, err)
		return res, nil
	case notEntitled(err):
		return p.unentitled(zone, err)
	case err != nil:
		return res, fmt.Errorf("zone %s: list load balancing objects: %w", zone, err)
	}
	var specs []LBSpec
	if !cleanup {
		specs = p.translateLB(zone, views)
	}
	s := &lbSync{p: p, st: st, zone: zone, cz: cfName(zone), dry: dryRun, res: &res}
	err = s.prepare(ctx, specs)
	p.mu.Lock()
	st.active = true
	p.mu.Unlock()
	return res, err
}

// listObjects reads the zone's load balancers and the account's pools and
// monitors into st, stopping at the first list that fails.
func (p *Provider) listObjects(ctx context.Context, st *lbZone) error {
	if err := list(ctx, p, opListLBs, &st.lbs, func(ctx context.Context) ([]LoadBalancer, error) { return p.api.ListLoadBalancers(ctx, st.zoneID) }); err != nil {
		return err
	}
	if err := list(ctx, p, opListPools, &st.pools, func(ctx context.Context) ([]Pool, error) { return p.api.ListPools(ctx, st.account) }); err != nil {
		return err
	}
	return list(ctx, p, opListMonitors, &st.monitors, func(ctx context.Context) ([]Monitor, error) { return p.api.ListMonitors(ctx, st.account) })
}

// list makes the list request op, its answer stored in dst.
func list[T any](ctx context.Context, p *Provider, op string, dst *[]T, call func(context.Context) ([]T, error)) error {
	_, err := p.do(ctx, op, func(ctx context.Context) error {
		var err error
		*dst, err = call(ctx)
		return err
	})
	return err
}

// leftoversUnlisted handles a failed look for leftovers (load_balancing
// off), which never fails a plain-records sync. An account without Load
// Balancing has nothing of ours; a token without the Load Balancing
// permissions cannot see (nor have made) any: both are final. An outage is
// tried on the next pass.
func (p *Provider) leftoversUnlisted(zone string, err error) {
	var ae *APIError
	if notEntitled(err) || (errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 && ae.Status != http.StatusTooManyRequests) {
		p.mu.Lock()
		p.lbCleaned[zone] = true
		p.mu.Unlock()
		p.log.Info("cloudflare: no load balancing objects to look for leftovers in", "zone", zone, "reason", err)
		return
	}
	p.log.Warn("cloudflare: could not look for leftover load balancers; trying again on the next sync", "zone", zone, "err", err)
}

// translateLB records that zone's account has Load Balancing and returns
// the load balancers of the views, logging each translation warning once.
func (p *Provider) translateLB(zone string, views []providers.ServiceView) []LBSpec {
	p.entitled(zone, true, nil)
	specs, warnings := TranslateLB(views, zone, LBOptions{Owner: p.opts.OwnerID, TTL: p.opts.TTL, Proxied: p.opts.Proxied, Backstop: p.opts.Backstop})
	for _, w := range warnings {
		p.warnOnce(w)
	}
	return specs
}

// CollectObjects deletes, in that order, our load balancers no service
// needs any more, our pools no load balancer of the zone refers to, and our
// monitors no pool refers to (Cloudflare refuses to delete a referenced
// pool or monitor). Only objects of this zone (by their mark) are deleted.
func (p *Provider) CollectObjects(ctx context.Context, zone string, dryRun bool) (providers.ObjectResult, error) {
	var res providers.ObjectResult
	zone = model.CanonicalName(zone)
	p.mu.Lock()
	st := p.lbZones[zone]
	p.mu.Unlock()
	if st == nil || !st.active {
		return res, nil
	}
	s := &lbSync{p: p, st: st, zone: zone, cz: cfName(zone), dry: dryRun, res: &res}
	err := s.collect(ctx)
	if err == nil && !dryRun && !p.lbEnabled() && res.Failed() == 0 {
		p.mu.Lock()
		p.lbCleaned[zone] = true
		delete(p.lbZones, zone)
		p.mu.Unlock()
	}
	return res, err
}

// accountID returns the account of the zone's pools and monitors: the
// configured one, else the zone's (looked up once).
func (p *Provider) accountID(ctx context.Context, zoneID string) (string, error) {
	if p.opts.AccountID != "" {
		return p.opts.AccountID, nil
	}
	p.mu.Lock()
	id, ok := p.accounts[zoneID]
	p.mu.Unlock()
	if ok {
		return id, nil
	}
	_, err := p.do(ctx, opGetZone, func(ctx context.Context) error {
		var err error
		id, err = p.api.ZoneAccountID(ctx, zoneID)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("zone %s: look up its account: %w", zoneID, err)
	}
	if id == "" {
		return "", fmt.Errorf("zone %s: Cloudflare named no account for it: set account_id", zoneID)
	}
	p.mu.Lock()
	p.accounts[zoneID] = id
	p.mu.Unlock()
	return id, nil
}

// notEntitled reports whether err is Cloudflare saying the account or zone
// has no Load Balancing: HTTP 403 with code 1002 ("load balancing not
// enabled for zone"), not the token's 403 (10000).
func notEntitled(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusForbidden || ae.HasCode(CodeAuthentication) {
		return false
	}
	if ae.HasCode(CodeLBNotEntitled) {
		return true
	}
	for _, d := range ae.Errors {
		if m := strings.ToLower(d.Message); strings.Contains(m, "load balancing") && (strings.Contains(m, "not enabled") || strings.Contains(m, "entitle")) {
			return true
		}
	}
	return false
}

// unentitled handles an account without Load Balancing (see PrepareObjects).
func (p *Provider) unentitled(zone string, cause error) (providers.ObjectResult, error) {
	p.entitled(zone, false, cause)
	if p.opts.LoadBalancing == model.LoadBalancingRequired {
		return providers.ObjectResult{}, fmt.Errorf("zone %s: load_balancing is required, but Cloudflare answers that the account has no Load Balancing (%v): "+
			"enable Load Balancing for the account, or set load_balancing: preferred to write plain records until it is", zone, cause)
	}
	return providers.ObjectResult{Notice: fmt.Sprintf("the Cloudflare account has no Load Balancing: plain DNS records are written (load_balancing: preferred), "+
		"so weights and geo steering are not applied; load balancers replace them on the first sync after Load Balancing is enabled (%v)", cause)}, nil
}

// entitled records whether zone's account has Load Balancing: the metric,
// and a warning or info log when it changes.
func (p *Provider) entitled(zone string, yes bool, cause error) {
	v := 0.0
	if yes {
		v = 1
	}
	p.lbGauge.WithLabelValues(zone).Set(v)
	p.mu.Lock()
	prev, known := p.lbEntitled[zone]
	p.lbEntitled[zone] = yes
	p.mu.Unlock()
	if known && prev == yes {
		return
	}
	switch {
	case !yes:
		p.log.Warn("cloudflare: the account has no Load Balancing", "zone", zone, "load_balancing", p.opts.LoadBalancing, "err", cause)
	case known:
		p.log.Warn("cloudflare: Load Balancing is available again: load balancers replace the plain records", "zone", zone)
	default:
		p.log.Info("cloudflare: load balancing in use", "zone", zone)
	}
}

// warnOnce logs a translation warning the first time it is seen.
func (p *Provider) warnOnce(w string) {
	p.mu.Lock()
	seen := p.warned[w]
	p.warned[w] = true
	p.mu.Unlock()
	if !seen {
		p.log.Warn("cloudflare: load balancing: " + w)
	}
}

// lbSync is one PrepareObjects or CollectObjects pass.
type lbSync struct {
	p    *Provider
	st   *lbZone
	zone string // canonical
	cz   string // as Cloudflare writes it
	dry  bool
	res  *providers.ObjectResult
	seq  int // placeholder ids of dry-run creates

	names map[string]string // pool id -> name (details of load balancer changes)
}

// write makes one write request. A refusal is reported as a failed change
// (ok false, err nil); an outage, the token or ctx ending stop the pass
// (err). In a dry run nothing is sent and ok is true.
func (s *lbSync) write(ctx context.Context, op string, c providers.ObjectChange, fn func(context.Context) error) (bool, error) {
	if s.dry {
		s.res.Changes = append(s.res.Changes, c)
		return true, nil
	}
	n, err := s.p.do(ctx, op, fn)
	s.res.Calls += n
	if err == nil {
		s.res.Changes = append(s.res.Changes, c)
		return true, nil
	}
	if errors.Is(err, providers.ErrTransient) || isAuth(err) || !isAPIError(err) {
		return false, fmt.Errorf("%s %s %s: %w", op, c.Kind, c.Name, err)
	}
	c.Err = fmt.Errorf("%s %s: %w", op, c.Name, err)
	s.res.Changes = append(s.res.Changes, c)
	if n == 1 || c.Op != "create" { // a retried create may have met its own first attempt: the caller looks
		s.refused(c)
	}
	return false, nil
}

// writeObject is write for a request whose answer is the object written
// (got: zero when refused, or in a dry run).
func writeObject[T any](ctx context.Context, s *lbSync, op string, c providers.ObjectChange, call func(context.Context) (T, error)) (got T, ok bool, err error) {
	ok, err = s.write(ctx, op, c, func(ctx context.Context) error {
		var err error
		got, err = call(ctx)
		return err
	})
	return got, ok, err
}

func (s *lbSync) refused(c providers.ObjectChange) {
	s.p.log.Warn("cloudflare: load balancing change refused", "zone", s.zone, "kind", c.Kind, "object", c.Name, "op", c.Op, "err", c.Err)
}

func (s *lbSync) placeholder(kind string) string {
	s.seq++
	return fmt.Sprintf("(new %s %d)", kind, s.seq)
}

// prepare writes the monitors, pools and load balancers of specs, in that
// order, leaving out the services whose names are held by others.
func (s *lbSync) prepare(ctx context.Context, specs []LBSpec) error {
	lbByName := map[string]int{}
	for i, lb := range s.st.lbs {
		lbByName[strings.ToLower(lb.Name)] = i
	}
	poolByName := map[string]int{}
	for i, pl := range s.st.pools {
		poolByName[pl.Name] = i
	}
	todo := s.claim(specs, lbByName, poolByName)
	if err := s.monitors(ctx, todo); err != nil {
		return err
	}
	failedPools, err := s.pools(ctx, todo, poolByName)
	if err != nil {
		return err
	}
	s.names = map[string]string{} // pool id -> name, for details
	for _, pl := range s.st.pools {
		s.names[pl.ID] = pl.Name
	}
	for _, sp := range todo {
		if err := s.loadBalancer(ctx, sp, lbByName, poolByName, failedPools); err != nil {
			return err
		}
	}
	return nil
}

// claim returns the specs whose load balancer and pool names are free or
// ours, and marks their objects wanted; a name held by an object that is
// not ours is a conflict, and its service keeps plain records.
func (s *lbSync) claim(specs []LBSpec, lbByName, poolByName map[string]int) []LBSpec {
	owner := s.p.opts.OwnerID
	var todo []LBSpec
	for _, sp := range specs {
		name := sp.LoadBalancer.Name
		if i, ok := lbByName[name]; ok && !ours(s.st.lbs[i].Description, owner, s.cz) {
			s.conflict(providers.KindLoadBalancer, name, s.st.lbs[i].Description)
			continue
		}
		clash := false
		for _, pl := range sp.Pools {
			if i, ok := poolByName[pl.Name]; ok && !ours(s.st.pools[i].Description, owner, s.cz) {
				s.conflict(providers.KindPool, pl.Name, s.st.pools[i].Description)
				clash = true
			}
		}
		if clash {
			continue
		}
		todo = append(todo, sp)
		s.st.wantLB[name] = true
		for _, pl := range sp.Pools {
			s.st.wantPool[pl.Name] = true
		}
	}
	return todo
}

// pools writes the pools of specs, each referring to the monitor kept for
// it, and returns the names of those Cloudflare refused.
func (s *lbSync) pools(ctx context.Context, specs []LBSpec, poolByName map[string]int) (map[string]bool, error) {
	failed := map[string]bool{}
	for _, sp := range specs {
		for _, want := range sp.Pools {
			if want.Monitor != "" {
				want.Monitor = s.st.monitor[want.Monitor] // "" when the monitor could not be made
			}
			ok, err := s.pool(ctx, want, poolByName)
			if err != nil {
				return nil, err
			}
			if !ok {
				failed[want.Name] = true
			}
		}
	}
	return failed, nil
}

func (s *lbSync) conflict(kind, name, desc string) {
	who := "no Meridian mark"
	if m := mark(desc); m != nil {
		who = fmt.Sprintf("owner %s, zone %s", m["owner"], m["zone"])
	}
	s.res.Changes = append(s.res.Changes, providers.ObjectChange{Kind: kind, Name: name, Op: "create",
		Err: fmt.Errorf("%s %s exists and is not ours (%s; we are owner %s): left alone, the service keeps plain records", kind, name, who, s.p.opts.OwnerID)})
	s.p.log.Warn("cloudflare: load balancing object not written: not ours", "zone", s.zone, "kind", kind, "object", name, "holder", who)
}

// monitors creates or repairs the desired monitors and fills st.monitor.
func (s *lbSync) monitors(ctx context.Context, specs []LBSpec) error {
	byKey := map[string][]int{}
	for i, m := range s.st.monitors {
		if ours(m.Description, s.p.opts.OwnerID, s.cz) {
			if k := mark(m.Description)["monitor"]; k != "" {
				byKey[k] = append(byKey[k], i)
			}
		}
	}
	used := map[string]bool{}
	for _, pl := range s.st.pools {
		used[pl.Monitor] = true
	}
	for _, sp := range specs {
		ms := sp.Monitor
		if ms == nil {
			continue
		}
		if _, done := s.st.monitor[ms.Key]; done {
			continue
		}
		cands := byKey[ms.Key]
		if len(cands) == 0 {
			if err := s.createMonitor(ctx, ms.Key, ms.Monitor); err != nil {
				return err
			}
			continue
		}
		// Duplicates (a create retried after a lost answer): keep one a pool
		// uses, else the first; CollectObjects deletes the others.
		keep := cands[0]
		for _, i := range cands {
			if used[s.st.monitors[i].ID] {
				keep = i
				break
			}
		}
		if err := s.updateMonitor(ctx, ms.Key, keep, ms.Monitor); err != nil {
			return err
		}
	}
	return nil
}

// createMonitor creates the monitor want, known by key in st.monitor.
func (s *lbSync) createMonitor(ctx context.Context, key string, want Monitor) error {
	c := providers.ObjectChange{Kind: providers.KindMonitor, Name: key, Op: "create", Detail: monitorSummary(want)}
	got, ok, err := writeObject(ctx, s, opCreateMonitor, c, func(ctx context.Context) (Monitor, error) { return s.p.api.CreateMonitor(ctx, s.st.account, want) })
	if err != nil || !ok {
		return err
	}
	if s.dry {
		got = want
		got.ID = s.placeholder("monitor")
	}
	s.st.monitors = append(s.st.monitors, got)
	s.st.monitor[key] = got.ID
	return nil
}

// updateMonitor keeps the monitor st.monitors[keep] for key and brings it
// up to want.
func (s *lbSync) updateMonitor(ctx context.Context, key string, keep int, want Monitor) error {
	cur := s.st.monitors[keep]
	s.st.monitor[key] = cur.ID
	diff := monitorDiff(cur, want)
	if diff == "" {
		return nil
	}
	want.ID = cur.ID
	c := providers.ObjectChange{Kind: providers.KindMonitor, Name: key, Op: "update", Detail: diff}
	got, ok, err := writeObject(ctx, s, opUpdateMonitor, c, func(ctx context.Context) (Monitor, error) { return s.p.api.UpdateMonitor(ctx, s.st.account, want) })
	if err != nil {
		return err
	}
	if ok && !s.dry {
		s.st.monitors[keep] = got
	}
	return nil
}

// pool creates or updates one pool; false when Cloudflare refused it.
func (s *lbSync) pool(ctx context.Context, want Pool, byName map[string]int) (bool, error) {
	if i, exists := byName[want.Name]; exists {
		return s.updatePool(ctx, i, want)
	}
	c := providers.ObjectChange{Kind: providers.KindPool, Name: want.Name, Op: "create", Detail: poolSummary(want)}
	var n int
	got, ok, err := writeObject(ctx, s, opCreatePool, c, func(ctx context.Context) (Pool, error) {
		n++
		return s.p.api.CreatePool(ctx, s.st.account, want)
	})
	if err != nil {
		return false, err
	}
	if !ok && n > 1 {
		// The first attempt's answer was lost and it went through: the
		// retry met our own pool. Adopt it and bring it up to date.
		found, err := s.adoptPool(ctx, want.Name)
		if err != nil {
			return false, err
		}
		if found != nil {
			s.res.Changes[len(s.res.Changes)-1] = c
			s.st.pools = append(s.st.pools, *found)
			byName[want.Name] = len(s.st.pools) - 1
			s.p.log.Info("cloudflare: a retried create met its own first attempt: pool adopted", "zone", s.zone, "pool", want.Name)
			return s.pool(ctx, want, byName)
		}
		s.refused(s.res.Changes[len(s.res.Changes)-1])
	}
	if !ok {
		return false, nil
	}
	if s.dry {
		got = want
		got.ID = s.placeholder("pool")
	}
	s.st.pools = append(s.st.pools, got)
	byName[want.Name] = len(s.st.pools) - 1
	return true, nil
}

// updatePool brings the pool st.pools[i] up to want; false when Cloudflare
// refused it.
func (s *lbSync) updatePool(ctx context.Context, i int, want Pool) (bool, error) {
	cur := s.st.pools[i]
	diff := poolDiff(cur, want)
	if diff == "" {
		return true, nil
	}
	want.ID = cur.ID
	c := providers.ObjectChange{Kind: providers.KindPool, Name: want.Name, Op: "update", Detail: diff}
	got, ok, err := writeObject(ctx, s, opUpdatePool, c, func(ctx context.Context) (Pool, error) { return s.p.api.UpdatePool(ctx, s.st.account, want) })
	if err != nil || !ok {
		return false, err
	}
	if s.dry {
		got = want
	}
	s.st.pools[i] = got
	return true, nil
}

// adoptPool re-reads the pools and returns ours named name (nil: none).
func (s *lbSync) adoptPool(ctx context.Context, name string) (*Pool, error) {
	var pools []Pool
	if err := list(ctx, s.p, opListPools, &pools, func(ctx context.Context) ([]Pool, error) { return s.p.api.ListPools(ctx, s.st.account) }); err != nil {
		return nil, fmt.Errorf("list pools: %w", err)
	}
	for _, pl := range pools {
		if pl.Name == name && ours(pl.Description, s.p.opts.OwnerID, s.cz) {
			return &pl, nil
		}
	}
	return nil, nil
}

// loadBalancer creates or updates the load balancer of one service.
func (s *lbSync) loadBalancer(ctx context.Context, sp LBSpec, byName, poolByName map[string]int, failedPools map[string]bool) error {
	i, exists := byName[sp.LoadBalancer.Name]
	if s.poolRefused(sp, exists, failedPools) {
		return nil
	}
	want, err := s.withPoolIDs(sp.LoadBalancer, poolByName)
	if err != nil {
		return err
	}
	if !exists {
		return s.createLB(ctx, sp, want, byName, poolByName, failedPools)
	}
	s.st.served[sp.Service] = true
	return s.updateLB(ctx, i, want)
}

// poolRefused reports a load balancer not written because Cloudflare
// refused one of its pools (true); an existing one keeps serving.
func (s *lbSync) poolRefused(sp LBSpec, exists bool, failedPools map[string]bool) bool {
	name := sp.LoadBalancer.Name
	for _, pl := range sp.Pools {
		if failedPools[pl.Name] {
			if exists {
				s.st.served[sp.Service] = true // the old load balancer keeps serving
			}
			s.res.Changes = append(s.res.Changes, providers.ObjectChange{Kind: providers.KindLoadBalancer, Name: name, Op: map[bool]string{true: "update", false: "create"}[exists],
				Err: fmt.Errorf("load balancer %s not written: its pool %s was refused", name, pl.Name)})
			return true
		}
	}
	return false
}

// withPoolIDs returns want with its pool names replaced by the pools' ids;
// a pool without a known id is an error.
func (s *lbSync) withPoolIDs(want LoadBalancer, poolByName map[string]int) (LoadBalancer, error) {
	var missing []string
	id := func(n string) string {
		if i, ok := poolByName[n]; ok && i < len(s.st.pools) && s.st.pools[i].ID != "" {
			return s.st.pools[i].ID
		}
		missing = append(missing, n)
		return ""
	}
	ids := func(names []string) []string {
		out := make([]string, len(names))
		for j, n := range names {
			out[j] = id(n)
		}
		return out
	}
	want.DefaultPools = ids(want.DefaultPools)
	want.FallbackPool = id(want.FallbackPool)
	want.CountryPools = idMap(want.CountryPools, ids)
	want.RegionPools = idMap(want.RegionPools, ids)
	if want.PoolWeights != nil {
		w := map[string]float64{}
		for n, v := range want.PoolWeights {
			w[id(n)] = v
		}
		want.PoolWeights = w
	}
	if len(missing) > 0 {
		return want, fmt.Errorf("load balancer %s: no pool id known for %v (pools listed and written this pass: %d)", want.Name, missing, len(s.st.pools))
	}
	return want, nil
}

// createLB creates the load balancer want of sp; a retried create that met
// its own first attempt adopts that load balancer and brings it up to date.
func (s *lbSync) createLB(ctx context.Context, sp LBSpec, want LoadBalancer, byName, poolByName map[string]int, failedPools map[string]bool) error {
	c := providers.ObjectChange{Kind: providers.KindLoadBalancer, Name: want.Name, Op: "create", Detail: lbSummary(want, s.names)}
	var n int
	got, ok, err := writeObject(ctx, s, opCreateLB, c, func(ctx context.Context) (LoadBalancer, error) {
		n++
		return s.p.api.CreateLoadBalancer(ctx, s.st.zoneID, want)
	})
	if err != nil {
		return err
	}
	if !ok && n > 1 {
		found, err := s.adoptLB(ctx, want.Name)
		if err != nil {
			return err
		}
		if found != nil {
			s.res.Changes[len(s.res.Changes)-1] = c // the refusal met our own earlier attempt
			s.st.lbs = append(s.st.lbs, *found)
			byName[want.Name] = len(s.st.lbs) - 1
			s.p.log.Info("cloudflare: a retried create met its own first attempt: load balancer adopted", "zone", s.zone, "load_balancer", want.Name)
			return s.loadBalancer(ctx, sp, byName, poolByName, failedPools)
		}
		s.refused(s.res.Changes[len(s.res.Changes)-1])
	}
	if !ok {
		return nil
	}
	if s.dry {
		got = want
		got.ID = s.placeholder("load balancer")
	}
	s.st.lbs = append(s.st.lbs, got)
	byName[want.Name] = len(s.st.lbs) - 1
	s.st.served[sp.Service] = true
	return nil
}

// updateLB brings the load balancer st.lbs[i] up to want.
func (s *lbSync) updateLB(ctx context.Context, i int, want LoadBalancer) error {
	cur := s.st.lbs[i]
	diff := lbDiff(cur, want, s.names)
	if diff == "" {
		return nil
	}
	want.ID = cur.ID
	c := providers.ObjectChange{Kind: providers.KindLoadBalancer, Name: want.Name, Op: "update", Detail: diff}
	got, ok, err := writeObject(ctx, s, opUpdateLB, c, func(ctx context.Context) (LoadBalancer, error) {
		return s.p.api.UpdateLoadBalancer(ctx, s.st.zoneID, want)
	})
	if err != nil || !ok {
		return err
	}
	if s.dry {
		got = want
	}
	s.st.lbs[i] = got
	return nil
}

func (s *lbSync) adoptLB(ctx context.Context, name string) (*LoadBalancer, error) {
	var lbs []LoadBalancer
	if err := list(ctx, s.p, opListLBs, &lbs, func(ctx context.Context) ([]LoadBalancer, error) { return s.p.api.ListLoadBalancers(ctx, s.st.zoneID) }); err != nil {
		return nil, fmt.Errorf("list load balancers: %w", err)
	}
	for _, lb := range lbs {
		if strings.EqualFold(lb.Name, name) && ours(lb.Description, s.p.opts.OwnerID, s.cz) {
			return &lb, nil
		}
	}
	return nil, nil
}

func idMap(m map[string][]string, ids func([]string) []string) map[string][]string {
	out := make(map[string][]string, len(m))
	for k, v := range m {
		out[k] = ids(v)
	}
	return out
}

// collect deletes what is ours and no longer needed (see CollectObjects):
// the load balancers no service wants, then the pools no service wants and
// no kept load balancer refers to, then the monitors this pass did not keep
// and no kept pool refers to.
func (s *lbSync) collect(ctx context.Context) error {
	owner, zoneID, account := s.p.opts.OwnerID, s.st.zoneID, s.st.account
	lbs, err := deleteUnwanted(ctx, s, s.st.lbs, opDeleteLB, func(lb LoadBalancer) bool {
		return !ours(lb.Description, owner, s.cz) || s.st.wantLB[strings.ToLower(lb.Name)]
	}, func(lb LoadBalancer) providers.ObjectChange {
		return providers.ObjectChange{Kind: providers.KindLoadBalancer, Name: lb.Name, Op: "delete"}
	}, func(ctx context.Context, lb LoadBalancer) error {
		return s.p.api.DeleteLoadBalancer(ctx, zoneID, lb.ID)
	})
	if err != nil {
		return err
	}
	s.st.lbs = lbs

	referenced := map[string]bool{}
	for _, lb := range lbs {
		for _, id := range lbPoolIDs(lb) {
			referenced[id] = true
		}
	}
	pools, err := deleteUnwanted(ctx, s, s.st.pools, opDeletePool, func(pl Pool) bool {
		return !ours(pl.Description, owner, s.cz) || s.st.wantPool[pl.Name] || referenced[pl.ID]
	}, func(pl Pool) providers.ObjectChange {
		return providers.ObjectChange{Kind: providers.KindPool, Name: pl.Name, Op: "delete"}
	}, func(ctx context.Context, pl Pool) error { return s.p.api.DeletePool(ctx, account, pl.ID) })
	if err != nil {
		return err
	}
	s.st.pools = pools

	used := map[string]bool{}
	for _, pl := range pools {
		used[pl.Monitor] = true
	}
	for _, id := range s.st.monitor {
		used[id] = true
	}
	monitors, err := deleteUnwanted(ctx, s, s.st.monitors, opDeleteMonitor, func(m Monitor) bool {
		return !ours(m.Description, owner, s.cz) || used[m.ID]
	}, func(m Monitor) providers.ObjectChange {
		return providers.ObjectChange{Kind: providers.KindMonitor, Name: mark(m.Description)["monitor"], Op: "delete", Detail: monitorSummary(m)}
	}, func(ctx context.Context, m Monitor) error { return s.p.api.DeleteMonitor(ctx, account, m.ID) })
	if err != nil {
		return err
	}
	s.st.monitors = monitors
	return nil
}

// deleteUnwanted deletes (op, del) each of objs that keep does not keep,
// reporting the change that change describes, and returns the objects
// kept: those kept and those whose delete Cloudflare refused.
func deleteUnwanted[T any](ctx context.Context, s *lbSync, objs []T, op string, keep func(T) bool,
	change func(T) providers.ObjectChange, del func(context.Context, T) error) ([]T, error) {
	var kept []T
	for _, o := range objs {
		if keep(o) {
			kept = append(kept, o)
			continue
		}
		ok, err := s.write(ctx, op, change(o), func(ctx context.Context) error { return ignoreGone(del(ctx, o)) })
		if err != nil {
			return nil, err
		}
		if !ok {
			kept = append(kept, o)
		}
	}
	return kept, nil
}

// ignoreGone treats the answer to deleting an object that is already gone
// (a retried delete whose first answer was lost) as success.
func ignoreGone(err error) error {
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return nil
	}
	return err
}

// lbPoolIDs is every pool a load balancer refers to.
func lbPoolIDs(lb LoadBalancer) []string {
	out := append([]string{lb.FallbackPool}, lb.DefaultPools...)
	for _, m := range []map[string][]string{lb.RegionPools, lb.CountryPools} {
		for _, ids := range m {
			out = append(out, ids...)
		}
	}
	for id := range lb.PoolWeights {
		out = append(out, id)
	}
	return out
}
