package api

import (
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"strings"
)

// Every route that changes state is registered with router.change, which
// puts the same guard in front of it: a valid bearer token and a JSON
// content type, checked before the handler runs. router.Handle and
// router.HandleFunc accept only GET patterns, so a changing route cannot
// be registered without the guard (build panics at start, and every test
// that builds the handler fails).

// changeFunc handles a change that passed the guard; who is the name of
// the token presented.
type changeFunc func(w http.ResponseWriter, r *http.Request, who string)

// router registers routes on a ServeMux and records every pattern (for
// Routes and the OpenAPI test) and which of them change state.
type router struct {
	mux     *http.ServeMux
	tokens  *Tokens
	metrics *Metrics
	log     *slog.Logger

	patterns []string
	changes  []string
}

func newRouter(tokens *Tokens, m *Metrics, log *slog.Logger) *router {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &router{mux: http.NewServeMux(), tokens: tokens, metrics: m, log: log}
}

// Handle registers a read-only route: its pattern must start with "GET ".
func (r *router) Handle(pattern string, h http.Handler) {
	if !strings.HasPrefix(pattern, http.MethodGet+" ") {
		panic(fmt.Sprintf("api: route %q changes state or has no method: register it with router.change", pattern))
	}
	r.patterns = append(r.patterns, pattern)
	r.mux.Handle(pattern, h)
}

// HandleFunc is Handle for a function.
func (r *router) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	r.Handle(pattern, http.HandlerFunc(h))
}

// change registers a route that changes state ("POST /x", "DELETE /x/{id}")
// behind the guard.
func (r *router) change(pattern string, h changeFunc) {
	method, _, ok := strings.Cut(pattern, " ")
	if !ok || method == http.MethodGet || method == http.MethodHead {
		panic(fmt.Sprintf("api: change route %q needs a changing method (POST, PUT, PATCH, DELETE)", pattern))
	}
	r.patterns = append(r.patterns, pattern)
	r.changes = append(r.changes, pattern)
	r.mux.Handle(pattern, guard(r.tokens, r.metrics, r.log, pattern, h))
}

// JSONContentType is the only content type a change is accepted with.
const JSONContentType = "application/json"

// guard lets a change through only with a valid bearer token and
// Content-Type application/json (with or without a body), and logs who
// made it. Each refusal says what is missing and what is allowed.
func guard(t *Tokens, m *Metrics, log *slog.Logger, pattern string, next changeFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if t == nil {
			m.refused(RefusedDisabled)
			writeError(w, http.StatusForbidden, "changes are disabled: set server.admin.token_file to a file of \"NAME TOKEN\" lines (mode 600)")
			return
		}
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" {
			m.refused(RefusedMissingToken)
			w.Header().Set("WWW-Authenticate", `Bearer realm="meridian-admin"`)
			writeError(w, http.StatusUnauthorized, "missing bearer token: send Authorization: Bearer TOKEN with a token of server.admin.token_file (meridian CLI: --token-file, MERIDIAN_ADMIN_TOKEN_FILE or MERIDIAN_ADMIN_TOKEN)")
			return
		}
		who, ok := t.who(token)
		if !ok {
			m.refused(RefusedInvalidToken)
			w.Header().Set("WWW-Authenticate", `Bearer realm="meridian-admin", error="invalid_token"`)
			writeError(w, http.StatusUnauthorized, "invalid bearer token: it is not one of server.admin.token_file")
			return
		}
		if msg := checkJSONContentType(r.Header.Get("Content-Type")); msg != "" {
			m.refused(RefusedContentType)
			w.Header().Set("Accept", JSONContentType)
			writeError(w, http.StatusUnsupportedMediaType, "%s", msg)
			return
		}
		log.Info("http change", "route", pattern, "path", r.URL.Path, "who", who, "remote", r.RemoteAddr)
		next(w, r, who)
	}
}

// checkJSONContentType returns why ct is refused, or "" for application/json
// (parameters such as charset=utf-8 allowed).
func checkJSONContentType(ct string) string {
	if strings.TrimSpace(ct) == "" {
		return "Content-Type is missing (allowed: application/json, with or without a body)"
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != JSONContentType {
		return fmt.Sprintf("Content-Type %q is not allowed (allowed: application/json)", ct)
	}
	return ""
}
