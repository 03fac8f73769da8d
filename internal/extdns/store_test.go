package extdns

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
)

func TestApply(t *testing.T) {
	app := ep("app.gslb.example.com", "A", "198.51.100.1")
	txt := ep("a-app.gslb.example.com", "TXT", `"heritage=external-dns,external-dns/owner=east"`)
	for _, tc := range []struct {
		name    string
		first   *Changes // applied for east before
		changes *Changes
		cluster string
		want    map[string][]string // cluster → names.types after
		changed bool
		errPart string // "" = no error
	}{
		{"a create stores the record and its ownership TXT for the cluster alone",
			nil, &Changes{Create: []*Endpoint{app, txt}}, "east",
			map[string][]string{"east": {"a-app.gslb.example.com TXT", "app.gslb.example.com A"}}, true, ""},
		{"the same create again changes nothing",
			&Changes{Create: []*Endpoint{app}}, &Changes{Create: []*Endpoint{app}}, "east",
			map[string][]string{"east": {"app.gslb.example.com A"}}, false, ""},
		{"another cluster's create of the same name is its own record",
			&Changes{Create: []*Endpoint{app}}, &Changes{Create: []*Endpoint{ep("app.gslb.example.com", "A", "198.51.100.2")}}, "west",
			map[string][]string{"east": {"app.gslb.example.com A"}, "west": {"app.gslb.example.com A"}}, true, ""},
		{"another cluster's delete never removes this cluster's record",
			&Changes{Create: []*Endpoint{app}}, &Changes{Delete: []*Endpoint{app}}, "west",
			map[string][]string{"east": {"app.gslb.example.com A"}}, false, ""},
		{"a delete removes the cluster's record",
			&Changes{Create: []*Endpoint{app, txt}}, &Changes{Delete: []*Endpoint{app, txt}}, "east",
			map[string][]string{}, true, ""},
		{"an update replaces the targets",
			&Changes{Create: []*Endpoint{app}}, &Changes{UpdateOld: []*Endpoint{app}, UpdateNew: []*Endpoint{ep("app.gslb.example.com", "A", "198.51.100.9")}}, "east",
			map[string][]string{"east": {"app.gslb.example.com A"}}, true, ""},
		{"a create over a record with other targets is a conflict and changes nothing",
			&Changes{Create: []*Endpoint{app}}, &Changes{Create: []*Endpoint{txt, ep("app.gslb.example.com", "A", "198.51.100.9")}}, "east",
			map[string][]string{"east": {"app.gslb.example.com A"}}, false, "create[1] app.gslb.example.com A: exists already"},
		{"one bad record refuses the whole change, naming it",
			nil, &Changes{Create: []*Endpoint{txt, ep("app.example.org", "A", "198.51.100.1")}}, "east",
			map[string][]string{}, false, "create[1] app.example.org A: dnsName"},
		{"a change beyond the cluster's record limit is refused",
			nil, &Changes{Create: []*Endpoint{ep("a.gslb.example.com", "A", "198.51.100.1"), ep("b.gslb.example.com", "A", "198.51.100.1"),
				ep("c.gslb.example.com", "A", "198.51.100.1"), ep("d.gslb.example.com", "A", "198.51.100.1"), ep("e.gslb.example.com", "A", "198.51.100.1")}}, "east",
			map[string][]string{}, false, "would hold 5 records (allowed at most 4)"},
		{"a null record is refused", nil, &Changes{Delete: []*Endpoint{nil}}, "east", map[string][]string{}, false, "delete[0]: is null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := OpenStore("")
			require.NoError(t, err)
			if tc.first != nil {
				_, err := s.Apply("east", tc.first, rules())
				require.NoError(t, err)
			}
			changed, err := s.Apply(tc.cluster, tc.changes, rules())
			if tc.errPart != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errPart)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.changed, changed)
			got := map[string][]string{}
			for c, eps := range s.All() {
				for _, e := range eps {
					got[c] = append(got[c], e.DNSName+" "+e.RecordType)
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestRecordsAreWhatAdjustGives(t *testing.T) {
	s, _ := OpenStore("")
	in := withProp(ep("App.gslb.example.com.", "A", "198.51.100.2", "198.51.100.1"), "aws/x", "y")
	_, err := s.Apply("east", &Changes{Create: []*Endpoint{in}}, rules())
	require.NoError(t, err)
	assert.Equal(t, []*Endpoint{rules().Normalize(in)}, s.Records("east"))
	assert.Empty(t, s.Records("west"), "a cluster reads only its own records")
}

func TestTheStateFileKeepsTheRecordsAcrossARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "externaldns.json")
	s, err := OpenStore(path)
	require.NoError(t, err)
	_, err = s.Apply("east", &Changes{Create: []*Endpoint{ep("app.gslb.example.com", "A", "198.51.100.1")}}, rules())
	require.NoError(t, err)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	again, err := OpenStore(path)
	require.NoError(t, err)
	assert.Equal(t, s.All(), again.All())

	require.NoError(t, os.WriteFile(path, []byte("{not json"), 0o600))
	broken, err := OpenStore(path)
	require.Error(t, err, "an unreadable state file is reported")
	assert.Empty(t, broken.All(), "and the store starts empty")
}

func TestACallersOwnRecordsCanBeDeletedWhateverTheCurrentRules(t *testing.T) {
	app := ep("app.gslb.example.com", "A", "198.51.100.1")
	txt := ep("a-app.gslb.example.com", "TXT", `"heritage=external-dns,external-dns/owner=east"`)
	// The zone was removed from the config after the records were stored.
	noZone := NewRules(&model.Desired{Zones: []model.Zone{{Apex: "other.example.org."}}}, Limits{}, parseCheck)
	for _, tc := range []struct {
		name    string
		changes *Changes
	}{
		{"a delete is accepted", &Changes{Delete: []*Endpoint{app, txt}}},
		{"a delete with the targets it had is accepted whatever they are", &Changes{Delete: []*Endpoint{ep("app.gslb.example.com", "A", "not an address"), txt}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := OpenStore("")
			_, err := s.Apply("east", &Changes{Create: []*Endpoint{app, txt}}, rules())
			require.NoError(t, err)
			changed, err := s.Apply("east", tc.changes, noZone)
			require.NoError(t, err)
			assert.True(t, changed)
			assert.Empty(t, s.Records("east"))
		})
	}
	s, _ := OpenStore("")
	_, err := s.Apply("east", &Changes{Create: []*Endpoint{app}}, rules())
	require.NoError(t, err)
	_, err = s.Apply("east", &Changes{UpdateOld: []*Endpoint{app}, UpdateNew: []*Endpoint{ep("app.gslb.example.com", "A", "198.51.100.2")}}, noZone)
	require.ErrorContains(t, err, "updateNew[0] app.gslb.example.com A: dnsName", "what an update stores is checked")
}

func TestPruneDropsTheStateFilesRecordsTheConfigNoLongerAccepts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "externaldns.json")
	state := `{"clusters":{
		"east":[{"dnsName":"App.gslb.example.com.","targets":["198.51.100.1"],"recordType":"A"},
		        {"dnsName":"old.example.org","targets":["198.51.100.1"],"recordType":"A","recordTTL":30},
		        {"dnsName":"x.team-a.gslb.example.com","targets":["198.51.100.1"],"recordType":"A","recordTTL":30,"labels":{"resource":"service/team-b/web"}}],
		"gone":[{"dnsName":"app.gslb.example.com","targets":["198.51.100.2"],"recordType":"A","recordTTL":30}]}}`
	require.NoError(t, os.WriteFile(path, []byte(state), 0o600))
	s, err := OpenStore(path)
	require.NoError(t, err)
	r := tenancyRules("")
	dropped, err := s.Prune(r, func(c string) bool { return c != "gone" })
	require.NoError(t, err)
	var got []string
	for _, d := range dropped {
		got = append(got, d.Cluster+" "+d.Record.DNSName+": "+d.Reason)
	}
	require.Len(t, got, 3)
	assert.Contains(t, got[0], "east old.example.org: dnsName: \"old.example.org\" is not under a served zone")
	assert.Contains(t, got[1], "east x.team-a.gslb.example.com: dnsName: hostname conflict: ")
	assert.Contains(t, got[2], "gone app.gslb.example.com: cluster \"gone\" has no client")
	want := []*Endpoint{withTTL(ep("app.gslb.example.com", "A", "198.51.100.1"), 30)}
	assert.Equal(t, map[string][]*Endpoint{"east": want}, s.All(), "the rest is kept, normalized")
	again, err := OpenStore(path)
	require.NoError(t, err)
	assert.Equal(t, s.All(), again.All(), "the state file is written again")
	dropped, err = s.Prune(r, nil)
	require.NoError(t, err)
	assert.Empty(t, dropped, "a second prune drops nothing")
}

func TestAChangeBeyondTheClustersByteBudgetIsRefused(t *testing.T) {
	r := NewRules(desired(), Limits{MaxBytes: 100}, parseCheck)
	s, _ := OpenStore("")
	_, err := s.Apply("east", &Changes{Create: []*Endpoint{ep("a.gslb.example.com", "TXT", strings.Repeat("x", 60))}}, r)
	require.NoError(t, err)
	_, err = s.Apply("east", &Changes{Create: []*Endpoint{ep("b.gslb.example.com", "TXT", strings.Repeat("x", 60))}}, r)
	require.ErrorContains(t, err, "would weigh 162 bytes (allowed at most 100)")
	_, err = s.Apply("west", &Changes{Create: []*Endpoint{ep("b.gslb.example.com", "TXT", strings.Repeat("x", 60))}}, r)
	require.NoError(t, err, "the budget is per cluster")
}
