package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLeaderElectionValidation(t *testing.T) {
	d := func(v time.Duration) Duration { return Duration(v) }
	tests := []struct {
		name    string
		le      LeaderElection
		secrets bool   // kubernetes.member_secrets is set
		path    string // the field with an error; "" means valid
		msg     string
	}{
		{"the defaults are valid", LeaderElection{}, false, "", ""},
		{"a lease in a named cluster with a kubernetes section is valid",
			LeaderElection{Cluster: "east", LeaseName: "gslb.writer", LeaseNamespace: "ops", LeaseDuration: d(4 * time.Second), RenewDeadline: d(3 * time.Second), RetryPeriod: d(500 * time.Millisecond)}, false, "", ""},
		{"a cluster that is not in the file is refused without member Secrets",
			LeaderElection{Cluster: "north"}, false, "kubernetes.leader_election.cluster", "is not a cluster with a kubernetes section"},
		{"a cluster from member Secrets may be named",
			LeaderElection{Cluster: "north"}, true, "", ""},
		{"a lease name must be an object name",
			LeaderElection{LeaseName: "Meridian_Writer"}, false, "kubernetes.leader_election.lease_name", "is not a Kubernetes object name"},
		{"a lease namespace must be a namespace name",
			LeaderElection{LeaseNamespace: "a.b"}, false, "kubernetes.leader_election.lease_namespace", "is not a namespace name"},
		{"the lease must outlast the renew deadline",
			LeaderElection{LeaseDuration: d(10 * time.Second)}, false, "kubernetes.leader_election.lease_duration", "must be longer than renew_deadline"},
		{"the renew deadline must exceed 1.2 retry periods",
			LeaderElection{RenewDeadline: d(2 * time.Second)}, false, "kubernetes.leader_election.renew_deadline", "1.2 × retry_period"},
		{"a retry period under 100ms is refused",
			LeaderElection{RetryPeriod: d(50 * time.Millisecond)}, false, "kubernetes.leader_election.retry_period", "at least 100ms"},
		{"a lease over five minutes is refused",
			LeaderElection{LeaseDuration: d(time.Hour)}, false, "kubernetes.leader_election.lease_duration", "at most 5m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := minimal()
			in.Clusters[0].Kubernetes = &KubeMember{InCluster: true}
			in.Kubernetes.LeaderElection = tt.le
			if tt.secrets {
				in.Kubernetes.MemberSecrets = &MemberSecrets{Namespace: "meridian"}
			}
			err := Validate(in)
			if tt.path == "" {
				require.NoError(t, err)
				return
			}
			var verr *ValidationError
			require.ErrorAs(t, err, &verr)
			require.Len(t, verr.Fields, 1, "one error: %v", err)
			assert.Equal(t, tt.path, verr.Fields[0].Path)
			assert.Contains(t, verr.Fields[0].Msg, tt.msg)
		})
	}
}

func TestLeaderElectionDefaults(t *testing.T) {
	no := false
	tests := []struct {
		name    string
		k       Kubernetes
		enabled bool
	}{
		{"it runs by default because status write-back is on by default", Kubernetes{}, true},
		{"it is off when nothing writes", Kubernetes{StatusWriteback: &no}, false},
		{"propagation alone turns it on", Kubernetes{StatusWriteback: &no, Propagation: &Propagation{Hub: "east"}}, true},
		{"enabled: false turns it off even with writers", Kubernetes{LeaderElection: LeaderElection{Enabled: &no}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.enabled, tt.k.LeaderElectionEnabled())
		})
	}
	out, err := Normalize(minimal())
	require.NoError(t, err)
	le := out.Kubernetes.LeaderElection
	assert.Equal(t, LeaderElection{LeaseName: "meridian-writer", LeaseDuration: Duration(15 * time.Second), RenewDeadline: Duration(10 * time.Second), RetryPeriod: Duration(2 * time.Second)}, le)
}

func TestLeaseCluster(t *testing.T) {
	in := minimal()
	in.Clusters = []Cluster{{Name: "plain"}, {Name: "west", Kubernetes: &KubeMember{}}, {Name: "east", Kubernetes: &KubeMember{}}}
	assert.Equal(t, "west", in.LeaseCluster(), "the first cluster of the file with a kubernetes section")
	in.Kubernetes.Propagation = &Propagation{Hub: "east"}
	assert.Equal(t, "east", in.LeaseCluster(), "the propagation hub before it")
	in.Kubernetes.LeaderElection.Cluster = "plain"
	assert.Equal(t, "plain", in.LeaseCluster(), "the configured cluster first")
	assert.Empty(t, (&Desired{}).LeaseCluster(), "none: the member_secrets hub")
}
