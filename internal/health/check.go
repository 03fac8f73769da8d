package health

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/model"
)

// Checker probes one endpoint once.
type Checker interface {
	// Check probes addr once and returns nil when it is healthy, or an
	// error that names the probe and what failed. It returns when ctx is
	// done at the latest (when ctx has no deadline, the check's timeout
	// applies). Safe for concurrent use.
	Check(ctx context.Context, addr netip.Addr) error
}

var (
	_ Checker = (*httpChecker)(nil)
	_ Checker = (*tcpChecker)(nil)
	_ Checker = (*dnsChecker)(nil)
)

// maxBody is how much of a response body body_contains looks at.
const maxBody = 64 << 10

// NewChecker builds the Checker of c. Kind none (or a nil c) yields a nil
// Checker and a nil error: there is nothing to probe. Fields left empty get
// the kind's defaults, as model.Normalize would fill them. A CA file is read
// here, once; later changes to it need a new Checker.
func NewChecker(c *model.Check) (Checker, error) {
	if c == nil {
		return nil, nil
	}
	timeout := c.Timeout.D()
	if timeout <= 0 {
		timeout = model.DefaultTimeout
	}
	switch c.Kind {
	case "", model.CheckNone:
		return nil, nil
	case model.CheckHTTP, model.CheckHTTPS:
		return newHTTPChecker(c, timeout)
	case model.CheckTCP:
		if c.Port <= 0 || c.Port > 65535 {
			return nil, fmt.Errorf("tcp check: port %d is out of range (required, 1..65535)", c.Port)
		}
		return &tcpChecker{port: uint16(c.Port), timeout: timeout}, nil
	case model.CheckDNS:
		return newDNSChecker(c, timeout)
	}
	return nil, fmt.Errorf("check kind %q is unknown (want one of %s)", c.Kind, strings.Join(model.CheckKinds, ", "))
}

// withTimeout bounds ctx by d unless it already has a deadline.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

func portOr(port, def int) (uint16, error) {
	if port == 0 {
		port = def
	}
	if port < 0 || port > 65535 {
		return 0, fmt.Errorf("port %d is out of range (1..65535)", port)
	}
	return uint16(port), nil
}

// statusRange is an inclusive range of HTTP status codes.
type statusRange struct{ lo, hi int }

type httpChecker struct {
	kind    string // http or https
	port    uint16
	method  string
	path    string // as configured, for messages
	target  *url.URL
	host    string // Host header; "" = the address
	body    []byte // required substring; nil = not checked
	expect  []statusRange
	want    string // expect as text, for messages
	timeout time.Duration
	client  *http.Client
}

func newHTTPChecker(c *model.Check, timeout time.Duration) (*httpChecker, error) {
	def := map[string]int{model.CheckHTTP: 80, model.CheckHTTPS: 443}[c.Kind]
	port, err := portOr(c.Port, def)
	if err != nil {
		return nil, fmt.Errorf("%s check: %w", c.Kind, err)
	}
	path := c.Path
	if path == "" {
		path = model.DefaultHTTPPath
	}
	target, err := url.Parse(path)
	if err != nil || target.Scheme != "" || target.Host != "" || !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("%s check: path %q is not an absolute path", c.Kind, path)
	}
	target.Scheme = c.Kind
	method := c.Method
	if method == "" {
		method = http.MethodGet
	}
	expectText := c.ExpectStatus
	if len(expectText) == 0 {
		expectText = []string{model.DefaultExpectStatus}
	}
	expect := make([]statusRange, 0, len(expectText))
	for _, s := range expectText {
		lo, hi, ok := model.ParseStatusRange(s)
		if !ok {
			return nil, fmt.Errorf("%s check: expect_status %q is not a status code or range", c.Kind, s)
		}
		expect = append(expect, statusRange{lo, hi})
	}
	h := &httpChecker{
		kind:    c.Kind,
		port:    port,
		method:  method,
		path:    path,
		target:  target,
		host:    c.Host,
		expect:  expect,
		want:    "[" + strings.Join(expectText, ", ") + "]",
		timeout: timeout,
	}
	if c.BodyContains != "" {
		h.body = []byte(c.BodyContains)
	}
	var tc *tls.Config
	if c.Kind == model.CheckHTTPS {
		tc, err = tlsConfig(c.SNI, c.CAFile, c.InsecureSkipVerify)
		if err != nil {
			return nil, fmt.Errorf("%s check: %w", c.Kind, err)
		}
	}
	h.client = probeClient(tc, timeout)
	return h, nil
}

