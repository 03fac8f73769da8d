package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/api"
)

// Environment variables of the API client.
const (
	envCAFile    = "MERIDIAN_CA_FILE"          // CA certificate(s) that sign the server's HTTPS certificate
	envToken     = "MERIDIAN_ADMIN_TOKEN"      // the admin bearer token
	envTokenFile = "MERIDIAN_ADMIN_TOKEN_FILE" // a file holding it
)

// caFile is the root --ca-file flag (default $MERIDIAN_CA_FILE).
var caFile string

// apiClient talks to a running `meridian serve` over its HTTP API.
type apiClient struct {
	base  string
	hc    *http.Client
	token string // bearer token for changes
	err   error  // a bad address or CA file, reported by do
}

// newClient accepts HOST:PORT (plain HTTP), http://HOST:PORT or
// https://HOST:PORT; https trusts the system roots, or the PEM
// certificates of --ca-file / $MERIDIAN_CA_FILE instead.
func newClient(addr string) *apiClient {
	c := &apiClient{hc: &http.Client{Timeout: 10 * time.Second}}
	base := addr
	if !strings.Contains(addr, "://") {
		base = "http://" + addr
	}
	u, err := url.Parse(base)
	switch {
	case err != nil || u.Host == "":
		c.err = fmt.Errorf("--http %q is not an address (allowed: HOST:PORT, http://HOST:PORT, https://HOST:PORT)", addr)
		return c
	case u.Scheme != "http" && u.Scheme != "https":
		c.err = fmt.Errorf("--http %q: scheme %q is not allowed (allowed: http, https)", addr, u.Scheme)
		return c
	}
	c.base = u.Scheme + "://" + u.Host
	ca := caFile
	if ca == "" {
		ca = os.Getenv(envCAFile)
	}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			c.err = fmt.Errorf("--ca-file: %w", err)
			return c
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			c.err = fmt.Errorf("--ca-file %s holds no PEM certificate", ca)
			return c
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		c.hc.Transport = tr
	}
	return c
}

// withToken sets the bearer token: from tokenFile, else the file named by
// $MERIDIAN_ADMIN_TOKEN_FILE, else $MERIDIAN_ADMIN_TOKEN.
func (c *apiClient) withToken(tokenFile string) (*apiClient, error) {
	if c.err != nil {
		return nil, c.err
	}
	from := "--token-file"
	if tokenFile == "" {
		tokenFile, from = os.Getenv(envTokenFile), envTokenFile
	}
	switch {
	case tokenFile != "":
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", from, err)
		}
		c.token = strings.TrimSpace(string(b))
		if c.token == "" {
			return nil, fmt.Errorf("%s %s is empty", from, tokenFile)
		}
	case os.Getenv(envToken) != "":
		c.token = strings.TrimSpace(os.Getenv(envToken))
	default:
		return nil, errors.New("no admin token: pass --token-file FILE, or set " + envTokenFile + " or " + envToken)
	}
	if strings.HasPrefix(c.base, "http://") && !loopback(c.base) {
		fmt.Fprintf(os.Stderr, "meridian: warning: sending the admin token over plain HTTP to %s; serve HTTPS (server.http.tls) and use https://\n", c.base)
	}
	return c, nil
}

// loopback reports whether base's host is a loopback address or localhost.
func loopback(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func (c *apiClient) do(method, path string, body, out any) error {
	if c.err != nil {
		return c.err
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", api.JSONContentType) // every change must say JSON, with or without a body
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w (is `meridian serve` running with HTTP on this address?)", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		var e api.ErrorBody
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s %s: %s", method, path, e.Error)
		}
		return fmt.Errorf("%s %s: HTTP %d", method, path, resp.StatusCode)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: bad response: %w", method, path, err)
		}
	}
	return nil
}
