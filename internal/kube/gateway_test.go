package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func parent(ns, name string) gwv1.ParentReference {
	p := gwv1.ParentReference{Name: gwv1.ObjectName(name)}
	if ns != "" {
		n := gwv1.Namespace(ns)
		p.Namespace = &n
	}
	return p
}

func accepted(ref gwv1.ParentReference, status metav1.ConditionStatus, reason string) gwv1.RouteParentStatus {
	return gwv1.RouteParentStatus{ParentRef: ref, ControllerName: "example.com/gw",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: status, Reason: reason, Message: "m"}}}
}

func gateway(ns, name string, addrs ...gwv1.GatewayStatusAddress) *gwv1.Gateway {
	g := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	g.Status.Addresses = addrs
	return g
}

func addr(typ gwv1.AddressType, v string) gwv1.GatewayStatusAddress {
	if typ == "" {
		return gwv1.GatewayStatusAddress{Value: v}
	}
	return gwv1.GatewayStatusAddress{Type: &typ, Value: v}
}

func TestRouteTargets(t *testing.T) {
	gws := map[string]*gwv1.Gateway{
		"shop/gw":   gateway("shop", "gw", addr("", "198.51.100.1"), addr(gwv1.IPAddressType, "2001:db8::1"), addr(gwv1.IPAddressType, "198.51.100.1")),
		"infra/lb":  gateway("infra", "lb", addr(gwv1.HostnameAddressType, "lb-1.elb.example.net")),
		"shop/odd":  gateway("shop", "odd", addr(gwv1.IPAddressType, "not-an-ip"), addr("example.com/NamedAddress", "pool-a"), addr(gwv1.IPAddressType, "198.51.100.9")),
		"shop/none": gateway("shop", "none"),
	}
	svcKind := gwv1.Kind("Service")
	core := gwv1.Group("")
	section := gwv1.SectionName("https")
	withSection := parent("", "gw")
	withSection.SectionName = &section
	tests := []struct {
		name         string
		route        Route
		wantTargets  []string
		wantProblems []string
	}{
		{
			name:        "a route accepted by its Gateway serves the Gateway's IPv4 and IPv6 addresses, each once",
			route:       Route{Namespace: "shop", ParentRefs: []gwv1.ParentReference{parent("", "gw")}, Parents: []gwv1.RouteParentStatus{accepted(parent("", "gw"), metav1.ConditionTrue, "Accepted")}},
			wantTargets: []string{"198.51.100.1", "2001:db8::1"},
		},
		{
			name:        "a Gateway in another namespace with a Hostname address gives a CNAME target",
			route:       Route{Namespace: "shop", ParentRefs: []gwv1.ParentReference{parent("infra", "lb")}, Parents: []gwv1.RouteParentStatus{accepted(parent("infra", "lb"), metav1.ConditionTrue, "Accepted")}},
			wantTargets: []string{"lb-1.elb.example.net"},
		},
		{
			name:         "a route its only parent did not accept is not served, with the parent's reason",
			route:        Route{Namespace: "shop", ParentRefs: []gwv1.ParentReference{parent("", "gw")}, Parents: []gwv1.RouteParentStatus{accepted(parent("", "gw"), metav1.ConditionFalse, "NotAllowedByListeners")}},
			wantProblems: []string{RouteNotAcceptedPrefix + ": Gateway shop/gw did not accept the route (Accepted=False, reason NotAllowedByListeners: m)"},
		},
		{
			name:         "a route without status.parents is not served yet",
			route:        Route{Namespace: "shop", ParentRefs: []gwv1.ParentReference{parent("", "gw")}},
			wantProblems: []string{RouteNotAcceptedPrefix + ": Gateway shop/gw has not accepted the route (no status.parents entry for it yet)"},
		},
		{
			name:         "a route without parentRefs is not served",
			route:        Route{Namespace: "shop"},
			wantProblems: []string{RouteNotAcceptedPrefix + " (spec.parentRefs is empty)"},
		},
		{
			name: "with two parents only the accepting one's addresses are served and the other is reported",
			route: Route{Namespace: "shop", ParentRefs: []gwv1.ParentReference{parent("", "gw"), parent("infra", "lb")},
				Parents: []gwv1.RouteParentStatus{accepted(parent("", "gw"), metav1.ConditionFalse, "NoMatchingListenerHostname"), accepted(parent("infra", "lb"), metav1.ConditionTrue, "Accepted")}},
			wantTargets:  []string{"lb-1.elb.example.net"},
			wantProblems: []string{routeNotThroughPrefix + "shop/gw did not accept the route (Accepted=False, reason NoMatchingListenerHostname: m)"},
		},
		{
			name: "acceptance of another section of the same Gateway does not count",
			route: Route{Namespace: "shop", ParentRefs: []gwv1.ParentReference{withSection},
				Parents: []gwv1.RouteParentStatus{accepted(parent("", "gw"), metav1.ConditionTrue, "Accepted")}},
			wantProblems: []string{RouteNotAcceptedPrefix + ": Gateway shop/gw has not accepted the route (no status.parents entry for it yet)"},
		},
		{
			name: "a status parentRef that spells out the route's namespace matches a spec parentRef without one",
			route: Route{Namespace: "shop", ParentRefs: []gwv1.ParentReference{parent("", "gw")},
				Parents: []gwv1.RouteParentStatus{accepted(parent("shop", "gw"), metav1.ConditionTrue, "Accepted")}},
			wantTargets: []string{"198.51.100.1", "2001:db8::1"},
		},
		{
			name: "an accepted parent whose Gateway is not watched is reported",
			route: Route{Namespace: "shop", ParentRefs: []gwv1.ParentReference{parent("other", "gw")},
				Parents: []gwv1.RouteParentStatus{accepted(parent("other", "gw"), metav1.ConditionTrue, "Accepted")}},
			wantProblems: []string{"parent Gateway other/gw accepted the route but is not found"},
		},
		{
			name: "an accepted Gateway without addresses gives no target and no problem",
			route: Route{Namespace: "shop", ParentRefs: []gwv1.ParentReference{parent("", "none")},
				Parents: []gwv1.RouteParentStatus{accepted(parent("", "none"), metav1.ConditionTrue, "Accepted")}},
		},
		{
			name: "invalid and unsupported Gateway addresses are skipped with a problem each",
			route: Route{Namespace: "shop", ParentRefs: []gwv1.ParentReference{parent("", "odd")},
				Parents: []gwv1.RouteParentStatus{accepted(parent("", "odd"), metav1.ConditionTrue, "Accepted")}},
			wantTargets: []string{"198.51.100.9"},
			wantProblems: []string{
				`Gateway shop/odd: status.addresses type "example.com/NamedAddress" is skipped (allowed: IPAddress, Hostname)`,
				`Gateway shop/odd: status.addresses value "not-an-ip" is not an IP address (type IPAddress)`,
			},
		},
		{
			name: "a mesh parent (a Service) gives no address and the route is not served",
			route: Route{Namespace: "shop", ParentRefs: []gwv1.ParentReference{{Group: &core, Kind: &svcKind, Name: "web"}},
				Parents: []gwv1.RouteParentStatus{accepted(gwv1.ParentReference{Group: &core, Kind: &svcKind, Name: "web"}, metav1.ConditionTrue, "Accepted")}},
			wantProblems: []string{
				RouteNotAcceptedPrefix + " (no parent is a Gateway)",
				"parent Service shop/web is not a Gateway (gateway.networking.k8s.io); only Gateway parents give addresses",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			targets, problems := RouteTargets(tt.route, gws)
			assert.Equal(t, tt.wantTargets, targets)
			assert.Equal(t, tt.wantProblems, problems)
		})
	}
}

