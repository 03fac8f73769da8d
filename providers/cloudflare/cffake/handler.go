package cffake

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The v4 envelope.
type envelope struct {
	Success    bool        `json:"success"`
	Errors     []errorJSON `json:"errors"`
	Messages   []errorJSON `json:"messages"`
	Result     any         `json:"result"`
	ResultInfo *resultInfo `json:"result_info,omitempty"`
}

type errorJSON struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type resultInfo struct {
	Page       int `json:"page"`
	PerPage    int `json:"per_page"`
	Count      int `json:"count"`
	TotalCount int `json:"total_count"`
	TotalPages int `json:"total_pages"`
}

type zoneJSON struct {
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	Status      string      `json:"status"`
	Paused      bool        `json:"paused"`
	Type        string      `json:"type"`
	NameServers []string    `json:"name_servers"`
	Account     accountJSON `json:"account"`
}

type accountJSON struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type recordJSON struct {
	ID         string         `json:"id"`
	ZoneID     string         `json:"zone_id"`
	ZoneName   string         `json:"zone_name"`
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Content    string         `json:"content"`
	Proxiable  bool           `json:"proxiable"`
	Proxied    bool           `json:"proxied"`
	TTL        int            `json:"ttl"`
	Data       map[string]any `json:"data,omitempty"` // DS: key_tag, algorithm, digest_type, digest
	Settings   map[string]any `json:"settings"`
	Meta       map[string]any `json:"meta"`
	Comment    *string        `json:"comment"`
	Tags       []string       `json:"tags"`
	CreatedOn  time.Time      `json:"created_on"`
	ModifiedOn time.Time      `json:"modified_on"`
}

// maxPerPage is the largest per_page Cloudflare accepts for DNS records.
const maxPerPage = 5000

func (s *Server) serve(w http.ResponseWriter, req *http.Request) {
	path, ok := strings.CutPrefix(req.URL.Path, "/client/v4")
	route := routeOf(path)
	s.mu.Lock()
	now := s.now()
	s.calls[req.Method+" "+route]++
	s.times = append(s.times, now)
	fault := s.fault(req.Method, path, now)
	limited := s.limited(now)
	s.mu.Unlock()

	switch {
	case !ok:
		fail(w, refuse(404, CodeNoRoute, "No route for that URI"))
	case limited > 0:
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(limited.Seconds()))))
		fail(w, refuse(429, 971, "Please wait and consider throttling your request speed"))
	case fault != nil && fault.Status != 0:
		if !wait(req, fault.Delay) {
			return
		}
		if fault.Status == http.StatusTooManyRequests && fault.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(fault.RetryAfter.Seconds()))))
		}
		fail(w, refuse(fault.Status, fault.Status, "injected fault: %s", http.StatusText(fault.Status)))
	case fault != nil:
		// Served now, answered late: a client that gives up first still
		// finds the change made.
		rec := httptest.NewRecorder()
		s.route(rec, req, path, route)
		if !wait(req, fault.Delay) {
			return
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	default:
		s.route(w, req, path, route)
	}
}

// wait sleeps d, or less when the client goes away (false).
func wait(req *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-req.Context().Done():
		return false
	}
}

func (s *Server) route(w http.ResponseWriter, req *http.Request, path, route string) {
	if err := s.auth(req); err != nil {
		fail(w, err)
		return
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if s.lbRoute(w, req, route, parts) {
		return
	}
	switch {
	case route == "/zones" && req.Method == http.MethodGet:
		s.listZones(w, req)
	case route == "/zones/{zone}" && req.Method == http.MethodGet:
		s.getZone(w, parts[1])
	case route == "/zones/{zone}/dns_records" && req.Method == http.MethodGet:
		s.listRecords(w, req, parts[1])
	case route == "/zones/{zone}/dns_records" && req.Method == http.MethodPost:
		s.createRecord(w, req, parts[1])
	case route == "/zones/{zone}/dns_records/{id}":
		s.record(w, req, parts[1], parts[3])
	default:
		fail(w, refuse(404, CodeNoRoute, "No route for that URI"))
	}
}

// routeOf names the route of a path for the call counters.
func routeOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] == "zones":
		return "/zones"
	case len(parts) == 2 && parts[0] == "zones":
		return "/zones/{zone}"
	case len(parts) == 3 && parts[0] == "zones" && parts[2] == "load_balancers":
		return routeLBs
	case len(parts) == 4 && parts[0] == "zones" && parts[2] == "load_balancers":
		return routeLB
	case len(parts) == 4 && parts[0] == "accounts" && parts[2] == "load_balancers" && (parts[3] == "monitors" || parts[3] == "pools"):
		return "/accounts/{account}/load_balancers/" + parts[3]
	case len(parts) == 5 && parts[0] == "accounts" && parts[2] == "load_balancers" && (parts[3] == "monitors" || parts[3] == "pools"):
		return "/accounts/{account}/load_balancers/" + parts[3] + "/{id}"
	case len(parts) == 3 && parts[0] == "zones" && parts[2] == "dns_records":
		return "/zones/{zone}/dns_records"
	case len(parts) == 4 && parts[0] == "zones" && parts[2] == "dns_records":
		return "/zones/{zone}/dns_records/{id}"
	}
	return path
}

