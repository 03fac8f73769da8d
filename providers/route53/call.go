package route53

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/meridian-gslb/meridian/providers/apicall"
)

// call runs one API operation through the shared retry loop
// (providers/apicall): every attempt waits for the request budget (a token
// bucket of RequestsPerSecond shared by all calls), throttles, server
// errors and timeouts are retried with jittered exponential backoff, and
// after MaxAttempts the error wraps providers.ErrTransient. fn must set its
// results only on success; it gets a context bounded by RequestTimeout.
func (p *Provider) call(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	_, err := p.caller.Do(ctx, op, fn)
	return err
}

// classify sorts an API error: the rate limit is a throttle; 5xx,
// PriorRequestNotComplete, timeouts and broken connections are retryable;
// everything else (refused batches, a missing zone, credentials) is final.
// Route 53 sends no Retry-After.
func classify(_ context.Context, err error) apicall.Verdict {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException":
			return apicall.Verdict{Class: apicall.Throttled}
		case "PriorRequestNotComplete", "ServiceUnavailable", "InternalFailure", "InternalError", "RequestTimeout":
			return apicall.Verdict{Class: apicall.Retryable}
		}
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) {
		switch code := status.HTTPStatusCode(); {
		case code == 429:
			return apicall.Verdict{Class: apicall.Throttled}
		case code >= 500:
			return apicall.Verdict{Class: apicall.Retryable}
		}
	}
	var send *smithyhttp.RequestSendError
	var netErr net.Error
	if errors.As(err, &send) || errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) {
		return apicall.Verdict{Class: apicall.Retryable}
	}
	return apicall.Verdict{Class: apicall.Refused}
}

// errMalformed marks a successful answer without what the adapter reads
// from it (no body, no id): Route 53 never sends one, a proxy or a broken
// fake might. It is an error that ends the pass, never a panic.
var errMalformed = errors.New("malformed answer")

// malformed is the error of op's answer lacking what.
func malformed(op, what string) error {
	return fmt.Errorf("%s: the answer has no %s: %w", op, what, errMalformed)
}

// answered is err, or, when the call of op succeeded without an answer, a
// malformed one.
func answered[T any](op string, out *T, err error) error {
	if err == nil && out == nil {
		return malformed(op, "body")
	}
	return err
}
