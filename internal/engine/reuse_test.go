package engine

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
)

// diffHealth is fakeHealth that tells what changed (HealthDiff), by
// comparing its maps with the previous one's.
type diffHealth struct{ fakeHealth }

func (f diffHealth) ChangedSince(prev Health) (map[string]bool, bool) {
	p, ok := prev.(diffHealth)
	if !ok || !maps.Equal(f.clusters, p.clusters) {
		return nil, false
	}
	changed := map[string]bool{}
	for _, pair := range [2][2]map[string]State{{f.endpoints, p.endpoints}, {p.endpoints, f.endpoints}} {
		for k, st := range pair[0] {
			if pair[1][k] != st {
				svc, _, _ := strings.Cut(k, "|")
				changed[svc] = true
			}
		}
	}
	return changed, true
}

func TestSameServiceSeesEveryField(t *testing.T) {
	d := desired(t, fixture)
	base := d.Services[slices.IndexFunc(d.Services, func(s model.Service) bool { return s.Name == "geo.example.test." })]
	one := 1
	base.MinHealthy = &one
	base.HealthCheck = &model.Check{Kind: "tcp"}
	base.Failover = &model.FailoverPolicy{}
	base.Capacity = &model.Capacity{}
	base.Latency = &model.LatencyPolicy{}
	same := base
	require.True(t, sameService(&base, &same), "a copy of the value is the same service")

	typ := reflect.TypeFor[model.Service]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		t.Run("a different "+f.Name+" is another service", func(t *testing.T) {
			other := base
			v := reflect.ValueOf(&other).Elem().Field(i)
			switch v.Kind() {
			case reflect.String:
				v.SetString(v.String() + "x")
			case reflect.Int:
				v.SetInt(v.Int() + 1)
			case reflect.Bool:
				v.SetBool(!v.Bool())
			case reflect.Slice: // an equal copy: compiled again
				c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
				reflect.Copy(c, v)
				v.Set(c)
			case reflect.Pointer: // an equal copy: compiled again
				c := reflect.New(v.Type().Elem())
				c.Elem().Set(v.Elem())
				v.Set(c)
			default:
				t.Fatalf("field %s of kind %s: teach sameService and this test about it", f.Name, v.Kind())
			}
			assert.False(t, sameService(&base, &other), "sameService must compare %s", f.Name)
		})
	}
}

// mutation changes the inputs of a compile the way a pipeline does: a new
// value for what changed (cloned slices, new pointers), the rest shared.
type mutation struct {
	name  string
	apply func(r *rand.Rand, d *model.Desired, h *fakeHealth)
}

func pick[T any](r *rand.Rand, s []T) int { return r.IntN(len(s)) }

func withEndpoints(r *rand.Rand, d *model.Desired, f func(e *model.Endpoint)) {
	d.Services = slices.Clone(d.Services)
	s := &d.Services[pick(r, d.Services)]
	s.Endpoints = slices.Clone(s.Endpoints)
	f(&s.Endpoints[pick(r, s.Endpoints)])
}

