package route53fake

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The fake's health checker probes for real, from the test's process, the
// way Route 53's checkers do from theirs (Developer Guide, "How Amazon
// Route 53 determines whether a health check is healthy"):
//
//   - HTTP, HTTPS: a TCP connection to IPAddress:Port, then GET ResourcePath
//     ("/" when none) with Host = FullyQualifiedDomainName (or IPAddress),
//     ":Port" added unless the port is the scheme's default; a status of
//     200 to 399 passes. Redirects are not followed. HTTPS certificates are
//     not validated; the TLS server name is FullyQualifiedDomainName when
//     EnableSNI is set.
//   - HTTP_STR_MATCH, HTTPS_STR_MATCH: as above, and SearchString must occur
//     in the first 5,120 bytes of the body (case-sensitive).
//   - TCP: the connection alone.
//   - Without IPAddress, FullyQualifiedDomainName is resolved to an IPv4
//     address, as Route 53 does.
//
// Each probe is bounded by Options.ProbeTimeout (4 s). FailureThreshold
// consecutive results against the current status flip it; a new check is
// healthy. A disabled check is not probed and counts as healthy; Inverted
// inverts the status. Rounds run when a test asks (CheckHealth) or on its
// ticker (StartHealthChecks); RequestInterval is not waited for.

const (
	defaultProbeTimeout = 4 * time.Second
	searchWindow        = 5120 // bytes of the body searched for SearchString
	probeParallel       = 16   // probes in flight in one round
)

type probeResult struct {
	ok     bool
	status string // GetHealthCheckStatus's StatusReport.Status
}