// fault returns the fault that fires for this request, if any. Callers
// hold s.mu.
func (s *Server) fault(method, path string, now time.Time) *Fault {
	for _, f := range s.faults {
		if (f.Method != "" && f.Method != method) || !strings.Contains(path, f.Path) ||
			(!f.From.IsZero() && now.Before(f.From)) || (!f.Until.IsZero() && !now.Before(f.Until)) ||
			(f.Times > 0 && f.fired >= f.Times) {
			continue
		}
		f.seen++
		if f.Every > 1 && f.seen%f.Every != 0 {
			continue
		}
		f.fired++
		return f
	}
	return nil
}

// limited books a request against RateLimit and returns how long to wait
// when it is over the limit (0: allowed). Callers hold s.mu.
func (s *Server) limited(now time.Time) time.Duration {
	if s.limitN <= 0 {
		return 0
	}
	drop := 0
	for drop < len(s.recent) && !s.recent[drop].Add(s.limitP).After(now) {
		drop++
	}
	s.recent = append(s.recent[drop:], now)
	if len(s.recent) <= s.limitN {
		return 0
	}
	return max(time.Second, s.recent[len(s.recent)-1-s.limitN].Add(s.limitP).Sub(now))
}

func (s *Server) auth(req *http.Request) *apiErr {
	h := req.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || tok == "" {
		return refuse(400, CodeHeaders, "Invalid request headers")
	}
	if tok != s.token {
		return refuse(403, CodeAuthentication, "Authentication error")
	}
	return nil
}

// page parses page and per_page (default 1 and 100; per_page at most 5000).
func page(req *http.Request) (int, int, *apiErr) {
	p, pp := 1, 100
	q := req.URL.Query()
	if v := q.Get("page"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 1 || f != math.Trunc(f) {
			return 0, 0, refuse(400, CodeBadRequest, "page must be a positive integer")
		}
		p = int(f)
	}
	if v := q.Get("per_page"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 1 || f > maxPerPage || f != math.Trunc(f) {
			return 0, 0, refuse(400, CodeBadRequest, "per_page must be an integer between 1 and %d", maxPerPage)
		}
		pp = int(f)
	}
	return p, pp, nil
}

// paginate cuts one page of n items: the bounds and the result_info.
func paginate(n, p, pp int) (int, int, *resultInfo) {
	lo, hi := min(n, (p-1)*pp), min(n, p*pp)
	return lo, hi, &resultInfo{Page: p, PerPage: pp, Count: hi - lo, TotalCount: n, TotalPages: (n + pp - 1) / pp}
}

func (s *Server) listZones(w http.ResponseWriter, req *http.Request) {
	p, pp, err := page(req)
	if err != nil {
		fail(w, err)
		return
	}
	name := strings.TrimSuffix(strings.ToLower(req.URL.Query().Get("name")), ".")
	s.mu.Lock()
	var out []zoneJSON
	for _, z := range s.zones {
		if name == "" || z.name == name {
			out = append(out, s.zoneJSON(z))
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b zoneJSON) int { return strings.Compare(a.Name, b.Name) })
	lo, hi, info := paginate(len(out), p, pp)
	ok(w, orEmpty(out[lo:hi]), info)
}

func (s *Server) getZone(w http.ResponseWriter, zid string) {
	s.mu.Lock()
	z, found := s.zones[zid]
	var out zoneJSON
	if found {
		out = s.zoneJSON(z)
	}
	s.mu.Unlock()
	if !found {
		fail(w, noZone())
		return
	}
	ok(w, out, nil)
}

