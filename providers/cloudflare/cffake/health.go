package cffake

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The monitor health checker. CheckHealth runs one health check of every
// enabled origin of every enabled pool that has a monitor, with real
// probes, and applies the results the way this fake reads Cloudflare's
// monitor settings:
//
//   - http/https: a GET or HEAD to scheme://address:port/path, within
//     timeout seconds; port is the monitor's, else the origin's, else 80 or
//     443. Host header: the origin's header.Host, else the monitor's Host
//     header, else the address. The check passes when the status matches
//     expected_codes ("200" or a range like "2xx") and, when set,
//     expected_body is found (case-insensitive) in the first 10 KB of the
//     body. Redirects are followed only with follow_redirects;
//     allow_insecure skips certificate checks.
//   - tcp: a connection to address:port within timeout.
//   - udp_icmp, icmp_ping, smtp: not probed; the check passes.
//   - retries: a check whose attempt timed out is retried at once, up to
//     retries more times ("retries are attempted immediately", on a
//     timeout only). Any other failure (refused connection, wrong status,
//     body mismatch) fails the check at once.
//   - consecutive_down/consecutive_up (0 is taken as 1): a healthy origin
//     turns unhealthy after that many failed checks in a row, an unhealthy
//     one healthy after that many passed checks in a row. An origin is
//     healthy until its first results say otherwise.
//
// Cloudflare runs checks from several data centers and takes a quorum; the
// fake is one prober. Only loopback addresses (127.0.0.0/8, ::1,
// localhost) are probed, so a test never reaches the network: other
// origins are skipped and keep their state.

// probeTask is one origin to check, with copies of what the check needs.
type probeTask struct {
	key     healthKey
	monitor Monitor
	origin  Origin
	poolID  string
}

// CheckHealth runs one health check of every monitored origin (see above),
// concurrently, and waits for them. Results are dropped when ctx ends
// first. Safe for concurrent use; the lock is not held while probing.
func (s *Server) CheckHealth(ctx context.Context) {
	s.mu.Lock()
	var tasks []probeTask
	for _, p := range s.acct.pools {
		m := s.acct.monitors[p.Monitor]
		if m == nil || !p.Enabled {
			continue
		}
		for _, o := range p.Origins {
			if o.Enabled && (!probed(m.Type) || loopback(o.Address)) {
				tasks = append(tasks, probeTask{key: healthKey{p.ID, o.Name}, monitor: cloneJSON(*m), origin: cloneJSON(o), poolID: p.ID})
			}
		}
	}
	s.mu.Unlock()

	results := make([]error, len(tasks))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, t := range tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = t.check(ctx)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, t := range tasks {
		p := s.acct.pools[t.poolID]
		if p == nil || p.Monitor != t.monitor.ID || !hasOrigin(p, t.origin) {
			continue // changed while probing
		}
		s.recordHealth(t.key, results[i], max(1, t.monitor.ConsecutiveUp), max(1, t.monitor.ConsecutiveDown))
	}
}

// recordHealth applies one check result. Callers hold s.mu.
func (s *Server) recordHealth(k healthKey, err error, up, down int) {
	st := s.health[k]
	if st == nil {
		st = &originState{}
		s.health[k] = st
	}
	st.checks++
	if err == nil {
		st.passes, st.fails, st.lastErr = st.passes+1, 0, ""
		if st.down && st.passes >= up {
			st.down = false
		}
		return
	}
	st.passes, st.fails, st.lastErr = 0, st.fails+1, err.Error()
	if !st.down && st.fails >= down {
		st.down = true
	}
}

