package model

import (
	"slices"
	"strings"
)

// WriterCandidates are the ring nodes that may be elected the ring's one
// writer (internal/leader): the node that pushes to the DNS providers,
// sends the notifications of decided changes and steps progressive
// shifts. It is providers.writers when set; else every prober ring.peers
// names in full, and self (a node need not list itself, and every node
// must count the same candidates); a prefix entry ("east-*") names no node
// of its own, so with prefix entries only it is self alone and every node
// writes (startup warns: set providers.writers).
func (d *Desired) WriterCandidates(self string) []string {
	if len(d.Providers.Writers) > 0 {
		return slices.Clone(d.Providers.Writers)
	}
	out := []string{self}
	for _, p := range d.Ring.Peers {
		if p.Role == PeerProber && p.Name != "" && !strings.HasSuffix(p.Name, "*") {
			out = append(out, p.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