// tlsConfig verifies against the system roots, or only against the CAs in
// caFile when it is set, or not at all with insecure.
func tlsConfig(serverName, caFile string, insecure bool) (*tls.Config, error) {
	tc := &tls.Config{
		ServerName:         serverName,
		InsecureSkipVerify: insecure, //nolint:gosec // opt-in per check (insecure_skip_verify)
		MinVersion:         tls.VersionTLS12,
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_file %s: no PEM certificates found", caFile)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// probeClient is an HTTP client for probes: no proxy from the environment, no
// redirects followed, a fresh connection per probe (so a dead server is seen
// at once), and the deadline taken from the request's context.
//
// net/http dials on a context detached from the request's: a probe that
// times out returns, but its dial (and TLS handshake) would go on until the
// system gives up — about two minutes of SYN retries against an endpoint
// that drops them — holding a socket and a goroutine per probe, and
// re-sending SYNs at an endpoint that is already struggling. So both are
// bounded by the probe's own timeout (0: not bounded here).
func probeClient(tc *tls.Config, timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                  nil,
			DialContext:            boundedDial((&net.Dialer{}).DialContext, timeout),
			TLSClientConfig:        tc,
			TLSHandshakeTimeout:    timeout,
			DisableKeepAlives:      true,
			DisableCompression:     true,
			MaxResponseHeaderBytes: 64 << 10,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// boundedDial gives every dial at most d (d <= 0: as dial does).
func boundedDial(dial dialFunc, d time.Duration) dialFunc {
	if d <= 0 {
		return dial
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return dial(ctx, network, addr)
	}
}

// Check implements Checker.
func (h *httpChecker) Check(ctx context.Context, addr netip.Addr) error {
	ctx, cancel := withTimeout(ctx, h.timeout)
	defer cancel()
	hostport := netip.AddrPortFrom(addr, h.port).String()
	what := fmt.Sprintf("%s %s %s %s", h.kind, hostport, h.method, h.path)
	u := *h.target
	u.Host = hostport
	req, err := http.NewRequestWithContext(ctx, h.method, u.String(), nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	req.Host = h.host
	req.Header.Set("User-Agent", "meridian-health")
	resp, err := h.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is already in what
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	if !h.statusOK(resp.StatusCode) {
		return fmt.Errorf("%s: status %d not in %s", what, resp.StatusCode, h.want)
	}
	if h.body == nil {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fmt.Errorf("%s: read body: %w", what, err)
	}
	if !bytes.Contains(body, h.body) {
		return fmt.Errorf("%s: body does not contain %q (first %d bytes read)", what, h.body, len(body))
	}
	return nil
}

func (h *httpChecker) statusOK(code int) bool {
	for _, r := range h.expect {
		if code >= r.lo && code <= r.hi {
			return true
		}
	}
	return false
}

type tcpChecker struct {
	port    uint16
	timeout time.Duration
}

// Check implements Checker: the endpoint is healthy when it accepts a TCP
// connection.
func (t *tcpChecker) Check(ctx context.Context, addr netip.Addr) error {
	ctx, cancel := withTimeout(ctx, t.timeout)
	defer cancel()
	hostport := netip.AddrPortFrom(addr, t.port).String()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", hostport)
	if err != nil {
		return fmt.Errorf("tcp %s: %w", hostport, err)
	}
	_ = conn.Close()
	return nil
}

type dnsChecker struct {
	port      uint16
	name      string
	qtype     uint16
	rcode     int
	typeText  string
	rcodeText string
	timeout   time.Duration
}

func newDNSChecker(c *model.Check, timeout time.Duration) (*dnsChecker, error) {
	port, err := portOr(c.Port, 53)
	if err != nil {
		return nil, fmt.Errorf("dns check: %w", err)
	}
	if c.QueryName == "" {
		return nil, errors.New("dns check: query_name is required")
	}
	typeText := strings.ToUpper(c.QueryType)
	if typeText == "" {
		typeText = "A"
	}
	qtype, ok := dns.StringToType[typeText]
	if !ok {
		return nil, fmt.Errorf("dns check: query_type %q is not a DNS type", c.QueryType)
	}
	rcodeText := strings.ToUpper(c.ExpectRcode)
	if rcodeText == "" {
		rcodeText = "NOERROR"
	}
	rcode, ok := dns.StringToRcode[rcodeText]
	if !ok {
		return nil, fmt.Errorf("dns check: expect_rcode %q is not an rcode", c.ExpectRcode)
	}
	return &dnsChecker{
		port:      port,
		name:      dns.Fqdn(c.QueryName),
		qtype:     qtype,
		rcode:     rcode,
		typeText:  typeText,
		rcodeText: rcodeText,
		timeout:   timeout,
	}, nil
}

// Check implements Checker: one query over UDP, healthy when the answer has
// the expected rcode (a truncated answer still counts: the rcode is there).
func (d *dnsChecker) Check(ctx context.Context, addr netip.Addr) error {
	ctx, cancel := withTimeout(ctx, d.timeout)
	defer cancel()
	hostport := netip.AddrPortFrom(addr, d.port).String()
	what := fmt.Sprintf("dns %s %s %s", hostport, d.name, d.typeText)
	var dialer net.Dialer
	nc, err := dialer.DialContext(ctx, "udp", hostport)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	co := &dns.Conn{Conn: nc}
	defer co.Close()
	// The read deadline comes from ctx; closing on cancel ends it early.
	stop := context.AfterFunc(ctx, func() { _ = nc.Close() })
	defer stop()
	m := new(dns.Msg)
	m.SetQuestion(d.name, d.qtype)
	// ctx always has a deadline here; let it, not the client's 2s default, rule.
	deadline, _ := ctx.Deadline()
	client := dns.Client{Net: "udp", Timeout: max(time.Until(deadline), time.Millisecond)}
	r, _, err := client.ExchangeWithConnContext(ctx, m, co)
	if err != nil {
		var ne net.Error
		switch {
		case ctx.Err() != nil:
			err = fmt.Errorf("%w: %w", ctx.Err(), err)
		case errors.As(err, &ne) && ne.Timeout():
			// The read deadline is ctx's; it can fire a moment before ctx does.
			err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	if r.Rcode != d.rcode {
		return fmt.Errorf("%s: rcode %s, want %s", what, dns.RcodeToString[r.Rcode], d.rcodeText)
	}
	return nil
}

// errChecker fails every probe with the error that prevented building the
// real checker (an unreadable CA file, say), so that the problem is visible
// in results, logs and metrics instead of the endpoint silently going unprobed.
type errChecker struct{ err error }

func (e errChecker) Check(context.Context, netip.Addr) error { return e.err }
