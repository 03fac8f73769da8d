package api

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// DemoControl starts and stops the demo's local backends.
type DemoControl interface {
	Start(addr string) error
	Stop(addr string) error
	List() any
}

// KeyControl manages the gossip keyring of the ring.
type KeyControl interface {
	Keys() (primary string, all []string)
	KeyOp(op, key string) error
}

// KeyRequest is the body of POST /v1/ring/keys.
type KeyRequest struct {
	Op  string `json:"op"`  // install, use, remove
	Key string `json:"key"` // base64
}

// ErrorBody is every error response's body.
type ErrorBody struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, ErrorBody{Error: fmt.Sprintf(format, args...)})
}

func registerDemo(mux *router, d DemoControl) {
	mux.HandleFunc("GET /v1/demo/backends", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, d.List()) })
	mux.change("POST /v1/demo/backends/{addr}/{action}", func(w http.ResponseWriter, r *http.Request, _ string) {
		addr, action := r.PathValue("addr"), r.PathValue("action")
		var err error
		switch action {
		case "start":
			err = d.Start(addr)
		case "stop":
			err = d.Stop(addr)
		default:
			writeError(w, http.StatusBadRequest, "action %q is not allowed (allowed: start, stop)", action)
			return
		}
		if err != nil {
			writeError(w, http.StatusNotFound, "%v", err)
			return
		}
		writeJSON(w, http.StatusOK, d.List())
	})
}

// registerKeys serves the gossip keyring. Reading shows fingerprints only
// (a few bytes of each key's SHA-256, which reveal nothing of the key), so
// it needs no token; changing it does.
func registerKeys(mux *router, k KeyControl) {
	mux.HandleFunc("GET /v1/ring/keys", func(w http.ResponseWriter, _ *http.Request) {
		primary, all := k.Keys()
		writeJSON(w, http.StatusOK, map[string]any{"primary": fingerprint(primary), "keys": fingerprints(all)})
	})
	mux.change("POST /v1/ring/keys", func(w http.ResponseWriter, r *http.Request, _ string) {
		var req KeyRequest
		if err := decodeStrict(w, r, &req, `op, key: {"op": "install|use|remove", "key": "<base64>"}`); err != nil {
			writeError(w, statusOf(err), "%v", err)
			return
		}
		if err := k.KeyOp(req.Op, req.Key); err != nil {
			code := http.StatusBadRequest
			if errors.Is(err, ErrConflict) {
				code = http.StatusConflict
			}
			writeError(w, code, "%v", err)
			return
		}
		primary, all := k.Keys()
		writeJSON(w, http.StatusOK, map[string]any{"primary": fingerprint(primary), "keys": fingerprints(all)})
	})
}

// ErrConflict marks a request that is valid but cannot apply now.
var ErrConflict = errors.New("conflict")

// fingerprint identifies a key without revealing it: the start of its SHA-256.
func fingerprint(k string) string {
	if k == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(k))
	return "sha256:" + hex.EncodeToString(sum[:6])
}

func fingerprints(ks []string) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = fingerprint(k)
	}
	return out
}
