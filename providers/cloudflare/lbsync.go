package cloudflare

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
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
	if _, err = p.do(ctx, opListLBs, func(ctx context.Context) error {
		st.lbs, err = p.api.ListLoadBalancers(ctx, st.zoneID)
		return err
	}); err == nil {
		_, err = p.do(ctx, opListPools, func(ctx context.Context) error {
			st.pools, err = p.api.ListPools(ctx, st.account)
			return err
		})
	}
	if err == nil {
		_, err = p.do(ctx, opListMonitors, func(ctx context.Context) error {
			st.monitors, err = p.api.ListMonitors(ctx, st.account)
			return err
		})
	}
	switch {
	case cleanup && err != nil:
		// The look for leftovers never fails a plain-records sync. An
		// account without Load Balancing has nothing of ours; a token
		// without the Load Balancing permissions cannot see (nor have
		// made) any: both are final. An outage is tried on the next pass.
		var ae *APIError
		if notEntitled(err) || (errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 && ae.Status != http.StatusTooManyRequests) {
			p.mu.Lock()
			p.lbCleaned[zone] = true
			p.mu.Unlock()
			p.log.Info("cloudflare: no load balancing objects to look for leftovers in", "zone", zone, "reason", err)
		} else {
			p.log.Warn("cloudflare: could not look for leftover load balancers; trying again on the next sync", "zone", zone, "err", err)
		}
		return res, nil
	case notEntitled(err):
		return p.unentitled(zone, err)
	case err != nil:
		return res, fmt.Errorf("zone %s: list load balancing objects: %w", zone, err)
	}
	var specs []LBSpec
	if !cleanup {
		p.entitled(zone, true, nil)
		var warnings []string
		specs, warnings = TranslateLB(views, zone, LBOptions{Owner: p.opts.OwnerID, TTL: p.opts.TTL, Proxied: p.opts.Proxied, Backstop: p.opts.Backstop})
		for _, w := range warnings {
			p.warnOnce(w)
		}
	}
	s := &lbSync{p: p, st: st, zone: zone, cz: cfName(zone), dry: dryRun, res: &res}
	err = s.prepare(ctx, specs)
	p.mu.Lock()
	st.active = true
	p.mu.Unlock()
	return res, err
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

func (s *lbSync) refused(c providers.ObjectChange) {
	s.p.log.Warn("cloudflare: load balancing change refused", "zone", s.zone, "kind", c.Kind, "object", c.Name, "op", c.Op, "err", c.Err)
}

func (s *lbSync) placeholder(kind string) string {
	s.seq++
	return fmt.Sprintf("(new %s %d)", kind, s.seq)
}

