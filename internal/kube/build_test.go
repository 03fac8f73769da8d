package kube

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func base() *model.Desired {
	return &model.Desired{
		Zones: []model.Zone{{Apex: "gslb.example.com", Nameservers: []model.Nameserver{{Name: "ns1.gslb.example.com", IPv4: []string{"192.0.2.53"}}}}},
		Clusters: []model.Cluster{{Name: "east", Region: "us-east"}, {Name: "west", Region: "us-west"},
			{Name: "eu", Region: "eu-west"}},
		Services: []model.Service{{Name: "file.gslb.example.com", Endpoints: []model.Endpoint{{Address: "192.0.2.1", Cluster: "east"}}}},
	}
}

// obj makes a valid object in cluster c created age minutes after t0.
func obj(c, name string, age int, anno map[string]string, targets ...string) Object {
	s, errs := ParseAnnotations(anno)
	if len(errs) > 0 {
		panic(errs)
	}
	return Object{Ref: ObjectRef{Cluster: c, Kind: KindService, Namespace: "default", Name: name},
		Created: t0.Add(time.Duration(age) * time.Minute), Settings: s, Valid: true, Targets: targets}
}

func TestBuildWeightedAcrossTwoClusters(t *testing.T) {
	r := Build([]Object{
		obj("west", "app", 2, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoWeight: "30"}, "198.51.100.2"),
		obj("east", "app", 1, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoWeight: "70"}, "198.51.100.1", "198.51.100.1"),
	}, base())
	require.Len(t, r.Services, 1)
	s := r.Services[0]
	assert.Equal(t, "app.gslb.example.com.", s.Name)
	assert.Equal(t, model.StrategyWeighted, s.Strategy)
	require.Len(t, s.Endpoints, 2, "an address listed twice in one cluster counts once")
	assert.Equal(t, model.Endpoint{Address: "198.51.100.1", Cluster: "east", Weight: intp(70)}, s.Endpoints[0])
	assert.Equal(t, model.Endpoint{Address: "198.51.100.2", Cluster: "west", Weight: intp(30)}, s.Endpoints[1])
	assert.Empty(t, r.Problems)
	assert.Equal(t, []ObjectRef{{"east", KindService, "default", "app"}, {"west", KindService, "default", "app"}}, r.Sources[s.Name], "sources are oldest first")
}

func TestBuildIsIndependentOfInputOrder(t *testing.T) {
	a := obj("east", "app", 1, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoStrategy: "failover"}, "198.51.100.1")
	b := obj("west", "app", 2, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoStrategy: "weighted"}, "198.51.100.2")
	assert.Equal(t, Build([]Object{a, b}, base()), Build([]Object{b, a}, base()))
}

func TestBuildLeavesItsObjectsInTheirOrder(t *testing.T) {
	objs := []Object{
		obj("west", "app", 2, map[string]string{AnnoHostname: "app.gslb.example.com"}, "198.51.100.2"),
		obj("east", "web", 3, map[string]string{AnnoHostname: "web.gslb.example.com"}, "198.51.100.3"),
		obj("east", "app", 1, map[string]string{AnnoHostname: "app.gslb.example.com"}, "198.51.100.1"),
	}
	want := slices.Clone(objs)
	r := Build(objs, base())
	require.Len(t, r.Services, 2)
	assert.Equal(t, want, objs, "the caller's objects are read, not sorted or changed")
}

func TestTheOldestObjectWinsAServiceLevelDisagreement(t *testing.T) {
	older := obj("west", "app", 1, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoStrategy: "failover", AnnoTTL: "60"}, "198.51.100.2")
	newer := obj("east", "app", 5, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoStrategy: "weighted", AnnoTTL: "60"}, "198.51.100.1")
	r := Build([]Object{newer, older}, base())
	require.Len(t, r.Services, 1)
	assert.Equal(t, model.StrategyFailover, r.Services[0].Strategy)
	assert.Equal(t, 60, r.Services[0].TTL)
	assert.Empty(t, r.Problems[older.Ref], "the winner is not in conflict")
	require.Len(t, r.Problems[newer.Ref], 1)
	assert.Contains(t, r.Problems[newer.Ref][0], `meridian.io/strategy "weighted" differs from "failover" set by west/service/default/app`)
	assert.Equal(t, older.Ref, r.Owner["app.gslb.example.com."])
	assert.Equal(t, []string{"east", "west"}, r.Services[0].Failover.Order, "without failover-order the order is by cluster name")
}

