package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/meridian-gslb/meridian/internal/kube/claims"
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

// statusWorkers is how many status writes of one member may be in flight
// at once; the member's limiter (kubernetes.status_qps, status_burst)
// decides how many start per second.
const statusWorkers = 16

// writeStatus records an Event for each new annotation error and problem
// of an object and, without the annotation, for each change of its
// serving; with annotation it patches meridian.io/status where it differs
// (an unchanged text is not written: counted as result "unchanged"). The
// writes run in parallel, at most statusWorkers at once, each started
// within the member's rate (kubernetes.status_qps and status_burst). A
// member that is not Ready gets nothing. It returns how many writes failed
// and are worth retrying.
func (m *member) writeStatus(statuses map[ObjectRef]Status, problems map[ObjectRef][]string, annotation bool) (failed int) {
	m.mu.Lock()
	if m.state != StateReady || m.writer == nil {
		m.mu.Unlock()
		return 0
	}
	cs, ew, ctx := m.writer, m.events, m.ctx
	var jobs []statusJob
	unchanged := 0
	for ref, st := range m.objs {
		in := statusPass{st: st, status: statuses[ref], problems: problems[ref], errs: joinErrs(st.errs), annotation: annotation}
		if last, ok := m.passed[ref]; ok && last.same(&in) && (!annotation || st.status == last.text) {
			// What the last pass did for it stands: its Events are
			// recorded and its text is on the object.
			if annotation {
				unchanged++
			}
			continue
		}
		j := m.statusJob(ref, st, in.status, in.problems, annotation)
		in.text = j.text
		m.passed[ref] = in
		if annotation && !j.patch {
			unchanged++
		}
		if j.patch || len(j.warnings) > 0 || j.status != "" {
			jobs = append(jobs, j)
		}
	}
	m.mu.Unlock()
	if unchanged > 0 {
		m.mg.m.statusWrites.WithLabelValues(m.src.Cluster, "unchanged").Add(float64(unchanged))
	}
	if ctx == nil {
		ctx = context.Background()
	}
	var (
		wg    sync.WaitGroup
		next  = make(chan statusJob)
		fails atomic.Int64
	)
	for range min(statusWorkers, len(jobs)) {
		wg.Go(func() {
			for j := range next {
				m.recordEvents(ctx, ew, j)
				if j.patch {
					fails.Add(int64(m.patch(ctx, cs, j)))
				}
			}
		})
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	return int(fails.Load())
}

// wait takes one token of the member's status write rate; false when the
// member stopped.
func (m *member) wait(ctx context.Context) bool {
	return m.limiter.Wait(ctx) == nil
}

// statusPass is what a status pass was given for one object: given the
// same again (the same object state with the same annotation errors, the
// same status and problems), statusJob would find nothing due but the
// patch of text, when the object no longer carries it. A pass thus works
// out (and marshals) the status of the objects whose service, problems
// or annotations changed, not of every object.
type statusPass struct {
	st         *objState
	status     Status
	problems   []string
	errs       string
	annotation bool
	text       string // the meridian.io/status text statusJob made
}

func (p *statusPass) same(q *statusPass) bool {
	return p.st == q.st && p.errs == q.errs && p.annotation == q.annotation &&
		slices.Equal(p.problems, q.problems) && reflect.DeepEqual(p.status, q.status)
}

// statusJob is what is due for one object.
type statusJob struct {
	ref      ObjectRef
	obj      runtime.Object
	text     string   // the meridian.io/status value
	patch    bool     // write text
	warnings []string // new errors and problems: Warning Events
	status   string   // a MeridianStatus Event's message, "" for none
}

// statusJob works out what is due for one object; m.mu is held.
func (m *member) statusJob(ref ObjectRef, st *objState, s Status, problems []string, annotation bool) statusJob {
	s.Problems = append(slices.Clone(problems), s.Problems...)
	for _, e := range st.errs {
		s.Errors = append(s.Errors, e.Error())
	}
	if len(s.Errors) > 0 {
		s.Problems = append(s.Problems, "the last valid settings are served until the annotations are fixed")
	}
	slices.Sort(s.Problems)
	s.Problems = slices.Compact(s.Problems)
	j := statusJob{ref: ref, obj: st.runtime, text: s.Text()}
	reported := append(slices.Clone(s.Errors), problems...)
	for _, msg := range reported {
		if !slices.Contains(m.evented[ref], msg) {
			j.warnings = append(j.warnings, msg)
		}
	}
	m.evented[ref] = reported
	if annotation {
		j.patch = j.text != st.status
	} else if key := servingKey(s); key != m.served[ref] {
		m.served[ref] = key
		j.status = servingText(s)
	}
	return j
}

// servingKey is what a MeridianStatus Event reports a change of: served
// or not, for which names, with which strategy (not the share or health,
// which change with every decision).
func servingKey(s Status) string {
	return fmt.Sprintf("%t|%s|%s", s.Served, strings.Join(s.Hostnames, ","), s.Strategy)
}

func servingText(s Status) string {
	names := strings.Join(s.Hostnames, ", ")
	if !s.Served {
		if len(s.Problems) > 0 {
			return "not served for " + names + ": " + strings.Join(s.Problems, "; ")
		}
		return "not served for " + names + " yet (no load-balancer address, or every endpoint is out of the answers)"
	}
	return fmt.Sprintf("served for %s (%s; share %s; health %s)", names, s.Strategy, s.Share, s.Health)
}

// eventReason is the reason of a Warning Event for one error or problem.
func eventReason(msg string) string {
	switch {
	case strings.HasPrefix(msg, "meridian.io/"):
		return ReasonInvalidAnnotation
	case strings.HasPrefix(msg, claims.ConflictPrefix):
		return ReasonHostnameConflict
	case strings.HasPrefix(msg, LimitPrefix):
		return ReasonHostnameLimit
	case strings.HasPrefix(msg, RouteNotAcceptedPrefix), strings.HasPrefix(msg, routeNotThroughPrefix):
		return ReasonRouteNotAccepted
	}
	return ReasonConflict
}

func (m *member) recordEvents(ctx context.Context, ew *eventWriter, j statusJob) {
	if ew == nil || j.obj == nil {
		return
	}
	for _, msg := range j.warnings {
		if err := ew.write(ctx, j.ref.String(), j.obj, corev1.EventTypeWarning, eventReason(msg), msg); err != nil {
			m.mg.log.Warn("kubernetes: recording an Event failed", "object", j.ref.String(), "err", err)
		}
	}
	if j.status != "" {
		if err := ew.write(ctx, j.ref.String(), j.obj, corev1.EventTypeNormal, ReasonStatus, j.status); err != nil {
			m.mg.log.Warn("kubernetes: recording an Event failed", "object", j.ref.String(), "err", err)
		}
	}
}

// patch writes one object's meridian.io/status; it returns 1 when the
// write failed and is worth retrying.
func (m *member) patch(ctx context.Context, cs kubernetes.Interface, j statusJob) int {
	if !m.wait(ctx) {
		return 0 // the member stopped
	}
	var err error
	if isRouteKind(j.ref.Kind) {
		err = m.patchRouteStatus(ctx, j.ref, j.text, m.mg.opts.FieldManager)
	} else {
		err = patchStatus(ctx, cs, j.ref, j.text, m.mg.opts.FieldManager)
	}
	if err != nil {
		m.mg.m.statusWrites.WithLabelValues(m.src.Cluster, "failure").Inc()
		if apierrors.IsForbidden(err) {
			m.mu.Lock()
			first := !m.forbidden
			m.forbidden = true
			m.mu.Unlock()
			if first {
				m.mg.log.Error("kubernetes: not allowed to write meridian.io/status (kubernetes.status_annotation is true): grant patch on services and ingresses (deploy/kustomize/components/status-annotation) or set status_annotation: false; Events and GET /v1/kube still report status",
					"cluster", m.src.Cluster, "object", j.ref.String(), "err", err)
			}
			return 0
		}
		m.mg.log.Warn("kubernetes: writing meridian.io/status failed; retried", "object", j.ref.String(), "err", err)
		return 1
	}
	m.mg.m.statusWrites.WithLabelValues(m.src.Cluster, "success").Inc()
	m.mu.Lock()
	m.forbidden = false
	m.written[j.ref] = j.text
	if st := m.objs[j.ref]; st != nil {
		st.status = j.text
	}
	m.mu.Unlock()
	return 0
}

func patchStatus(ctx context.Context, cs kubernetes.Interface, ref ObjectRef, text, manager string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnoStatus: text}}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	switch ref.Kind {
	case KindService:
		_, err = cs.CoreV1().Services(ref.Namespace).Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: manager})
	case KindIngress:
		_, err = cs.NetworkingV1().Ingresses(ref.Namespace).Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: manager})
	default:
		err = fmt.Errorf("unknown kind %q", ref.Kind)
	}
	return err
}
