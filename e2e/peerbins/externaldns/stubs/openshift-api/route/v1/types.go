// Package v1 is a compile-only stand-in (see go.mod) for the Route types.
package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Route is an OpenShift route.
type Route struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              RouteSpec   `json:"spec"`
	Status            RouteStatus `json:"status,omitempty"`
}

// RouteSpec holds the host.
type RouteSpec struct {
	Host string `json:"host,omitempty"`
}

// RouteStatus lists the routers that admitted the route.
type RouteStatus struct {
	Ingress []RouteIngress `json:"ingress,omitempty"`
}

// RouteIngress is one router's view of the route.
type RouteIngress struct {
	Host                    string                  `json:"host,omitempty"`
	RouterName              string                  `json:"routerName,omitempty"`
	Conditions              []RouteIngressCondition `json:"conditions,omitempty"`
	RouterCanonicalHostname string                  `json:"routerCanonicalHostname,omitempty"`
}

// RouteIngressConditionType names a condition.
type RouteIngressConditionType string

// RouteAdmitted is the condition of an admitted route.
const RouteAdmitted RouteIngressConditionType = "Admitted"

// RouteIngressCondition is one condition of a router's view.
type RouteIngressCondition struct {
	Type   RouteIngressConditionType `json:"type"`
	Status corev1.ConditionStatus    `json:"status"`
}

// DeepCopyObject copies the route (runtime.Object).
func (r *Route) DeepCopyObject() runtime.Object {
	if r == nil {
		return nil
	}
	out := *r
	r.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Status.Ingress = make([]RouteIngress, len(r.Status.Ingress))
	for i, ing := range r.Status.Ingress {
		ing.Conditions = append([]RouteIngressCondition(nil), ing.Conditions...)
		out.Status.Ingress[i] = ing
	}
	return &out
}
