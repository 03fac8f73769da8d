package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/report"
	"github.com/meridian-gslb/meridian/internal/whatif"
)

// Simulator answers GET /v1/simulate. It stops when ctx is done (the
// client went away) and returns ErrSimulationBusy while another
// simulation runs.
type Simulator interface {
	Simulate(ctx context.Context, changes []whatif.Change) (whatif.Report, error)
}

// ErrSimulationBusy is returned by a Simulator while another simulation
// runs: GET /v1/simulate answers 429 with Retry-After.
var ErrSimulationBusy = report.ErrSimulationBusy

// SimulateRetryAfter is the Retry-After of a 429 from GET /v1/simulate.
const SimulateRetryAfter = 2 * time.Second

// registerSimulate adds GET /v1/simulate: a read, it changes nothing.
func registerSimulate(mux *router, s Simulator) {
	mux.HandleFunc("GET /v1/simulate", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		for k := range q {
			if k != whatif.Fail && k != whatif.Drain && k != whatif.Weight {
				writeError(w, http.StatusBadRequest, "query parameter %q is not known (allowed: fail, drain, weight)", k)
				return
			}
		}
		var changes []whatif.Change
		for _, kind := range []string{whatif.Fail, whatif.Drain, whatif.Weight} {
			for _, spec := range q[kind] {
				changes = append(changes, whatif.Change{Kind: kind, Spec: spec})
			}
		}
		rep, err := s.Simulate(r.Context(), changes)
		var fe admin.FieldError
		switch {
		case errors.As(err, &fe):
			writeError(w, http.StatusBadRequest, "%v", err)
		case errors.Is(err, ErrSimulationBusy):
			w.Header().Set("Retry-After", strconv.Itoa(int(SimulateRetryAfter/time.Second)))
			writeError(w, http.StatusTooManyRequests, "%v: one runs at a time; retry in %s (the same question again is answered from the last report)", err, SimulateRetryAfter)
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			writeError(w, http.StatusServiceUnavailable, "%v (the request ended before the simulation did)", err)
		case err != nil:
			writeError(w, http.StatusInternalServerError, "%v", fmt.Errorf("simulate: %w", err))
		default:
			writeJSON(w, http.StatusOK, rep)
		}
	})
}
