package route53

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/meridian-gslb/meridian/providers"
)

// Results of one API request, as in the api_calls metric.
const (
	resultOK        = "ok"
	resultThrottled = "throttled" // the rate limit: retried
	resultRetryable = "retryable" // 5xx, PriorRequestNotComplete, timeouts, broken connections: retried
	resultError     = "error"     // everything else (refused batches, missing zone, credentials): not retried
)

// call runs one API operation: every attempt waits for the request budget
// (a token bucket of RequestsPerSecond shared by all calls), throttles,
// server errors and timeouts are retried with jittered exponential backoff,
// and after MaxAttempts the error wraps providers.ErrTransient. fn must set
// its results only on success; it gets a context bounded by RequestTimeout.
func (p *Provider) call(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	for attempt := 1; ; attempt++ {
		if err := p.limiter.Wait(ctx); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%s: waiting for the request budget: %w", op, ctx.Err())
			}
			// The budget cannot grant a request before ctx's deadline.
			return fmt.Errorf("%s: waiting for the request budget: %w: %w", op, providers.ErrTransient, err)
		}
		actx, cancel := context.WithTimeout(ctx, p.opts.RequestTimeout)
		err := fn(actx)
		cancel()
		result := classify(err)
		p.m.APICalls.WithLabelValues(providerLabel, op, result).Inc()
		switch {
		case result == resultOK:
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("%s: %w", op, ctx.Err())
		case result == resultError:
			return fmt.Errorf("%s: %w", op, err)
		}
		if result == resultThrottled {
			p.m.Throttles.WithLabelValues(providerLabel).Inc()
		}
		if attempt >= p.opts.MaxAttempts {
			return fmt.Errorf("%s: gave up after %d attempts: %w: %w", op, attempt, providers.ErrTransient, err)
		}
		p.m.Retries.WithLabelValues(providerLabel).Inc()
		d := p.backoff(attempt)
		p.log.Debug("route53 call retried", "operation", op, "attempt", attempt, "result", result, "delay", d, "err", err)
		if err := p.opts.Sleep(ctx, d); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
}

// backoff is the delay before attempt+1: Backoff·2^(attempt-1), capped at
// MaxBackoff, drawn uniformly from its upper half so that writers that were
// throttled together do not come back together.
func (p *Provider) backoff(attempt int) time.Duration {
	d := p.opts.Backoff << min(attempt-1, 20)
	if d <= 0 || d > p.opts.MaxBackoff {
		d = p.opts.MaxBackoff
	}
	return d/2 + rand.N(d/2+1)
}

// classify sorts an API error into the results above.
func classify(err error) string {
	if err == nil {
		return resultOK
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException":
			return resultThrottled
		case "PriorRequestNotComplete", "ServiceUnavailable", "InternalFailure", "InternalError", "RequestTimeout":
			return resultRetryable
		}
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) {
		switch code := status.HTTPStatusCode(); {
		case code == 429:
			return resultThrottled
		case code >= 500:
			return resultRetryable
		}
	}
	var send *smithyhttp.RequestSendError
	var netErr net.Error
	if errors.As(err, &send) || errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) {
		return resultRetryable
	}
	return resultError
}