func TestAnUnsetSettingDoesNotConflict(t *testing.T) {
	r := Build([]Object{
		obj("east", "app", 1, map[string]string{AnnoHostname: "app.gslb.example.com"}, "198.51.100.1"),
		obj("west", "app", 2, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoStrategy: "roundrobin"}, "198.51.100.2"),
	}, base())
	require.Len(t, r.Services, 1)
	assert.Equal(t, model.StrategyRoundRobin, r.Services[0].Strategy, "the only object that sets it decides")
	assert.Empty(t, r.Problems)
}

func TestStickyIsAServiceLevelSetting(t *testing.T) {
	tests := []struct {
		name     string
		east     string // meridian.io/sticky of the older object ("" = unset)
		west     string // of the newer one
		want     string
		conflict bool
	}{
		{"sticky subnet on one object makes the service sticky", "", "subnet", model.StickySubnet, false},
		{"the older object's sticky wins a disagreement, which is reported on the newer", "off", "subnet", model.StickyOff, true},
		{"no sticky annotation leaves it unset (off after normalizing)", "", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ea := map[string]string{AnnoHostname: "app.gslb.example.com"}
			wa := map[string]string{AnnoHostname: "app.gslb.example.com"}
			if tc.east != "" {
				ea[AnnoSticky] = tc.east
			}
			if tc.west != "" {
				wa[AnnoSticky] = tc.west
			}
			older, newer := obj("east", "app", 1, ea, "198.51.100.1"), obj("west", "app", 2, wa, "198.51.100.2")
			r := Build([]Object{newer, older}, base())
			require.Len(t, r.Services, 1)
			assert.Equal(t, tc.want, r.Services[0].Sticky)
			if tc.conflict {
				require.Len(t, r.Problems[newer.Ref], 1)
				assert.Contains(t, r.Problems[newer.Ref][0], `meridian.io/sticky "subnet" differs from "off" set by east/service/default/app`)
			} else {
				assert.Empty(t, r.Problems)
			}
		})
	}
}

func TestFallbackAnswerIsAServiceLevelSetting(t *testing.T) {
	older := obj("east", "app", 1, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoFallbackAnswer: "off"}, "198.51.100.1")
	newer := obj("west", "app", 2, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoFallbackAnswer: "on"}, "198.51.100.2")
	r := Build([]Object{newer, older}, base())
	require.Len(t, r.Services, 1)
	assert.Equal(t, model.FallbackOff, r.Services[0].FallbackAnswer, "the older object's setting wins")
	require.Len(t, r.Problems[newer.Ref], 1)
	assert.Contains(t, r.Problems[newer.Ref][0], `meridian.io/fallback-answer "on" differs from "off" set by east/service/default/app`)
}

func TestANameTheConfigFileDefinesIsReportedAndNotTaken(t *testing.T) {
	o := obj("east", "app", 1, map[string]string{AnnoHostname: "file.gslb.example.com"}, "198.51.100.1")
	r := Build([]Object{o}, base())
	assert.Empty(t, r.Services)
	require.Len(t, r.Problems[o.Ref], 1)
	assert.Contains(t, r.Problems[o.Ref][0], "defined in the config file")
	assert.NotEmpty(t, r.Dropped["file.gslb.example.com."])
}

