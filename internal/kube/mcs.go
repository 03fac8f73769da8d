package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meridian-gslb/meridian/internal/kube/claims"
	"github.com/meridian-gslb/meridian/internal/model"
)

// The Multi-Cluster Services API kinds Meridian reads.
const (
	KindServiceExport = "ServiceExport"
	KindServiceImport = "ServiceImport"
	// MCSGroup is the API group of the Multi-Cluster Services API
	// (sigs.k8s.io/mcs-api).
	MCSGroup = "multicluster.x-k8s.io"
	// ConditionServed is the condition Meridian writes on a ServiceExport's
	// status: whether its Service is answered as a global service. The
	// MCS conditions (Valid, Ready, Conflict) are the MCS controller's.
	ConditionServed = "meridian.io/Served"
)

// Reasons of the Served condition.
const (
	ReasonServedTrue = "Served"    // some answer uses the exported Service's addresses
	ReasonNotServed  = "NotServed" // a problem keeps it out (see the message)
	ReasonPending    = "Pending"   // no load-balancer address yet, or every endpoint is out of the answers
	ReasonClaimed    = "NameTaken" // another namespace owns the name (kubernetes.claims, first claimant)
)

// mcsKinds is what the MCS source watches, in the versions it reads.
var mcsKinds = []crdKind{
	{KindServiceExport, MCSGroup, "serviceexports", []string{"v1alpha1", "v1beta1"}},
	{KindServiceImport, MCSGroup, "serviceimports", []string{"v1alpha1", "v1beta1"}},
}

// serviceImportShape is the part of a ServiceImport Meridian reads.
type serviceImportShape struct {
	Spec struct {
		Type string   `json:"type"`
		IPs  []string `json:"ips"`
	} `json:"spec"`
}

// exportedService is what an export reads of the Service it exports.
type exportedService struct {
	typ     corev1.ServiceType
	targets []string // status.loadBalancer.ingress: IPs, else host names
}

// ExportHostname is the global name of the Service namespace/name
// exported under zone (canonical): <name>.<namespace>.<zone>.
func ExportHostname(name, namespace, zone string) string {
	return model.CanonicalName(name + "." + namespace + "." + zone)
}

// ReadExport is what a ServiceExport gives Meridian: the annotations it is
// read with, its targets and problems. It is pure. The rules
// (docs/kubernetes.md, "MCS API source"):
//   - the export serves ExportHostname(its name, its namespace, zone); its
//     meridian.io/ annotations are its settings, as on a Service
//     (meridian.io/hostname is not: the name is the export's);
//   - its targets are the exported Service's load-balancer addresses
//     (status.loadBalancer.ingress), as for an annotated Service: a
//     missing Service, or one that is not type LoadBalancer, is a problem.
func ReadExport(name, namespace, zone string, own map[string]string, svc *exportedService) (anno map[string]string, targets, problems []string, err *FieldError) {
	host := ExportHostname(name, namespace, zone)
	anno = make(map[string]string, len(own)+1)
	maps.Copy(anno, own)
	anno[AnnoHostname] = host
	if _, ok := dns.IsDomainName(host); !ok || len(host) > 254 {
		err = &FieldError{Annotation: AnnoHostname, Value: host, Msg: "is not a host name: <service>.<namespace>.<zone> is longer than 253 characters (allowed: shorter names, or another kubernetes.mcs.zone)"}
	}
	switch {
	case svc == nil:
		problems = append(problems, fmt.Sprintf("not served: no Service %s/%s to export", namespace, name))
	case svc.typ != corev1.ServiceTypeLoadBalancer:
		problems = append(problems, fmt.Sprintf("not served: the exported Service %s/%s is type %s; Meridian answers the load-balancer addresses of a Service of type LoadBalancer", namespace, name, orClusterIP(svc.typ)))
	default:
		targets = svc.targets
	}
	return anno, targets, problems, err
}

func orClusterIP(t corev1.ServiceType) corev1.ServiceType {
	if t == "" {
		return corev1.ServiceTypeClusterIP
	}
	return t
}

