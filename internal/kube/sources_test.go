package kube

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/meridian-gslb/meridian/internal/kube/claims"
	"github.com/meridian-gslb/meridian/internal/model"
)

func xep(name, typ string, targets ...string) externalEndpoint {
	return externalEndpoint{DNSName: name, RecordType: typ, Targets: targets}
}

func withSpecific(e externalEndpoint, kv ...string) externalEndpoint {
	for i := 0; i+1 < len(kv); i += 2 {
		e.ProviderSpecific = append(e.ProviderSpecific, providerProperty{Name: kv[i], Value: kv[i+1]})
	}
	return e
}

func TestReadDNSEndpoint(t *testing.T) {
	ttl := func(e externalEndpoint, n int64) externalEndpoint { e.RecordTTL = n; return e }
	tests := []struct {
		name     string
		own      map[string]string
		eps      []externalEndpoint
		targets  map[string][]string
		anno     map[string]string // checked keys only
		problems []string
		errOn    string // the annotation of Err, "" for none
	}{
		{name: "an A endpoint gives its name its addresses",
			eps:     []externalEndpoint{xep("App.gslb.example.com", "A", "198.51.100.1", "198.51.100.2")},
			targets: map[string][]string{"app.gslb.example.com.": {"198.51.100.1", "198.51.100.2"}},
			anno:    map[string]string{AnnoHostname: "app.gslb.example.com."}},
		{name: "the A and AAAA endpoints of one name add up whatever their setIdentifier",
			eps: []externalEndpoint{xep("app.gslb.example.com", "A", "198.51.100.1"), xep("app.gslb.example.com", "AAAA", "2001:DB8::1"),
				{DNSName: "app.gslb.example.com", RecordType: "A", Targets: []string{"198.51.100.1"}}},
			targets: map[string][]string{"app.gslb.example.com.": {"198.51.100.1", "2001:db8::1"}}},
		{name: "a CNAME endpoint gives its host name targets",
			eps:     []externalEndpoint{xep("www.gslb.example.com", "CNAME", "LB.example.net.")},
			targets: map[string][]string{"www.gslb.example.com.": {"lb.example.net."}}},
		{name: "TXT, MX and SRV endpoints are left to the other providers",
			eps:     []externalEndpoint{xep("app.gslb.example.com", "TXT", "heritage=external-dns"), xep("app.gslb.example.com", "MX", "10 mx.example.com"), xep("_sip._tcp.gslb.example.com", "SRV", "0 0 5060 sip.example.com")},
			targets: map[string][]string{}},
		{name: "a wildcard name is left to the other providers",
			eps:     []externalEndpoint{xep("*.gslb.example.com", "A", "198.51.100.1"), xep("app.gslb.example.com", "A", "198.51.100.2")},
			targets: map[string][]string{"app.gslb.example.com.": {"198.51.100.2"}}},
		{name: "a target that is not what its record type says is a problem and is skipped",
			eps: []externalEndpoint{xep("app.gslb.example.com", "A", "2001:db8::1", "198.51.100.1"), xep("v6.gslb.example.com", "AAAA", "198.51.100.1"),
				xep("www.gslb.example.com", "CNAME", "198.51.100.1")},
			targets: map[string][]string{"app.gslb.example.com.": {"198.51.100.1"}},
			problems: []string{`not served: spec.endpoints[0] (app.gslb.example.com A): target "2001:db8::1" is not an IPv4 address`,
				`not served: spec.endpoints[1] (v6.gslb.example.com AAAA): target "198.51.100.1" is not an IPv6 address`,
				`not served: spec.endpoints[2] (www.gslb.example.com CNAME): target "198.51.100.1" is an address, not a host name`}},
		{name: "a providerSpecific meridian.io/weight sets the weight no annotation sets",
			eps:     []externalEndpoint{withSpecific(xep("app.gslb.example.com", "A", "198.51.100.1"), "meridian.io/weight", "70", "aws/weight", "5")},
			targets: map[string][]string{"app.gslb.example.com.": {"198.51.100.1"}},
			anno:    map[string]string{AnnoWeight: "70"}},
		{name: "the webhook/ prefix ExternalDNS gives provider properties is accepted",
			eps:  []externalEndpoint{withSpecific(xep("app.gslb.example.com", "A", "198.51.100.1"), "webhook/meridian.io/strategy", "failover")},
			anno: map[string]string{AnnoStrategy: "failover"}},
		{name: "the webhook provider's form webhook/meridian-weight is the weight, as Meridian's webhook reads it",
			eps:  []externalEndpoint{withSpecific(xep("app.gslb.example.com", "A", "198.51.100.1"), "webhook/meridian-weight", "70")},
			anno: map[string]string{AnnoWeight: "70"}},
		{name: "an annotation on the DNSEndpoint wins over providerSpecific",
			own:  map[string]string{AnnoWeight: "30"},
			eps:  []externalEndpoint{withSpecific(xep("app.gslb.example.com", "A", "198.51.100.1"), "meridian.io/weight", "70")},
			anno: map[string]string{AnnoWeight: "30"}},
		{name: "endpoints that give one setting two values are an error on that setting",
			eps: []externalEndpoint{withSpecific(xep("a.gslb.example.com", "A", "198.51.100.1"), "meridian.io/weight", "70"),
				withSpecific(xep("b.gslb.example.com", "A", "198.51.100.2"), "meridian.io/weight", "20")},
			errOn: AnnoWeight},
		{name: "the smallest recordTTL is the ttl when nothing else sets it",
			eps:  []externalEndpoint{ttl(xep("a.gslb.example.com", "A", "198.51.100.1"), 300), ttl(xep("b.gslb.example.com", "A", "198.51.100.2"), 60)},
			anno: map[string]string{AnnoTTL: "60"}},
		{name: "meridian.io/ttl wins over recordTTL",
			own:  map[string]string{AnnoTTL: "30"},
			eps:  []externalEndpoint{ttl(xep("a.gslb.example.com", "A", "198.51.100.1"), 300)},
			anno: map[string]string{AnnoTTL: "30"}},
		{name: "a meridian.io/hostname annotation is not read: the names are the endpoints'",
			own:  map[string]string{AnnoHostname: "other.gslb.example.com"},
			eps:  []externalEndpoint{xep("b.gslb.example.com", "A", "198.51.100.1"), xep("a.gslb.example.com", "A", "198.51.100.2")},
			anno: map[string]string{AnnoHostname: "a.gslb.example.com.,b.gslb.example.com."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ReadDNSEndpoint(tt.own, tt.eps)
			if tt.targets != nil {
				assert.Equal(t, tt.targets, r.Targets)
			}
			for k, v := range tt.anno {
				assert.Equal(t, v, r.Annotations[k], k)
			}
			assert.Equal(t, tt.problems, r.Problems)
			if tt.errOn == "" {
				assert.Nil(t, r.Err)
			} else {
				require.NotNil(t, r.Err)
				assert.Equal(t, tt.errOn, r.Err.Annotation)
			}
			if len(r.Targets) > 0 && r.Err == nil {
				_, errs := ParseAnnotations(r.Annotations)
				assert.Empty(t, errs, "what it reads parses as a Service's annotations")
			}
		})
	}
}

