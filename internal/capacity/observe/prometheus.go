package observe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	prommodel "github.com/prometheus/common/model"

	"github.com/meridian-gslb/meridian/internal/capacity"
	"github.com/meridian-gslb/meridian/internal/model"
)

// MaxResponseBytes bounds the body of one Prometheus response.
const MaxResponseBytes = 4 << 20

// Reasons of a failed query (the label values of the failure metric).
const (
	FailTimeout     = "timeout"     // no answer within the timeout
	FailUnreachable = "unreachable" // connection refused, name not found, TLS failure
	FailStatus      = "status"      // an HTTP error or a Prometheus API error
	FailResult      = "result"      // not an instant vector, or not decodable
	FailOversized   = "oversized"   // the body is larger than MaxResponseBytes
	FailPanic       = "panic"       // reading the answer panicked (recovered)
)

// FailReasons lists every failure reason.
var FailReasons = []string{FailTimeout, FailUnreachable, FailStatus, FailResult, FailOversized, FailPanic}

// errOversized is returned by a body that grew past MaxResponseBytes.
var errOversized = errors.New("response larger than 4 MiB")

// queryError is a failed query with its reason.
type queryError struct {
	reason string
	err    error
}

func (e *queryError) Error() string { return e.reason + ": " + short(e.err.Error(), 300) }
func (e *queryError) Unwrap() error { return e.err }

// prom queries one Prometheus for one capacity-aware service.
type prom struct {
	cfg model.CapacityPrometheus
	api promv1.API
}

func newProm(cfg model.CapacityPrometheus, rt http.RoundTripper) (*prom, error) {
	if rt == nil {
		rt = defaultTransport
	}
	c, err := api.NewClient(api.Config{Address: cfg.URL, RoundTripper: limitedBody{rt}})
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: %w", cfg.URL, err)
	}
	return &prom{cfg: cfg, api: promv1.NewAPI(c)}, nil
}

// defaultTransport has bounded connect and header times; the query's own
// timeout bounds the whole request.
var defaultTransport http.RoundTripper = &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	TLSHandshakeTimeout:   5 * time.Second,
	ResponseHeaderTimeout: 30 * time.Second,
	MaxIdleConnsPerHost:   2,
	IdleConnTimeout:       90 * time.Second,
}

// query runs the instant query once, within the configured timeout, and
// returns its samples. A panic while reading the answer is an error.
func (p *prom) query(ctx context.Context, now time.Time) (samples []capacity.Sample, warnings []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			samples, err = nil, &queryError{FailPanic, fmt.Errorf("reading the answer panicked (recovered): %v", r)}
		}
	}()
	v, warns, err := p.run(ctx, now)
	if err != nil {
		return nil, nil, err
	}
	vec, ok := v.(prommodel.Vector)
	if !ok {
		typ := "nothing"
		if v != nil {
			typ = v.Type().String()
		}
		return nil, warns, &queryError{FailResult, fmt.Errorf("the query gives a %s; it must give an instant vector with an %s or %s label per sample", typ, capacity.LabelEndpoint, capacity.LabelCluster)}
	}
	samples = make([]capacity.Sample, 0, min(len(vec), capacity.MaxSamples+1))
	for i, s := range vec {
		if i > capacity.MaxSamples {
			break // FromSamples reports the rest as too-many
		}
		labels := make(map[string]string, 2)
		for _, k := range []string{capacity.LabelEndpoint, capacity.LabelCluster} {
			if lv, ok := s.Metric[prommodel.LabelName(k)]; ok {
				labels[k] = string(lv)
			}
		}
		if len(labels) == 0 {
			for k, lv := range s.Metric {
				if len(labels) == 4 {
					break
				}
				labels[string(k)] = string(lv)
			}
		}
		samples = append(samples, capacity.Sample{Labels: labels, Value: float64(s.Value)})
	}
	return samples, warns, nil
}

// run sends the instant query once, within the configured timeout, and
// returns Prometheus's answer; a failure is a *queryError.
func (p *prom) run(ctx context.Context, now time.Time) (prommodel.Value, []string, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout.D())
	defer cancel()
	v, warns, _, err := p.api.Query(ctx, p.cfg.Query, now, promv1.WithTimeout(p.cfg.Timeout.D()))
	if err != nil {
		return nil, nil, classify(ctx, err)
	}
	return v, warns, nil
}

// classify names why a query failed.
func classify(ctx context.Context, err error) error {
	var apiErr *promv1.Error
	var netErr net.Error
	switch {
	case errors.Is(err, errOversized):
		return &queryError{FailOversized, err}
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return &queryError{FailTimeout, err}
	case errors.As(err, &apiErr) && apiErr.Type == promv1.ErrTimeout:
		return &queryError{FailTimeout, err}
	case errors.As(err, &apiErr) && apiErr.Type == promv1.ErrBadResponse:
		return &queryError{FailResult, err}
	case errors.As(err, &apiErr):
		return &queryError{FailStatus, err}
	case errors.As(err, &netErr) && netErr.Timeout():
		return &queryError{FailTimeout, err}
	}
	return &queryError{FailUnreachable, err}
}

// limitedBody fails a response body that grows past MaxResponseBytes.
type limitedBody struct{ rt http.RoundTripper }

func (l limitedBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &capped{rc: resp.Body, left: MaxResponseBytes}
	return resp, nil
}

type capped struct {
	rc   io.ReadCloser
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, errOversized
	}
	if int64(len(p)) > c.left {
		p = p[:c.left+1] // one byte more tells a body of exactly the limit from a longer one
	}
	n, err := c.rc.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n, errOversized
	}
	return n, err
}

func (c *capped) Close() error { return c.rc.Close() }

func short(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// Instant runs one instant query against the Prometheus at url, with the
// same bounds as the capacity queries (timeout, MaxResponseBytes, errors
// named by reason), and returns the values of every sample of the answer:
// one per element of an instant vector, or the one value of a scalar (a
// comparison like `x > bool 1` or `scalar(...)` gives one). Any other result
// (a range vector, a string) is a FailResult error naming the query. It
// serves the progressive shift's --abort-if guard, which needs no labels.
// The answer's size (MaxResponseBytes) is the only bound on the samples:
// none is skipped.
func Instant(ctx context.Context, url, query string, timeout time.Duration, now time.Time) (vals []float64, err error) {
	p, err := newProm(model.CapacityPrometheus{URL: url, Query: query, Timeout: model.Duration(timeout)}, nil)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			vals, err = nil, &queryError{FailPanic, fmt.Errorf("reading the answer panicked (recovered): %v", r)}
		}
	}()
	v, _, err := p.run(ctx, now)
	if qe := (*queryError)(nil); errors.As(err, &qe) && qe.reason == FailResult {
		// The client refuses a result it cannot decode (a string).
		return nil, &queryError{FailResult, fmt.Errorf("abort_if %q must return an instant vector or a scalar: %w", short(query, 200), qe.err)}
	}
	if err != nil {
		return nil, err
	}
	typ := "nothing"
	switch v := v.(type) {
	case prommodel.Vector:
		vals = make([]float64, len(v))
		for i, s := range v {
			vals[i] = float64(s.Value)
		}
		return vals, nil
	case *prommodel.Scalar:
		if v != nil {
			return []float64{float64(v.Value)}, nil
		}
	case nil:
	default:
		typ = v.Type().String()
	}
	return nil, &queryError{FailResult, fmt.Errorf("abort_if %q must return an instant vector or a scalar, got %s", short(query, 200), typ)}
}