var mutations = []mutation{
	{"an endpoint's weight", func(r *rand.Rand, d *model.Desired, _ *fakeHealth) {
		withEndpoints(r, d, func(e *model.Endpoint) { w := r.IntN(3) * 100; e.Weight = &w })
	}},
	{"an endpoint's drain", func(r *rand.Rand, d *model.Desired, _ *fakeHealth) {
		withEndpoints(r, d, func(e *model.Endpoint) { e.Drain = !e.Drain })
	}},
	{"an endpoint's configured state", func(r *rand.Rand, d *model.Desired, _ *fakeHealth) {
		withEndpoints(r, d, func(e *model.Endpoint) {
			e.State = map[string]string{model.StateUp: model.StateDown, model.StateDown: model.StateUp}[e.State]
		})
	}},
	{"a service's ttl and stickiness", func(r *rand.Rand, d *model.Desired, _ *fakeHealth) {
		d.Services = slices.Clone(d.Services)
		s := &d.Services[pick(r, d.Services)]
		s.TTL = 10 + r.IntN(100)
		s.Sticky = []string{model.StickyOff, model.StickySubnet}[r.IntN(2)]
	}},
	{"an endpoint's decided health", func(r *rand.Rand, d *model.Desired, h *fakeHealth) {
		s := d.Services[pick(r, d.Services)]
		e := s.Endpoints[pick(r, s.Endpoints)]
		h.endpoints = maps.Clone(h.endpoints)
		h.endpoints[s.Name+"|"+e.Address+e.CNAME] = []State{Unknown, Up, Down}[r.IntN(3)]
	}},
	{"a cluster's decided health", func(r *rand.Rand, d *model.Desired, h *fakeHealth) {
		h.clusters = maps.Clone(h.clusters)
		h.clusters[d.Clusters[pick(r, d.Clusters)].Name] = []State{Unknown, Up, Down}[r.IntN(3)]
	}},
	{"a cluster's drain", func(r *rand.Rand, d *model.Desired, _ *fakeHealth) {
		d.Clusters = slices.Clone(d.Clusters)
		c := &d.Clusters[pick(r, d.Clusters)]
		c.Drain = !c.Drain
	}},
	{"a zone's TTLs", func(r *rand.Rand, d *model.Desired, _ *fakeHealth) {
		d.Zones = slices.Clone(d.Zones)
		z := &d.Zones[pick(r, d.Zones)]
		z.NSTTL, z.SOA.TTL = 60+r.IntN(100), 600+r.IntN(100)
	}},
	{"a service removed and added back last", func(r *rand.Rand, d *model.Desired, _ *fakeHealth) {
		i := pick(r, d.Services)
		s := d.Services[i]
		d.Services = append(slices.Delete(slices.Clone(d.Services), i, i+1), s)
	}},
	{"a service renamed", func(r *rand.Rand, d *model.Desired, _ *fakeHealth) {
		d.Services = slices.Clone(d.Services)
		d.Services[pick(r, d.Services)].Name = newName(r, d)
	}},
	{"a service removed", func(r *rand.Rand, d *model.Desired, _ *fakeHealth) {
		if len(d.Services) > 4 {
			i := pick(r, d.Services)
			d.Services = slices.Delete(slices.Clone(d.Services), i, i+1)
		}
	}},
	{"a service added at a new name", func(r *rand.Rand, d *model.Desired, _ *fakeHealth) {
		s := d.Services[pick(r, d.Services)] // its slices are shared: another value all the same
		s.Name = newName(r, d)
		d.Services = slices.Insert(slices.Clone(d.Services), r.IntN(len(d.Services)+1), s)
	}},
	{"two services swap names", func(r *rand.Rand, d *model.Desired, _ *fakeHealth) {
		d.Services = slices.Clone(d.Services)
		i, j := pick(r, d.Services), pick(r, d.Services)
		d.Services[i].Name, d.Services[j].Name = d.Services[j].Name, d.Services[i].Name
	}},
	{"every service copied (nothing shared by identity)", func(_ *rand.Rand, d *model.Desired, _ *fakeHealth) {
		d.Services = slices.Clone(d.Services)
		for i := range d.Services {
			d.Services[i].Endpoints = slices.Clone(d.Services[i].Endpoints)
		}
	}},
}

// newName returns an owner name no service of d has: under the apex,
// below empty non-terminals, at an empty non-terminal, in the subzone.
func newName(r *rand.Rand, d *model.Desired) string {
	for {
		name := []string{"n%d.example.test.", "n%d.deep.a.b.example.test.", "n%d.c.example.test.",
			"x.n%d.c.example.test.", "n%d.x.y.sub.example.test.", "b.example.test.", "a.b.example.test.",
			"c.example.test.", "y.sub.example.test."}[r.IntN(9)]
		if strings.Contains(name, "%d") {
			name = fmt.Sprintf(name, r.IntN(50))
		}
		if !slices.ContainsFunc(d.Services, func(s model.Service) bool { return s.Name == name }) {
			return name
		}
	}
}

// nameTables is every owner name of every zone of s and what is there.
func nameTables(s *Snapshot) map[string]string {
	out := map[string]string{}
	for apex, z := range s.zones {
		for name, n := range z.names.all {
			svc := ""
			if n.svc != nil {
				svc = n.svc.name
			}
			out[apex+" "+name] = fmt.Sprintf("apex %t static %t ent %t below %d service %q a %d aaaa %d hinfo %v",
				n.apex, n.static, n.ent, n.below, svc, len(n.a), len(n.aaaa), n.hinfo)
		}
	}
	return out
}