func TestReadExport(t *testing.T) {
	const zone = "mcs.gslb.example.com."
	lbSvc := &exportedService{typ: corev1.ServiceTypeLoadBalancer, targets: []string{"198.51.100.1", "lb.example.net"}}
	tests := []struct {
		name     string
		own      map[string]string
		svc      *exportedService
		targets  []string
		problems []string
		weight   string
		err      bool
	}{
		{name: "an export of a LoadBalancer Service serves its load-balancer addresses", svc: lbSvc, targets: lbSvc.targets},
		{name: "the export's annotations are its settings and its own hostname is not read",
			own: map[string]string{AnnoWeight: "70", AnnoHostname: "elsewhere.gslb.example.com"}, svc: lbSvc, targets: lbSvc.targets, weight: "70"},
		{name: "an export without its Service is a problem",
			problems: []string{"not served: no Service shop/web to export"}},
		{name: "an export of a ClusterIP Service is a problem",
			svc:      &exportedService{},
			problems: []string{"not served: the exported Service shop/web is type ClusterIP; Meridian answers the load-balancer addresses of a Service of type LoadBalancer"}},
		{name: "a LoadBalancer Service without an address yet gives no target and no problem",
			svc: &exportedService{typ: corev1.ServiceTypeLoadBalancer}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			anno, targets, problems, err := ReadExport("web", "shop", zone, tt.own, tt.svc)
			assert.Equal(t, "web.shop.mcs.gslb.example.com.", anno[AnnoHostname])
			assert.Equal(t, tt.targets, targets)
			assert.Equal(t, tt.problems, problems)
			assert.Nil(t, err)
			s, errs := ParseAnnotations(anno)
			require.Empty(t, errs)
			assert.Equal(t, []string{"web.shop.mcs.gslb.example.com."}, s.Hostnames)
			if tt.weight != "" {
				assert.Equal(t, tt.weight, anno[AnnoWeight])
			}
		})
	}
	t.Run("a name longer than DNS allows is an error on the name", func(t *testing.T) {
		_, _, _, err := ReadExport(strings.Repeat("a", 63), strings.Repeat("b", 63), strings.Repeat("c", 63)+"."+strings.Repeat("d", 63)+".", nil, lbSvc)
		require.NotNil(t, err)
		assert.Equal(t, AnnoHostname, err.Annotation)
	})
}