// StartHealthChecks runs CheckHealth now and then every interval (default
// 1s) until ctx ends, stop is called or the Server is closed. stop waits
// for the loop to end. Start loops before Close, not after.
func (s *Server) StartHealthChecks(ctx context.Context, every time.Duration) (stop func()) {
	if every <= 0 {
		every = time.Second
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	s.mu.Lock()
	s.stop = append(s.stop, cancel)
	s.loops.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.loops.Done()
		defer close(done)
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
	return func() { cancel(); <-done }
}

func probed(typ string) bool { return typ == "http" || typ == "https" || typ == "tcp" }

func loopback(addr string) bool {
	if a, err := netip.ParseAddr(addr); err == nil {
		return a.IsLoopback()
	}
	return addr == "localhost"
}

// check runs one health check: an attempt, retried at once after a
// timeout up to monitor.retries times. nil means passed.
func (t probeTask) check(ctx context.Context) error {
	if !probed(t.monitor.Type) {
		return nil
	}
	var err error
	for range 1 + t.monitor.Retries {
		actx, cancel := context.WithTimeout(ctx, time.Duration(t.monitor.Timeout)*time.Second)
		if t.monitor.Type == "tcp" {
			err = t.dial(actx)
		} else {
			err = t.request(actx)
		}
		timedOut := errors.Is(actx.Err(), context.DeadlineExceeded) || isTimeout(err)
		cancel()
		if err == nil || !timedOut || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func (t probeTask) port() int {
	switch {
	case t.monitor.Port != 0:
		return t.monitor.Port
	case t.origin.Port != 0:
		return t.origin.Port
	case t.monitor.Type == "https":
		return 443
	default:
		return 80
	}
}

func (t probeTask) dial(ctx context.Context) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(t.origin.Address, strconv.Itoa(t.port())))
	if err != nil {
		if isTimeout(err) {
			return fmt.Errorf("TCP connection timed out: %w", err)
		}
		return fmt.Errorf("TCP connection failed: %w", err)
	}
	return c.Close()
}

func (t probeTask) request(ctx context.Context) error {
	m := t.monitor
	host := ""
	for k, vs := range m.Header {
		if strings.EqualFold(k, "Host") && len(vs) > 0 {
			host = vs[0]
		}
	}
	if t.origin.Header != nil && len(t.origin.Header.Host) > 0 {
		host = t.origin.Header.Host[0]
	}
	url := m.Type + "://" + net.JoinHostPort(t.origin.Address, strconv.Itoa(t.port())) + m.Path
	req, err := http.NewRequestWithContext(ctx, m.Method, url, nil)
	if err != nil {
		return fmt.Errorf("health check request %s: %w", url, err)
	}
	for k, vs := range m.Header {
		if !strings.EqualFold(k, "Host") {
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
	}
	req.Header.Set("User-Agent", "Mozilla/5.0 (compatible; Cloudflare-Traffic-Manager/1.0; +https://www.cloudflare.com/traffic-manager/; pool-id: "+t.poolID+")")
	tlsConf := &tls.Config{InsecureSkipVerify: m.AllowInsecure}
	if host != "" {
		req.Host = host
		tlsConf.ServerName = host
	}
	hc := &http.Client{
		Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: tlsConf, Proxy: nil},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			if m.FollowRedirects {
				return nil
			}
			return http.ErrUseLastResponse
		},
	}
	resp, err := hc.Do(req)
	if err != nil {
		if isTimeout(err) || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("HTTP timeout occurred: %w", err)
		}
		return fmt.Errorf("TCP connection failed: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 10<<10))
	if err != nil {
		return fmt.Errorf("HTTP timeout occurred: reading the body: %w", err)
	}
	if !codeMatches(m.ExpectedCodes, resp.StatusCode) {
		return fmt.Errorf("response code mismatch: %d, expected %s", resp.StatusCode, m.ExpectedCodes)
	}
	if m.ExpectedBody != "" && m.Method != http.MethodHead && !strings.Contains(strings.ToLower(string(body)), strings.ToLower(m.ExpectedBody)) {
		return fmt.Errorf("response body mismatch: %q not in the first 10 KB", m.ExpectedBody)
	}
	return nil
}

// codeMatches checks a status against "200" or "2xx".
func codeMatches(want string, got int) bool {
	if strings.HasSuffix(want, "xx") {
		return strconv.Itoa(got/100) == strings.TrimSuffix(want, "xx")
	}
	return strconv.Itoa(got) == want
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