// explainAll is every explanation the snapshot gives: each service name
// and a few other names, A, AAAA and CNAME, from clients in every geo
// network and from one that is not located.
func explainAll(s *Snapshot, names []string) map[string]Explanation {
	out := map[string]Explanation{}
	clients := []string{"198.51.100.7", "10.1.0.1", "10.3.0.1", "10.5.0.1", "10.6.0.1", "10.8.0.1"}
	for _, name := range append(slices.Clone(names), "nothere.example.test.", "b.example.test.", "ns1.example.test.") {
		for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeCNAME} {
			for _, c := range clients {
				a := netip.MustParseAddr(c)
				out[fmt.Sprintf("%s %s %s", name, dns.TypeToString[qt], c)] = s.Explain(name, qt, Client{Addr: a, Bits: 32}, false)
			}
		}
	}
	return out
}

// lookupAll is the deterministic part of every lookup: rcode, zone,
// service and, for the types no draw picks, the records.
func lookupAll(s *Snapshot, names []string) map[string]string {
	out := map[string]string{}
	for _, name := range append(slices.Clone(names), "nothere.example.test.", "b.example.test.", "a.b.example.test.", "ns1.example.test.", "example.test.") {
		for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeANY, dns.TypeSOA, dns.TypeNS, dns.TypeTXT} {
			var r Result
			s.Lookup(name, qt, Client{Addr: resolver, Bits: 32}, &r)
			v := fmt.Sprintf("%d %s %s %s %d", r.Rcode, r.Zone, r.Service, r.Strategy, len(r.Answer))
			if qt != dns.TypeA && qt != dns.TypeAAAA {
				v += fmt.Sprint(r.Answer, r.Ns, r.Extra)
			}
			out[name+" "+dns.TypeToString[qt]] = v
		}
	}
	return out
}

func TestIncrementalCompileAnswersAsACompileFromScratch(t *testing.T) {
	base := desired(t, fixture)
	loc := locator(t, base)

	for seed := range uint64(8) {
		t.Run(fmt.Sprintf("random changes, seed %d, answer and explain as from scratch", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 18))
			d := new(model.Desired) // a compiled desired state is never modified: each round makes a new one
			*d = *base
			h := fakeHealth{endpoints: map[string]State{}, clusters: map[string]State{}}
			withDiff := seed%2 == 0 // odd seeds: a Health that cannot tell what changed
			health := func() Health {
				if withDiff {
					return diffHealth{h}
				}
				return h
			}
			now := time.Now() // the SOA serial of a zone without one
			prev, err := Compile(d, Options{Health: health(), Locator: loc, Now: now})
			require.NoError(t, err)
			shared, followed := 0, 0
			for round := range 25 {
				next := *d
				var did []string
				for range 1 + r.IntN(3) {
					m := mutations[r.IntN(len(mutations))]
					m.apply(r, &next, &h)
					did = append(did, m.name)
				}
				d = &next
				incr, err := Compile(d, Options{Health: health(), Locator: loc, Previous: prev, Now: now})
				require.NoError(t, err)
				full, err := Compile(d, Options{Health: health(), Locator: loc, Now: now})
				require.NoError(t, err)
				names := make([]string, len(d.Services))
				for i, s := range d.Services {
					names[i] = s.Name
				}
				require.Equal(t, full.Services(), incr.Services(), "round %d after %v", round, did)
				want, got := explainAll(full, names), explainAll(incr, names)
				for k := range want {
					require.Equal(t, want[k], got[k], "round %d after %v: %s", round, did, k)
				}
				require.Equal(t, lookupAll(full, names), lookupAll(incr, names), "round %d after %v", round, did)
				require.Equal(t, nameTables(full), nameTables(incr), "round %d after %v: the same owner names", round, did)
				shared += incr.SharedServices()
				if incr.zones["example.test."].names.over != nil && slices.ContainsFunc(did, func(m string) bool {
					return strings.Contains(m, "name") || strings.Contains(m, "removed") || strings.Contains(m, "added")
				}) {
					followed++ // names changed over the previous table, not from scratch
				}
				prev = incr
			}
			assert.Positive(t, shared, "some services were shared: the test exercises reuse")
			assert.Positive(t, followed, "names were added or removed over a shared table: the test exercises it")
		})
	}
}

