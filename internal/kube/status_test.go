package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/meridian-gslb/meridian/internal/model"
)

// lab is one Ready member backed by a fake API server.
type lab struct {
	cs  *fake.Clientset
	mg  *Manager
	mem *member
}

func newLab(t *testing.T, svcs ...*corev1.Service) *lab {
	t.Helper()
	objs := make([]runtime.Object, len(svcs))
	for i, s := range svcs {
		objs[i] = s
	}
	cs := fake.NewClientset(objs...)
	mg := NewManager(context.Background(), Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: prometheus.NewRegistry()})
	mem := newMember(mg, MemberSource{Cluster: "east"}, model.Kubernetes{})
	mem.state, mem.cs, mem.writer.cs = StateReady, cs, cs
	mem.writer.events = newEventWriter(cs, nil)
	for _, s := range svcs {
		mem.services.upsert(s)
	}
	return &lab{cs: cs, mg: mg, mem: mem}
}

func lb(ns, name, host, ip string, created time.Time) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name), CreationTimestamp: metav1.NewTime(created),
			Annotations: map[string]string{AnnoHostname: host}},
		Spec:   corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: ip}}}},
	}
}

// write builds and writes the status of every object once.
func (l *lab) write(annotation bool) int {
	objs := l.mem.objects()
	r := Build(objs, base())
	view := func(name string) (ServiceView, bool) {
		for _, s := range r.Services {
			if s.Name == name {
				v := ServiceView{Strategy: s.Strategy}
				for _, e := range s.Endpoints {
					v.Endpoints = append(v.Endpoints, EndpointView{Cluster: e.Cluster, Target: e.Address, Weight: 100, State: "up", Available: true})
				}
				return v, true
			}
		}
		return ServiceView{}, false
	}
	return l.mem.writeStatus(Statuses(objs, r, view), r.Problems, annotation)
}

func (l *lab) verbs(resource string) []string {
	var out []string
	for _, a := range l.cs.Actions() {
		if a.GetResource().Resource == resource {
			out = append(out, a.GetVerb())
		}
	}
	return out
}

func (l *lab) events(t *testing.T, ns string) []corev1.Event {
	t.Helper()
	evs, err := l.cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	return evs.Items
}

func TestWithoutTheStatusAnnotationMeridianOnlyCreatesEvents(t *testing.T) {
	l := newLab(t,
		lb("team-a", "web", "app.gslb.example.com", "198.51.100.1", t0),
		lb("team-b", "squat", "app.gslb.example.com", "203.0.113.66", t0.Add(time.Hour)))
	assert.Zero(t, l.write(false))
	assert.Zero(t, l.write(false), "nothing new the second time")

	assert.Empty(t, l.verbs("services"), "no patch, no get: the informers read")
	assert.Equal(t, []string{"create", "create", "create"}, l.verbs("events"), "events are only created")
	squat := l.events(t, "team-b")
	require.Len(t, squat, 2)
	reasons := map[string]string{}
	for _, e := range squat {
		reasons[e.Reason] = e.Message
		assert.Equal(t, "squat", e.InvolvedObject.Name)
		assert.Equal(t, "Service", e.InvolvedObject.Kind)
	}
	assert.Contains(t, reasons[ReasonHostnameConflict], "app.gslb.example.com. belongs to namespace team-a")
	assert.Contains(t, reasons[ReasonStatus], "not served for app.gslb.example.com.")
	owner := l.events(t, "team-a")
	require.Len(t, owner, 1)
	assert.Equal(t, ReasonStatus, owner[0].Reason)
	assert.Equal(t, corev1.EventTypeNormal, owner[0].Type)
	assert.Contains(t, owner[0].Message, "served for app.gslb.example.com. (weighted; share 100%")
}

func TestTheStatusAnnotationIsPatchedWhenEnabled(t *testing.T) {
	l := newLab(t,
		lb("team-a", "web", "app.gslb.example.com", "198.51.100.1", t0),
		lb("team-b", "squat", "app.gslb.example.com", "203.0.113.66", t0.Add(time.Hour)))
	assert.Zero(t, l.write(true))
	svc, err := l.cs.CoreV1().Services("team-b").Get(context.Background(), "squat", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, svc.Annotations[AnnoStatus], `"served":false`)
	assert.Contains(t, svc.Annotations[AnnoStatus], "belongs to namespace team-a")
	require.Len(t, l.events(t, "team-b"), 1, "the conflict Event; no MeridianStatus Event beside the annotation")
}

func TestAForbiddenStatusPatchIsNotRetried(t *testing.T) {
	l := newLab(t, lb("team-a", "web", "app.gslb.example.com", "198.51.100.1", t0))
	l.cs.PrependReactor("patch", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "web", errors.New("no patch"))
	})
	assert.Zero(t, l.write(true), "a forbidden write is reported once, not retried")
	assert.True(t, l.mem.writer.forbidden)
	l.cs.PrependReactor("patch", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("busy")
	})
	assert.Equal(t, 1, l.write(true), "another failure is retried")
}

