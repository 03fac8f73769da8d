package providers_test

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mconfig "github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/cloudflare"
	"github.com/meridian-gslb/meridian/providers/plan"
	"github.com/meridian-gslb/meridian/providers/route53"
)

var update = flag.Bool("update", false, "rewrite the outputs of testdata/translate/*.txtar from the current translations")

// TestTranslationsMatchTheirGoldenFiles reads every testdata/translate/*.txtar:
// a comment saying what the case shows, a config.yaml (parsed and validated
// as `meridian serve` does), an optional health section, and the records
// each provider zone of the config should hold, one per line. Run
// `go test ./providers/ -run Golden -update` to rewrite the outputs, then
// review the diff.
//
// The health section has one state per line: `down <service> <target>`
// (the endpoint decided down) or `cluster-down <cluster>` (its heartbeat
// lost).
func TestTranslationsMatchTheirGoldenFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "translate", "*.txtar"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no golden files")
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			ar, err := parseArchive(data)
			require.NoError(t, err)
			cfg, ok := ar.file("config.yaml")
			require.True(t, ok, "%s has no config.yaml section", file)
			f, err := mconfig.Parse(file, []byte(cfg))
			require.NoError(t, err, "the config of a golden file must be valid")
			d := &f.Desired
			health, err := parseHealth(ar.section("health"))
			require.NoError(t, err)
			require.NotEmpty(t, d.Providers.Route53, "%s configures no Route53 zone", file)
			require.NotEmpty(t, d.Providers.Cloudflare, "%s configures no Cloudflare zone", file)

			views := providers.Services(d, health)
			want := map[string]string{}
			for _, z := range d.Providers.Route53 {
				want["route53 "+z.Zone] = format(zoneRecords(d, "route53", z.Zone, z.Mode, func() []plan.Record { return route53.Translate(views, z.Zone) }))
			}
			for _, z := range d.Providers.Cloudflare {
				want["cloudflare "+z.Zone] = format(zoneRecords(d, "cloudflare", z.Zone, z.Mode, func() []plan.Record { return cloudflare.Translate(views, z.Zone, z.TTL, z.Proxied) }))
			}
			if *update {
				ar.keepOnly("config.yaml", "health")
				for _, name := range slices.Sorted(maps.Keys(want)) {
					ar.set(name, want[name])
				}
				require.NoError(t, os.WriteFile(file, ar.format(), 0o644))
				return
			}
			for _, name := range ar.names {
				_, wanted := want[name]
				assert.True(t, wanted || name == "config.yaml" || name == "health", "%s: section %q belongs to no configured zone: run -update", file, name)
			}
			for name, got := range want {
				golden, ok := ar.file(name)
				if assert.True(t, ok, "%s has no %q section: run `go test ./providers/ -run Golden -update`", file, name) {
					assert.Equal(t, golden, got, "%s: %s is stale: review the change, then run `go test ./providers/ -run Golden -update`", file, name)
				}
			}
		})
	}
}

// zoneRecords are the records a provider zone holds: the translation in
// direct mode, NS and glue (every nameserver live) in delegate mode.
func zoneRecords(d *model.Desired, kind, zone, mode string, direct func() []plan.Record) []plan.Record {
	if mode == model.ModeDelegate {
		recs, err := providers.Delegation(zone, providers.DelegatedZones(d, kind, zone, nil, nil))
		if err != nil {
			return []plan.Record{{Name: "error: " + err.Error()}}
		}
		return recs
	}
	return direct()
}

func format(recs []plan.Record) string {
	var b strings.Builder
	for _, r := range recs {
		b.WriteString(r.String())
		b.WriteByte('\n')
	}
	if b.Len() == 0 {
		return "(no records)\n"
	}
	return b.String()
}

// decided is the decided health of a golden file.
type decided struct{ endpoints, clusters map[string]bool }

func (h decided) Endpoint(service, target string) engine.State {
	if h.endpoints[service+" "+target] {
		return engine.Down
	}
	return engine.Unknown
}

func (h decided) Cluster(name string) engine.State {
	if h.clusters[name] {
		return engine.Down
	}
	return engine.Unknown
}

func parseHealth(text string) (decided, error) {
	h := decided{endpoints: map[string]bool{}, clusters: map[string]bool{}}
	for i, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case f[0] == "down" && len(f) == 3:
			h.endpoints[model.CanonicalName(f[1])+" "+f[2]] = true
		case f[0] == "cluster-down" && len(f) == 2:
			h.clusters[f[1]] = true
		default:
			return h, fmt.Errorf("health line %d: %q: want `down <service> <target>` or `cluster-down <cluster>`", i+1, line)
		}
	}
	return h, nil
}

// archive is a txtar archive (golang.org/x/tools/txtar's format): a
// comment, then files, each opened by a line `-- name --`.
type archive struct {
	comment string
	names   []string
	files   map[string]string
}

func parseArchive(data []byte) (*archive, error) {
	ar := &archive{files: map[string]string{}}
	name, cur := "", &bytes.Buffer{}
	flush := func() {
		if name == "" {
			ar.comment = cur.String()
		} else {
			ar.files[name] = cur.String()
		}
		cur.Reset()
	}
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if n, ok := marker(line); ok {
			flush()
			if _, dup := ar.files[n]; dup {
				return nil, fmt.Errorf("section %q appears twice", n)
			}
			name = n
			ar.names = append(ar.names, n)
			continue
		}
		cur.WriteString(line)
	}
	flush()
	return ar, nil
}

func marker(line string) (string, bool) {
	line = strings.TrimRight(line, "\n")
	if !strings.HasPrefix(line, "-- ") || !strings.HasSuffix(line, " --") || len(line) < 7 {
		return "", false
	}
	return strings.TrimSpace(line[3 : len(line)-3]), true
}

func (ar *archive) file(name string) (string, bool) {
	s, ok := ar.files[name]
	return s, ok
}

// section is a file's text, "" when absent.
func (ar *archive) section(name string) string { return ar.files[name] }

func (ar *archive) set(name, text string) {
	if _, ok := ar.files[name]; !ok {
		ar.names = append(ar.names, name)
	}
	ar.files[name] = text
}

// keepOnly drops every file but those named.
func (ar *archive) keepOnly(names ...string) {
	ar.names = slices.DeleteFunc(ar.names, func(n string) bool {
		if slices.Contains(names, n) {
			return false
		}
		delete(ar.files, n)
		return true
	})
}

func (ar *archive) format() []byte {
	var b bytes.Buffer
	b.WriteString(ar.comment)
	for _, n := range ar.names {
		fmt.Fprintf(&b, "-- %s --\n", n)
		b.WriteString(ar.files[n])
	}
	return b.Bytes()
}