func TestRouteAnnotations(t *testing.T) {
	tests := []struct {
		name        string
		anno        map[string]string
		spec        []string
		wantHost    string
		wantWatched bool
		wantErr     string
	}{
		{name: "a route without either annotation is not watched", anno: map[string]string{"other": "x"}, spec: []string{"app.gslb.example.com"}},
		{name: "meridian.io/hostname wins over spec.hostnames", anno: map[string]string{AnnoHostname: "a.gslb.example.com", AnnoHostnamesFromSpec: "true"},
			spec: []string{"b.gslb.example.com"}, wantHost: "a.gslb.example.com", wantWatched: true},
		{name: "the opt-in takes spec.hostnames as the hostname list", anno: map[string]string{AnnoHostnamesFromSpec: "true"},
			spec: []string{"b.gslb.example.com", "c.gslb.example.com"}, wantHost: "b.gslb.example.com,c.gslb.example.com", wantWatched: true},
		{name: "an opt-in of false leaves the route unwatched", anno: map[string]string{AnnoHostnamesFromSpec: "false"}, spec: []string{"b.gslb.example.com"}},
		{name: "an opt-in that is not a boolean is an error", anno: map[string]string{AnnoHostnamesFromSpec: "yes"}, spec: []string{"b.gslb.example.com"},
			wantWatched: true, wantErr: `meridian.io/hostnames-from-spec: "yes" is not a boolean (allowed: true, false)`},
		{name: "an opt-in with empty spec.hostnames is an error", anno: map[string]string{AnnoHostnamesFromSpec: "true"},
			wantWatched: true, wantErr: `meridian.io/hostnames-from-spec: "true" is true but spec.hostnames is empty (set spec.hostnames or meridian.io/hostname)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, had := tt.anno[AnnoHostname]
			out, watched, err := RouteAnnotations(tt.anno, tt.spec)
			assert.Equal(t, tt.wantWatched, watched)
			if tt.wantErr != "" {
				require.NotNil(t, err)
				assert.Equal(t, tt.wantErr, err.Error())
				return
			}
			assert.Nil(t, err)
			assert.Equal(t, tt.wantHost, out[AnnoHostname])
			_, has := tt.anno[AnnoHostname]
			assert.Equal(t, had, has, "the route's own annotations are not changed")
		})
	}
}

func TestAWildcardInSpecHostnamesIsReportedOnTheOptIn(t *testing.T) {
	own := map[string]string{AnnoHostnamesFromSpec: "true"}
	anno, watched, optErr := RouteAnnotations(own, []string{"*.gslb.example.com"})
	require.True(t, watched)
	require.Nil(t, optErr)
	_, errs := ParseAnnotations(anno)
	errs = routeErrors(anno, own, optErr, errs)
	require.Len(t, errs, 1)
	assert.Equal(t, AnnoHostnamesFromSpec, errs[0].Annotation)
	assert.Contains(t, errs[0].Msg, `"*.gslb.example.com"`)
	assert.Contains(t, errs[0].Msg, "spec.hostnames")
}

func TestReadRouteTakesHostnamesParentsAndStatusOfAnyRouteKind(t *testing.T) {
	for _, kind := range []struct{ kind, apiVersion string }{{KindHTTPRoute, "gateway.networking.k8s.io/v1"}, {KindGRPCRoute, "gateway.networking.k8s.io/v1"}, {KindTLSRoute, "gateway.networking.k8s.io/v1alpha2"}} {
		t.Run(kind.kind+" "+kind.apiVersion+" is read the same way", func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": kind.apiVersion, "kind": kind.kind,
				"metadata": map[string]any{"namespace": "shop", "name": "web"},
				"spec":     map[string]any{"hostnames": []any{"app.gslb.example.com"}, "parentRefs": []any{map[string]any{"name": "gw"}}, "rules": []any{map[string]any{}}},
				"status": map[string]any{"parents": []any{map[string]any{"parentRef": map[string]any{"name": "gw"}, "controllerName": "example.com/gw",
					"conditions": []any{map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "", "lastTransitionTime": "2026-11-01T00:00:00Z"}}}}},
			}}
			r, _, err := readRoute(u)
			require.NoError(t, err)
			assert.Equal(t, kind.kind, r.Kind)
			assert.Equal(t, []string{"app.gslb.example.com"}, r.Hostnames)
			targets, problems := RouteTargets(r, map[string]*gwv1.Gateway{"shop/gw": gateway("shop", "gw", addr("", "198.51.100.7"))})
			assert.Equal(t, []string{"198.51.100.7"}, targets)
			assert.Empty(t, problems)
		})
	}
}

func TestARouteNoParentAcceptedIsNotServedAndSaysWhy(t *testing.T) {
	route := obj("east", "web", 1, map[string]string{AnnoHostname: "app.gslb.example.com"})
	route.Ref.Kind = KindHTTPRoute
	why := RouteNotAcceptedPrefix + ": Gateway default/gw did not accept the route (Accepted=False, reason NotAllowedByListeners: m)"
	route.Problems = []string{why}
	r := Build([]Object{route}, base())
	assert.Empty(t, r.Services)
	assert.Equal(t, []string{why}, r.Problems[route.Ref])
	assert.Equal(t, "no address yet (no accepting parent Gateway has status.addresses)", r.Dropped["app.gslb.example.com."])
	assert.Equal(t, ReasonRouteNotAccepted, eventReason(why))
}

func TestARouteAndAServiceShareANameLikeTwoServices(t *testing.T) {
	route := obj("west", "web", 2, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoWeight: "30"}, "lb-1.elb.example.net")
	route.Ref.Kind = KindHTTPRoute
	route.Targets = []string{"198.51.100.2"}
	svc := obj("east", "web", 1, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoWeight: "70"}, "198.51.100.1")
	r := Build([]Object{route, svc}, base())
	require.Len(t, r.Services, 1)
	assert.Len(t, r.Services[0].Endpoints, 2)
	assert.Equal(t, []ObjectRef{svc.Ref, route.Ref}, r.Sources["app.gslb.example.com."])
}

func TestSameAddress(t *testing.T) {
	tests := []struct {
		name string
		a, b gwv1.GatewayStatusAddress
		want bool
	}{
		{"an address without a type is the same as one typed IPAddress", addr("", "198.51.100.1"), addr(gwv1.IPAddressType, "198.51.100.1"), true},
		{"equal types and values held in different pointers are the same", addr(gwv1.HostnameAddressType, "lb.example.net"), addr(gwv1.HostnameAddressType, "lb.example.net"), true},
		{"another value is a change", addr(gwv1.IPAddressType, "198.51.100.1"), addr(gwv1.IPAddressType, "198.51.100.2"), false},
		{"another type is a change", addr(gwv1.IPAddressType, "lb.example.net"), addr(gwv1.HostnameAddressType, "lb.example.net"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, sameAddress(tt.a, tt.b))
		})
	}
}