func TestServedCondition(t *testing.T) {
	now := t0.Add(time.Hour)
	before := metav1.NewTime(t0)
	tests := []struct {
		name     string
		s        Status
		prev     *metav1.Condition
		imported string
		status   metav1.ConditionStatus
		reason   string
		since    time.Time
		message  string
	}{
		{name: "a served export is True",
			s:      Status{Served: true, Hostnames: []string{"web.shop.mcs.gslb.example.com."}, Strategy: "weighted", Share: "70%", Health: "1 up"},
			status: metav1.ConditionTrue, reason: ReasonServedTrue, since: now, message: "served for web.shop.mcs.gslb.example.com. (weighted; share 70%; health 1 up)"},
		{name: "an export whose name another namespace owns is False because the name is taken",
			s:      Status{Hostnames: []string{"web.shop.mcs.gslb.example.com."}, Problems: []string{claims.ConflictPrefix + "taken"}},
			status: metav1.ConditionFalse, reason: ReasonClaimed, since: now},
		{name: "an export with a problem is False and not served",
			s:      Status{Hostnames: []string{"web.shop.mcs.gslb.example.com."}, Problems: []string{"not served: no Service shop/web to export"}},
			status: metav1.ConditionFalse, reason: ReasonNotServed, since: now, message: "not served for web.shop.mcs.gslb.example.com.: not served: no Service shop/web to export"},
		{name: "an export without an address yet is pending",
			s:      Status{Hostnames: []string{"web.shop.mcs.gslb.example.com."}},
			status: metav1.ConditionFalse, reason: ReasonPending, since: now},
		{name: "the transition time stays while the status stays",
			s: Status{Served: true}, prev: &metav1.Condition{Type: ConditionServed, Status: metav1.ConditionTrue, LastTransitionTime: before},
			status: metav1.ConditionTrue, reason: ReasonServedTrue, since: t0},
		{name: "the transition time moves when the status flips",
			s: Status{}, prev: &metav1.Condition{Type: ConditionServed, Status: metav1.ConditionTrue, LastTransitionTime: before},
			status: metav1.ConditionFalse, reason: ReasonPending, since: now},
		{name: "the cluster's ServiceImport is reported in the message",
			s: Status{Served: true}, imported: importText(&serviceImportShape{}),
			status: metav1.ConditionTrue, reason: ReasonServedTrue, since: now},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ServedCondition(tt.s, tt.prev, tt.imported, now)
			assert.Equal(t, ConditionServed, c.Type)
			assert.Equal(t, tt.status, c.Status)
			assert.Equal(t, tt.reason, c.Reason)
			assert.True(t, c.LastTransitionTime.Time.Equal(tt.since), "%v", c.LastTransitionTime)
			if tt.message != "" {
				assert.Equal(t, tt.message, c.Message)
			}
			if tt.imported != "" {
				assert.Contains(t, c.Message, "the cluster's ServiceImport is ClusterSetIP")
			}
		})
	}
}

// dnsEndpointObj is a DNSEndpoint object of namespace ns read as the
// source reads it.
func dnsEndpointObj(t *testing.T, c, ns, name string, age int, eps ...externalEndpoint) Object {
	t.Helper()
	r := ReadDNSEndpoint(nil, eps)
	s, errs := ParseAnnotations(r.Annotations)
	require.Empty(t, errs)
	return Object{Ref: ObjectRef{Cluster: c, Kind: KindDNSEndpoint, Namespace: ns, Name: name},
		Created: t0.Add(time.Duration(age) * time.Minute), Settings: s, Valid: true, NameTargets: r.Targets}
}