// ServedCondition is the meridian.io/Served condition for an export whose
// status is s; prev is the condition on the export now (nil: none), whose
// lastTransitionTime is kept while the status stays; imported describes
// the cluster's ServiceImport of the same name ("" for none). It is pure.
func ServedCondition(s Status, prev *metav1.Condition, imported string, now time.Time) metav1.Condition {
	c := metav1.Condition{Type: ConditionServed, Status: metav1.ConditionFalse, Reason: ReasonPending, Message: servingText(s)}
	switch {
	case s.Served:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonServedTrue
	case hasPrefix(s.Problems, claims.ConflictPrefix):
		c.Reason = ReasonClaimed
	case len(s.Problems) > 0 || len(s.Errors) > 0:
		c.Reason = ReasonNotServed
	}
	if len(s.Errors) > 0 {
		c.Message += "; rejected annotations: " + strings.Join(s.Errors, "; ")
	}
	if imported != "" {
		c.Message += "; " + imported
	}
	if len(c.Message) > maxConditionMessage {
		c.Message = c.Message[:maxConditionMessage-3] + "..."
	}
	c.LastTransitionTime = metav1.NewTime(now.UTC().Truncate(time.Second))
	if prev != nil && prev.Status == c.Status {
		c.LastTransitionTime = prev.LastTransitionTime
	}
	return c
}

// maxConditionMessage is the longest condition message the CRD accepts.
const maxConditionMessage = 32768

func hasPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// importText describes a ServiceImport for the Served condition.
func importText(imp *serviceImportShape) string {
	if imp == nil {
		return ""
	}
	t := imp.Spec.Type
	if t == "" {
		t = "ClusterSetIP"
	}
	s := "the cluster's ServiceImport is " + t
	if len(imp.Spec.IPs) > 0 {
		s += " " + strings.Join(imp.Spec.IPs, ",") + " (clusterset addresses: inside the clusterset, not answered)"
	}
	return s
}

// mcsSource watches a member's ServiceExports and ServiceImports where the
// Multi-Cluster Services API CRDs are served (kubernetes.mcs sets the
// zone), and hands each export, with the addresses of the Service it
// exports, to the sink. The Services come from the Service source's
// informer (serviceChanged). It writes the meridian.io/Served condition
// on the exports (patchStatus).
type mcsSource struct {
	cluster, zone string
	sink          objectSink
	watch         *crdWatch
	now           func() time.Time

	// eventMu serialises export, import and Service events: a Service's
	// change re-reads its export, and must not bring back an older one.
	eventMu sync.Mutex

	mu       sync.Mutex
	services map[string]*exportedService           // NAMESPACE/NAME -> the Service, as an export reads it
	exports  map[string]*unstructured.Unstructured // NAMESPACE/NAME -> last seen export (slim)
	imports  map[string]*serviceImportShape        // NAMESPACE/NAME -> last seen import
}

func newMCSSource(cluster, zone string, log *slog.Logger, k model.Kubernetes, sink objectSink) *mcsSource {
	s := &mcsSource{cluster: cluster, zone: zone, sink: sink, now: time.Now,
		services: map[string]*exportedService{}, exports: map[string]*unstructured.Unstructured{}, imports: map[string]*serviceImportShape{}}
	s.watch = &crdWatch{cluster: cluster, log: log, kcfg: k, what: "ServiceExports and ServiceImports (MCS API)", kinds: mcsKinds,
		transform: slimMCSObject, handler: handlers(sink, s.upsert, s.remove)}
	return s
}

