// Package webhook serves the ExternalDNS webhook provider API
// (sigs.k8s.io/external-dns/provider/webhook: GET / negotiates, GET and
// POST /records, POST /adjustendpoints, GET /healthz) over package
// extdns's store. Every request but /healthz carries the token of one
// configured cluster (HTTP Basic, the cluster as user and the token as
// password, as ExternalDNS sends from the userinfo of
// --webhook-provider-url; or Authorization: Bearer <token>, the scheme
// case-insensitive; a bare token is refused); it reads and changes that
// cluster's records only.
package webhook

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/meridian-gslb/meridian/internal/extdns"
)

// DefaultMaxBody bounds a request body (Options.MaxBody).
const DefaultMaxBody = 4 << 20

// Client is one ExternalDNS instance: its cluster and token.
type Client struct {
	Cluster string
	Token   string
}

// Options of Handler.
type Options struct {
	Store   *extdns.Store
	Rules   func() *extdns.Rules // the served zones and limits now (called per request)
	Clients []Client
	// Changed is called after a POST /records changed the store (the
	// pipeline merges again); it must not block.
	Changed func()
	Metrics *Metrics     // nil: NewMetrics(nil)
	Logger  *slog.Logger // nil: slog.Default()
	MaxBody int64        // bytes of a request body (default DefaultMaxBody)
}

type handler struct {
	o       Options
	clients []client
	log     *slog.Logger
}

type client struct {
	cluster string
	sum     [32]byte // sha256 of the token: compared in constant time
}

// Handler is the webhook API. A token must identify exactly one client:
// Handler refuses an empty or repeated token.
func Handler(o Options) (http.Handler, error) {
	h := &handler{o: o, log: o.Logger}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.o.Metrics == nil {
		h.o.Metrics = NewMetrics(nil)
	}
	if h.o.MaxBody <= 0 {
		h.o.MaxBody = DefaultMaxBody
	}
	seen := map[[32]byte]string{}
	for _, c := range o.Clients {
		if c.Token == "" {
			return nil, fmt.Errorf("externaldns client %q: empty token", c.Cluster)
		}
		sum := sha256.Sum256([]byte(c.Token))
		if other, ok := seen[sum]; ok {
			return nil, fmt.Errorf("externaldns clients %q and %q: the same token (a token identifies one cluster)", other, c.Cluster)
		}
		seen[sum] = c.Cluster
		h.clients = append(h.clients, client{cluster: c.Cluster, sum: sum})
		if o.Store != nil { // the records a state file brought back
			h.o.Metrics.records.WithLabelValues(c.Cluster).Set(float64(o.Store.Counts()[c.Cluster]))
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.Handle("GET /{$}", h.authed(h.negotiate))
	mux.Handle("GET /records", h.authed(h.records))
	mux.Handle("POST /records", h.authed(h.apply))
	mux.Handle("POST /adjustendpoints", h.authed(h.adjust))
	return h.recovered(mux), nil
}

// Routes are the routes Handler serves (docs test).
var Routes = []string{"GET /", "GET /records", "POST /records", "POST /adjustendpoints", "GET /healthz"}

// recovered answers 500 to a request whose handler panicked, and counts
// it; every request is counted by route and code.
func (h *handler) recovered(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		defer func() {
			if v := recover(); v != nil {
				h.o.Metrics.panics.Inc()
				h.log.Error("externaldns webhook: panic recovered", "path", r.URL.Path, "panic", fmt.Sprint(v))
				if !sw.wrote {
					http.Error(sw, "internal error", http.StatusInternalServerError)
				}
			}
			h.o.Metrics.requests.WithLabelValues(route(r), strconv.Itoa(sw.code)).Inc()
		}()
		next.ServeHTTP(sw, r)
	})
}

// route is the metrics label of r: a known route, else "other".
func route(r *http.Request) string {
	switch p := r.Method + " " + r.URL.Path; p {
	case "GET /", "GET /records", "POST /records", "POST /adjustendpoints", "GET /healthz":
		return p
	}
	return "other"
}

