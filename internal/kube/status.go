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

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/meridian-gslb/meridian/internal/kube/claims"
	"github.com/meridian-gslb/meridian/internal/model"
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

// statusWriter writes back, for a member's objects, what Meridian serves
// for them: Events, and the meridian.io/status annotation. It remembers
// what it reported per object, so each pass writes only what changed. Its
// writes have their own client and rate (kubernetes.status_qps,
// status_burst). Safe for concurrent use.
type statusWriter struct {
	cluster string
	mg      *Manager // log, metrics and the field manager
	objs    *objectSet
	routes  routeStatusPatcher
	// kinds write meridian.io/status on the other custom resources, by
	// kind (DNSEndpoint, ServiceExport); set before the member starts.
	kinds map[string]routeStatusPatcher

	mu        sync.Mutex
	cs        kubernetes.Interface // status writes: watchConfig's, paced by limiter only; nil until connected
	events    *eventWriter
	limiter   *rate.Limiter          // status writes (Events, meridian.io/status): status_qps, status_burst
	evented   map[ObjectRef][]string // errors and problems last reported as Events per object
	served    map[ObjectRef]string   // serving last reported as an Event per object
	forbidden bool                   // a status patch was forbidden (logged once)
	// passed is, per object, what the last status pass was given for it
	// (statusPass): a pass given the same again has nothing to do for it.
	passed map[ObjectRef]statusPass
}

// routeStatusPatcher writes meridian.io/status on a Gateway API route.
type routeStatusPatcher interface {
	patchStatus(ctx context.Context, ref ObjectRef, text, manager string) error
}

var (
	_ routeStatusPatcher = (*routeSource)(nil)
	_ routeStatusPatcher = (*crdWatch)(nil)
	_ routeStatusPatcher = (*mcsSource)(nil)
)

func newStatusWriter(cluster string, mg *Manager, k model.Kubernetes, objs *objectSet, routes routeStatusPatcher) *statusWriter {
	qps, burst := k.StatusQPS, k.StatusBurst
	if qps <= 0 {
		qps = model.DefaultKubeStatusQPS
	}
	if burst <= 0 {
		burst = model.DefaultKubeStatusBurst
	}
	return &statusWriter{cluster: cluster, mg: mg, objs: objs, routes: routes, limiter: rate.NewLimiter(rate.Limit(qps), burst),
		evented: map[ObjectRef][]string{}, served: map[ObjectRef]string{}, passed: map[ObjectRef]statusPass{}}
}

// statusClient is the client of the status writes, from the member's
// watch configuration: status writes have their own budget (the status
// writer's limiter); client-go's limiter, shared with the informers'
// requests, would hold them at 20/s.
func statusClient(wcfg *rest.Config) (kubernetes.Interface, error) {
	cfg := rest.CopyConfig(wcfg)
	cfg.QPS = -1
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("status client: %w", err)
	}
	return cs, nil
}

// connect gives the writer its client (statusClient), once the member is
// connected.
func (w *statusWriter) connect(cs kubernetes.Interface) {
	events := newEventWriter(cs, func(result string) { w.mg.m.events.WithLabelValues(w.cluster, result).Inc() })
	w.mu.Lock()
	defer w.mu.Unlock()
	events.pace = w.limiter.Wait
	w.cs, w.events = cs, events
}

// forget drops what was reported on an object that is gone.
func (w *statusWriter) forget(ref ObjectRef) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.evented, ref)
	delete(w.served, ref)
	delete(w.passed, ref)
	if w.events != nil {
		w.events.forget(ref.String())
	}
}