func TestBuildFromDNSEndpoints(t *testing.T) {
	t.Run("each name of a DNSEndpoint gets its own targets", func(t *testing.T) {
		o := dnsEndpointObj(t, "east", "shop", "dns", 1, xep("a.gslb.example.com", "A", "198.51.100.1"), xep("b.gslb.example.com", "A", "198.51.100.2"))
		r := Build([]Object{o}, base())
		require.Len(t, r.Services, 2)
		assert.Equal(t, []model.Endpoint{{Address: "198.51.100.1", Cluster: "east"}}, r.Services[0].Endpoints)
		assert.Equal(t, []model.Endpoint{{Address: "198.51.100.2", Cluster: "east"}}, r.Services[1].Endpoints)
	})
	t.Run("a DNSEndpoint serves only its names under a served zone, and its other names claim nothing", func(t *testing.T) {
		o := dnsEndpointObj(t, "east", "shop", "dns", 1, xep("a.gslb.example.com", "A", "198.51.100.1"), xep("app.other.example.org", "A", "198.51.100.2"))
		r := Build([]Object{o}, base())
		require.Len(t, r.Services, 1)
		assert.Equal(t, "a.gslb.example.com.", r.Services[0].Name)
		assert.Empty(t, r.Problems, "another provider's name is not reported")
		assert.Equal(t, []string{"a.gslb.example.com."}, r.Scoped[o.Ref])
		assert.NotContains(t, r.Owners, "app.other.example.org.", "nor claimed")
		st := Statuses([]Object{o}, r, func(string) (ServiceView, bool) { return ServiceView{}, false })
		assert.Equal(t, []string{"a.gslb.example.com."}, st[o.Ref].Hostnames)
	})
	t.Run("a DNSEndpoint with another provider's names only gets no status", func(t *testing.T) {
		o := dnsEndpointObj(t, "east", "shop", "dns", 1, xep("app.other.example.org", "A", "198.51.100.2"))
		r := Build([]Object{o}, base())
		assert.Empty(t, r.Services)
		assert.NotContains(t, Statuses([]Object{o}, r, func(string) (ServiceView, bool) { return ServiceView{}, false }), o.Ref)
	})
	t.Run("a DNSEndpoint in another namespace claiming a taken name gets nothing", func(t *testing.T) {
		owner := obj("east", "app", 1, map[string]string{AnnoHostname: "app.gslb.example.com"}, "198.51.100.1")
		squat := dnsEndpointObj(t, "west", "squat", "dns", 2, xep("app.gslb.example.com", "A", "203.0.113.66"))
		r := Build([]Object{squat, owner}, base())
		require.Len(t, r.Services, 1)
		assert.Equal(t, []model.Endpoint{{Address: "198.51.100.1", Cluster: "east"}}, r.Services[0].Endpoints)
		require.Len(t, r.Refused[squat.Ref], 1)
		assert.Equal(t, claims.KindTaken, r.Refused[squat.Ref][0].Kind)
	})
	t.Run("a DNSEndpoint of the same namespace adds its targets to the name", func(t *testing.T) {
		owner := obj("east", "app", 1, map[string]string{AnnoHostname: "app.gslb.example.com"}, "198.51.100.1")
		same := dnsEndpointObj(t, "west", "default", "dns", 2, xep("app.gslb.example.com", "A", "198.51.100.2"))
		r := Build([]Object{owner, same}, base())
		require.Len(t, r.Services, 1)
		assert.Len(t, r.Services[0].Endpoints, 2)
	})
}

