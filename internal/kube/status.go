package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
)

// Status is the meridian.io/status annotation Meridian writes on each
// watched object: what it serves for it now.
type Status struct {
	Served     bool       `json:"served"`               // some answer uses this object's endpoints
	Hostnames  []string   `json:"hostnames,omitempty"`  // the global names it serves
	Strategy   string     `json:"strategy,omitempty"`   // the service's strategy in effect
	Share      string     `json:"share,omitempty"`      // this object's share of the answers now, e.g. "70%"; "by location" for geo
	Health     string     `json:"health,omitempty"`     // decided health of its endpoints, e.g. "2/2 up"
	LastChange *time.Time `json:"lastChange,omitempty"` // last decided change of its endpoints or cluster
	Reason     string     `json:"reason,omitempty"`     // why that change happened
	Errors     []string   `json:"errors,omitempty"`     // rejected annotations (the last valid settings serve)
	Problems   []string   `json:"problems,omitempty"`   // conflicts and reasons it is not served
}

// Text is the annotation value: compact JSON, stable for equal statuses.
func (s Status) Text() string {
	b, _ := json.Marshal(s)
	return string(b)
}

// writeStatus patches meridian.io/status where it differs and records an
// Event for new annotation errors and problems. A member that is not Ready
// gets nothing.
func (m *member) writeStatus(statuses map[ObjectRef]Status, problems map[ObjectRef][]string) (failed int) {
	m.mu.Lock()
	if m.state != StateReady || m.cs == nil {
		m.mu.Unlock()
		return 0
	}
	cs, rec := m.cs, m.recorder
	type job struct {
		ref       ObjectRef
		text      string
		patch     bool
		eventMsgs []string
		obj       runtime.Object
	}
	var jobs []job
	for ref, st := range m.objs {
		s := statuses[ref]
		s.Problems = problems[ref]
		for _, e := range st.errs {
			s.Errors = append(s.Errors, e.Error())
		}
		if len(s.Errors) > 0 {
			s.Problems = append(s.Problems, "the last valid settings are served until the annotations are fixed")
		}
		text := s.Text()
		var evs []string
		evKey := strings.Join(append(slices.Clone(s.Errors), s.Problems...), "\n")
		if evKey != m.evented[ref] {
			m.evented[ref] = evKey
			evs = append(slices.Clone(s.Errors), problems[ref]...)
		}
		patch := text != st.status
		if !patch && len(evs) == 0 {
			continue
		}
		jobs = append(jobs, job{ref, text, patch, evs, st.runtime})
	}
	m.mu.Unlock()
	for _, j := range jobs {
		for _, msg := range j.eventMsgs {
			reason := "MeridianConflict"
			if strings.HasPrefix(msg, "meridian.io/") {
				reason = "InvalidAnnotation"
			}
			if rec != nil && j.obj != nil {
				recordEvent(rec, j.obj, reason, msg)
			}
		}
		if !j.patch {
			continue
		}
		if err := patchStatus(context.Background(), cs, j.ref, j.text); err != nil {
			m.mg.m.statusWrites.WithLabelValues(m.src.Cluster, "failure").Inc()
			m.mg.log.Warn("kubernetes: writing meridian.io/status failed; retried", "object", j.ref.String(), "err", err)
			failed++
			continue
		}
		m.mg.m.statusWrites.WithLabelValues(m.src.Cluster, "success").Inc()
		m.mu.Lock()
		m.written[j.ref] = j.text
		if st := m.objs[j.ref]; st != nil {
			st.status = j.text
		}
		m.mu.Unlock()
	}
	return failed
}

func patchStatus(ctx context.Context, cs kubernetes.Interface, ref ObjectRef, text string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnoStatus: text}}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	switch ref.Kind {
	case KindService:
		_, err = cs.CoreV1().Services(ref.Namespace).Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "meridian"})
	case KindIngress:
		_, err = cs.NetworkingV1().Ingresses(ref.Namespace).Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "meridian"})
	default:
		err = fmt.Errorf("unknown kind %q", ref.Kind)
	}
	return err
}

// recordEvent records a Warning Event on obj.
func recordEvent(rec record.EventRecorder, obj runtime.Object, reason, msg string) {
	rec.Event(obj, corev1.EventTypeWarning, reason, msg)
}
