//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/ring"
)

// testRing holds the identities of a test ring's nodes, as an operator
// would create them with `meridian ring identity`.
type testRing struct {
	files map[string]string // node name -> identity file
	peers []string          // ring.peers entries, YAML flow style
}

// newTestRing creates an identity file in dir for each node and the
// ring.peers list naming them all. A node is "NAME@REGION" (a prober) or
// "NAME>CLUSTER" (an agent).
func newTestRing(t testing.TB, dir string, nodes ...string) *testRing {
	t.Helper()
	tr := &testRing{files: map[string]string{}}
	for _, n := range nodes {
		name, region, prober := strings.Cut(n, "@")
		cluster := ""
		if !prober {
			name, cluster, _ = strings.Cut(n, ">")
		}
		file := filepath.Join(dir, "identity-"+name+".pem")
		id, _, err := ring.LoadOrCreateIdentity(file)
		require.NoError(t, err)
		tr.files[name] = file
		if prober {
			// Listed serve nodes take operators' requests: they carry the admin capability.
			tr.peers = append(tr.peers, fmt.Sprintf("{name: %s, role: prober, region: %s, admin: true, public_key: %q}", name, region, model.FormatPeerKey(id.Public())))
		} else {
			tr.peers = append(tr.peers, fmt.Sprintf("{name: %s, role: agent, cluster: %s, public_key: %q}", name, cluster, model.FormatPeerKey(id.Public())))
		}
	}
	return tr
}

// Peers is the ring.peers value, in YAML flow style.
func (tr *testRing) Peers() string { return "[" + strings.Join(tr.peers, ", ") + "]" }

// Ring is the identity_file and peers of one node, to put inside a ring: {...} flow mapping.
func (tr *testRing) Ring(name string) string {
	return fmt.Sprintf("identity_file: %q, peers: %s", tr.files[name], tr.Peers())
}