func TestIncrementalCompileSharesOnlyWhatDidNotChange(t *testing.T) {
	d := desired(t, fixture)
	h := diffHealth{fakeHealth{endpoints: map[string]State{}, clusters: map[string]State{}}}
	prev, err := Compile(d, Options{Health: h})
	require.NoError(t, err)
	n := len(d.Services)

	t.Run("the same inputs share every service", func(t *testing.T) {
		s, err := Compile(d, Options{Health: h, Previous: prev})
		require.NoError(t, err)
		assert.Equal(t, n, s.SharedServices())
	})
	t.Run("one endpoint's decided health recompiles its service only", func(t *testing.T) {
		h2 := diffHealth{fakeHealth{endpoints: map[string]State{"fo.example.test.|192.0.2.21": Down}, clusters: map[string]State{}}}
		s, err := Compile(d, Options{Health: h2, Previous: prev})
		require.NoError(t, err)
		assert.Equal(t, n-1, s.SharedServices())
		assert.Equal(t, []string{"192.0.2.22"}, addrs(lookup(s, "fo.example.test.", dns.TypeA, Client{Addr: resolver}).Answer))
		re := s.Recompiled()
		require.Len(t, re, 1)
		assert.Equal(t, "fo.example.test.", re[0].Name)
		st, ok := s.Service("fo.example.test.")
		require.True(t, ok)
		assert.Equal(t, re[0], st)
		assert.Equal(t, Down, st.Endpoints[0].State)
		_, ok = s.Service("nothere.example.test.")
		assert.False(t, ok)
	})
	t.Run("one service's new endpoints recompile it only", func(t *testing.T) {
		d2 := *d
		d2.Services = slices.Clone(d.Services)
		d2.Services[0].Endpoints = slices.Clone(d2.Services[0].Endpoints)
		s, err := Compile(&d2, Options{Health: h, Previous: prev})
		require.NoError(t, err)
		assert.Equal(t, n-1, s.SharedServices())
	})
	t.Run("a changed cluster recompiles everything", func(t *testing.T) {
		d2 := *d
		d2.Clusters = slices.Clone(d.Clusters)
		d2.Clusters[0].Drain = true
		s, err := Compile(&d2, Options{Health: h, Previous: prev})
		require.NoError(t, err)
		assert.Zero(t, s.SharedServices())
		assert.Equal(t, s.Services(), s.Recompiled())
	})
}

func TestIncrementalCompileRefusesANameClashAsACompileFromScratch(t *testing.T) {
	d := desired(t, fixture)
	prev, err := Compile(d, Options{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		change func(d *model.Desired)
	}{
		{"a service renamed to a nameserver's name", func(d *model.Desired) { d.Services[2].Name = "ns1.example.test." }},
		{"a service renamed to another service's name", func(d *model.Desired) { d.Services[2].Name = d.Services[5].Name }},
		{"a service added at another service's name", func(d *model.Desired) {
			s := d.Services[3]
			s.Name = d.Services[0].Name
			d.Services = append(d.Services, s)
		}},
		{"a service added twice at a new name", func(d *model.Desired) {
			s := d.Services[3]
			s.Name = "twice.example.test."
			d.Services = append(d.Services, s, s)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := *d
			next.Services = slices.Clone(d.Services)
			tc.change(&next)
			_, want := Compile(&next, Options{})
			require.Error(t, want, "the compile from scratch refuses it")
			_, got := Compile(&next, Options{Previous: prev})
			assert.Equal(t, want, got)
		})
	}
}

// A compiled service keeps its first family's pool in itself (service.pool);
// a family with no pool (when_all_down: nodata, every endpoint down) must
// not hand that slot to the next family.
func TestEachFamilyAnswersFromItsOwnPool(t *testing.T) {
	d := desired(t, `
zones:
  - apex: example.test
    nameservers: [{name: ns1.example.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
services:
  - name: nod.example.test
    when_all_down: nodata
    endpoints:
      - {address: 192.0.2.71, cluster: east, state: down}
      - {address: "2001:db8::71", cluster: east}
  - name: both.example.test
    endpoints:
      - {address: 192.0.2.72, cluster: east}
      - {address: "2001:db8::72", cluster: east}
`)
	s, err := Compile(d, Options{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		qtype uint16
		want  []string
	}{
		{"nod.example.test.", dns.TypeA, nil},
		{"nod.example.test.", dns.TypeAAAA, []string{"2001:db8::71"}},
		{"both.example.test.", dns.TypeA, []string{"192.0.2.72"}},
		{"both.example.test.", dns.TypeAAAA, []string{"2001:db8::72"}},
	} {
		t.Run(tc.name+" "+dns.TypeToString[tc.qtype], func(t *testing.T) {
			assert.Equal(t, tc.want, addrs(lookup(s, tc.name, tc.qtype, Client{}).Answer))
		})
	}
}
