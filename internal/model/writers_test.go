package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWriterCandidates(t *testing.T) {
	prober := func(name string) RingPeer { return RingPeer{Name: name, Role: PeerProber} }
	for _, tc := range []struct {
		name    string
		writers []string
		peers   []RingPeer
		want    []string
	}{
		{name: "providers.writers decides when it is set", writers: []string{"b", "a"}, peers: []RingPeer{prober("c")}, want: []string{"b", "a"}},
		{name: "a ring of one is its own candidate", want: []string{"self"}},
		{name: "the probers listed in ring.peers are candidates with this node", peers: []RingPeer{prober("p2"), prober("p1")}, want: []string{"p1", "p2", "self"}},
		{name: "a node listing itself is counted once", peers: []RingPeer{prober("self"), prober("p1")}, want: []string{"p1", "self"}},
		{name: "agents are never candidates", peers: []RingPeer{{Name: "agent-east", Role: PeerAgent, Cluster: "east"}, prober("p1")}, want: []string{"p1", "self"}},
		{name: "a prefix entry names no node", peers: []RingPeer{prober("east-*")}, want: []string{"self"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Desired{Providers: Providers{Writers: tc.writers}, Ring: Ring{Peers: tc.peers}}
			assert.Equal(t, tc.want, d.WriterCandidates("self"))
		})
	}
}
