package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/kube/claims"
	"github.com/meridian-gslb/meridian/internal/model"
)

// in moves o to namespace ns.
func in(ns string, o Object) Object {
	o.Ref.Namespace = ns
	return o
}

func withClaims(unclaimed string, cs ...model.Claim) *model.Desired {
	d := base()
	d.Kubernetes.Claims = cs
	d.Kubernetes.UnclaimedNames = unclaimed
	return d
}

func endpointsOf(r Result, name string) []string {
	for _, s := range r.Services {
		if s.Name == name {
			var out []string
			for _, e := range s.Endpoints {
				out = append(out, e.Cluster+"/"+e.Address+e.CNAME)
			}
			return out
		}
	}
	return nil
}

func TestHostnameOwnership(t *testing.T) {
	const app = "app.gslb.example.com."
	ownerEast := in("team-a", obj("east", "web", 1, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoWeight: "70"}, "198.51.100.1"))
	ownerWest := in("team-a", obj("west", "web", 2, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoWeight: "30"}, "198.51.100.2"))
	squatter := in("team-b", obj("west", "squat", 3, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoWeight: "1000", AnnoStrategy: "failover"}, "203.0.113.66"))
	apexSquatter := in("team-b", obj("east", "apex", 0, map[string]string{AnnoHostname: "gslb.example.com"}, "203.0.113.67"))
	nsSquatter := in("team-b", obj("east", "ns", 0, map[string]string{AnnoHostname: "ns1.gslb.example.com"}, "203.0.113.68"))

	tests := []struct {
		name      string
		desired   *model.Desired
		objs      []Object
		check     string   // name whose endpoints are checked
		endpoints []string // want; nil: not served
		refused   map[ObjectRef]string
		strategy  string
	}{
		{
			name:      "a squatter in another namespace is refused and none of its endpoints are merged",
			desired:   base(),
			objs:      []Object{ownerEast, ownerWest, squatter},
			check:     app,
			endpoints: []string{"east/198.51.100.1", "west/198.51.100.2"},
			refused:   map[ObjectRef]string{squatter.Ref: claims.KindTaken},
			strategy:  model.StrategyWeighted,
		},
		{
			name:    "a squatter cannot set the strategy of the owner's name",
			desired: base(),
			objs: []Object{ownerEast, in("team-b", obj("east", "old-setting", 2,
				map[string]string{AnnoHostname: "app.gslb.example.com", AnnoStrategy: "roundrobin"}, "203.0.113.9"))},
			check:     app,
			endpoints: []string{"east/198.51.100.1"},
			refused:   map[ObjectRef]string{{Cluster: "east", Kind: KindService, Namespace: "team-b", Name: "old-setting"}: claims.KindTaken},
			strategy:  model.StrategyWeighted,
		},
		{
			name:    "the oldest object wins a setting only among the owning namespace's objects",
			desired: withClaims("", model.Claim{Namespaces: []string{"team-b"}, Names: []string{app}}),
			objs: []Object{in("team-a", obj("east", "older", 1, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoStrategy: "failover"}, "198.51.100.1")),
				in("team-b", obj("west", "newer", 5, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoStrategy: "roundrobin"}, "203.0.113.5"))},
			check:     app,
			endpoints: []string{"west/203.0.113.5"},
			refused:   map[ObjectRef]string{{Cluster: "east", Kind: KindService, Namespace: "team-a", Name: "older"}: claims.KindNotAllowed},
			strategy:  model.StrategyRoundRobin,
		},
		{
			name:      "the zone apex is refused and not served without a claim",
			desired:   base(),
			objs:      []Object{apexSquatter},
			check:     "gslb.example.com.",
			endpoints: nil,
			refused:   map[ObjectRef]string{apexSquatter.Ref: claims.KindReserved},
		},
		{
			name:      "a nameserver name is refused and not served without a claim",
			desired:   base(),
			objs:      []Object{nsSquatter},
			check:     "ns1.gslb.example.com.",
			endpoints: nil,
			refused:   map[ObjectRef]string{nsSquatter.Ref: claims.KindReserved},
		},
		{
			name:      "a claim that lists the apex lets its namespace serve it",
			desired:   withClaims("", model.Claim{Namespaces: []string{"team-b"}, Names: []string{"gslb.example.com."}}),
			objs:      []Object{apexSquatter},
			check:     "gslb.example.com.",
			endpoints: []string{"east/203.0.113.67"},
			strategy:  model.StrategyWeighted,
		},
		{
			name:      "a claim with two namespaces merges both",
			desired:   withClaims("", model.Claim{Namespaces: []string{"team-a", "team-b"}, Names: []string{app}}),
			objs:      []Object{ownerEast, squatter},
			check:     app,
			endpoints: []string{"east/198.51.100.1", "west/203.0.113.66"},
			strategy:  model.StrategyFailover, // set by team-b's object, the only one that sets it
		},
		{
			name:      "with unclaimed_names refuse an unlisted name is served by nobody",
			desired:   withClaims(model.UnclaimedRefuse, model.Claim{Namespaces: []string{"team-c"}, Names: []string{"other.gslb.example.com."}}),
			objs:      []Object{ownerEast},
			check:     app,
			endpoints: nil,
			refused:   map[ObjectRef]string{ownerEast.Ref: claims.KindUnclaimed},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Build(tt.objs, tt.desired)
			assert.Equal(t, tt.endpoints, endpointsOf(r, tt.check), "endpoints served")
			for _, o := range tt.objs {
				kind, refused := tt.refused[o.Ref]
				if !refused {
					assert.Empty(t, r.Refused[o.Ref], "%s is not refused", o.Ref)
					continue
				}
				require.Len(t, r.Refused[o.Ref], 1, "%s is refused", o.Ref)
				assert.Equal(t, kind, r.Refused[o.Ref][0].Kind)
				assert.Contains(t, r.Problems[o.Ref], r.Refused[o.Ref][0].Msg, "the refusal is one of its problems")
				assert.NotContains(t, r.Sources[tt.check], o.Ref, "a refused object is not a source")
			}
			if tt.strategy != "" {
				require.NotNil(t, endpointsOf(r, tt.check))
				for _, s := range r.Services {
					if s.Name == tt.check {
						assert.Equal(t, tt.strategy, s.Strategy)
					}
				}
			}
		})
	}
}

