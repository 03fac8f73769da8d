// Package config reads Meridian's YAML configuration file into the desired
// state of internal/model, with errors that name the file, line, field and
// the allowed values. It also watches the file for hot reloads.
package config

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/notify"
)

// File is the whole configuration file: process settings plus desired state.
type File struct {
	Server        Server `yaml:"server"`
	model.Desired `yaml:",inline"`
	// Notifications: receivers of decided changes, failovers, shifts and
	// rollbacks (default: none). A change needs a restart, like server.
	Notifications notify.Config `yaml:"notifications"`
}

// Server holds the process settings of `meridian serve`.
type Server struct {
	DNS   DNS   `yaml:"dns"`
	HTTP  HTTP  `yaml:"http"`
	Log   Log   `yaml:"log"`
	Admin Admin `yaml:"admin"`
	// StateDir holds what a node learns at run time: admin overrides, its
	// ring identity, the rotated gossip keyring, zone serials. Default:
	// $STATE_DIRECTORY (systemd's StateDirectory=), else
	// $XDG_STATE_HOME/meridian/NODE, else ~/.local/state/meridian/NODE.
	StateDir string `yaml:"state_dir"`
	// SerialStateFile is where the serials of zones with transfers persist,
	// so that they only increase across restarts (default: serials.json in
	// state_dir).
	SerialStateFile string `yaml:"serial_state_file"`
	// ExternalDNS, when set, serves the ExternalDNS webhook provider API
	// (default: off; see ExternalDNS).
	ExternalDNS *ExternalDNS `yaml:"externaldns"`
}

// Admin configures the admin API (drain, force, weight overrides).
type Admin struct {
	TokenFile string `yaml:"token_file"` // lines "NAME TOKEN": bearer tokens allowed to change state (none: changes are refused)
	StateFile string `yaml:"state_file"` // where overrides persist (default: admin.json in server.state_dir)
}

// DNS configures the embedded DNS server.
type DNS struct {
	Listen            []string      `yaml:"listen"`              // UDP+TCP addresses (default [127.0.0.1:5353])
	UDPSockets        int           `yaml:"udp_sockets"`         // SO_REUSEPORT sockets per address (default: number of CPUs)
	MaxTCPConnections int           `yaml:"max_tcp_connections"` // concurrent TCP connections per address (default 1024)
	TCPIdleTimeout    time.Duration `yaml:"tcp_idle_timeout"`    // close idle TCP connections after (default 10s)
	UDPPayloadSize    int           `yaml:"udp_payload_size"`    // our EDNS0 UDP payload size (default 1232)
	RRL               RRL           `yaml:"rrl"`                 // response rate limiting (UDP)
	MaxTCPPerClient   int           `yaml:"max_tcp_per_client"`  // concurrent TCP connections per client prefix (default 32)
	// MaxTCPPerSite caps the TCP connections of one IPv6 site
	// (tcp_site_ipv6_prefix), which holds many client prefixes; beyond it
	// the site's oldest idle connection is closed for the new one (default 128).
	MaxTCPPerSite     int `yaml:"max_tcp_per_site"`
	TCPSiteIPv6Prefix int `yaml:"tcp_site_ipv6_prefix"` // default 48 (16..64, not longer than tcp_client_ipv6_prefix)
	// TCPPressureIdleTimeout replaces tcp_idle_timeout while a listener
	// holds more than half of max_tcp_connections (default 2s; not above
	// tcp_idle_timeout).
	TCPPressureIdleTimeout time.Duration `yaml:"tcp_pressure_idle_timeout"`
	// Per client prefix: the prefixes that count as one client for
	// max_tcp_per_client (one host may hold a whole IPv6 /64), and the
	// signing limit.
	TCPClientIPv4Prefix int       `yaml:"tcp_client_ipv4_prefix"` // default 24 (8..32)
	TCPClientIPv6Prefix int       `yaml:"tcp_client_ipv6_prefix"` // default 56 (16..64)
	SignLimit           SignLimit `yaml:"sign_limit"`             // fresh DNSSEC denial signatures per client prefix (UDP and TCP)
}