func TestAnInvalidServiceIsDroppedWithTheReasonAndOthersStay(t *testing.T) {
	ok := obj("east", "ok", 1, map[string]string{AnnoHostname: "ok.gslb.example.com"}, "198.51.100.1")
	outside := obj("east", "out", 1, map[string]string{AnnoHostname: "app.elsewhere.test"}, "198.51.100.1")
	mixA := obj("east", "mix", 1, map[string]string{AnnoHostname: "mix.gslb.example.com"}, "198.51.100.1")
	mixB := obj("west", "mix", 2, map[string]string{AnnoHostname: "mix.gslb.example.com"}, "lb-123.elb.amazonaws.com")
	unknown := obj("east", "fo", 1, map[string]string{AnnoHostname: "fo.gslb.example.com", AnnoStrategy: "failover", AnnoFailoverOrder: "east,mars"}, "198.51.100.1")
	r := Build([]Object{ok, outside, mixA, mixB, unknown}, base())
	require.Len(t, r.Services, 1)
	assert.Equal(t, "ok.gslb.example.com.", r.Services[0].Name)
	assert.Contains(t, r.Problems[outside.Ref][0], "outside every zone")
	assert.Contains(t, r.Problems[mixA.Ref][0], "mix.gslb.example.com. is not served")
	assert.Equal(t, r.Problems[mixA.Ref], r.Problems[mixB.Ref], "every object of the service hears why")
	assert.Contains(t, r.Problems[unknown.Ref][0], "mars")
}

func TestAHostNameTargetBecomesACNAMEEndpoint(t *testing.T) {
	r := Build([]Object{obj("east", "app", 1, map[string]string{AnnoHostname: "app.gslb.example.com"}, "LB-1.elb.amazonaws.com")}, base())
	require.Len(t, r.Services, 1)
	assert.Equal(t, "lb-1.elb.amazonaws.com.", r.Services[0].Endpoints[0].CNAME)
}

func TestAnObjectWithoutAnAddressServesNothingYet(t *testing.T) {
	r := Build([]Object{obj("east", "app", 1, map[string]string{AnnoHostname: "app.gslb.example.com"})}, base())
	assert.Empty(t, r.Services)
	assert.Contains(t, r.Dropped["app.gslb.example.com."], "no load-balancer address")
}

func TestAnObjectWithoutValidSettingsContributesNothing(t *testing.T) {
	o := obj("east", "app", 1, map[string]string{AnnoHostname: "app.gslb.example.com"}, "198.51.100.1")
	o.Valid = false
	assert.Empty(t, Build([]Object{o}, base()).Services)
}

func TestDrainAndGeoApplyToTheirClusterOnly(t *testing.T) {
	r := Build([]Object{
		obj("east", "app", 1, map[string]string{AnnoHostname: "geo.gslb.example.com", AnnoStrategy: "geo", AnnoGeo: "NA"}, "198.51.100.1"),
		obj("eu", "app", 2, map[string]string{AnnoHostname: "geo.gslb.example.com", AnnoGeo: "EU,DE", AnnoDrain: "true"}, "198.51.100.3"),
	}, base())
	require.Len(t, r.Services, 1)
	s := r.Services[0]
	assert.False(t, s.Endpoints[0].Drain)
	assert.True(t, s.Endpoints[1].Drain)
	require.NotNil(t, s.Geo)
	assert.Equal(t, []model.GeoRule{{Continents: []string{"NA"}, Clusters: []string{"east"}},
		{Countries: []string{"DE"}, Continents: []string{"EU"}, Clusters: []string{"eu"}}}, s.Geo.Rules)
}

func TestGeoOnANonGeoServiceIsReportedAsIgnored(t *testing.T) {
	o := obj("east", "app", 1, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoGeo: "EU"}, "198.51.100.1")
	r := Build([]Object{o}, base())
	require.Len(t, r.Services, 1)
	assert.Contains(t, r.Problems[o.Ref][0], "meridian.io/geo is ignored")
}