// write records an Event for each new annotation error and problem of an
// object and, without the annotation, for each change of its serving;
// with annotation it patches meridian.io/status where it differs (an
// unchanged text is not written: counted as result "unchanged"). The
// writes run in parallel, at most statusWorkers at once, each started
// within the member's rate (kubernetes.status_qps and status_burst). It
// returns how many writes failed and are worth retrying.
func (w *statusWriter) write(ctx context.Context, statuses map[ObjectRef]Status, problems map[ObjectRef][]string, annotation bool) (failed int) {
	jobs, cs, ew := w.due(statuses, problems, annotation)
	if cs == nil {
		return 0
	}
	var (
		wg    sync.WaitGroup
		next  = make(chan statusJob)
		fails atomic.Int64
	)
	for range min(statusWorkers, len(jobs)) {
		wg.Go(func() {
			for j := range next {
				w.recordEvents(ctx, ew, j)
				if j.patch {
					fails.Add(int64(w.patch(ctx, cs, j)))
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

// due works out the jobs of a pass, and counts the texts that are current
// as "unchanged"; it returns the client and event writer to do them with
// (cs nil: not connected, nothing is due).
func (w *statusWriter) due(statuses map[ObjectRef]Status, problems map[ObjectRef][]string, annotation bool) ([]statusJob, kubernetes.Interface, *eventWriter) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cs == nil {
		return nil, nil, nil
	}
	var jobs []statusJob
	unchanged := 0
	w.objs.each(func(ref ObjectRef, st *objState) {
		if _, ok := statuses[ref]; !ok && st.obj.NameTargets != nil && len(problems[ref]) == 0 && len(st.errs) == 0 {
			return // a DNSEndpoint of another DNS provider's names only (Statuses)
		}
		in := statusPass{st: st, status: statuses[ref], problems: problems[ref], errs: joinErrs(st.errs), annotation: annotation}
		if last, ok := w.passed[ref]; ok && last.same(&in) && (!annotation || st.status == last.text) {
			// What the last pass did for it stands: its Events are
			// recorded and its text is on the object.
			if annotation {
				unchanged++
			}
			return
		}
		j := w.statusJob(ref, st, in.status, in.problems, annotation)
		in.text = j.text
		w.passed[ref] = in
		if annotation && !j.patch {
			unchanged++
		}
		if j.patch || len(j.warnings) > 0 || j.status != "" {
			jobs = append(jobs, j)
		}
	})
	if unchanged > 0 {
		w.mg.m.statusWrites.WithLabelValues(w.cluster, "unchanged").Add(float64(unchanged))
	}
	return jobs, w.cs, w.events
}

// wait takes one token of the member's status write rate; false when the
// member stopped.
func (w *statusWriter) wait(ctx context.Context) bool {
	return w.limiter.Wait(ctx) == nil
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

// statusJob works out what is due for one object; w.mu and the object
// set are locked.
func (w *statusWriter) statusJob(ref ObjectRef, st *objState, s Status, problems []string, annotation bool) statusJob {
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
		if !slices.Contains(w.evented[ref], msg) {
			j.warnings = append(j.warnings, msg)
		}
	}
	w.evented[ref] = reported
	if annotation {
		j.patch = j.text != st.status
	} else if key := servingKey(s); key != w.served[ref] {
		w.served[ref] = key
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

func (w *statusWriter) recordEvents(ctx context.Context, ew *eventWriter, j statusJob) {
	if ew == nil || j.obj == nil {
		return
	}
	for _, msg := range j.warnings {
		if err := ew.write(ctx, j.ref.String(), j.obj, corev1.EventTypeWarning, eventReason(msg), msg); err != nil {
			w.mg.log.Warn("kubernetes: recording an Event failed", "object", j.ref.String(), "err", err)
		}
	}
	if j.status != "" {
		if err := ew.write(ctx, j.ref.String(), j.obj, corev1.EventTypeNormal, ReasonStatus, j.status); err != nil {
			w.mg.log.Warn("kubernetes: recording an Event failed", "object", j.ref.String(), "err", err)
		}
	}
}

// patch writes one object's meridian.io/status; it returns 1 when the
// write failed and is worth retrying.
func (w *statusWriter) patch(ctx context.Context, cs kubernetes.Interface, j statusJob) int {
	if !w.wait(ctx) {
		return 0 // the member stopped
	}
	var err error
	if p := w.kinds[j.ref.Kind]; p != nil {
		err = p.patchStatus(ctx, j.ref, j.text, w.mg.opts.FieldManager)
	} else if isRouteKind(j.ref.Kind) {
		err = w.routes.patchStatus(ctx, j.ref, j.text, w.mg.opts.FieldManager)
	} else {
		err = patchStatus(ctx, cs, j.ref, j.text, w.mg.opts.FieldManager)
	}
	if err != nil {
		return w.failed(j, err)
	}
	w.mg.m.statusWrites.WithLabelValues(w.cluster, "success").Inc()
	w.mu.Lock()
	w.forbidden = false
	w.mu.Unlock()
	w.objs.setStatus(j.ref, j.text)
	return 0
}

// failed counts and logs a failed status patch; it returns 1 when the
// write is worth retrying (a forbidden one is not: it is logged once).
func (w *statusWriter) failed(j statusJob, err error) int {
	w.mg.m.statusWrites.WithLabelValues(w.cluster, "failure").Inc()
	if !apierrors.IsForbidden(err) {
		w.mg.log.Warn("kubernetes: writing meridian.io/status failed; retried", "object", j.ref.String(), "err", err)
		return 1
	}
	w.mu.Lock()
	first := !w.forbidden
	w.forbidden = true
	w.mu.Unlock()
	if first {
		w.mg.log.Error("kubernetes: not allowed to write meridian.io/status (kubernetes.status_annotation is true): grant patch on services and ingresses (deploy/kustomize/components/status-annotation) or set status_annotation: false; Events and GET /v1/kube still report status",
			"cluster", w.cluster, "object", j.ref.String(), "err", err)
	}
	return 0
}

// statusPatch is the merge patch that sets meridian.io/status to text.
func statusPatch(text string) ([]byte, error) {
	return json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnoStatus: text}}})
}

func patchStatus(ctx context.Context, cs kubernetes.Interface, ref ObjectRef, text, manager string) error {
	patch, err := statusPatch(text)
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