// SignLimit limits the signing work a client prefix can cause in signed
// zones: every denial (NXDOMAIN, NODATA) of a name or type not asked before
// needs a fresh signature. A token bucket per prefix and transport refills
// at signatures_per_second and holds window seconds of it. Beyond it a UDP
// query gets an empty truncated reply (TC=1, the resolver retries over
// TCP) and a TCP query gets SERVFAIL. Positive answers are never limited.
type SignLimit struct {
	Enabled          *bool `yaml:"enabled"`               // default true
	SignaturesPerSec int   `yaml:"signatures_per_second"` // per prefix and transport (default 100; 1..100000)
	Window           int   `yaml:"window"`                // seconds of credit a prefix may save up (default 10; 1..3600)
	IPv4Prefix       int   `yaml:"ipv4_prefix"`           // default 24 (8..32)
	IPv6Prefix       int   `yaml:"ipv6_prefix"`           // default 56 (16..64)
}

// RRL configures response rate limiting per client prefix (UDP only): a
// token bucket per prefix and response identity (the name of an answer or
// NODATA, whatever the type; the zone of a denial of a name that does not
// exist, NXDOMAIN or DNSSEC compact denial; or any error; see docs/dns.md)
// that refills at responses_per_second and bytes_per_second and holds
// window seconds of both (a quiet prefix may burst rate×window responses
// of one identity).
type RRL struct {
	Enabled         *bool `yaml:"enabled"`              // default true
	ResponsesPerSec int   `yaml:"responses_per_second"` // per prefix and response identity (default 200; 1..1000000)
	BytesPerSec     int   `yaml:"bytes_per_second"`     // response bytes per prefix and response identity (default responses_per_second × 512; 512..1000000000)
	Slip            *int  `yaml:"slip"`                 // every Nth limited response is sent truncated (TC=1); 0 = drop all, 1 = truncate all (default 2; 0..10)
	IPv4Prefix      int   `yaml:"ipv4_prefix"`          // default 24 (8..32)
	IPv6Prefix      int   `yaml:"ipv6_prefix"`          // default 56 (16..64)
	Window          int   `yaml:"window"`               // seconds of credit a prefix may save up (default 15; 1..3600)
	// Exempt lists the source networks (CIDR) never rate limited, e.g.
	// known resolvers (default: none; at most 10000 networks).
	Exempt []string `yaml:"exempt"`
}

// Defaults of server.dns.rrl and server.dns.max_tcp_per_client.
const (
	DefaultRRLResponsesPerSec  = 200
	DefaultRRLSlip             = 2
	DefaultRRLIPv4Prefix       = 24
	DefaultRRLIPv6Prefix       = 56
	DefaultRRLWindow           = 15
	DefaultRRLBytesPerResponse = 512   // bytes_per_second defaults to responses_per_second × this
	MaxRRLExempt               = 10000 // networks in server.dns.rrl.exempt
	DefaultMaxTCPPerClient     = 32
	DefaultMaxTCPPerSite       = 128
	DefaultTCPSiteIPv6Prefix   = 48
	DefaultTCPPressureIdle     = 2 * time.Second
)

// Defaults of server.dns.tcp_client_ipv4_prefix / tcp_client_ipv6_prefix
// and server.dns.sign_limit.
const (
	DefaultTCPClientIPv4Prefix   = 24
	DefaultTCPClientIPv6Prefix   = 56
	DefaultSignaturesPerSec      = 100
	DefaultSignWindow            = 10
	DefaultSignLimitIPv4Prefix   = 24
	DefaultSignLimitIPv6Prefix   = 56
	MaxSignaturesPerSecPerPrefix = 100_000
)