func (s *lbSync) prepare(ctx context.Context, specs []LBSpec) error {
	owner := s.p.opts.OwnerID
	lbByName := map[string]int{}
	for i, lb := range s.st.lbs {
		lbByName[strings.ToLower(lb.Name)] = i
	}
	poolByName := map[string]int{}
	for i, pl := range s.st.pools {
		poolByName[pl.Name] = i
	}

	// Conflicts: a name held by an object that is not ours.
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

	if err := s.monitors(ctx, todo); err != nil {
		return err
	}
	failedPools := map[string]bool{}
	for _, sp := range todo {
		for _, want := range sp.Pools {
			if want.Monitor != "" {
				want.Monitor = s.st.monitor[want.Monitor] // "" when the monitor could not be made
			}
			ok, err := s.pool(ctx, want, poolByName)
			if err != nil {
				return err
			}
			if !ok {
				failedPools[want.Name] = true
			}
		}
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
	owner := s.p.opts.OwnerID
	byKey := map[string][]int{}
	for i, m := range s.st.monitors {
		if ours(m.Description, owner, s.cz) {
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
		want := ms.Monitor
		cands := byKey[ms.Key]
		if len(cands) == 0 {
			c := providers.ObjectChange{Kind: providers.KindMonitor, Name: ms.Key, Op: "create", Detail: monitorSummary(want)}
			var got Monitor
			ok, err := s.write(ctx, opCreateMonitor, c, func(ctx context.Context) error {
				var err error
				got, err = s.p.api.CreateMonitor(ctx, s.st.account, want)
				return err
			})
			if err != nil {
				return err
			}
			if ok {
				if s.dry {
					got = want
					got.ID = s.placeholder("monitor")
				}
				s.st.monitors = append(s.st.monitors, got)
				s.st.monitor[ms.Key] = got.ID
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
		cur := s.st.monitors[keep]
		s.st.monitor[ms.Key] = cur.ID
		if diff := monitorDiff(cur, want); diff != "" {
			want.ID = cur.ID
			c := providers.ObjectChange{Kind: providers.KindMonitor, Name: ms.Key, Op: "update", Detail: diff}
			var got Monitor
			ok, err := s.write(ctx, opUpdateMonitor, c, func(ctx context.Context) error {
				var err error
				got, err = s.p.api.UpdateMonitor(ctx, s.st.account, want)
				return err
			})
			if err != nil {
				return err
			}
			if ok && !s.dry {
				s.st.monitors[keep] = got
			}
		}
	}
	return nil
}

// pool creates or updates one pool; false when Cloudflare refused it.
func (s *lbSync) pool(ctx context.Context, want Pool, byName map[string]int) (bool, error) {
	i, exists := byName[want.Name]
	if !exists {
		c := providers.ObjectChange{Kind: providers.KindPool, Name: want.Name, Op: "create", Detail: poolSummary(want)}
		var got Pool
		var n int
		ok, err := s.write(ctx, opCreatePool, c, func(ctx context.Context) error {
			n++
			var err error
			got, err = s.p.api.CreatePool(ctx, s.st.account, want)
			return err
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
	cur := s.st.pools[i]
	diff := poolDiff(cur, want)
	if diff == "" {
		return true, nil
	}
	want.ID = cur.ID
	c := providers.ObjectChange{Kind: providers.KindPool, Name: want.Name, Op: "update", Detail: diff}
	var got Pool
	ok, err := s.write(ctx, opUpdatePool, c, func(ctx context.Context) error {
		var err error
		got, err = s.p.api.UpdatePool(ctx, s.st.account, want)
		return err
	})
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
	if _, err := s.p.do(ctx, opListPools, func(ctx context.Context) error {
		var err error
		pools, err = s.p.api.ListPools(ctx, s.st.account)
		return err
	}); err != nil {
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
	want := sp.LoadBalancer
	i, exists := byName[want.Name]
	for _, pl := range sp.Pools {
		if failedPools[pl.Name] {
			if exists {
				s.st.served[sp.Service] = true // the old load balancer keeps serving
			}
			s.res.Changes = append(s.res.Changes, providers.ObjectChange{Kind: providers.KindLoadBalancer, Name: want.Name, Op: map[bool]string{true: "update", false: "create"}[exists],
				Err: fmt.Errorf("load balancer %s not written: its pool %s was refused", want.Name, pl.Name)})
			return nil
		}
	}
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
		return fmt.Errorf("load balancer %s: no pool id known for %v (pools listed and written this pass: %d)", want.Name, missing, len(s.st.pools))
	}
	names := s.names
	if !exists {
		c := providers.ObjectChange{Kind: providers.KindLoadBalancer, Name: want.Name, Op: "create", Detail: lbSummary(want, names)}
		var got LoadBalancer
		var n int
		ok, err := s.write(ctx, opCreateLB, c, func(ctx context.Context) error {
			n++
			var err error
			got, err = s.p.api.CreateLoadBalancer(ctx, s.st.zoneID, want)
			return err
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
	s.st.served[sp.Service] = true
	cur := s.st.lbs[i]
	diff := lbDiff(cur, want, names)
	if diff == "" {
		return nil
	}
	want.ID = cur.ID
	c := providers.ObjectChange{Kind: providers.KindLoadBalancer, Name: want.Name, Op: "update", Detail: diff}
	var got LoadBalancer
	ok, err := s.write(ctx, opUpdateLB, c, func(ctx context.Context) error {
		var err error
		got, err = s.p.api.UpdateLoadBalancer(ctx, s.st.zoneID, want)
		return err
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
	if _, err := s.p.do(ctx, opListLBs, func(ctx context.Context) error {
		var err error
		lbs, err = s.p.api.ListLoadBalancers(ctx, s.st.zoneID)
		return err
	}); err != nil {
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

// collect deletes what is ours and no longer needed (see CollectObjects).
func (s *lbSync) collect(ctx context.Context) error {
	owner := s.p.opts.OwnerID
	var keptLBs []LoadBalancer
	for _, lb := range s.st.lbs {
		if !ours(lb.Description, owner, s.cz) || s.st.wantLB[strings.ToLower(lb.Name)] {
			keptLBs = append(keptLBs, lb)
			continue
		}
		c := providers.ObjectChange{Kind: providers.KindLoadBalancer, Name: lb.Name, Op: "delete"}
		ok, err := s.write(ctx, opDeleteLB, c, func(ctx context.Context) error {
			return ignoreGone(s.p.api.DeleteLoadBalancer(ctx, s.st.zoneID, lb.ID))
		})
		if err != nil {
			return err
		}
		if !ok {
			keptLBs = append(keptLBs, lb)
		}
	}
	s.st.lbs = keptLBs

	referenced := map[string]bool{}
	for _, lb := range keptLBs {
		for _, id := range lbPoolIDs(lb) {
			referenced[id] = true
		}
	}
	var keptPools []Pool
	for _, pl := range s.st.pools {
		if !ours(pl.Description, owner, s.cz) || s.st.wantPool[pl.Name] || referenced[pl.ID] {
			keptPools = append(keptPools, pl)
			continue
		}
		c := providers.ObjectChange{Kind: providers.KindPool, Name: pl.Name, Op: "delete"}
		ok, err := s.write(ctx, opDeletePool, c, func(ctx context.Context) error { return ignoreGone(s.p.api.DeletePool(ctx, s.st.account, pl.ID)) })
		if err != nil {
			return err
		}
		if !ok {
			keptPools = append(keptPools, pl)
		}
	}
	s.st.pools = keptPools

	usedMonitors := map[string]bool{}
	for _, pl := range keptPools {
		usedMonitors[pl.Monitor] = true
	}
	kept := map[string]bool{}
	for _, id := range s.st.monitor {
		kept[id] = true
	}
	var keptMonitors []Monitor
	for _, m := range s.st.monitors {
		if !ours(m.Description, owner, s.cz) || kept[m.ID] || usedMonitors[m.ID] {
			keptMonitors = append(keptMonitors, m)
			continue
		}
		c := providers.ObjectChange{Kind: providers.KindMonitor, Name: mark(m.Description)["monitor"], Op: "delete", Detail: monitorSummary(m)}
		ok, err := s.write(ctx, opDeleteMonitor, c, func(ctx context.Context) error { return ignoreGone(s.p.api.DeleteMonitor(ctx, s.st.account, m.ID)) })
		if err != nil {
			return err
		}
		if !ok {
			keptMonitors = append(keptMonitors, m)
		}
	}
	s.st.monitors = keptMonitors
	return nil
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

// Comparisons: "" when cur already is want, else what differs.

func monitorDiff(cur, want Monitor) string {
	var d []string
	add := func(field string, differs bool, from, to any) {
		if differs {
			d = append(d, fmt.Sprintf("%s %v → %v", field, from, to))
		}
	}
	add("type", cur.Type != want.Type, cur.Type, want.Type)
	add("description", cur.Description != want.Description, cur.Description, want.Description)
	add("method", cur.Method != want.Method, cur.Method, want.Method)
	add("port", cur.Port != want.Port, cur.Port, want.Port)
	add("interval", cur.Interval != want.Interval, cur.Interval, want.Interval)
	add("timeout", cur.Timeout != want.Timeout, cur.Timeout, want.Timeout)
	add("retries", cur.Retries != want.Retries, cur.Retries, want.Retries)
	add("consecutive_down", cur.ConsecutiveDown != want.ConsecutiveDown, cur.ConsecutiveDown, want.ConsecutiveDown)
	add("consecutive_up", cur.ConsecutiveUp != want.ConsecutiveUp, cur.ConsecutiveUp, want.ConsecutiveUp)
	if want.Type != "tcp" {
		add("path", cur.Path != want.Path, cur.Path, want.Path)
		add("header", !headersEqual(cur.Header, want.Header), cur.Header, want.Header)
		add("expected_codes", cur.ExpectedCodes != want.ExpectedCodes, cur.ExpectedCodes, want.ExpectedCodes)
		add("expected_body", cur.ExpectedBody != want.ExpectedBody, cur.ExpectedBody, want.ExpectedBody)
		add("follow_redirects", cur.FollowRedirects != want.FollowRedirects, cur.FollowRedirects, want.FollowRedirects)
		add("allow_insecure", cur.AllowInsecure != want.AllowInsecure, cur.AllowInsecure, want.AllowInsecure)
	}
	return strings.Join(d, ", ")
}

func headersEqual(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func poolDiff(cur, want Pool) string {
	var d []string
	if cur.Description != want.Description {
		d = append(d, "description")
	}
	if cur.Enabled != want.Enabled {
		d = append(d, fmt.Sprintf("enabled %v → %v", cur.Enabled, want.Enabled))
	}
	if cur.MinimumOrigins != want.MinimumOrigins {
		d = append(d, fmt.Sprintf("minimum_origins %d → %d", cur.MinimumOrigins, want.MinimumOrigins))
	}
	if cur.Monitor != want.Monitor {
		d = append(d, fmt.Sprintf("monitor %q → %q", cur.Monitor, want.Monitor))
	}
	old := map[string]Origin{}
	for _, o := range cur.Origins {
		old[o.Name] = o
	}
	for _, o := range want.Origins {
		c, ok := old[o.Name]
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("+origin %s (weight %.2f%s)", o.Name, o.Weight, offText(o.Enabled)))
		case c.Address != o.Address:
			d = append(d, fmt.Sprintf("origin %s address %s → %s", o.Name, c.Address, o.Address))
		}
		if ok && c.Enabled != o.Enabled {
			d = append(d, fmt.Sprintf("origin %s enabled %v → %v", o.Name, c.Enabled, o.Enabled))
		}
		if ok && round2(c.Weight) != round2(o.Weight) {
			d = append(d, fmt.Sprintf("origin %s weight %.2f → %.2f", o.Name, c.Weight, o.Weight))
		}
		delete(old, o.Name)
	}
	for _, o := range cur.Origins {
		if _, gone := old[o.Name]; gone {
			d = append(d, "-origin "+o.Name)
		}
	}
	if len(d) == 0 && !slices.EqualFunc(cur.Origins, want.Origins, func(a, b Origin) bool { return a.Name == b.Name }) {
		d = append(d, "origin order")
	}
	return strings.Join(d, ", ")
}

func offText(enabled bool) string {
	if enabled {
		return ""
	}
	return ", disabled"
}

func lbDiff(cur, want LoadBalancer, names map[string]string) string {
	var d []string
	pn := func(ids []string) string { return poolNames(ids, names) }
	if cur.Description != want.Description {
		d = append(d, "description")
	}
	if cur.Enabled != want.Enabled {
		d = append(d, fmt.Sprintf("enabled %v → %v", cur.Enabled, want.Enabled))
	}
	if cur.Proxied != want.Proxied {
		d = append(d, fmt.Sprintf("proxied %v → %v", cur.Proxied, want.Proxied))
	}
	if !want.Proxied && cur.TTL != want.TTL {
		d = append(d, fmt.Sprintf("ttl %d → %d", cur.TTL, want.TTL))
	}
	if cur.SteeringPolicy != want.SteeringPolicy {
		d = append(d, fmt.Sprintf("steering_policy %q → %q", cur.SteeringPolicy, want.SteeringPolicy))
	}
	if cur.FallbackPool != want.FallbackPool {
		d = append(d, fmt.Sprintf("fallback_pool %s → %s", pn([]string{cur.FallbackPool}), pn([]string{want.FallbackPool})))
	}
	if !slices.Equal(cur.DefaultPools, want.DefaultPools) {
		d = append(d, fmt.Sprintf("default_pools [%s] → [%s]", pn(cur.DefaultPools), pn(want.DefaultPools)))
	}
	for _, f := range []struct {
		name      string
		cur, want map[string][]string
	}{{"country_pools", cur.CountryPools, want.CountryPools}, {"region_pools", cur.RegionPools, want.RegionPools}} {
		for _, k := range slices.Sorted(maps.Keys(union(f.cur, f.want))) {
			if !slices.Equal(f.cur[k], f.want[k]) {
				d = append(d, fmt.Sprintf("%s[%s] [%s] → [%s]", f.name, k, pn(f.cur[k]), pn(f.want[k])))
			}
		}
	}
	if want.SteeringPolicy == "random" {
		if cur.DefaultWeight != want.DefaultWeight {
			d = append(d, fmt.Sprintf("random_steering.default_weight %.2f → %.2f", cur.DefaultWeight, want.DefaultWeight))
		}
		ids := slices.Sorted(maps.Keys(union(cur.PoolWeights, want.PoolWeights)))
		for _, id := range ids {
			a, inCur := cur.PoolWeights[id]
			b, inWant := want.PoolWeights[id]
			if inCur != inWant || round2(a) != round2(b) {
				d = append(d, fmt.Sprintf("weight %s %.2f → %.2f", pn([]string{id}), a, b))
			}
		}
	}
	return strings.Join(d, ", ")
}

func union[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func poolNames(ids []string, names map[string]string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		if n, ok := names[id]; ok {
			out[i] = n
		} else {
			out[i] = id
		}
	}
	return strings.Join(out, " ")
}

func monitorSummary(m Monitor) string {
	s := fmt.Sprintf("%s port %d every %ds, down after %d, up after %d", m.Type, m.Port, m.Interval, m.ConsecutiveDown, m.ConsecutiveUp)
	if m.Type != "tcp" {
		s = fmt.Sprintf("%s %s %s expect %s, ", m.Type, m.Method, m.Path, m.ExpectedCodes) + s[len(m.Type)+1:]
	}
	return s
}

func poolSummary(p Pool) string {
	parts := make([]string, 0, len(p.Origins))
	for _, o := range p.Origins {
		parts = append(parts, fmt.Sprintf("%s %.2f%s", o.Address, o.Weight, offText(o.Enabled)))
	}
	s := strings.Join(parts, ", ")
	if !p.Enabled {
		s += "; pool disabled"
	}
	return s
}

func lbSummary(lb LoadBalancer, names map[string]string) string {
	s := fmt.Sprintf("%s, default_pools [%s], fallback %s", lb.SteeringPolicy, poolNames(lb.DefaultPools, names), poolNames([]string{lb.FallbackPool}, names))
	if lb.SteeringPolicy == "random" {
		var w []string
		for _, id := range lb.DefaultPools {
			w = append(w, fmt.Sprintf("%s=%.2f", poolNames([]string{id}, names), lb.PoolWeights[id]))
		}
		s += ", weights " + strings.Join(w, " ")
	}
	if n := len(lb.CountryPools) + len(lb.RegionPools); n > 0 {
		s += fmt.Sprintf(", %d countries, %d regions", len(lb.CountryPools), len(lb.RegionPools))
	}
	return s
}
