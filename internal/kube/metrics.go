package kube

import "github.com/prometheus/client_golang/prometheus"

// metrics of the Kubernetes sources; every one is listed in README.md.
type metrics struct {
	transitions      *prometheus.CounterVec
	annotationErrors *prometheus.CounterVec
	statusWrites     *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, mg *Manager) *metrics {
	m := &metrics{
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
			Help: "Patches of the meridian.io/status annotation, by cluster and result (success, failure).",
		}, []string{"cluster", "result"}),
	}
	if reg == nil {
		return m
	}
	members := prometheus.NewDesc("meridian_kube_member_ready", "1 when the member cluster is Ready (reachable, TLS verified, credentials accepted), else 0.", []string{"cluster"}, nil)
	objects := prometheus.NewDesc("meridian_kube_objects", "Annotated Services and Ingresses watched, by cluster.", []string{"cluster"}, nil)
	invalid := prometheus.NewDesc("meridian_kube_invalid_objects", "Watched objects whose current annotations are rejected (they serve their last valid settings), by cluster.", []string{"cluster"}, nil)
	reg.MustRegister(m.transitions, m.annotationErrors, m.statusWrites, collector{
		descs: []*prometheus.Desc{members, objects, invalid},
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
			}
		},
	})
	return m
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
