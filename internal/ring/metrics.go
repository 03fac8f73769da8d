package ring

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics of the ring. Every metric is listed in docs/metrics.md.
type Metrics struct {
	Members    *prometheus.GaugeVec   // meridian_ring_members{role}
	Messages   *prometheus.CounterVec // meridian_ring_messages_total{type,direction}
	Votes      prometheus.Counter     // meridian_ring_votes_received_total
	Encrypted  prometheus.Gauge       // meridian_ring_encrypted
	Rejoins    prometheus.Counter     // meridian_ring_rejoins_total
	Syncs      prometheus.Counter     // meridian_ring_state_syncs_total
	Rejected   *prometheus.CounterVec // meridian_ring_messages_rejected_total{type,reason}
	RTTEntries *prometheus.CounterVec // meridian_ring_rtt_entries_total{result}
	// CredentialExpiry is meridian_ring_credential_expiry_timestamp_seconds.
	CredentialExpiry prometheus.Gauge
	// TrustReloads is meridian_ring_trust_reloads_total{result}.
	TrustReloads *prometheus.CounterVec
	// Pulls is meridian_ring_pulls_total{result}; SyncsAborted is
	// meridian_ring_state_syncs_aborted_total (budget.go).
	Pulls        *prometheus.CounterVec
	SyncsAborted prometheus.Counter
	registerer   prometheus.Registerer
}

// NewMetrics creates the ring metrics and registers them on reg (nil: not
// registered); Start registers the gossip byte counters there too.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	m := &Metrics{
		Members: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "meridian_ring_members",
			Help: "Live ring members by role (prober, agent; untrusted: not in ring.peers or not signed by its listed key).",
		}, []string{"role"}),
		Messages: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_ring_messages_total",
			Help: "Ring user messages by type (vote, summary, confirm, heartbeat, keyop, state) and direction (sent, received).",
		}, []string{"type", "direction"}),
		Votes: f.NewCounter(prometheus.CounterOpts{
			Name: "meridian_ring_votes_received_total",
			Help: "Votes received from other probers that were new to this node.",
		}),
		Encrypted: f.NewGauge(prometheus.GaugeOpts{
			Name: "meridian_ring_encrypted",
			Help: "1 when gossip is encrypted with a keyring, else 0.",
		}),
		Rejoins: f.NewCounter(prometheus.CounterOpts{
			Name: "meridian_ring_rejoins_total",
			Help: "Attempts to re-join configured seeds that were not live members.",
		}),
		Syncs: f.NewCounter(prometheus.CounterOpts{
			Name: "meridian_ring_state_syncs_total",
			Help: "Push/pull state exchanges started because a burst of votes did not fit the broadcast queue.",
		}),
		Rejected: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_ring_messages_rejected_total",
			Help: "Ring messages refused, by type and reason (unknown-origin, bad-signature, role, impersonation, region, cluster, future, stale, unknown-subject, malformed, oversized, invalid, panic, ...).",
		}, []string{"type", "reason"}),
		RTTEntries: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_ring_rtt_entries_total",
			Help: "Endpoint entries of RTT summaries: sent by this prober, received (new to this node), unknown-subject (skipped: an endpoint the config does not have).",
		}, []string{"result"}),
		CredentialExpiry: f.NewGauge(prometheus.GaugeOpts{
			Name: "meridian_ring_credential_expiry_timestamp_seconds",
			Help: "When this node's ring credential (ring.credential) expires, in Unix seconds; 0 without one. Renew it before then: peers refuse an expired credential.",
		}),
		TrustReloads: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_ring_trust_reloads_total",
			Help: "Changes of ring.peers, ring.ca, ring.revoked or the credential files applied (ok) or refused (error: the previous trust stays in use), by result.",
		}, []string{"result"}),
		Pulls: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_ring_pulls_total",
			Help: "Direct requests for a node's own votes and summary, made when messages in its name were refused for the budget of failed signature checks: requested (by this node), answered (by this node), applied (a reply with our challenge taken).",
		}, []string{"result"}),
		SyncsAborted: f.NewCounter(prometheus.CounterOpts{
			Name: "meridian_ring_state_syncs_aborted_total",
			Help: "Push/pull states received whose merge was abandoned after 16 bad signatures.",
		}),
		registerer: reg,
	}
	return m
}

var msgNames = map[byte]string{msgVote: "vote", msgSummary: "summary", msgConfirm: "confirm", msgHeartbeat: "heartbeat", msgKeyOp: "keyop", msgLeader: "leader", msgShared: "shared", msgRTT: "rtt", msgCred: "credential", msgPull: "pull", msgPullReply: "pull-reply"}
