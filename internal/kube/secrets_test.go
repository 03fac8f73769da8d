package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func secret(name string, anno map[string]string, kubeconfig string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "meridian", Name: name, Annotations: anno,
		Labels: map[string]string{LabelMember: "true"}}}
	if kubeconfig != "" {
		s.Data = map[string][]byte{SecretKubeconfig: []byte(kubeconfig)}
	}
	return s
}

func TestMemberFromSecret(t *testing.T) {
	kc := kubeconfig(inlineUser, inlineCluster)
	m, err := MemberFromSecret(secret("member-west", map[string]string{AnnoCluster: "west", AnnoRegion: "us-west", AnnoCountry: "US", AnnoContinent: "NA"}, kc))
	require.NoError(t, err)
	assert.Equal(t, "west", m.Cluster.Name)
	assert.Equal(t, "us-west", m.Cluster.Region)
	assert.Equal(t, "US", m.Cluster.Country)
	assert.Equal(t, "secret meridian/member-west", m.Source.Origin)
	assert.Equal(t, []byte(kc), m.Source.Kubeconfig)

	m, err = MemberFromSecret(secret("east", nil, kc))
	require.NoError(t, err)
	assert.Equal(t, "east", m.Cluster.Name, "the Secret's name is the default cluster name")

	_, err = MemberFromSecret(secret("east", nil, ""))
	assert.ErrorContains(t, err, "data.kubeconfig is missing")
	_, err = MemberFromSecret(secret("east", map[string]string{AnnoContinent: "XX"}, kc))
	assert.ErrorContains(t, err, "not a continent code")
	_, err = MemberFromSecret(secret("east", map[string]string{AnnoCountry: "germany"}, kc))
	assert.ErrorContains(t, err, "ISO 3166-1")
	_, err = MemberFromSecret(secret("east", nil, "x"))
	assert.ErrorContains(t, err, "does not parse as a kubeconfig")
}
