package kube

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/kube/claims"
)

// metrics of the Kubernetes sources; every one is listed in docs/metrics.md.
type metrics struct {
	transitions      *prometheus.CounterVec
	annotationErrors *prometheus.CounterVec
	statusWrites     *prometheus.CounterVec
	events           *prometheus.CounterVec
	conflicts        *prometheus.GaugeVec
	ownerChanges     prometheus.Counter
	overLimit        *prometheus.GaugeVec
	firstClaims      prometheus.Gauge
	panics           *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, mg *Manager) *metrics {
	m := newCounters()
	for _, l := range Limits {
		m.overLimit.WithLabelValues(l)
	}
	for _, k := range claims.Kinds {
		m.conflicts.WithLabelValues(k)
	}
	if reg != nil {
		reg.MustRegister(m.transitions, m.annotationErrors, m.statusWrites, m.events, m.conflicts, m.ownerChanges, m.overLimit, m.firstClaims, m.panics, memberCollector(mg))
	}
	return m
}

// newCounters declares the counters and gauges the package updates.
func newCounters() *metrics {
	return &metrics{
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_kube_member_transitions_total",
			Help: "Member cluster state changes, by cluster and new state (Ready, NotReady).",
		}, []string{"cluster", "state"}),
		annotationErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_kube_annotation_errors_total",
			Help: "Rejected meridian.io/* annotation values seen, by cluster and annotation. The object keeps its last valid settings.",
		}, []string{"cluster", "annotation"}),
		statusWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_kube_status_writes_total",
			Help: "Patches of the meridian.io/status annotation, by cluster and result (success, failure; unchanged: not written, the text on the object is already current).",
		}, []string{"cluster", "result"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_kube_events_total",
			Help: "Events Meridian recorded on watched objects and member Secrets, by cluster and result (created, failed, suppressed: over the per-object budget).",
		}, []string{"cluster", "result"}),
		conflicts: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "meridian_kube_hostname_conflicts",
			Help: "Names objects claim but may not serve now (object × name), by kind: taken (another namespace claimed it first), not-allowed (kubernetes.claims gives it to other namespaces), reserved (a zone apex or nameserver name), unclaimed (unclaimed_names: refuse).",
		}, []string{"kind"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_kube_panics_total",
			Help: "Panics recovered while handling a watched object (the object is skipped, the process goes on), by cluster.",
		}, []string{"cluster"}),
		ownerChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "meridian_kube_hostname_owner_changes_total",
			Help: "Times the namespaces owning a Kubernetes-claimed name changed (e.g. the owner's oldest object was deleted, or an older object claimed the name).",
		}),
		overLimit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "meridian_kube_hostnames_over_limit",
			Help: "Names objects list but may not serve now because of a hostname limit, by limit: object (kubernetes.max_hostnames_per_object), namespace (kubernetes.max_hostnames_per_namespace).",
		}, []string{"limit"}),
		firstClaims: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "meridian_kube_first_claims",
			Help: "Names in this node's ledger of first claimants (names no kubernetes.claims entry covers, owned by the namespace that claimed them first; kept in the state directory).",
		}),
	}
}

// memberCollector reports each member's state, object counts and Gateway
// API kinds when scraped.
func memberCollector(mg *Manager) collector {
	members := prometheus.NewDesc("meridian_kube_member_ready", "1 when the member cluster is Ready (reachable, TLS verified, credentials accepted), else 0.", []string{"cluster"}, nil)
	objects := prometheus.NewDesc("meridian_kube_objects", "Annotated Services, Ingresses and Gateway API routes, DNSEndpoints and ServiceExports watched, by cluster.", []string{"cluster"}, nil)
	invalid := prometheus.NewDesc("meridian_kube_invalid_objects", "Watched objects whose current annotations are rejected (they serve their last valid settings), by cluster.", []string{"cluster"}, nil)
	gwKinds := prometheus.NewDesc("meridian_kube_gateway_api_kinds", "1 for each Gateway API kind (Gateway, HTTPRoute, GRPCRoute, TLSRoute) watched in the member cluster (its CRD is served), by cluster and kind.", []string{"cluster", "kind"}, nil)
	crdKinds := prometheus.NewDesc("meridian_kube_crd_kinds", "1 for each DNSEndpoint, ServiceExport and ServiceImport kind watched in the member cluster (its CRD is served; the MCS kinds only with kubernetes.mcs), by cluster and kind.", []string{"cluster", "kind"}, nil)
	return collector{
		descs: []*prometheus.Desc{members, objects, invalid, gwKinds, crdKinds},
		collect: func(ch chan<- prometheus.Metric) {
			for _, mem := range mg.list() {
				st := mem.status()
				ready := 0.0
				if st.State == StateReady {
					ready = 1
				}
				ch <- prometheus.MustNewConstMetric(members, prometheus.GaugeValue, ready, st.Cluster)
				ch <- prometheus.MustNewConstMetric(objects, prometheus.GaugeValue, float64(st.Objects), st.Cluster)
				ch <- prometheus.MustNewConstMetric(invalid, prometheus.GaugeValue, float64(mem.invalid()), st.Cluster)
				for _, k := range mem.routes.kinds() {
					ch <- prometheus.MustNewConstMetric(gwKinds, prometheus.GaugeValue, 1, st.Cluster, k)
				}
				for _, k := range mem.crdKinds() {
					ch <- prometheus.MustNewConstMetric(crdKinds, prometheus.GaugeValue, 1, st.Cluster, k)
				}
			}
		},
	}
}

type collector struct {
	descs   []*prometheus.Desc
	collect func(chan<- prometheus.Metric)
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}
func (c collector) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }
