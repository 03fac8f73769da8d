package api

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strings"
)

// Hosts is the Host allow-list of the HTTP listeners: a page of another
// site that rebinds its own name to a node's address (DNS rebinding) sends
// its own name as Host, and must not read the unauthenticated GETs
// (overrides with who and why, /v1/kube, /metrics). Allowed are an IP
// literal (with or without a port: the kubelet's probes and Prometheus
// send the pod IP, and every listen address is one), localhost and names
// under .localhost, a request without Host (HTTP/1.0), and the names of
// server.http.allowed_hosts: exact, "*.example.com" for every name under
// example.com, or "*" for any.
type Hosts struct {
	any      bool
	exact    map[string]bool
	suffixes []string // ".example.com"
}

// NewHosts builds the allow-list from server.http.allowed_hosts (names,
// "*.suffix" or "*"; case does not matter; a port is not part of a name).
func NewHosts(allowed []string) *Hosts {
	h := &Hosts{exact: map[string]bool{}}
	for _, n := range allowed {
		n = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(n)), ".")
		switch {
		case n == "*":
			h.any = true
		case strings.HasPrefix(n, "*."):
			h.suffixes = append(h.suffixes, n[1:])
		case n != "":
			h.exact[n] = true
		}
	}
	return h
}

// Allows reports whether a request with this Host header (as in
// http.Request.Host) may be served.
func (h *Hosts) Allows(host string) bool {
	if host == "" || h.any {
		return true
	}
	name := host
	if n, _, err := net.SplitHostPort(host); err == nil {
		name = n
	}
	name = strings.TrimSuffix(strings.ToLower(strings.Trim(name, "[]")), ".")
	if _, err := netip.ParseAddr(name); err == nil {
		return true
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") || h.exact[name] {
		return true
	}
	for _, s := range h.suffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// Protect wraps the handler of a listener: a request whose Host hosts does
// not allow gets 421 Misdirected Request with a body naming the setting
// (counted in meridian_http_requests_refused_host_total), and a panic in a
// handler is recovered, logged with its stack, counted in
// meridian_http_panics_total and answered 500 (when the handler has not
// begun its response yet; else the connection is cut). hosts nil checks
// no Host (the probe listener, which serves nothing else to read).
func Protect(h http.Handler, hosts *Hosts, m *Metrics, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler { // net/http's own way to cut a response
				panic(v)
			}
			if m != nil {
				m.Panics.Inc()
			}
			log.Error("http handler panic: answered 500", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			writeError(w, http.StatusInternalServerError, "internal error: the handler of %s %s failed (logged and counted in meridian_http_panics_total)", r.Method, r.URL.Path)
		}()
		if hosts != nil && !hosts.Allows(r.Host) {
			if m != nil {
				m.HostRefused.Inc()
			}
			writeError(w, http.StatusMisdirectedRequest, "Host %q is not served here (allowed: an IP address, localhost, or a name of server.http.allowed_hosts); add the name you reach this node by to server.http.allowed_hosts", r.Host)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ProbeHandler serves only the kubelet's probes, GET /healthz and GET
// /readyz, as Handler does (for server.http.probe_listen).
func ProbeHandler(ready func() error) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", readyz(ready))
	return mux
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
}

func readyz(ready func() error) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := ready(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("not ready: " + err.Error() + "\n"))
			return
		}
		w.Write([]byte("ok\n"))
	}
}
