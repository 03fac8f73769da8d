package api

import (
	"bufio"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/meridian-gslb/meridian/internal/admin"
)

// AdminControl is the admin state behind /v1/admin.
type AdminControl interface {
	List() []admin.Override
	Add(req admin.Request, who string) (admin.Override, error)
	Remove(id, who string) (admin.Override, error)
}

// Tokens are the bearer tokens allowed to change admin state, by name.
type Tokens struct {
	byName map[string]string
}

// LoadTokens reads a token file: one "NAME TOKEN" per line; blank lines and
// lines starting with # are ignored. Tokens must be at least 16 characters.
func LoadTokens(path string) (*Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("admin token file: %w", err)
	}
	defer f.Close()
	t := &Tokens{byName: map[string]string{}}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("admin token file %s:%d: want \"NAME TOKEN\" (two fields), got %d fields", path, n, len(fields))
		}
		if len(fields[1]) < 16 {
			return nil, fmt.Errorf("admin token file %s:%d: the token of %s is shorter than 16 characters", path, n, fields[0])
		}
		if _, dup := t.byName[fields[0]]; dup {
			return nil, fmt.Errorf("admin token file %s:%d: name %s appears twice", path, n, fields[0])
		}
		t.byName[fields[0]] = fields[1]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("admin token file %s: %w", path, err)
	}
	if len(t.byName) == 0 {
		return nil, fmt.Errorf("admin token file %s has no token", path)
	}
	return t, nil
}

// NewTokens makes a token set in memory (name -> token).
func NewTokens(byName map[string]string) *Tokens {
	t := &Tokens{byName: map[string]string{}}
	for n, tok := range byName {
		t.byName[n] = tok
	}
	return t
}

// who returns the name of the token presented, comparing in constant time.
func (t *Tokens) who(token string) (string, bool) {
	name := ""
	for n, tok := range t.byName {
		if subtle.ConstantTimeCompare([]byte(tok), []byte(token)) == 1 {
			name = n
		}
	}
	return name, name != ""
}

// maxAdminBody bounds admin request bodies.
const maxAdminBody = 16 << 10

// requireToken lets a mutating call through only with a valid bearer token
// and passes the token's name on as "who".
func requireToken(t *Tokens, next func(w http.ResponseWriter, r *http.Request, who string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if t == nil {
			writeError(w, http.StatusForbidden, "admin changes are disabled: set server.admin.token_file to a file of \"NAME TOKEN\" lines")
			return
		}
		auth := r.Header.Get("Authorization")
		token, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok || token == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="meridian-admin"`)
			writeError(w, http.StatusUnauthorized, "missing bearer token: send Authorization: Bearer TOKEN (meridian CLI: --token-file or MERIDIAN_ADMIN_TOKEN)")
			return
		}
		who, ok := t.who(token)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="meridian-admin", error="invalid_token"`)
			writeError(w, http.StatusUnauthorized, "invalid bearer token")
			return
		}
		next(w, r, who)
	}
}

func registerAdmin(mux router, a AdminControl, t *Tokens) {
	mux.HandleFunc("GET /v1/admin/overrides", func(w http.ResponseWriter, _ *http.Request) {
		ovs := a.List()
		if ovs == nil {
			ovs = []admin.Override{}
		}
		writeJSON(w, http.StatusOK, ovs)
	})
	mux.HandleFunc("POST /v1/admin/overrides", requireToken(t, func(w http.ResponseWriter, r *http.Request, who string) {
		var req admin.Request
		if err := decodeStrict(w, r, &req); err != nil {
			writeError(w, statusOf(err), "%v", err)
			return
		}
		o, err := a.Add(req, who)
		var fe admin.FieldError
		switch {
		case errors.As(err, &fe):
			writeError(w, http.StatusBadRequest, "%v", err)
		case err != nil:
			writeError(w, http.StatusInternalServerError, "%v (nothing was changed)", err)
		default:
			writeJSON(w, http.StatusCreated, o)
		}
	}))
	mux.HandleFunc("DELETE /v1/admin/overrides/{id}", requireToken(t, func(w http.ResponseWriter, r *http.Request, who string) {
		o, err := a.Remove(r.PathValue("id"), who)
		switch {
		case errors.Is(err, admin.ErrNotFound):
			writeError(w, http.StatusNotFound, "%v", err)
		case err != nil:
			writeError(w, http.StatusInternalServerError, "%v (nothing was changed)", err)
		default:
			writeJSON(w, http.StatusOK, o)
		}
	}))
}

type httpError struct {
	code int
	msg  string
}

func (e httpError) Error() string { return e.msg }

func statusOf(err error) int {
	var he httpError
	if errors.As(err, &he) {
		return he.code
	}
	return http.StatusBadRequest
}

// decodeStrict reads one JSON object: at most maxAdminBody bytes, no
// unknown fields, nothing after it.
func decodeStrict(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return httpError{http.StatusUnsupportedMediaType, fmt.Sprintf("content type %q is not allowed (allowed: application/json)", ct)}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxAdminBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", maxAdminBody)}
		}
		if strings.HasPrefix(err.Error(), "json: unknown field") {
			return httpError{http.StatusBadRequest, "body: " + strings.TrimPrefix(err.Error(), "json: ") + " (allowed: kind, cluster, service, endpoint, weight, reason, expires_in)"}
		}
		return httpError{http.StatusBadRequest, "body is not a JSON object: " + err.Error()}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return httpError{http.StatusBadRequest, "body has data after the JSON object"}
	}
	return nil
}