func TestEveryObjectHasAnEventBudget(t *testing.T) {
	cs := fake.NewClientset()
	now := t0
	var results []string
	w := newEventWriter(cs, func(r string) { results = append(results, r) })
	w.now = func() time.Time { return now }
	svc := lb("team-a", "web", "app.gslb.example.com", "198.51.100.1", t0)
	for range eventBurst + 3 {
		require.NoError(t, w.write(context.Background(), "east/web", svc, corev1.EventTypeWarning, ReasonConflict, "x"))
	}
	assert.Len(t, results, eventBurst+3)
	assert.Equal(t, "suppressed", results[len(results)-1], "beyond the burst")
	now = now.Add(eventRefill)
	require.NoError(t, w.write(context.Background(), "east/web", svc, corev1.EventTypeWarning, ReasonConflict, "x"))
	assert.Equal(t, "created", results[len(results)-1], "one more after a refill period")
	require.NoError(t, w.write(context.Background(), "east/other", svc, corev1.EventTypeWarning, ReasonConflict, "x"))
	assert.Equal(t, "created", results[len(results)-1], "another object has its own budget")
}

func TestAnUnchangedStatusIsNotWrittenAgainAndIsCounted(t *testing.T) {
	l := newLab(t,
		lb("team-a", "web", "app.gslb.example.com", "198.51.100.1", t0),
		lb("team-b", "api", "api.gslb.example.com", "203.0.113.66", t0))
	assert.Zero(t, l.write(true))
	require.Equal(t, []string{"patch", "patch"}, l.verbs("services"))
	assert.Zero(t, testutil.ToFloat64(l.mg.m.statusWrites.WithLabelValues("east", "unchanged")))
	assert.Zero(t, l.write(true))
	assert.Equal(t, []string{"patch", "patch"}, l.verbs("services"), "the same text is not written twice")
	assert.Equal(t, 2.0, testutil.ToFloat64(l.mg.m.statusWrites.WithLabelValues("east", "unchanged")))
	assert.Equal(t, 2.0, testutil.ToFloat64(l.mg.m.statusWrites.WithLabelValues("east", "success")))
}

func TestStatusWritesStayWithinTheMembersRate(t *testing.T) {
	var svcs []*corev1.Service
	for i := range 5 {
		svcs = append(svcs, lb("team-a", fmt.Sprintf("web-%d", i), fmt.Sprintf("app%d.gslb.example.com", i), "198.51.100.1", t0))
	}
	l := newLab(t, svcs...)
	// Three writes at once, the next one an hour later: the writes past
	// the burst wait for their turn and end with the member.
	l.mem.writer.limiter = rate.NewLimiter(rate.Every(time.Hour), 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l.mem.ctx = ctx
	assert.Zero(t, l.write(true), "a write cut by the member's end is not retried")
	assert.Len(t, l.verbs("services"), 3, "only the burst went out")
}

func TestStatusWritesRunInParallel(t *testing.T) {
	const n, want = 8, 4
	var mu sync.Mutex
	inflight, most := 0, 0
	reached := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inflight++
		most = max(most, inflight)
		if inflight == want {
			once.Do(func() { close(reached) })
		}
		mu.Unlock()
		select { // a sequential writer never gets here twice at once: do not hang it
		case <-reached:
		case <-time.After(2 * time.Second):
		}
		mu.Lock()
		inflight--
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"Service","apiVersion":"v1","metadata":{"name":"x"}}`)
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	require.NoError(t, err)
	var svcs []*corev1.Service
	for i := range n {
		svcs = append(svcs, lb("team-a", fmt.Sprintf("web-%d", i), fmt.Sprintf("app%d.gslb.example.com", i), "198.51.100.1", t0))
	}
	l := newLab(t, svcs...)
	l.mem.writer.cs = cs
	assert.Zero(t, l.write(true))
	mu.Lock()
	defer mu.Unlock()
	assert.GreaterOrEqual(t, most, want, "several patches in flight at once")
}

func TestAPassGivenTheSameAsTheLastStillRestoresAHandEditedStatus(t *testing.T) {
	web := lb("team-a", "web", "app.gslb.example.com", "198.51.100.1", t0)
	l := newLab(t, web, lb("team-b", "api", "api.gslb.example.com", "203.0.113.66", t0))
	assert.Zero(t, l.write(true))
	require.Equal(t, []string{"patch", "patch"}, l.verbs("services"))
	written := l.mem.objs.byRef[ObjectRef{"east", KindService, "team-a", "web"}].status
	require.NotEmpty(t, written)

	edited := web.DeepCopy()
	edited.Annotations[AnnoStatus] = `{"served":false,"reason":"edited by hand"}`
	l.mem.services.upsert(edited)
	assert.Zero(t, l.write(true))
	assert.Equal(t, []string{"patch", "patch", "patch"}, l.verbs("services"), "the edited object is written again; the other is not")
	assert.Equal(t, written, l.mem.objs.byRef[ObjectRef{"east", KindService, "team-a", "web"}].status)
	assert.Equal(t, 1.0, testutil.ToFloat64(l.mg.m.statusWrites.WithLabelValues("east", "unchanged")))
}

func TestAPassGivenTheSameStatusReportsANewAnnotationError(t *testing.T) {
	web := lb("team-a", "web", "app.gslb.example.com", "198.51.100.1", t0)
	l := newLab(t, web)
	assert.Zero(t, l.write(false))
	require.Len(t, l.events(t, "team-a"), 1, "the MeridianStatus Event")

	bad := web.DeepCopy()
	bad.Annotations[AnnoWeight] = "heavy"
	l.mem.services.upsert(bad) // the last valid settings keep serving: the same status
	assert.Zero(t, l.write(false))
	evs := l.events(t, "team-a")
	require.Len(t, evs, 2, "the new error is reported")
	reasons := []string{evs[0].Reason, evs[1].Reason}
	assert.Contains(t, reasons, ReasonInvalidAnnotation)

	assert.Zero(t, l.write(false))
	assert.Len(t, l.events(t, "team-a"), 2, "and only once")
}