// zoneJSON is a zone as GET /zones answers it. Callers hold s.mu.
func (s *Server) zoneJSON(z *zone) zoneJSON {
	return zoneJSON{ID: z.id, Name: z.name, Status: "active", Type: "full",
		NameServers: []string{"ada.ns.cloudflare.com", "bob.ns.cloudflare.com"}, Account: accountJSON{ID: s.acct.id, Name: "fake"}}
}

func (s *Server) listRecords(w http.ResponseWriter, req *http.Request, zid string) {
	p, pp, perr := page(req)
	if perr != nil {
		fail(w, perr)
		return
	}
	q := req.URL.Query()
	name := strings.TrimSuffix(strings.ToLower(firstOf(q.Get("name"), q.Get("name.exact"))), ".")
	typ := strings.ToUpper(q.Get("type"))
	s.mu.Lock()
	z, found := s.zones[zid]
	var out []recordJSON
	if found {
		for _, r := range z.sorted() {
			if (name == "" || r.Name == name) && (typ == "" || r.Type == typ) {
				out = append(out, toJSON(z, r))
			}
		}
	}
	s.mu.Unlock()
	if !found {
		fail(w, noZone())
		return
	}
	lo, hi, info := paginate(len(out), p, pp)
	ok(w, orEmpty(out[lo:hi]), info)
}

