package cloudflare

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"

	"github.com/meridian-gslb/meridian/providers/apicall"
)

// classify sorts the error of one request; ctx is the caller's context (a
// per-request timeout is retryable, the caller's cancellation is not). A
// 429 is a throttle, with the Retry-After Cloudflare sent; a 5xx, a timeout
// or a broken connection is retryable; any other API error is a refusal.
func classify(ctx context.Context, err error) apicall.Verdict {
	var ae *APIError
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests:
		return apicall.Verdict{Class: apicall.Throttled, RetryAfter: ae.RetryAfter}
	case errors.As(err, &ae) && ae.Status >= 500:
		return apicall.Verdict{Class: apicall.Retryable}
	case errors.As(err, &ae), ctx.Err() != nil:
		return apicall.Verdict{Class: apicall.Refused}
	}
	// No answer: a per-request timeout, a refused or reset connection, a
	// cut-off body. Anything else (e.g. "zone not found") is final.
	var ne net.Error
	var ue *url.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) || errors.As(err, &ue) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return apicall.Verdict{Class: apicall.Retryable}
	}
	return apicall.Verdict{Class: apicall.Refused}
}

// do makes one API request through the shared retry loop
// (providers/apicall) under the zone's request budget, and returns the
// number of requests made. An error after the last attempt wraps
// providers.ErrTransient; a refusal (a 4xx other than 429) wraps its
// *APIError.
func (p *Provider) do(ctx context.Context, op string, fn func(context.Context) error) (int, error) {
	return p.caller.Do(ctx, op, fn)
}