// HTTP configures the metrics, health and status listener.
type HTTP struct {
	Listen string `yaml:"listen"` // address of /metrics, /healthz, /readyz, the status page and the admin API (default 127.0.0.1:8080; "off" disables)
	// ReadOnlyListen, when set, serves the same pages and GET endpoints on a
	// second address (e.g. 0.0.0.0:8090 for dashboards) where every change
	// is refused, so the admin API can stay on loopback.
	ReadOnlyListen string `yaml:"read_only_listen"`
	// MaxConnections caps the open connections of each listener (listen
	// and read_only_listen); one more is closed at once and counted
	// (default 1024).
	MaxConnections int `yaml:"max_connections"`
	// MaxConnectionsPerClient caps the open connections of one client
	// address (IPv6: one /64) on each listener, so that one client cannot
	// take every slot from the probes and the others (default 64).
	MaxConnectionsPerClient int `yaml:"max_connections_per_client"`
	// ProbeListen, when set, serves only GET /healthz and GET /readyz on
	// its own address (plain HTTP, its own connection caps, the oldest
	// connection shed when full), for the kubelet's probes: nothing a
	// client does on the other listeners can starve them (default: off).
	ProbeListen string `yaml:"probe_listen"`
	// AllowedHosts are the names besides IP addresses and localhost that a
	// request's Host may carry on listen and read_only_listen (exact,
	// "*.example.com", or "*" for any); another Host gets 421, so a
	// DNS-rebinding page cannot read the GET endpoints (default: none).
	AllowedHosts []string `yaml:"allowed_hosts"`
	// MaxEventStreams caps the concurrent GET /v1/events streams of the
	// status page; one more gets 503 and the page polls (default 64).
	MaxEventStreams int `yaml:"max_event_streams"`
	// TLS, when set, serves HTTPS on both listeners; both files are
	// reloaded when they change (default: plain HTTP).
	TLS *TLS `yaml:"tls"`
}

// TLS is the certificate of an HTTP listener (server.http.tls,
// server.externaldns.tls).
type TLS struct {
	CertFile string `yaml:"cert_file"` // PEM certificate, then its chain (required)
	KeyFile  string `yaml:"key_file"`  // PEM private key, mode 600 (required)
}

// Log configures logging.
type Log struct {
	Format string `yaml:"format"` // text (default) or json
	Level  string `yaml:"level"`  // debug, info (default), warn or error
}

// Defaults of the server section.
const (
	DefaultDNSListen         = "127.0.0.1:5353"
	DefaultHTTPListen        = "127.0.0.1:8080"
	DefaultMaxTCPConnections = 1024
	DefaultTCPIdleTimeout    = 10 * time.Second
	DefaultUDPPayloadSize    = 1232
	DefaultHTTPMaxConns      = 1024 // server.http.max_connections
	DefaultHTTPMaxPerClient  = 64   // server.http.max_connections_per_client
	DefaultHTTPMaxStreams    = 64   // server.http.max_event_streams
)

// Error is one problem in a configuration file.
type Error struct {
	File string
	Line int    // 1-based; 0 when unknown
	Col  int    // 1-based; 0 when unknown
	Path string // field path, e.g. services[2].endpoints[0].weight
	Msg  string
}

func (e Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Col > 0 {
			fmt.Fprintf(&b, ":%d", e.Col)
		}
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// LoadError lists every problem found in a file.
type LoadError struct {
	Errors []Error
}

func (e *LoadError) Error() string {
	parts := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		parts[i] = fe.Error()
	}
	return strings.Join(parts, "\n")
}

// Load reads and validates the configuration file at path.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return Parse(path, data)
}

// Parse decodes and validates a configuration; name is used in error messages.
// On success the returned File has every default filled in and canonical names.
//
// A file is decoded once, without positions (parseFast); only a file that
// fails there is decoded again with positions (parseChecked), so that every
// error names its file:line exactly as before.
func Parse(name string, data []byte) (*File, error) {
	if f, ok := parseFast(data); ok {
		return f, nil
	}
	return parseChecked(name, data)
}

