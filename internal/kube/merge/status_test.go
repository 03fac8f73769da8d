package merge

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/failover"
	"github.com/meridian-gslb/meridian/internal/kube"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/serving"
	"github.com/meridian-gslb/meridian/internal/vote"
)

// everyServiceStatuses is Kube.Statuses as it was before it looked only
// at the services objects are behind: a view of every served service, the
// timeline of every endpoint and the order of every failover service.
func everyServiceStatuses(k *Kube, st *serving.State) map[kube.ObjectRef]kube.Status {
	objs, res := k.Last()
	timeline := map[vote.Subject]failover.Timeline{}
	clusters := map[string]failover.ClusterState{}
	for _, e := range st.Decision.Endpoints {
		timeline[e.Subject] = e.Timeline
	}
	for _, c := range st.Decision.Clusters {
		clusters[c.Name] = c
	}
	order := map[string][]string{}
	for _, s := range st.Snapshot.Desired().Services {
		if s.Failover != nil {
			order[s.Name] = s.Failover.Order
		}
	}
	svcs := map[string]kube.ServiceView{}
	for _, s := range st.Snapshot.Services() {
		svcs[s.Name] = serviceView(s, order[s.Name], timeline, clusters)
	}
	return kube.Statuses(objs, res, func(name string) (kube.ServiceView, bool) { v, ok := svcs[name]; return v, ok })
}

func TestKubeStatusesLookOnlyAtTheObjectsServicesAndSayWhatAViewOfEveryServiceSays(t *testing.T) {
	l := load(t, mergeConfig)
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	weight := 40
	obj := func(cluster, ns, name, host string, s kube.Settings, targets ...string) kube.Object {
		s.Hostnames = []string{host}
		return kube.Object{Ref: kube.ObjectRef{Cluster: cluster, Kind: kube.KindService, Namespace: ns, Name: name},
			Created: created, Settings: s, Valid: true, Targets: targets}
	}
	src := &objectSource{k: Kube{Logger: discard()}, objs: []kube.Object{
		obj("east", "shop", "web", "web.gslb.test.", kube.Settings{Weight: &weight}, "192.0.2.101"),
		obj("west", "shop", "web", "web.gslb.test.", kube.Settings{}, "192.0.2.102"),
		obj("east", "shop", "api", "api.gslb.test.", kube.Settings{Strategy: model.StrategyFailover, FailoverOrder: []string{"west", "east"}}, "192.0.2.111"),
		obj("west", "shop", "api", "api.gslb.test.", kube.Settings{Drain: true}, "192.0.2.112"),
		obj("east", "shop", "app", "app.gslb.test.", kube.Settings{}, "192.0.2.131"),  // defined in the file: dropped
		obj("west", "other", "web", "web.gslb.test.", kube.Settings{}, "192.0.2.141"), // another namespace: refused
		obj("eu", "shop", "nolb", "nolb.gslb.test.", kube.Settings{}),                 // no address yet: dropped
	}}
	p, err := serving.New(l, serving.Options{Logger: discard(), Kube: src})
	require.NoError(t, err)
	s := p.State()
	d := failover.Decide(failover.Input{Desired: &s.Effective.Desired, Now: created}, failover.ParamsFrom(&s.Effective.Desired))
	for i := range d.Endpoints {
		e := &d.Endpoints[i]
		e.Since, e.Reason = created.Add(time.Duration(i)*time.Minute), "reason "+e.Subject.Target
		if e.Subject == vote.EndpointSubject("api.gslb.test.", "192.0.2.111") || e.Subject == vote.EndpointSubject("fo.gslb.test.", "192.0.2.22") {
			e.State = failover.Down
		}
	}
	d.StatesChanged = true
	require.NoError(t, p.SetDecision(d))

	got, problems := src.k.Statuses(p.State())
	want := everyServiceStatuses(&src.k, p.State())
	assert.Equal(t, want, got)
	_, res := src.k.Last()
	assert.Equal(t, res.Problems, problems)
	api := got[kube.ObjectRef{Cluster: "east", Kind: kube.KindService, Namespace: "shop", Name: "api"}]
	assert.True(t, api.Served, "%+v", api)
	assert.Equal(t, "100%", api.Share, "west first in the order, but drained: east answers")
	drained := got[kube.ObjectRef{Cluster: "west", Kind: kube.KindService, Namespace: "shop", Name: "api"}]
	assert.Equal(t, "reason 192.0.2.112", drained.Reason, "the decided timeline reaches the status")
}

func TestANameTheNextFileDefinesIsNoLongerTakenFromKubernetes(t *testing.T) {
	objs := []kube.Object{{Ref: kube.ObjectRef{Cluster: "east", Kind: kube.KindService, Namespace: "shop", Name: "web"},
		Settings: kube.Settings{Hostnames: []string{"web.gslb.test."}}, Valid: true, Targets: []string{"192.0.2.101"}}}
	k := &Kube{Logger: discard()}
	first := load(t, mergeConfig)
	f, err := k.merge(first, nil, objs, func(kube.Result) {})
	require.NoError(t, err)
	require.Len(t, f.Services, 5, "the precondition: web comes from Kubernetes")

	next := load(t, mergeConfig+`
  - name: web.gslb.test
    endpoints:
      - {address: 192.0.2.9, cluster: east}
`)
	f, err = k.merge(next, nil, objs, func(kube.Result) {})
	require.NoError(t, err)
	assert.Len(t, f.Services, 5)
	_, res := k.Last()
	assert.Contains(t, res.Dropped["web.gslb.test."], "is defined in the config file", "the names of the file merged now, not of the one before")
}
