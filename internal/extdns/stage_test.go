package extdns

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/model"
)

const stageConfig = `
zones:
  - apex: gslb.example.com
    nameservers: [{name: ns1.gslb.example.com, ipv4: [127.0.0.1]}]
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
services:
  - name: file.gslb.example.com
    endpoints: [{address: 192.0.2.1, cluster: east}]
`

func stageFile(t *testing.T) *config.File {
	t.Helper()
	f, err := config.Parse("stage.yaml", []byte(stageConfig))
	require.NoError(t, err)
	return f
}

func TestStageMerge(t *testing.T) {
	for _, tc := range []struct {
		name    string
		records map[string][]*Endpoint
		served  []string // service names after the file's
		dropped []string
	}{
		{"no records leave the file as it is", nil, nil, nil},
		{"records become services after the file's",
			map[string][]*Endpoint{"east": {ep("app.gslb.example.com", "A", "198.51.100.1")}, "west": {ep("app.gslb.example.com", "A", "198.51.100.2")}},
			[]string{"app.gslb.example.com."}, nil},
		{"a name of the file stays the file's",
			map[string][]*Endpoint{"east": {ep("file.gslb.example.com", "A", "198.51.100.1"), ep("app.gslb.example.com", "A", "198.51.100.1")}},
			[]string{"app.gslb.example.com."}, []string{"file.gslb.example.com."}},
		{"a service that does not validate is left out and the others served",
			map[string][]*Endpoint{"east": {ep("app.gslb.example.com", "A", "198.51.100.1"), withProp(ep("heavy.gslb.example.com", "A", "198.51.100.1"), PropWeight, "5000")}},
			[]string{"app.gslb.example.com."}, []string{"heavy.gslb.example.com."}},
		{"an address two clusters write is served once, and the name is served",
			map[string][]*Endpoint{"east": {ep("dup.gslb.example.com", "A", "198.51.100.1")}, "west": {ep("dup.gslb.example.com", "A", "198.51.100.1", "198.51.100.2")}},
			[]string{"dup.gslb.example.com."}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := stageFile(t)
			s, _ := OpenStore("")
			s.recs = map[string]map[Key]*Endpoint{}
			for c, eps := range tc.records {
				s.recs[c] = map[Key]*Endpoint{}
				for _, e := range eps {
					n := rules().Normalize(e)
					s.recs[c][n.Key()] = n
				}
			}
			var served int
			var dropped map[string]string
			st := &Stage{Store: s, Observe: func(n int, d map[string]string) { served, dropped = n, d }}
			out, err := st.Merge(f)
			require.NoError(t, err)
			require.Len(t, f.Services, 1, "the file is not modified")
			require.GreaterOrEqual(t, len(out.Services), 1)
			assert.Same(t, &f.Services[0].Endpoints[0], &out.Services[0].Endpoints[0], "the file's services are not normalized again")
			var names []string
			for _, svc := range out.Services[1:] {
				names = append(names, svc.Name)
				assert.Equal(t, model.StrategyWeighted, svc.Strategy)
				assert.Equal(t, 30, svc.TTL, "normalized: the zone's ttl")
			}
			assert.Equal(t, tc.served, names)
			assert.Equal(t, len(tc.served), served)
			var got []string
			for n := range dropped {
				got = append(got, n)
			}
			assert.ElementsMatch(t, tc.dropped, got)
		})
	}
}

func TestAHealthCheckTheServicesWouldRefuseIsFoundAtStart(t *testing.T) {
	f := stageFile(t)
	require.NoError(t, CheckHealthCheck(&f.Desired, &model.Check{Kind: model.CheckTCP, Port: 443}))
	require.NoError(t, CheckHealthCheck(&f.Desired, nil))
	err := CheckHealthCheck(&f.Desired, &model.Check{Kind: model.CheckTCP})
	require.Error(t, err, "tcp without a port")
	assert.Contains(t, err.Error(), "health_check")
}

