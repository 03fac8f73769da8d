package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/report"
)

// AdminControl is the admin state behind /v1/admin.
type AdminControl interface {
	List() []admin.Override
	Add(req admin.Request, who string) (admin.Override, error)
	Remove(id, who string) (admin.Override, error)
}

// ShiftControl pauses and resumes progressive shifts (an AdminControl
// that also implements it gets /v1/admin/shifts/{service}/pause|resume).
type ShiftControl interface {
	PauseShift(service, who, reason string) (admin.Override, error)
	ResumeShift(service, who string) (admin.Override, error)
}

// ShiftRequest is the body of a pause or resume.
type ShiftRequest struct {
	Reason string `json:"reason,omitempty"`
}

// maxAdminBody bounds admin request bodies.
const maxAdminBody = 16 << 10

func registerAdmin(mux *router, a AdminControl) {
	mux.HandleFunc("GET /v1/admin/overrides", func(w http.ResponseWriter, _ *http.Request) {
		ovs := a.List()
		if ovs == nil {
			ovs = []admin.Override{}
		}
		writeJSON(w, http.StatusOK, ovs)
	})
	mux.change("POST /v1/admin/overrides", func(w http.ResponseWriter, r *http.Request, who string) {
		var req admin.Request
		if err := decodeStrict(w, r, &req, "kind, cluster, service, endpoint, weight, reason, expires_in, to, steps, every, abort_if, max_failures, force"); err != nil {
			writeError(w, statusOf(err), "%v", err)
			return
		}
		o, err := a.Add(req, who)
		var fe admin.FieldError
		switch {
		case errors.As(err, &fe):
			writeError(w, http.StatusBadRequest, "%v", err)
		case errors.Is(err, admin.ErrBelowMinHealthy):
			writeError(w, http.StatusConflict, "%v", err)
		case errors.Is(err, admin.ErrTooMany):
			writeError(w, http.StatusConflict, "%v", err)
		case errors.Is(err, admin.ErrNoCapability):
			writeError(w, http.StatusForbidden, "%v (nothing was changed)", err)
		case err != nil:
			writeError(w, http.StatusInternalServerError, "%v (nothing was changed)", err)
		default:
			writeJSON(w, http.StatusCreated, o)
		}
	})
	if sc, ok := a.(ShiftControl); ok {
		for _, action := range []string{"pause", "resume"} {
			mux.change("POST /v1/admin/shifts/{service}/"+action, func(w http.ResponseWriter, r *http.Request, who string) {
				var req ShiftRequest
				if err := decodeStrict(w, r, &req, "reason"); err != nil {
					writeError(w, statusOf(err), "%v", err)
					return
				}
				if len(req.Reason) > admin.MaxReason {
					writeError(w, http.StatusBadRequest, "reason: is longer than %d characters", admin.MaxReason)
					return
				}
				service := r.PathValue("service")
				if len(service) > 255 {
					writeError(w, http.StatusBadRequest, "service: is longer than 255 characters")
					return
				}
				var o admin.Override
				var err error
				if action == "pause" {
					o, err = sc.PauseShift(service, who, req.Reason)
				} else {
					o, err = sc.ResumeShift(service, who)
				}
				var fe admin.FieldError
				switch {
				case errors.Is(err, admin.ErrNoCapability):
					writeError(w, http.StatusForbidden, "%v (nothing was changed)", err)
				case errors.Is(err, admin.ErrNotFound) || errors.Is(err, ErrNoShift):
					writeError(w, http.StatusNotFound, "%v", err)
				case errors.As(err, &fe):
					writeError(w, http.StatusBadRequest, "%v", err)
				case err != nil:
					writeError(w, http.StatusInternalServerError, "%v (nothing was changed)", err)
				default:
					writeJSON(w, http.StatusOK, o)
				}
			})
		}
	}
	mux.change("DELETE /v1/admin/overrides/{id}", func(w http.ResponseWriter, r *http.Request, who string) {
		o, err := a.Remove(r.PathValue("id"), who)
		switch {
		case errors.Is(err, admin.ErrNoCapability):
			writeError(w, http.StatusForbidden, "%v (nothing was changed)", err)
		case errors.Is(err, admin.ErrNotFound):
			writeError(w, http.StatusNotFound, "%v", err)
		case err != nil:
			writeError(w, http.StatusInternalServerError, "%v (nothing was changed)", err)
		default:
			writeJSON(w, http.StatusOK, o)
		}
	})
}

// ErrNoShift is wrapped by a ShiftControl when the service has no shift
// in force (404).
var ErrNoShift = report.ErrNoShift

type httpError struct {
	code int
	msg  string
}

func (e httpError) Error() string { return e.msg }

func statusOf(err error) int {
	var he httpError
	if errors.As(err, &he) {
		return he.code
	}
	return http.StatusBadRequest
}

// decodeStrict reads one JSON object: at most maxAdminBody bytes, no
// unknown fields, nothing after it. (The guard has checked the content type.)
func decodeStrict(w http.ResponseWriter, r *http.Request, v any, allowed string) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxAdminBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", maxAdminBody)}
		}
		if strings.HasPrefix(err.Error(), "json: unknown field") {
			return httpError{http.StatusBadRequest, "body: " + strings.TrimPrefix(err.Error(), "json: ") + " (allowed: " + allowed + ")"}
		}
		return httpError{http.StatusBadRequest, "body is not a JSON object: " + err.Error()}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return httpError{http.StatusBadRequest, "body has data after the JSON object"}
	}
	return nil
}