// parseChecked decodes data keeping positions and validates it, naming the
// file:line of every problem.
func parseChecked(name string, data []byte) (*File, error) {
	var f File
	if err := decode(data, &f); err != nil {
		// The decoder stops at the first problem, in Go's words: a value
		// of the wrong kind anywhere is listed with all the others instead,
		// followed by the problems of the rest of the file (validated with
		// those values left out; what leaving them out causes is not listed).
		if errs, rest := typeErrorsAndRest(name, data); len(errs) > 0 {
			if rest != nil {
				for _, e := range validate(name, data, rest) {
					if !underAny(e.Path, errs) {
						errs = append(errs, e)
					}
				}
			}
			return nil, &LoadError{Errors: errs}
		}
		return nil, &LoadError{Errors: []Error{decodeError(name, data, err)}}
	}
	if errs := validate(name, data, &f); len(errs) > 0 {
		return nil, &LoadError{Errors: errs}
	}
	f.Server.applyDefaults()
	f.Notifications.ApplyDefaults()
	return &f, nil
}

// validate checks a decoded file, naming the file:line of every problem;
// with none, f.Desired is normalized in place.
func validate(name string, data []byte, f *File) []Error {
	var errs []Error
	var verr *model.ValidationError
	normalized, err := model.Normalize(&f.Desired)
	switch {
	case errors.As(err, &verr):
		errs = append(errs, locate(name, data, verr.Fields)...)
	case err != nil:
		errs = append(errs, Error{File: name, Msg: err.Error()})
	}
	errs = append(errs, locate(name, data, f.Server.validate())...)
	errs = append(errs, locate(name, data, f.Notifications.Validate())...)
	if len(errs) == 0 {
		f.Desired = *normalized
	}
	return errs
}

// underAny reports whether path is one of the errors' paths or inside one
// (a problem caused by leaving a value of the wrong kind out).
func underAny(path string, errs []Error) bool {
	for _, e := range errs {
		if path == e.Path || e.Path == "" || strings.HasPrefix(path, e.Path+".") || strings.HasPrefix(path, e.Path+"[") {
			return true
		}
	}
	return false
}

// decode runs the YAML decoder, turning a decoder panic (seen with some
// malformed tags, found by FuzzParse) into an error, so that a bad file can
// never take the process down.
func decode(data []byte, f *File) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("malformed YAML: the decoder failed (%v); check tags (!...) and indentation", v)
		}
	}()
	return yaml.UnmarshalWithOptions(data, f, yaml.DisallowUnknownField())
}

func decodeError(name string, data []byte, err error) Error {
	var ve *model.ValueError
	if errors.As(err, &ve) {
		e := Error{File: name, Msg: ve.Msg}
		e.Path, e.Line, e.Col = findScalar(data, ve.Value)
		return e
	}
	var ye yaml.Error
	if errors.As(err, &ye) {
		e := Error{File: name, Msg: ye.GetMessage()}
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			e.Line, e.Col = tk.Position.Line, tk.Position.Column
		}
		var uf *yaml.UnknownFieldError
		if errors.As(err, &uf) {
			e.Path, e.Msg = unknownFieldHint(data, e.Line, e.Col, e.Msg)
		}
		return e
	}
	return Error{File: name, Msg: err.Error()}
}

// locate turns validation paths into file positions. A path that does not
// exist in the file (a missing required field) points at its nearest parent.
func locate(name string, data []byte, fields []model.FieldError) []Error {
	if len(fields) == 0 {
		return nil
	}
	file, perr := parser.ParseBytes(data, 0)
	out := make([]Error, 0, len(fields))
	for _, f := range fields {
		e := Error{File: name, Path: f.Path, Msg: f.Msg}
		if perr == nil {
			e.Line, e.Col = position(file, f.Path)
		}
		out = append(out, e)
	}
	return out
}

func position(file *ast.File, path string) (int, int) {
	for p := path; p != ""; p = parentPath(p) {
		yp, err := yaml.PathString("$." + p)
		if err != nil {
			continue
		}
		node, err := yp.FilterFile(file)
		if err != nil || node == nil {
			continue
		}
		if tk := node.GetToken(); tk != nil && tk.Position != nil {
			return tk.Position.Line, tk.Position.Column
		}
	}
	return 0, 0
}