func TestBuildFromServiceExports(t *testing.T) {
	export := func(c, ns string, age int, targets ...string) Object {
		anno, _, _, _ := ReadExport("web", ns, "gslb.example.com.", map[string]string{AnnoWeight: "40"}, nil)
		s, errs := ParseAnnotations(anno)
		require.Empty(t, errs)
		return Object{Ref: ObjectRef{Cluster: c, Kind: KindServiceExport, Namespace: ns, Name: "web"},
			Created: t0.Add(time.Duration(age) * time.Minute), Settings: s, Valid: true, Targets: targets, Backends: []string{"web"}}
	}
	t.Run("the exports of one Service in two clusters make one weighted service", func(t *testing.T) {
		r := Build([]Object{export("east", "shop", 1, "198.51.100.1"), export("west", "shop", 2, "198.51.100.2")}, base())
		require.Len(t, r.Services, 1)
		assert.Equal(t, "web.shop.gslb.example.com.", r.Services[0].Name)
		assert.Equal(t, []model.Endpoint{{Address: "198.51.100.1", Cluster: "east", Weight: intp(40)}, {Address: "198.51.100.2", Cluster: "west", Weight: intp(40)}}, r.Services[0].Endpoints)
	})
	t.Run("an export without an address says so", func(t *testing.T) {
		r := Build([]Object{export("east", "shop", 1)}, base())
		assert.Contains(t, r.Dropped["web.shop.gslb.example.com."], "the exported Service's status.loadBalancer.ingress is empty")
	})
	t.Run("a DNSEndpoint in another namespace squatting on an export's name gets nothing", func(t *testing.T) {
		squat := dnsEndpointObj(t, "west", "squat", "dns", 2, xep("web.shop.gslb.example.com", "A", "203.0.113.66"))
		r := Build([]Object{squat, export("east", "shop", 1, "198.51.100.1")}, base())
		require.Len(t, r.Services, 1)
		assert.Equal(t, []model.Endpoint{{Address: "198.51.100.1", Cluster: "east", Weight: intp(40)}}, r.Services[0].Endpoints)
		assert.Equal(t, []string{"shop"}, r.Owners["web.shop.gslb.example.com."], "the export's namespace claimed it first")
		require.Len(t, r.Refused[squat.Ref], 1)
	})
	t.Run("a DNSEndpoint in another namespace that claimed an export's name first, and is recorded as its owner, is refused once the export claims it", func(t *testing.T) {
		const web = "web.shop.gslb.example.com."
		squat := dnsEndpointObj(t, "west", "squat", "dns", -100, xep("web.shop.gslb.example.com", "A", "203.0.113.66"))
		first := claims.Ledger{web: {Namespace: "squat", Since: t0}}
		r := build([]Object{squat}, base(), NewFileNames(base().Services), nil, first, t0)
		require.Equal(t, []string{"squat"}, r.Owners[web], "before the export, the first claimant serves it")

		r = build([]Object{squat, export("east", "shop", 1, "198.51.100.1")}, base(), NewFileNames(base().Services), nil, first, t0)
		require.Len(t, r.Services, 1)
		assert.Equal(t, []model.Endpoint{{Address: "198.51.100.1", Cluster: "east", Weight: intp(40)}}, r.Services[0].Endpoints, "only the exporting namespace is served")
		assert.Equal(t, []string{"shop"}, r.Owners[web])
		require.Len(t, r.Refused[squat.Ref], 1)
		assert.Equal(t, claims.KindNotAllowed, r.Refused[squat.Ref][0].Kind)
		assert.Contains(t, r.Refused[squat.Ref][0].Msg, "belongs to namespace shop, whose ServiceExport names it")
	})
}

func TestTheMCSSourceFollowsTheExportedService(t *testing.T) {
	m := gwMember(t)
	m.mcs = newMCSSource("east", "gslb.example.com.", m.mg.log, m.kcfg, m)
	export := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": KindServiceExport,
		"metadata": map[string]any{"namespace": "shop", "name": "web", "uid": "u1", "annotations": map[string]any{AnnoWeight: "70", "team": "x"}},
	}}
	m.mcs.upsert(export)
	o := onlyObject(t, m)
	assert.Equal(t, []string{"web.shop.gslb.example.com."}, o.Settings.Hostnames)
	assert.Equal(t, []string{"not served: no Service shop/web to export"}, o.Problems)

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.1"}}
	m.mcs.serviceChanged(svc, false)
	o = onlyObject(t, m)
	assert.Equal(t, []string{"198.51.100.1"}, o.Targets, "the Service's arrival re-reads the export")
	assert.Empty(t, o.Problems)
	assert.Equal(t, intp(70), o.Settings.Weight)

	m.mcs.serviceChanged(svc, true)
	assert.Equal(t, []string{"not served: no Service shop/web to export"}, onlyObject(t, m).Problems, "a deleted Service is a problem again")

	m.mcs.remove(export)
	assert.Empty(t, m.objects())
	m.mcs.serviceChanged(svc, false)
	assert.Empty(t, m.objects(), "a Service change does not bring back a deleted export")
}