type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// authed runs next with the cluster of the request's token, or answers 401.
func (h *handler) authed(next func(w http.ResponseWriter, r *http.Request, cluster string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cluster, why := h.cluster(r)
		if why != "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="meridian-externaldns"`)
			http.Error(w, "unauthorized: "+why+" (send the cluster's token: HTTP Basic with the cluster as user and the token as password, or Authorization: Bearer <token>)", http.StatusUnauthorized)
			return
		}
		next(w, r, cluster)
	})
}

// cluster is the client whose token r carries, or why there is none. The
// token comes as HTTP Basic's password or after the Bearer scheme (both
// schemes case-insensitive, RFC 7617 and RFC 6750); any other
// Authorization, a bare token included, is refused. Every configured
// token is compared (in constant time), so the time does not tell which
// matched.
func (h *handler) cluster(r *http.Request) (cluster, why string) {
	auth := r.Header.Get("Authorization")
	user, tok, basic := r.BasicAuth()
	if !basic {
		user = ""
		scheme, rest, _ := strings.Cut(auth, " ")
		switch {
		case auth == "":
			return "", "no Authorization header"
		case !strings.EqualFold(scheme, "Bearer"):
			// Not echoed: a bare token would be.
			return "", "the Authorization header is neither Basic nor Bearer (a bare token is not accepted)"
		}
		tok = strings.TrimSpace(rest)
	}
	if tok == "" {
		return "", "the Authorization header carries no token"
	}
	sum := sha256.Sum256([]byte(tok))
	found := -1
	for i := range h.clients {
		if subtle.ConstantTimeCompare(sum[:], h.clients[i].sum[:]) == 1 {
			found = i
		}
	}
	if found < 0 || (user != "" && user != h.clients[found].cluster) {
		return "", "unknown token, or a token sent with another cluster's name"
	}
	return h.clients[found].cluster, ""
}

// negotiate answers GET /: the media type and the domain filter (the
// served zones).
func (h *handler) negotiate(w http.ResponseWriter, _ *http.Request, _ string) {
	writeJSON(w, map[string][]string{"include": h.o.Rules().Apexes()})
}

// records answers GET /records: the cluster's own records.
func (h *handler) records(w http.ResponseWriter, _ *http.Request, cluster string) {
	writeJSON(w, h.o.Store.Records(cluster))
}