// parentPath drops the last element of a field path: a.b[2].c -> a.b[2] -> a.b -> a.
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i <= 0 {
		return ""
	}
	return p[:i]
}

// fieldErrors collects the problems validation finds, in order.
type fieldErrors []model.FieldError

// add records a problem with the field at path.
func (errs *fieldErrors) add(path, format string, args ...any) {
	*errs = append(*errs, model.FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// validate checks the server section, one part at a time, and returns its
// problems in the order of the fields.
func (s *Server) validate() []model.FieldError {
	var errs fieldErrors
	validateDNS(&errs, &s.DNS)
	validateTCPLimits(&errs, &s.DNS)
	validateSignLimit(&errs, &s.DNS.SignLimit)
	validateRRL(&errs, &s.DNS.RRL)
	validateHTTPListen(&errs, &s.HTTP)
	validateHTTP(&errs, &s.HTTP)
	validateLog(&errs, &s.Log)
	validateExternalDNS(&errs, s.ExternalDNS)
	return errs
}

// validateDNS checks server.dns's listen addresses, UDP sockets, TCP
// connection cap and idle timeout, and UDP payload size.
func validateDNS(errs *fieldErrors, d *DNS) {
	for i, l := range d.Listen {
		if _, err := netip.ParseAddrPort(l); err != nil {
			errs.add("server.dns.listen["+strconv.Itoa(i)+"]", "%q is not an IP:port address (e.g. 127.0.0.1:5353 or [::]:53)", l)
		}
	}
	if d.UDPSockets < 0 || d.UDPSockets > 256 {
		errs.add("server.dns.udp_sockets", "%d is out of range (allowed 1..256; 0 = number of CPUs)", d.UDPSockets)
	}
	if d.MaxTCPConnections < 0 {
		errs.add("server.dns.max_tcp_connections", "%d is out of range (allowed 1 or more; 0 = default %d)", d.MaxTCPConnections, DefaultMaxTCPConnections)
	}
	if d.TCPIdleTimeout < 0 {
		errs.add("server.dns.tcp_idle_timeout", "%s is negative (e.g. 10s)", d.TCPIdleTimeout)
	}
	if p := d.UDPPayloadSize; p != 0 && (p < 512 || p > 4096) {
		errs.add("server.dns.udp_payload_size", "%d is out of range (allowed 512..4096; 0 = default %d)", p, DefaultUDPPayloadSize)
	}
}

// validateTCPLimits checks server.dns's per-client and per-site TCP
// connection limits and the idle timeout under pressure.
func validateTCPLimits(errs *fieldErrors, d *DNS) {
	if d.MaxTCPPerClient < 0 {
		errs.add("server.dns.max_tcp_per_client", "%d is out of range (allowed 1 or more; 0 = default %d)", d.MaxTCPPerClient, DefaultMaxTCPPerClient)
	}
	if p := d.TCPClientIPv4Prefix; p != 0 && (p < 8 || p > 32) {
		errs.add("server.dns.tcp_client_ipv4_prefix", "%d is out of range (allowed 8..32; 0 = default %d)", p, DefaultTCPClientIPv4Prefix)
	}
	if p := d.TCPClientIPv6Prefix; p != 0 && (p < 16 || p > 64) {
		errs.add("server.dns.tcp_client_ipv6_prefix", "%d is out of range (allowed 16..64; 0 = default %d)", p, DefaultTCPClientIPv6Prefix)
	}
	if d.MaxTCPPerSite < 0 {
		errs.add("server.dns.max_tcp_per_site", "%d is out of range (allowed 1 or more; 0 = default %d)", d.MaxTCPPerSite, DefaultMaxTCPPerSite)
	}
	if p := d.TCPSiteIPv6Prefix; p != 0 && (p < 16 || p > 64) {
		errs.add("server.dns.tcp_site_ipv6_prefix", "%d is out of range (allowed 16..64; 0 = default %d)", p, DefaultTCPSiteIPv6Prefix)
	} else if c := cmp.Or(d.TCPClientIPv6Prefix, DefaultTCPClientIPv6Prefix); cmp.Or(p, DefaultTCPSiteIPv6Prefix) > c {
		errs.add("server.dns.tcp_site_ipv6_prefix", "/%d is longer than tcp_client_ipv6_prefix /%d (allowed: a site holds client prefixes, so /%d or shorter)", cmp.Or(p, DefaultTCPSiteIPv6Prefix), c, c)
	}
	if t := d.TCPPressureIdleTimeout; t < 0 {
		errs.add("server.dns.tcp_pressure_idle_timeout", "%s is negative (e.g. 2s)", t)
	} else if idle := cmp.Or(d.TCPIdleTimeout, DefaultTCPIdleTimeout); t > idle {
		errs.add("server.dns.tcp_pressure_idle_timeout", "%s is longer than tcp_idle_timeout %s (allowed: up to tcp_idle_timeout; it shortens it under pressure)", t, idle)
	}
}

// validateSignLimit checks server.dns.sign_limit.
func validateSignLimit(errs *fieldErrors, sl *SignLimit) {
	if r := sl.SignaturesPerSec; r < 0 || r > MaxSignaturesPerSecPerPrefix {
		errs.add("server.dns.sign_limit.signatures_per_second", "%d is out of range (allowed 1..%d; 0 = default %d)", r, MaxSignaturesPerSecPerPrefix, DefaultSignaturesPerSec)
	}
	if w := sl.Window; w < 0 || w > 3600 {
		errs.add("server.dns.sign_limit.window", "%d is out of range (allowed 1..3600 seconds; 0 = default %d)", w, DefaultSignWindow)
	}
	if p := sl.IPv4Prefix; p != 0 && (p < 8 || p > 32) {
		errs.add("server.dns.sign_limit.ipv4_prefix", "%d is out of range (allowed 8..32; 0 = default %d)", p, DefaultSignLimitIPv4Prefix)
	}
	if p := sl.IPv6Prefix; p != 0 && (p < 16 || p > 64) {
		errs.add("server.dns.sign_limit.ipv6_prefix", "%d is out of range (allowed 16..64; 0 = default %d)", p, DefaultSignLimitIPv6Prefix)
	}
}

// validateRRL checks server.dns.rrl.
func validateRRL(errs *fieldErrors, r *RRL) {
	if n := r.ResponsesPerSec; n < 0 || n > 1_000_000 {
		errs.add("server.dns.rrl.responses_per_second", "%d is out of range (allowed 1..1000000; 0 = default %d)", n, DefaultRRLResponsesPerSec)
	}
	if b := r.BytesPerSec; b != 0 && (b < 512 || b > 1_000_000_000) {
		errs.add("server.dns.rrl.bytes_per_second", "%d is out of range (allowed 512..1000000000; 0 = default responses_per_second × %d)", b, DefaultRRLBytesPerResponse)
	}
	if p := r.Slip; p != nil && (*p < 0 || *p > 10) {
		errs.add("server.dns.rrl.slip", "%d is out of range (allowed 0..10: 0 drops every limited response, 1 truncates every one, N truncates every Nth)", *p)
	}
	if p := r.IPv4Prefix; p != 0 && (p < 8 || p > 32) {
		errs.add("server.dns.rrl.ipv4_prefix", "%d is out of range (allowed 8..32; 0 = default %d)", p, DefaultRRLIPv4Prefix)
	}
	if p := r.IPv6Prefix; p != 0 && (p < 16 || p > 64) {
		errs.add("server.dns.rrl.ipv6_prefix", "%d is out of range (allowed 16..64; 0 = default %d)", p, DefaultRRLIPv6Prefix)
	}
	if w := r.Window; w < 0 || w > 3600 {
		errs.add("server.dns.rrl.window", "%d is out of range (allowed 1..3600 seconds; 0 = default %d)", w, DefaultRRLWindow)
	}
	if n := len(r.Exempt); n > MaxRRLExempt {
		errs.add("server.dns.rrl.exempt", "lists %d networks (allowed at most %d)", n, MaxRRLExempt)
	} else {
		*errs = append(*errs, model.PrefixListErrors("server.dns.rrl.exempt", r.Exempt)...)
	}
}

// validateHTTPListen checks server.http's listen addresses.
func validateHTTPListen(errs *fieldErrors, h *HTTP) {
	if l := h.ReadOnlyListen; l != "" {
		if _, err := netip.ParseAddrPort(l); err != nil {
			errs.add("server.http.read_only_listen", "%q is not an IP:port address (e.g. 0.0.0.0:8090)", l)
		}
	}
	if l := h.Listen; l != "" && l != "off" {
		if _, err := netip.ParseAddrPort(l); err != nil {
			errs.add("server.http.listen", "%q is not an IP:port address or \"off\" (e.g. 127.0.0.1:8080)", l)
		}
	}
	if l := h.ProbeListen; l != "" {
		if _, err := netip.ParseAddrPort(l); err != nil {
			errs.add("server.http.probe_listen", "%q is not an IP:port address (e.g. 0.0.0.0:8081)", l)
		} else if l == h.Listen || l == h.ReadOnlyListen {
			errs.add("server.http.probe_listen", "%q is also server.http.listen or read_only_listen (allowed: an address of its own)", l)
		}
	}
}

// validateHTTP checks server.http's allowed hosts, connection limits and TLS.
func validateHTTP(errs *fieldErrors, h *HTTP) {
	if n := len(h.AllowedHosts); n > MaxAllowedHosts {
		errs.add("server.http.allowed_hosts", "lists %d names (allowed at most %d; \"*.example.com\" covers a domain)", n, MaxAllowedHosts)
	}
	for i, host := range h.AllowedHosts {
		if msg := allowedHostProblem(host); msg != "" {
			errs.add("server.http.allowed_hosts["+strconv.Itoa(i)+"]", "%q %s", host, msg)
		}
	}
	if n := h.MaxConnections; n < 0 || n > 1_000_000 {
		errs.add("server.http.max_connections", "%d is out of range (allowed 1..1000000; 0 = default %d)", n, DefaultHTTPMaxConns)
	}
	if n := h.MaxConnectionsPerClient; n < 0 || n > 1_000_000 {
		errs.add("server.http.max_connections_per_client", "%d is out of range (allowed 1..1000000; 0 = default %d)", n, DefaultHTTPMaxPerClient)
	}
	if n := h.MaxEventStreams; n < 0 || n > 100_000 {
		errs.add("server.http.max_event_streams", "%d is out of range (allowed 1..100000; 0 = default %d)", n, DefaultHTTPMaxStreams)
	}
	validateTLS(errs, "server.http.tls", h.TLS)
}

// validateTLS checks the certificate section at path p (nil: plain HTTP).
func validateTLS(errs *fieldErrors, p string, t *TLS) {
	if t == nil {
		return
	}
	if strings.TrimSpace(t.CertFile) == "" {
		errs.add(p+".cert_file", "is required with %s (a PEM certificate file)", p)
	}
	if strings.TrimSpace(t.KeyFile) == "" {
		errs.add(p+".key_file", "is required with %s (a PEM private key file, mode 600)", p)
	}
}

// validateLog checks server.log.
func validateLog(errs *fieldErrors, l *Log) {
	if f := l.Format; f != "" && f != "text" && f != "json" {
		errs.add("server.log.format", "%q is not allowed (allowed: text, json)", f)
	}
	switch l.Level {
	case "", "debug", "info", "warn", "error":
	default:
		errs.add("server.log.level", "%q is not allowed (allowed: debug, info, warn, error)", l.Level)
	}
}

func (s *Server) applyDefaults() {
	if len(s.DNS.Listen) == 0 {
		s.DNS.Listen = []string{DefaultDNSListen}
	}
	defaultTo(&s.DNS.MaxTCPConnections, DefaultMaxTCPConnections)
	defaultTo(&s.DNS.TCPIdleTimeout, DefaultTCPIdleTimeout)
	defaultTo(&s.DNS.UDPPayloadSize, DefaultUDPPayloadSize)
	defaultTo(&s.DNS.MaxTCPPerClient, DefaultMaxTCPPerClient)
	defaultTo(&s.DNS.TCPClientIPv4Prefix, DefaultTCPClientIPv4Prefix)
	defaultTo(&s.DNS.TCPClientIPv6Prefix, DefaultTCPClientIPv6Prefix)
	defaultTo(&s.DNS.MaxTCPPerSite, DefaultMaxTCPPerSite)
	defaultTo(&s.DNS.TCPSiteIPv6Prefix, min(DefaultTCPSiteIPv6Prefix, s.DNS.TCPClientIPv6Prefix))
	defaultTo(&s.DNS.TCPPressureIdleTimeout, min(DefaultTCPPressureIdle, s.DNS.TCPIdleTimeout))
	s.DNS.SignLimit.applyDefaults()
	r := &s.DNS.RRL
	if r.Enabled == nil {
		on := true
		r.Enabled = &on
	}
	defaultTo(&r.ResponsesPerSec, DefaultRRLResponsesPerSec)
	defaultTo(&r.BytesPerSec, r.ResponsesPerSec*DefaultRRLBytesPerResponse)
	if r.Slip == nil {
		slip := DefaultRRLSlip
		r.Slip = &slip
	}
	defaultTo(&r.IPv4Prefix, DefaultRRLIPv4Prefix)
	defaultTo(&r.IPv6Prefix, DefaultRRLIPv6Prefix)
	defaultTo(&r.Window, DefaultRRLWindow)
	defaultTo(&s.HTTP.Listen, DefaultHTTPListen)
	defaultTo(&s.HTTP.MaxConnections, DefaultHTTPMaxConns)
	defaultTo(&s.HTTP.MaxConnectionsPerClient, DefaultHTTPMaxPerClient)
	defaultTo(&s.HTTP.MaxEventStreams, DefaultHTTPMaxStreams)
	defaultTo(&s.Log.Format, "text")
	defaultTo(&s.Log.Level, "info")
}

// MaxAllowedHosts bounds server.http.allowed_hosts.
const MaxAllowedHosts = 1000

// allowedHostProblem says what is wrong with an entry of
// server.http.allowed_hosts ("" when it is a name, "*.name" or "*").
func allowedHostProblem(h string) string {
	name := strings.TrimPrefix(strings.TrimSuffix(h, "."), "*.")
	switch {
	case h == "*":
		return ""
	case strings.TrimSpace(h) == "":
		return "is empty (allowed: a host name such as status.example.com, *.example.com, or *)"
	case strings.ContainsAny(name, ":/*@ "):
		return "is not a host name (allowed: a name such as status.example.com without scheme or port, *.example.com, or *; IP addresses are always allowed)"
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return "is an IP address: addresses are always allowed, list names only"
	}
	for _, l := range strings.Split(name, ".") {
		if l == "" || len(l) > 63 {
			return "is not a host name (a label is empty or longer than 63 characters)"
		}
	}
	return ""
}

// defaultTo sets *p to d when it holds the zero value (unset in the file).
func defaultTo[T comparable](p *T, d T) {
	var zero T
	if *p == zero {
		*p = d
	}
}

func (sl *SignLimit) applyDefaults() {
	if sl.Enabled == nil {
		on := true
		sl.Enabled = &on
	}
	defaultTo(&sl.SignaturesPerSec, DefaultSignaturesPerSec)
	defaultTo(&sl.Window, DefaultSignWindow)
	defaultTo(&sl.IPv4Prefix, DefaultSignLimitIPv4Prefix)
	defaultTo(&sl.IPv6Prefix, DefaultSignLimitIPv6Prefix)
}
