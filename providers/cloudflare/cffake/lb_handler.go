package cffake

import (
	"encoding/json"
	"net/http"
	"time"
)

// The Load Balancing routes, as cloudflare-go v6 calls them:
//
//	GET|POST                /accounts/{account}/load_balancers/monitors
//	GET|PUT|PATCH|DELETE    /accounts/{account}/load_balancers/monitors/{id}
//	GET(?monitor=)|POST     /accounts/{account}/load_balancers/pools
//	GET|PUT|PATCH|DELETE    /accounts/{account}/load_balancers/pools/{id}
//	GET|POST                /zones/{zone}/load_balancers
//	GET|PUT|PATCH|DELETE    /zones/{zone}/load_balancers/{id}
//
// POST and PUT take the whole object (absent fields get Cloudflare's
// defaults); PATCH changes the fields it names.

const (
	routeMonitors = "/accounts/{account}/load_balancers/monitors"
	routeMonitor  = "/accounts/{account}/load_balancers/monitors/{id}"
	routePools    = "/accounts/{account}/load_balancers/pools"
	routePool     = "/accounts/{account}/load_balancers/pools/{id}"
	routeLBs      = "/zones/{zone}/load_balancers"
	routeLB       = "/zones/{zone}/load_balancers/{id}"
)

// lbRoute serves a Load Balancing route; false when route is not one.
func (s *Server) lbRoute(w http.ResponseWriter, req *http.Request, route string, parts []string) bool {
	switch route {
	case routeMonitors, routeMonitor, routePools, routePool, routeLBs, routeLB:
	default:
		return false
	}
	var body fields
	if req.Method == http.MethodPost || req.Method == http.MethodPut || req.Method == http.MethodPatch {
		var err *apiErr
		if body, err = decode(req); err != nil {
			fail(w, err)
			return true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lbOff {
		scope := "account"
		if parts[0] == "zones" {
			scope = "zone"
		}
		fail(w, refuse(http.StatusForbidden, CodeLBNotEntitled, "load balancing not enabled for %s", scope))
		return true
	}
	if parts[0] == "accounts" && parts[1] != s.acct.id {
		fail(w, refuse(400, CodeNoRoute, "Could not route to /accounts/%s, perhaps your object identifier is invalid?", parts[1]))
		return true
	}
	var res any
	var err *apiErr
	switch route {
	case routeMonitors, routeMonitor:
		res, err = s.monitorOp(req, parts, body)
	case routePools, routePool:
		res, err = s.poolOp(req, parts, body)
	default:
		z, found := s.zones[parts[1]]
		if !found {
			fail(w, noZone())
			return true
		}
		res, err = s.lbOp(z, req, parts, body)
	}
	if err != nil {
		fail(w, err)
		return true
	}
	if list, isList := res.(listResult); isList {
		ok(w, list.items, &resultInfo{Page: 1, PerPage: max(list.n, 1), Count: list.n, TotalCount: list.n, TotalPages: 1})
		return true
	}
	ok(w, res, nil)
	return true
}

// listResult is a whole list (the load_balancers lists are single pages).
type listResult struct {
	items any
	n     int
}

func (s *Server) monitorOp(req *http.Request, parts []string, body fields) (any, *apiErr) {
	if len(parts) == 4 {
		switch req.Method {
		case http.MethodGet:
			l := orEmpty(sortedCopies(s.acct.monitors, func(m *Monitor) (time.Time, string) { return m.CreatedOn, m.ID }))
			return listResult{l, len(l)}, nil
		case http.MethodPost:
			m, err := build[Monitor](nil, body)
			if err != nil {
				return nil, err
			}
			m.ID = ""
			return s.storeMonitor(nil, m)
		}
		return nil, notAllowed()
	}
	id := parts[4]
	cur := s.acct.monitors[id]
	if cur == nil {
		return nil, refuse(404, CodeLBNotFound, "monitor not found")
	}
	switch req.Method {
	case http.MethodGet:
		return cur, nil
	case http.MethodDelete:
		if by := s.referenced(id, ""); by != "" {
			return nil, inUse(by)
		}
		delete(s.acct.monitors, id)
		return map[string]string{"id": id}, nil
	case http.MethodPut, http.MethodPatch:
		m, err := build(patchBase(req, cur), body)
		if err != nil {
			return nil, err
		}
		return s.storeMonitor(cur, m)
	}
	return nil, notAllowed()
}

func (s *Server) poolOp(req *http.Request, parts []string, body fields) (any, *apiErr) {
	if len(parts) == 4 {
		switch req.Method {
		case http.MethodGet:
			monitor := req.URL.Query().Get("monitor")
			var l []Pool
			for _, p := range sortedCopies(s.acct.pools, func(p *Pool) (time.Time, string) { return time.Time{}, p.Name }) {
				if monitor == "" || p.Monitor == monitor {
					l = append(l, p)
				}
			}
			return listResult{orEmpty(l), len(l)}, nil
		case http.MethodPost:
			p, err := build[Pool](nil, body)
			if err != nil {
				return nil, err
			}
			p.ID = ""
			return s.storePool(nil, p)
		}
		return nil, notAllowed()
	}
	id := parts[4]
	cur := s.acct.pools[id]
	if cur == nil {
		return nil, refuse(404, CodeLBNotFound, "pool not found")
	}
	switch req.Method {
	case http.MethodGet:
		return cur, nil
	case http.MethodDelete:
		if by := s.referenced("", id); by != "" {
			return nil, inUse(by)
		}
		delete(s.acct.pools, id)
		s.forgetPool(id)
		return map[string]string{"id": id}, nil
	case http.MethodPut, http.MethodPatch:
		p, err := build(patchBase(req, cur), body)
		if err != nil {
			return nil, err
		}
		out, err := s.storePool(cur, p)
		if err == nil {
			s.keepHealth(cur, out)
		}
		return out, err
	}
	return nil, notAllowed()
}

func (s *Server) lbOp(z *zone, req *http.Request, parts []string, body fields) (any, *apiErr) {
	if len(parts) == 3 {
		switch req.Method {
		case http.MethodGet:
			l := orEmpty(sortedCopies(z.lbs, func(lb *LoadBalancer) (time.Time, string) { return time.Time{}, lb.Name }))
			return listResult{l, len(l)}, nil
		case http.MethodPost:
			lb, err := build[LoadBalancer](nil, body)
			if err != nil {
				return nil, err
			}
			lb.ID = ""
			return s.storeLB(z, nil, lb)
		}
		return nil, notAllowed()
	}
	id := parts[3]
	cur := z.lbs[id]
	if cur == nil {
		return nil, refuse(404, CodeLBNotFound, "load balancer not found")
	}
	switch req.Method {
	case http.MethodGet:
		return cur, nil
	case http.MethodDelete:
		delete(z.lbs, id)
		return map[string]string{"id": id}, nil
	case http.MethodPut, http.MethodPatch:
		lb, err := build(patchBase(req, cur), body)
		if err != nil {
			return nil, err
		}
		return s.storeLB(z, cur, lb)
	}
	return nil, notAllowed()
}

// patchBase is the object a PATCH starts from (nil for PUT: a whole new
// object).
func patchBase[T any](req *http.Request, cur *T) *T {
	if req.Method == http.MethodPatch {
		return cur
	}
	return nil
}

// build decodes a body into a new object: over base's fields (PATCH), or
// over Cloudflare's defaults (base nil: POST, PUT).
func build[T any](base *T, body fields) (T, *apiErr) {
	var out T
	raw := mustJSON(body)
	if base != nil {
		m := map[string]json.RawMessage{}
		if err := json.Unmarshal(mustJSON(base), &m); err != nil {
			return out, refuse(500, CodeBadRequest, "stored object: %v", err)
		}
		for k, v := range body {
			m[k] = v
		}
		raw = mustJSON(m)
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, invalid("%v", err)
	}
	return out, nil
}

func inUse(by string) *apiErr {
	return refuse(http.StatusPreconditionFailed, CodeLBInUse, "This object is referenced by other objects, delete them first. (%s)", by)
}

func notAllowed() *apiErr {
	return refuse(http.StatusMethodNotAllowed, CodeNoRoute, "Method not allowed")
}
