package kube

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/reference"
)

// Event reasons Meridian records.
const (
	ReasonInvalidAnnotation   = "InvalidAnnotation"   // a meridian.io/* value is rejected
	ReasonHostnameConflict    = "HostnameConflict"    // a claimed name belongs to another namespace, or is reserved
	ReasonConflict            = "MeridianConflict"    // a setting or service problem
	ReasonStatus              = "MeridianStatus"      // served or not (when the status annotation is off)
	ReasonInvalidMemberSecret = "InvalidMemberSecret" // a member Secret is refused
	ReasonRouteNotAccepted    = "RouteNotAccepted"    // a Gateway API route's parent Gateway did not accept it
	ReasonHostnameLimit       = "HostnameLimit"       // names over kubernetes.max_hostnames_per_object or _per_namespace are not served
)

// Event budget per involved object: a burst, then one per refill period.
const (
	eventBurst      = 10
	eventRefill     = time.Minute
	maxEventMessage = 1024 // the API's limit on an Event note
)

// eventWriter creates core/v1 Events. It only creates: Meridian decides
// itself when an Event is due (a change of an object's problems or of its
// serving), so there is nothing to count up, and RBAC needs events create
// and nothing else. Each involved object gets at most eventBurst Events,
// refilled one per eventRefill, so a flapping object cannot flood its
// namespace. Safe for concurrent use.
type eventWriter struct {
	cs      kubernetes.Interface
	host    string
	now     func() time.Time
	counted func(result string) // created, failed or suppressed; may be nil
	// pace, when set, is waited on before each create (the member's status
	// write rate); its error ends the write uncounted.
	pace func(context.Context) error

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newEventWriter(cs kubernetes.Interface, counted func(string)) *eventWriter {
	host, _ := os.Hostname()
	return &eventWriter{cs: cs, host: host, now: time.Now, counted: counted, buckets: map[string]*bucket{}}
}

// allow takes one token of key's bucket.
func (w *eventWriter) allow(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	b := w.buckets[key]
	if b == nil {
		b = &bucket{tokens: eventBurst, at: now}
		w.buckets[key] = b
	}
	b.tokens = min(eventBurst, b.tokens+float64(now.Sub(b.at))/float64(eventRefill))
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// forget drops the budget of an object that is gone.
func (w *eventWriter) forget(key string) {
	w.mu.Lock()
	delete(w.buckets, key)
	w.mu.Unlock()
}

func (w *eventWriter) count(result string) {
	if w.counted != nil {
		w.counted(result)
	}
}

// write creates one Event on obj. It blocks for at most 10s.
func (w *eventWriter) write(ctx context.Context, key string, obj runtime.Object, typ, reason, msg string) error {
	if !w.allow(key) {
		w.count("suppressed")
		return nil
	}
	ref, err := reference.GetReference(scheme.Scheme, obj)
	if err != nil {
		w.count("failed")
		return fmt.Errorf("event reference: %w", err)
	}
	if w.pace != nil {
		if err := w.pace(ctx); err != nil {
			return fmt.Errorf("event %s: waiting for the status write rate: %w", reason, err)
		}
	}
	if len(msg) > maxEventMessage {
		msg = msg[:maxEventMessage-3] + "..."
	}
	now := metav1.NewTime(w.now())
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: eventName(ref.Name, now.Time), Namespace: ns},
		InvolvedObject: *ref,
		Reason:         reason,
		Message:        msg,
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
		Type:           typ,
		Source:         corev1.EventSource{Component: "meridian", Host: w.host},
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := w.cs.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		w.count("failed")
		return fmt.Errorf("event %s on %s/%s: %w", reason, ns, ref.Name, err)
	}
	w.count("created")
	return nil
}

// eventName is unique among the Events of one object: the time, as
// client-go's recorder names them, and a random part, since several
// Meridian nodes (or one, twice in a clock tick) may write at once.
func eventName(object string, t time.Time) string {
	if len(object) > 200 { // an Event name is at most 253 characters
		object = object[:200]
	}
	return fmt.Sprintf("%s.%x.%08x", object, t.UnixNano(), rand.Uint32())
}
