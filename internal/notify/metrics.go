package notify

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics of the notification senders.
type Metrics struct {
	sent    *prometheus.CounterVec
	retries *prometheus.CounterVec
	dropped *prometheus.CounterVec
	queued  *prometheus.GaugeVec
	latency *prometheus.HistogramVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	m := &Metrics{
		sent: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_notify_sent_total",
			Help: "Notifications by receiver and result: ok (accepted with 2xx), failed (dropped after max_attempts or a 4xx answer), panic (recovered).",
		}, []string{"receiver", "result"}),
		retries: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_notify_retries_total",
			Help: "Notification attempts that failed and were retried after a backoff, by receiver.",
		}, []string{"receiver"}),
		dropped: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_notify_dropped_total",
			Help: "Notifications dropped unsent because the receiver's queue was full (the oldest goes).",
		}, []string{"receiver"}),
		queued: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "meridian_notify_queue_length",
			Help: "Notifications waiting in the receiver's queue.",
		}, []string{"receiver"}),
		latency: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "meridian_notify_delivery_seconds",
			Help:    "Event time (the decision) to the receiver's 2xx answer, retries included.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 15, 60, 300},
		}, []string{"receiver"}),
	}
	return m
}