func TestAStoredRecordTheCurrentConfigRefusesIsNotServed(t *testing.T) {
	f, err := config.Parse("stage.yaml", []byte(stageConfig+`
kubernetes:
  claims:
    - {namespaces: [team-a], suffixes: [team-a.gslb.example.com]}
`))
	require.NoError(t, err)
	s, _ := OpenStore("")
	// Stored before the claim was configured: the store holds them, the
	// merge checks them again.
	s.recs = map[string]map[Key]*Endpoint{"east": {}}
	for _, e := range []*Endpoint{
		of("service/team-b/web", ep("app.team-a.gslb.example.com", "A", "198.51.100.1")),
		of("service/team-a/web", ep("web.team-a.gslb.example.com", "A", "198.51.100.2")),
		of("service/team-b/web", ep("gslb.example.com", "A", "198.51.100.3")),
	} {
		n := rules().Normalize(e)
		s.recs["east"][n.Key()] = n
	}
	var dropped map[string]string
	out, err := (&Stage{Store: s, Observe: func(_ int, d map[string]string) { dropped = d }}).Merge(f)
	require.NoError(t, err)
	var names []string
	for _, svc := range out.Services[1:] {
		names = append(names, svc.Name)
	}
	assert.Equal(t, []string{"web.team-a.gslb.example.com."}, names)
	assert.Contains(t, dropped["app.team-a.gslb.example.com."], "kubernetes.claims gives app.team-a.gslb.example.com. to namespace team-a")
	assert.Contains(t, dropped["gslb.example.com."], "the apex of zone gslb.example.com.")
}

func TestAPanicWhileMergingIsRecoveredCountedAndNeverFatal(t *testing.T) {
	f := stageFile(t)
	s, _ := OpenStore("")
	s.recs = map[string]map[Key]*Endpoint{"east": {}}
	add := func(e *Endpoint) {
		n := rules().Normalize(e)
		s.recs["east"][n.Key()] = n
	}
	add(ep("app.gslb.example.com", "A", "198.51.100.1"))
	var panics int
	st := &Stage{Store: s, Panicked: func() { panics++ },
		ParseCheck: func(v string) (*model.Check, error) {
			if v == "boom" {
				panic("a bug meets an unexpected record")
			}
			return parseCheck(v)
		}}

	add(withProp(ep("bad.gslb.example.com", "A", "198.51.100.2"), PropHealthCheck, "boom"))
	out, err := st.Merge(f)
	require.NoError(t, err, "at start there is no earlier state: the file is served without the records")
	assert.Same(t, f, out)
	assert.Equal(t, 1, panics)

	delete(s.recs["east"], Key{Name: "bad.gslb.example.com", Type: "A"})
	out, err = st.Merge(f)
	require.NoError(t, err)
	require.Len(t, out.Services, 2, "a good merge serves the records")

	add(withProp(ep("bad.gslb.example.com", "A", "198.51.100.2"), PropHealthCheck, "boom"))
	out, err = st.Merge(f)
	require.ErrorContains(t, err, "the previous state keeps serving")
	assert.Nil(t, out)
	assert.Equal(t, 2, panics)
}

func TestEveryRecordCheckAcceptsIsServed(t *testing.T) {
	f := stageFile(t)
	r := NewRules(&f.Desired, Limits{}, parseCheck)
	for _, e := range []*Endpoint{
		ep("xn--bcher-kva.gslb.example.com", "A", "198.51.100.1"),
		withProp(ep("www.gslb.example.com", "CNAME", "lb.example.net"), PropHealthCheck, "none"),
		withProp(ep("probed.gslb.example.com", "A", "198.51.100.1"), PropHealthCheck, "tcp:443"),
		withProp(ep("zero.gslb.example.com", "AAAA", "2001:db8::1"), PropWeight, "0"),
		withTTL(ep("week.gslb.example.com", "A", "198.51.100.1"), 604800),
	} {
		n := r.Normalize(e)
		require.NoError(t, r.Check(n), n.DNSName)
		s, _ := OpenStore("")
		s.recs = map[string]map[Key]*Endpoint{"east": {n.Key(): n}}
		var dropped map[string]string
		st := &Stage{Store: s, ParseCheck: parseCheck, HealthCheck: &model.Check{Kind: model.CheckTCP, Port: 443},
			Observe: func(_ int, d map[string]string) { dropped = d }}
		out, err := st.Merge(f)
		require.NoError(t, err)
		assert.Empty(t, dropped, n.DNSName)
		assert.Len(t, out.Services, 2, "%s is served", n.DNSName)
	}
}