func TestBuiltServicesPassTheModelsNormalize(t *testing.T) {
	d := base()
	r := Build([]Object{
		obj("east", "a", 1, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoStrategy: "failover", AnnoHealthCheck: "tcp:443"}, "198.51.100.1"),
		obj("west", "a", 2, map[string]string{AnnoHostname: "app.gslb.example.com"}, "2001:db8::1"),
	}, d)
	d.Services = append(d.Services, r.Services...)
	_, err := model.Normalize(d)
	require.NoError(t, err)
}

func TestMinHealthyIsAServiceLevelSetting(t *testing.T) {
	tests := []struct {
		name       string
		east, west string // meridian.io/min-healthy of the older and the newer object ("" = unset)
		want       *int
		conflict   bool
		from       string // MinHealthyFrom: the annotation and the object that set it
	}{
		{"min-healthy on one object sets the service's min_healthy and names its namespace", "", "2", new(2), false,
			"annotation meridian.io/min-healthy on service default/app in cluster west"},
		{"the older object's value wins a disagreement, which is reported on the newer", "0", "2", new(0), true,
			"annotation meridian.io/min-healthy on service default/app in cluster east"},
		{"no annotation leaves it to decision.min_healthy", "", "", nil, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ea := map[string]string{AnnoHostname: "app.gslb.example.com"}
			wa := map[string]string{AnnoHostname: "app.gslb.example.com"}
			if tc.east != "" {
				ea[AnnoMinHealthy] = tc.east
			}
			if tc.west != "" {
				wa[AnnoMinHealthy] = tc.west
			}
			older, newer := obj("east", "app", 1, ea, "198.51.100.1"), obj("west", "app", 2, wa, "198.51.100.2")
			r := Build([]Object{newer, older}, base())
			require.Len(t, r.Services, 1)
			assert.Equal(t, tc.want, r.Services[0].MinHealthy)
			assert.Equal(t, tc.from, r.Services[0].MinHealthyFrom)
			if tc.conflict {
				require.Len(t, r.Problems[newer.Ref], 1)
				assert.Contains(t, r.Problems[newer.Ref][0], `meridian.io/min-healthy "2" differs from "0"`)
			} else {
				assert.Empty(t, r.Problems)
			}
		})
	}
}

func TestABuildAfterAnotherServesAsABuildFromScratch(t *testing.T) {
	objs := []Object{
		obj("east", "app", 1, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoWeight: "70"}, "198.51.100.1"),
		obj("west", "app", 2, map[string]string{AnnoHostname: "app.gslb.example.com"}, "198.51.100.2"),
		obj("east", "fo", 3, map[string]string{AnnoHostname: "fo.gslb.example.com", AnnoStrategy: "failover", AnnoFailoverOrder: "eu,east"}, "198.51.100.3"),
		obj("eu", "fo", 4, map[string]string{AnnoHostname: "fo.gslb.example.com"}, "198.51.100.4"),
	}
	d := base()
	var prev *Validated
	for _, step := range []struct {
		name   string
		change func()
		served int
	}{
		{"the first build validates every service", func() {}, 2},
		{"an object's weight changes", func() { objs[1].Settings.Weight = intp(0) }, 2},
		{"nothing changes", func() {}, 2},
		{"a cluster the failover order names leaves the config: its service is not served", func() {
			d.Clusters = []model.Cluster{{Name: "east", Region: "us-east"}, {Name: "west", Region: "us-west"}}
		}, 1},
		{"the cluster comes back", func() { d.Clusters = base().Clusters }, 2},
		{"a zone no longer holds the names: none is served", func() {
			d.Zones = []model.Zone{{Apex: "other.example.com", Nameservers: []model.Nameserver{{Name: "ns1.other.example.com", IPv4: []string{"192.0.2.53"}}}}}
		}, 0},
		{"the zone is back", func() { d.Zones = base().Zones }, 2},
	} {
		step.change()
		res, next, err := BuildSafe(objs, d, NewFileNames(d.Services), prev, nil, time.Time{})
		require.NoError(t, err, step.name)
		assert.Equal(t, BuildWith(objs, d, NewFileNames(d.Services)), res, step.name)
		assert.Len(t, res.Services, step.served, step.name)
		prev = next
	}
}