// apply handles POST /records: the cluster's changes, all or none.
func (h *handler) apply(w http.ResponseWriter, r *http.Request, cluster string) {
	var raw struct {
		Create    json.RawMessage `json:"create"`
		UpdateOld json.RawMessage `json:"updateOld"`
		UpdateNew json.RawMessage `json:"updateNew"`
		Delete    json.RawMessage `json:"delete"`
	}
	if !h.decode(w, r, &raw) {
		return
	}
	rules := h.o.Rules()
	var ch extdns.Changes
	budget := maxPerRequest(rules)
	for _, l := range []struct {
		name string
		raw  json.RawMessage
		dst  *[]*extdns.Endpoint
	}{{"create", raw.Create, &ch.Create}, {"updateOld", raw.UpdateOld, &ch.UpdateOld}, {"updateNew", raw.UpdateNew, &ch.UpdateNew}, {"delete", raw.Delete, &ch.Delete}} {
		if !h.decodeList(w, l.name, l.raw, &budget, l.dst) {
			return
		}
	}
	changed, err := h.o.Store.Apply(cluster, &ch, rules)
	var ce *extdns.ChangeError
	switch {
	case errors.As(err, &ce) && ce.Conflict:
		http.Error(w, "conflict: "+ce.Error(), http.StatusConflict)
		return
	case errors.As(err, &ce):
		http.Error(w, "bad change: "+ce.Error(), http.StatusBadRequest)
		return
	case err != nil:
		h.log.Error("externaldns webhook: changes not stored", "cluster", cluster, "err", err)
		http.Error(w, "changes not stored", http.StatusInternalServerError)
		return
	}
	for action, n := range map[string]int{"create": len(ch.Create), "update": len(ch.UpdateNew), "delete": len(ch.Delete)} {
		if n > 0 {
			h.o.Metrics.changes.WithLabelValues(cluster, action).Add(float64(n))
		}
	}
	h.o.Metrics.records.WithLabelValues(cluster).Set(float64(h.o.Store.Counts()[cluster]))
	if changed {
		h.log.Info("externaldns: records changed", "cluster", cluster, "create", len(ch.Create), "update", len(ch.UpdateNew), "delete", len(ch.Delete))
		if h.o.Changed != nil {
			h.o.Changed()
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// adjust handles POST /adjustendpoints: the records as Meridian would store
// them; a record Meridian would refuse is left out (and counted), so that
// ExternalDNS does not send a change that fails whole.
func (h *handler) adjust(w http.ResponseWriter, r *http.Request, cluster string) {
	var raw json.RawMessage
	if !h.decode(w, r, &raw) {
		return
	}
	rules := h.o.Rules()
	var in []*extdns.Endpoint
	budget := maxPerRequest(rules)
	if !h.decodeList(w, "the list", raw, &budget, &in) {
		return
	}
	out := make([]*extdns.Endpoint, 0, len(in))
	for _, e := range in {
		if e == nil {
			continue
		}
		n := rules.Normalize(e)
		if err := rules.Check(n); err != nil {
			h.o.Metrics.adjusted.WithLabelValues(cluster).Inc()
			h.log.Debug("externaldns: record left out by adjustendpoints", "cluster", cluster, "name", n.DNSName, "type", n.RecordType, "reason", err)
			continue
		}
		out = append(out, n)
	}
	writeJSON(w, out)
}

// decode reads r's JSON body into v (at most MaxBody bytes), or answers
// 413 or 400.
func (h *handler) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") && !strings.HasPrefix(ct, "application/external.dns.webhook+json") {
		http.Error(w, fmt.Sprintf("content type %q is not accepted (allowed: %s or application/json)", ct, extdns.MediaType), http.StatusUnsupportedMediaType)
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, h.o.MaxBody))
	if err := dec.Decode(v); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			http.Error(w, fmt.Sprintf("body larger than %d bytes", h.o.MaxBody), http.StatusRequestEntityTooLarge)
			return false
		}
		http.Error(w, "body is not the webhook's JSON: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

// maxPerRequest bounds the records of one request (all lists together):
// twice what a cluster may store (a full sync creates every record; an
// update names the old and the new), so that a body of small objects
// cannot make the decoder allocate millions of records.
func maxPerRequest(r *extdns.Rules) int { return 2 * r.MaxRecords() }

// decodeList decodes the JSON list raw (null or absent: none) into dst,
// taking each record from *budget; beyond it, or when raw is not a list of
// records, it answers 413 or 400.
func (h *handler) decodeList(w http.ResponseWriter, name string, raw json.RawMessage, budget *int, dst *[]*extdns.Endpoint) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		http.Error(w, fmt.Sprintf("body is not the webhook's JSON: %s is not a list of records", name), http.StatusBadRequest)
		return false
	}
	for dec.More() {
		if *budget <= 0 {
			http.Error(w, fmt.Sprintf("too many records in one request (allowed at most %d: twice the records a cluster may store)", maxPerRequest(h.o.Rules())), http.StatusRequestEntityTooLarge)
			return false
		}
		*budget--
		var e *extdns.Endpoint
		if err := dec.Decode(&e); err != nil {
			http.Error(w, fmt.Sprintf("body is not the webhook's JSON: %s[%d]: %v", name, len(*dst), err), http.StatusBadRequest)
			return false
		}
		*dst = append(*dst, e)
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", extdns.MediaType)
	json.NewEncoder(w).Encode(v)
}