// CheckHealth runs one round of the health checker: every health check
// that is not disabled is probed once, in parallel, and the results are
// counted against FailureThreshold. A round cut short by ctx counts
// nothing. Rounds do not overlap; CheckHealth blocks until its round ends.
func (s *Server) CheckHealth(ctx context.Context) {
	s.rounds.Lock()
	defer s.rounds.Unlock()
	type job struct {
		id  string
		gen int
		cfg HealthCheckConfig
	}
	var jobs []job
	s.mu.Lock()
	for id, h := range s.checks {
		if !h.cfg.Disabled && probed(h.cfg.Type) {
			jobs = append(jobs, job{id, h.gen, h.cfg.clone()})
		}
	}
	timeout := s.opts.ProbeTimeout
	s.mu.Unlock()
	if timeout <= 0 {
		timeout = defaultProbeTimeout
	}

	results := make([]probeResult, len(jobs))
	var wg sync.WaitGroup
	slots := make(chan struct{}, probeParallel)
	for i, j := range jobs {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			results[i] = probe(ctx, j.cfg, timeout)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, j := range jobs {
		h, ok := s.checks[j.id]
		if !ok || h.gen != j.gen {
			continue // deleted or changed while probing
		}
		h.record(results[i].ok)
		h.last = observation{at: now, status: results[i].status}
	}
}

// StartHealthChecks runs a round at once and then one every `every` (1 s
// when not positive) in the background, until ctx ends or the server is
// closed; Close waits for it.
func (s *Server) StartHealthChecks(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = time.Second
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.life, cancel)
	s.checkers.Add(1)
	go func() {
		defer s.checkers.Done()
		defer cancel()
		defer stop()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			s.CheckHealth(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// SetHealth sets the endpoint status of health check id as if its probes
// had agreed FailureThreshold times, for tests without sockets. Disabled
// and Inverted still apply on top, as for probed checks. It panics on an
// unknown id.
func (s *Server) SetHealth(id string, healthy bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.checks[id]
	if !ok {
		panic("route53fake: no health check " + id)
	}
	h.up, h.streak = healthy, 0
	status := "Failure: set unhealthy by SetHealth"
	if healthy {
		status = "Success: set healthy by SetHealth"
	}
	h.last = observation{at: time.Now(), status: status}
}

// Healthy reports the status record sets see for health check id
// (Disabled and Inverted applied); false for an unknown id.
func (s *Server) Healthy(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.checks[id]
	return ok && s.statusOf(h, 0)
}

// record counts one probe result.
func (h *healthCheck) record(ok bool) {
	if ok == h.up {
		h.streak = 0
		return
	}
	h.streak++
	if h.streak >= int(max(h.cfg.FailureThreshold, 1)) {
		h.up, h.streak = ok, 0
	}
}

func probed(typ string) bool {
	switch typ {
	case "HTTP", "HTTPS", "HTTP_STR_MATCH", "HTTPS_STR_MATCH", "TCP":
		return true
	}
	return false // CALCULATED and the others keep their status
}

// probe checks one endpoint once.
func probe(ctx context.Context, cfg HealthCheckConfig, timeout time.Duration) probeResult {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host, network := cfg.IPAddress, "tcp"
	if host == "" {
		host, network = cfg.FullyQualifiedDomainName, "tcp4"
	}
	addr := net.JoinHostPort(host, strconv.Itoa(int(cfg.Port)))
	dialer := &net.Dialer{}
	dial := func(ctx context.Context, _, addr string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, addr)
	}
	if cfg.Type == "TCP" {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return probeResult{false, "Failure: " + errText(err)}
		}
		_ = conn.Close()
		return probeResult{true, "Success: TCP connection established"}
	}
	return probeHTTP(ctx, cfg, addr, dial)
}

// probeHTTP checks an HTTP or HTTPS endpoint once, connecting to addr with
// dial: a 2xx or 3xx answer (with the search string, for the _STR_MATCH
// types) is a success.
func probeHTTP(ctx context.Context, cfg HealthCheckConfig, addr string, dial func(context.Context, string, string) (net.Conn, error)) probeResult {
	scheme := "http"
	if strings.HasPrefix(cfg.Type, "HTTPS") {
		scheme = "https"
	}
	path := cfg.ResourcePath
	if path == "" {
		path = "/"
	}
	tr := &http.Transport{
		DialContext: dial, DisableKeepAlives: true, Proxy: nil,
		// Route 53's checkers do not validate certificates.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}
	if cfg.EnableSNI && cfg.FullyQualifiedDomainName != "" {
		tr.TLSClientConfig.ServerName = cfg.FullyQualifiedDomainName
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+path, nil)
	if err != nil {
		return probeResult{false, "Failure: " + err.Error()}
	}
	req.Host = hostHeader(cfg, scheme)
	req.Header.Set("User-Agent", "Amazon-Route53-Health-Check-Service (route53fake)")
	resp, err := client.Do(req)
	if err != nil {
		return probeResult{false, "Failure: " + errText(err)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, searchWindow))
	code := fmt.Sprintf("HTTP Status Code %d, %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	switch {
	case resp.StatusCode < 200 || resp.StatusCode >= 400:
		return probeResult{false, "Failure: " + code}
	case strings.HasSuffix(cfg.Type, "_STR_MATCH") && !strings.Contains(string(body), cfg.SearchString):
		return probeResult{false, fmt.Sprintf("Failure: %s, but the search string was not found in the first %d bytes of the response body", code, searchWindow)}
	}
	return probeResult{true, "Success: " + code}
}

// hostHeader is the Host Route 53 sends: the domain name (else the IP
// address), with ":port" unless the port is the scheme's default.
func hostHeader(cfg HealthCheckConfig, scheme string) string {
	host := cfg.FullyQualifiedDomainName
	if host == "" {
		host = cfg.IPAddress
	}
	if (scheme == "http" && cfg.Port == 80) || (scheme == "https" && cfg.Port == 443) {
		if strings.Contains(host, ":") {
			return "[" + host + "]"
		}
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(int(cfg.Port)))
}

func errText(err error) string {
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return "Connection timed out. The endpoint or the internet connection is down, or requests are being blocked by your firewall."
	}
	return err.Error()
}
