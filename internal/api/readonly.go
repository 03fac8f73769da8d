package api

import "net/http"

// ReadOnly serves h for GET and HEAD only: every other method gets 405, so
// a listener opened to dashboards can never change state.
func ReadOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "this listener is read-only (server.http.read_only_listen): send changes to server.http.listen")
			return
		}
		h.ServeHTTP(w, r)
	})
}
