package health

import (
	"github.com/meridian-gslb/meridian/internal/vote"
	"maps"
	"net/netip"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
)

// TestChangeTargetsIsSetTargetsOfTheChangedList: ChangeTargets leaves the
// prober with the targets SetTargets of the whole changed list gives, and
// keeps (and replaces) the same ones.
func TestChangeTargetsIsSetTargetsOfTheChangedList(t *testing.T) {
	tcp := &model.Check{Kind: model.CheckTCP, Port: 80}
	http := &model.Check{Kind: model.CheckHTTP, Port: 80}
	target := func(svc, addr string, c *model.Check) Target {
		return Target{Subject: vote.EndpointSubject(svc, addr), Addr: netip.MustParseAddr(addr), Check: c}
	}
	base := []Target{target("a.test", "192.0.2.1", tcp), target("a.test", "192.0.2.2", tcp), target("b.test", "192.0.2.3", http)}
	tests := []struct {
		name   string
		remove []vote.Subject
		set    []Target
	}{
		{"nothing changes", nil, nil},
		{"a target is removed", []vote.Subject{base[1].Subject}, nil},
		{"a subject without a target is removed", []vote.Subject{vote.EndpointSubject("c.test", "192.0.2.9")}, nil},
		{"a target is added", nil, []Target{target("c.test", "192.0.2.4", tcp)}},
		{"a target gets another check", nil, []Target{target("a.test", "192.0.2.1", http)}},
		{"a target is set again with an equal check", nil, []Target{target("b.test", "192.0.2.3", &model.Check{Kind: model.CheckHTTP, Port: 80})}},
		{"a target of kind none takes its subject out", nil, []Target{target("b.test", "192.0.2.3", &model.Check{Kind: model.CheckNone})}},
		{"one removed, one added, one changed", []vote.Subject{base[0].Subject}, []Target{target("d.test", "192.0.2.5", http), target("a.test", "192.0.2.2", http)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The whole list with the changes applied.
			want := map[vote.Subject]Target{}
			for _, x := range base {
				want[x.Subject] = x
			}
			for _, s := range tt.remove {
				delete(want, s)
			}
			for _, x := range tt.set {
				want[x.Subject] = x
			}
			whole := NewProber(ProberOptions{Logger: quiet})
			whole.SetTargets(base)
			wholeBefore := maps.Clone(whole.targets)
			whole.SetTargets(slices.Collect(maps.Values(want)))

			changed := NewProber(ProberOptions{Logger: quiet})
			changed.SetTargets(base)
			changedBefore := maps.Clone(changed.targets)
			changed.ChangeTargets(tt.remove, tt.set)

			require.ElementsMatch(t, slices.Collect(maps.Keys(whole.targets)), slices.Collect(maps.Keys(changed.targets)), "subjects")
			for s, w := range whole.targets {
				c := changed.targets[s]
				assert.True(t, sameTarget(w.Target, c.Target), "%v: %+v, want %+v", s, c.Target, w.Target)
				assert.Equal(t, w == wholeBefore[s], c == changedBefore[s], "%v kept", s)
			}
		})
	}
}