func TestTheDNSEndpointSourceWatchesOnlyServedRecords(t *testing.T) {
	m := gwMember(t)
	de := func(rtype string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": KindDNSEndpoint,
			"metadata": map[string]any{"namespace": "shop", "name": "dns", "uid": "u1"},
			"spec": map[string]any{"endpoints": []any{map[string]any{"dnsName": "app.gslb.example.com", "recordType": rtype,
				"targets": []any{"198.51.100.1"}, "setIdentifier": "east", "labels": map[string]any{"owner": "x"}}}},
		}}
	}
	m.dnsEndpoints.upsert(de("A"))
	o := onlyObject(t, m)
	assert.Equal(t, map[string][]string{"app.gslb.example.com.": {"198.51.100.1"}}, o.NameTargets)
	m.dnsEndpoints.upsert(de("TXT"))
	assert.Empty(t, m.objects(), "a DNSEndpoint that no longer has a served record is dropped")
	m.dnsEndpoints.upsert(de("A"))
	m.dnsEndpoints.remove(de("A"))
	assert.Empty(t, m.objects())
}

func TestASlimDNSEndpointOrExportIsReadLikeTheFullObject(t *testing.T) {
	full := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": KindDNSEndpoint,
		"metadata": map[string]any{"namespace": "shop", "name": "dns", "uid": "u1", "labels": map[string]any{"a": "b"},
			"annotations": map[string]any{AnnoWeight: "20", "team": "x"}, "managedFields": []any{map[string]any{"manager": "kubectl"}}},
		"spec": map[string]any{"endpoints": []any{map[string]any{"dnsName": "app.gslb.example.com", "recordType": "A", "recordTTL": int64(30),
			"targets": []any{"198.51.100.1"}, "setIdentifier": "east", "labels": map[string]any{"owner": "x"},
			"providerSpecific": []any{map[string]any{"name": "meridian.io/strategy", "value": "failover"}}}}},
		"status": map[string]any{"observedGeneration": int64(1)},
	}}
	read := func(u *unstructured.Unstructured) Object {
		m := gwMember(t)
		m.dnsEndpoints.upsert(u)
		return onlyObject(t, m)
	}
	s, err := slimDNSEndpoint(full.DeepCopy())
	require.NoError(t, err)
	slim := s.(*unstructured.Unstructured)
	assert.Equal(t, read(full), read(slim), "the slim DNSEndpoint is read the same")
	assert.Equal(t, map[string]any{"dnsName": "app.gslb.example.com", "recordType": "A", "recordTTL": int64(30), "targets": []any{"198.51.100.1"},
		"providerSpecific": []any{map[string]any{"name": "meridian.io/strategy", "value": "failover"}}},
		slim.Object["spec"].(map[string]any)["endpoints"].([]any)[0], "no labels or setIdentifier")
	assert.Empty(t, slim.GetLabels())
	assert.Empty(t, slim.GetManagedFields())
	assert.Equal(t, map[string]string{AnnoWeight: "20"}, slim.GetAnnotations())
	assert.NotContains(t, slim.Object, "status")
	again, _ := slimDNSEndpoint(slim.DeepCopy())
	assert.Equal(t, slim, again, "the transform is idempotent")

	export := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": KindServiceExport,
		"metadata": map[string]any{"namespace": "shop", "name": "web", "labels": map[string]any{"a": "b"}},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Valid", "status": "True", "reason": "Valid", "message": "", "lastTransitionTime": "2026-11-01T00:00:00Z"},
			map[string]any{"type": ConditionServed, "status": "True", "reason": ReasonServedTrue, "message": "m", "lastTransitionTime": "2026-11-01T00:00:00Z"}}},
	}}
	se, _ := slimMCSObject(export.DeepCopy())
	prev := servedConditionOf(se.(*unstructured.Unstructured))
	require.NotNil(t, prev, "the export keeps Meridian's condition")
	assert.Equal(t, metav1.ConditionTrue, prev.Status)
	conds, _, _ := unstructured.NestedSlice(se.(*unstructured.Unstructured).Object, "status", "conditions")
	assert.Len(t, conds, 1, "and no other condition")

	imp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": KindServiceImport,
		"metadata": map[string]any{"namespace": "shop", "name": "web"},
		"spec":     map[string]any{"type": "ClusterSetIP", "ips": []any{"10.96.0.10"}, "ports": []any{map[string]any{"port": int64(80)}}},
	}}
	si, _ := slimMCSObject(imp.DeepCopy())
	assert.Equal(t, map[string]any{"type": "ClusterSetIP", "ips": []any{"10.96.0.10"}}, si.(*unstructured.Unstructured).Object["spec"])
	other, _ := slimMCSObject("not an object")
	assert.Equal(t, "not an object", other)
}
