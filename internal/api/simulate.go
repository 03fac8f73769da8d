package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/whatif"
)

// Simulator answers GET /v1/simulate.
type Simulator interface {
	Simulate(changes []whatif.Change) (whatif.Report, error)
}

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
		rep, err := s.Simulate(changes)
		var fe admin.FieldError
		switch {
		case errors.As(err, &fe):
			writeError(w, http.StatusBadRequest, "%v", err)
		case err != nil:
			writeError(w, http.StatusInternalServerError, "%v", fmt.Errorf("simulate: %w", err))
		default:
			writeJSON(w, http.StatusOK, rep)
		}
	})
}