func (s *Server) createRecord(w http.ResponseWriter, req *http.Request, zid string) {
	body, err := decode(req)
	if err != nil {
		fail(w, err)
		return
	}
	var r Record
	if err := body.apply(&r, true); err != nil {
		fail(w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	z, found := s.zones[zid]
	if !found {
		fail(w, noZone())
		return
	}
	out, aerr := s.create(z, r, req.Method)
	if aerr != nil {
		fail(w, aerr)
		return
	}
	ok(w, toJSON(z, out), nil)
}

// record serves GET, PUT, PATCH and DELETE of one record.
func (s *Server) record(w http.ResponseWriter, req *http.Request, zid, id string) {
	var body fields
	if req.Method == http.MethodPut || req.Method == http.MethodPatch {
		var err *apiErr
		if body, err = decode(req); err != nil {
			fail(w, err)
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	z, found := s.zones[zid]
	if !found {
		fail(w, noZone())
		return
	}
	cur, found := z.records[id]
	if !found {
		fail(w, refuse(404, CodeNotFound, "Record does not exist."))
		return
	}
	switch req.Method {
	case http.MethodGet:
		ok(w, toJSON(z, *cur), nil)
	case http.MethodDelete:
		if orphansDS(z.list(), id) {
			fail(w, refuse(400, CodeDSPlacement, "The last NS record of a delegated subdomain cannot be deleted while its DS records exist: delete them first."))
			return
		}
		old := *cur
		s.write(z, req.Method, &old, nil, func() { delete(z.records, id) })
		ok(w, map[string]string{"id": id}, nil)
	case http.MethodPut, http.MethodPatch:
		nu := Record{ID: id, TTL: 1, created: cur.created}
		if req.Method == http.MethodPatch {
			nu = *cur
		}
		if err := body.apply(&nu, req.Method == http.MethodPut); err != nil {
			fail(w, err)
			return
		}
		if err := normalize(&nu, z.name); err != nil {
			fail(w, err)
			return
		}
		if err := conflict(nu, z.list(), id); err != nil {
			fail(w, err)
			return
		}
		nu.modified = s.now()
		old := *cur
		s.write(z, req.Method, &old, &nu, func() { z.records[id] = &nu })
		ok(w, toJSON(z, nu), nil)
	default:
		fail(w, refuse(405, CodeNoRoute, "Method not allowed"))
	}
}

// fields is a decoded record body: present keys only.
type fields map[string]json.RawMessage

func decode(req *http.Request) (fields, *apiErr) {
	b, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		return nil, refuse(400, CodeBadRequest, "cannot read the body")
	}
	var f fields
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, refuse(400, CodeBadRequest, "Request body is not valid JSON: %v", err)
	}
	return f, nil
}

// apply copies the present fields into r; full (POST, PUT) requires name,
// type and content, or data for a DS (whose content Cloudflare makes from
// data: key_tag, algorithm, digest_type, digest).
func (f fields) apply(r *Record, full bool) *apiErr {
	for _, k := range []string{"name", "type"} {
		if _, ok := f[k]; full && !ok {
			return refuse(400, CodeBadRequest, "%s is required", k)
		}
	}
	if raw, ok := f["type"]; ok {
		var typ string
		if err := json.Unmarshal(raw, &typ); err != nil {
			return refuse(400, CodeBadRequest, "type: %v", err)
		}
		if strings.EqualFold(typ, "DS") {
			if err := f.dsContent(full); err != nil {
				return err
			}
		}
	}
	if _, ok := f["content"]; full && !ok {
		return refuse(400, CodeBadRequest, "content is required")
	}
	for k, dst := range map[string]any{"name": &r.Name, "type": &r.Type, "content": &r.Content, "proxied": &r.Proxied} {
		if raw, ok := f[k]; ok {
			if err := json.Unmarshal(raw, dst); err != nil {
				return refuse(400, CodeBadRequest, "%s: %v", k, err)
			}
		}
	}
	if raw, ok := f["ttl"]; ok {
		var ttl float64
		if err := json.Unmarshal(raw, &ttl); err != nil || ttl != math.Trunc(ttl) {
			return refuse(400, CodeBadTTL, "TTL must be between 60 and 86400 seconds, or 1 for Automatic.")
		}
		r.TTL = int(ttl)
	}
	return nil
}

// dsContent turns the data of a DS body into its content (replacing any
// content given: for DS it is read-only). full (POST, PUT) requires data.
func (f fields) dsContent(full bool) *apiErr {
	raw, ok := f["data"]
	if !ok {
		if full {
			return refuse(400, CodeBadDS, "data is required for DS records: key_tag, algorithm, digest_type, digest.")
		}
		delete(f, "content")
		return nil
	}
	var d struct {
		KeyTag     *float64 `json:"key_tag"`
		Algorithm  *float64 `json:"algorithm"`
		DigestType *float64 `json:"digest_type"`
		Digest     *string  `json:"digest"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return refuse(400, CodeBadDS, "data: %v", err)
	}
	if d.KeyTag == nil || d.Algorithm == nil || d.DigestType == nil || d.Digest == nil {
		return refuse(400, CodeBadDS, "DS record data must have key_tag, algorithm, digest_type and digest.")
	}
	for _, n := range []float64{*d.KeyTag, *d.Algorithm, *d.DigestType} {
		if n != math.Trunc(n) || n < 0 {
			return refuse(400, CodeBadDS, "DS key_tag, algorithm and digest_type are whole numbers.")
		}
	}
	c, _ := json.Marshal(fmt.Sprintf("%d %d %d %s", int64(*d.KeyTag), int64(*d.Algorithm), int64(*d.DigestType), strings.ReplaceAll(*d.Digest, " ", "_")))
	f["content"] = c
	return nil
}

func toJSON(z *zone, r Record) recordJSON {
	out := recordJSON{ID: r.ID, ZoneID: z.id, ZoneName: z.name, Name: r.Name, Type: r.Type, Content: r.Content,
		Proxiable: proxiable[r.Type], Proxied: r.Proxied, TTL: r.TTL, Settings: map[string]any{},
		Meta: map[string]any{}, Tags: []string{}, CreatedOn: r.created, ModifiedOn: r.modified}
	if f := strings.Fields(r.Content); r.Type == "DS" && len(f) == 4 {
		tag, _ := strconv.Atoi(f[0])
		alg, _ := strconv.Atoi(f[1])
		dt, _ := strconv.Atoi(f[2])
		out.Data = map[string]any{"key_tag": tag, "algorithm": alg, "digest_type": dt, "digest": f[3]}
	}
	return out
}

func noZone() *apiErr {
	return refuse(400, CodeNoRoute, "Could not route to /zones, perhaps your object identifier is invalid?")
}

func ok(w http.ResponseWriter, result any, info *resultInfo) {
	reply(w, http.StatusOK, envelope{Success: true, Errors: []errorJSON{}, Messages: []errorJSON{}, Result: result, ResultInfo: info})
}

func fail(w http.ResponseWriter, e *apiErr) {
	reply(w, e.status, envelope{Errors: []errorJSON{{Code: e.code, Message: e.message}}, Messages: []errorJSON{}})
}

func reply(w http.ResponseWriter, status int, env envelope) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(env) // the client may be gone (a timeout)
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