func TestARefusalNamesTheOwnerNamespaceOnly(t *testing.T) {
	owner := in("team-a", obj("east", "web", 1, map[string]string{AnnoHostname: "app.gslb.example.com"}, "198.51.100.1"))
	squatter := in("team-b", obj("west", "squat", 3, map[string]string{AnnoHostname: "app.gslb.example.com"}, "203.0.113.66"))
	r := Build([]Object{squatter, owner}, base())
	require.Len(t, r.Problems[squatter.Ref], 1)
	msg := r.Problems[squatter.Ref][0]
	assert.Contains(t, msg, "app.gslb.example.com. belongs to namespace team-a")
	assert.NotContains(t, msg, "east", "the owner's cluster is not disclosed")
	assert.NotContains(t, msg, "web", "the owner's object is not disclosed")
	assert.Equal(t, []string{"team-a"}, r.Owners["app.gslb.example.com."])
	assert.Empty(t, r.Problems[owner.Ref], "the owner hears nothing")
}

func TestAnObjectKeepsTheNamesItOwnsWhenRefusedAnother(t *testing.T) {
	owner := in("team-a", obj("east", "web", 1, map[string]string{AnnoHostname: "app.gslb.example.com"}, "198.51.100.1"))
	both := in("team-b", obj("west", "both", 3, map[string]string{AnnoHostname: "app.gslb.example.com,b.gslb.example.com"}, "203.0.113.66"))
	r := Build([]Object{owner, both}, base())
	assert.Equal(t, []string{"west/203.0.113.66"}, endpointsOf(r, "b.gslb.example.com."))
	assert.Equal(t, []string{"east/198.51.100.1"}, endpointsOf(r, "app.gslb.example.com."))
	require.Len(t, r.Refused[both.Ref], 1)
	assert.Equal(t, "app.gslb.example.com.", r.Refused[both.Ref][0].Hostname)
}

func TestEveryNodeComputesTheSameOwnersWhateverTheOrderItSawTheObjectsIn(t *testing.T) {
	objs := []Object{
		in("team-b", obj("west", "x", 1, map[string]string{AnnoHostname: "app.gslb.example.com"}, "203.0.113.1")),
		in("team-a", obj("east", "y", 1, map[string]string{AnnoHostname: "app.gslb.example.com"}, "198.51.100.1")),
		in("team-c", obj("eu", "z", 0, map[string]string{AnnoHostname: "gslb.example.com"}, "198.51.100.9")),
	}
	want := Build(objs, base())
	assert.Equal(t, []string{"team-a"}, want.Owners["app.gslb.example.com."], "a tie in age goes to the namespace that sorts first")
	assert.Equal(t, want, Build([]Object{objs[2], objs[0], objs[1]}, base()))
	assert.Equal(t, want, Build([]Object{objs[1], objs[2], objs[0]}, base()))
}

func TestARefusedNameHasNoShareInTheStatus(t *testing.T) {
	owner := in("team-a", obj("east", "web", 1, map[string]string{AnnoHostname: "app.gslb.example.com"}, "198.51.100.1"))
	// Same cluster and address as the owner: without the refusal the
	// owner's endpoint would count as the squatter's own.
	squatter := in("team-b", obj("east", "squat", 3, map[string]string{AnnoHostname: "app.gslb.example.com"}, "198.51.100.1"))
	objs := []Object{owner, squatter}
	r := Build(objs, base())
	view := func(string) (ServiceView, bool) {
		return ServiceView{Strategy: model.StrategyWeighted, Endpoints: []EndpointView{ep("east", "198.51.100.1", 100, true)}}, true
	}
	st := Statuses(objs, r, view)
	assert.True(t, st[owner.Ref].Served)
	assert.Equal(t, "100%", st[owner.Ref].Share)
	assert.False(t, st[squatter.Ref].Served)
	assert.Empty(t, st[squatter.Ref].Share)
}