// serviceChanged records a Service (gone: deleted) an export may export,
// and re-reads its export when what the export reads of it changed.
// Called by the Service source's informer, for every Service.
func (s *mcsSource) serviceChanged(svc *corev1.Service, gone bool) {
	s.eventMu.Lock()
	defer s.eventMu.Unlock()
	key := svc.Namespace + "/" + svc.Name
	var now *exportedService
	if !gone {
		now = &exportedService{typ: svc.Spec.Type}
		for _, i := range svc.Status.LoadBalancer.Ingress {
			switch {
			case i.IP != "":
				now.targets = append(now.targets, i.IP)
			case i.Hostname != "":
				now.targets = append(now.targets, i.Hostname)
			}
		}
	}
	s.mu.Lock()
	old := s.services[key]
	same := (old == nil) == (now == nil) && (now == nil || old.typ == now.typ && strings.Join(old.targets, ",") == strings.Join(now.targets, ","))
	if now == nil {
		delete(s.services, key)
	} else {
		s.services[key] = now
	}
	export := s.exports[key]
	s.mu.Unlock()
	if !same && export != nil {
		s.sink.put(s.read(export))
	}
}

// upsert reads an added or changed export or import.
func (s *mcsSource) upsert(o any) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return
	}
	s.eventMu.Lock()
	defer s.eventMu.Unlock()
	key := u.GetNamespace() + "/" + u.GetName()
	if u.GetKind() == KindServiceImport {
		var imp serviceImportShape
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &imp); err != nil {
			return
		}
		s.mu.Lock()
		s.imports[key] = &imp
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	s.exports[key] = u
	s.mu.Unlock()
	s.sink.put(s.read(u))
}

// remove drops a deleted export, or forgets a deleted import.
func (s *mcsSource) remove(o any) {
	u, ok := withoutTombstone(o).(*unstructured.Unstructured)
	if !ok {
		return
	}
	s.eventMu.Lock()
	defer s.eventMu.Unlock()
	key := u.GetNamespace() + "/" + u.GetName()
	s.mu.Lock()
	if u.GetKind() == KindServiceImport {
		delete(s.imports, key)
		s.mu.Unlock()
		return
	}
	delete(s.exports, key)
	s.mu.Unlock()
	s.sink.drop(ObjectRef{s.cluster, KindServiceExport, u.GetNamespace(), u.GetName()})
}

// read reads an export with the Service it exports.
func (s *mcsSource) read(u *unstructured.Unstructured) objectRead {
	in := objectRead{ref: ObjectRef{s.cluster, KindServiceExport, u.GetNamespace(), u.GetName()},
		uid: u.GetUID(), created: u.GetCreationTimestamp().Time, obj: u, own: u.GetAnnotations(), backends: []string{u.GetName()}}
	s.mu.Lock()
	svc := s.services[u.GetNamespace()+"/"+u.GetName()]
	s.mu.Unlock()
	in.anno, in.targets, in.problems, in.annoErr = ReadExport(u.GetName(), u.GetNamespace(), s.zone, in.own, svc)
	return in
}

// patchStatus writes meridian.io/status on an export (text is the
// Status's JSON) and applies the meridian.io/Served condition to its
// status subresource.
func (s *mcsSource) patchStatus(ctx context.Context, ref ObjectRef, text, manager string) error {
	if err := s.watch.patchStatus(ctx, ref, text, manager); err != nil {
		return err
	}
	var st Status
	if err := json.Unmarshal([]byte(text), &st); err != nil {
		return fmt.Errorf("%s: status %q: %w", ref, text, err)
	}
	key := ref.Namespace + "/" + ref.Name
	s.mu.Lock()
	prev := servedConditionOf(s.exports[key])
	imported := importText(s.imports[key])
	s.mu.Unlock()
	c := ServedCondition(st, prev, imported, s.now())
	cond, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
	if err != nil {
		return err
	}
	return s.watch.applyStatus(ctx, ref, map[string]any{"conditions": []any{cond}}, manager)
}

// servedConditionOf is the meridian.io/Served condition on an export (nil
// when it has none).
func servedConditionOf(u *unstructured.Unstructured) *metav1.Condition {
	if u == nil {
		return nil
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != ConditionServed {
			continue
		}
		var out metav1.Condition
		if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &out) == nil {
			return &out
		}
	}
	return nil
}
