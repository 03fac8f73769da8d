package config

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml3 "go.yaml.in/yaml/v3"

	"github.com/meridian-gslb/meridian/internal/config/scalegen"
	"github.com/meridian-gslb/meridian/internal/model"
)

// sameAsNodes requires that decodeItems and yaml/v3's node tree agree on
// a batch: decodeItems refuses it, or both accept it into the same value.
// It reports whether decodeItems took it.
func sameAsNodes(t *testing.T, data []byte, want int) bool {
	t.Helper()
	items, ok := decodeItems(data, want)
	if !ok {
		return false
	}
	var nodes []model.Service
	require.True(t, decodeBatchNodes(data, want, &nodes), "decodeItems took a batch yaml/v3 refuses:\n%s", data)
	require.Equal(t, nodes, items, "decodeItems and yaml/v3 read it differently:\n%s", data)
	return true
}

// generatedItems is the services section of a generated file (its items,
// without the `services:` line).
func generatedItems(t testing.TB, n int) string {
	t.Helper()
	var gen bytes.Buffer
	require.NoError(t, scalegen.Write(&gen, scalegen.Options{Services: n}))
	g := gen.String()
	i := strings.Index(g, "services:\n")
	require.Positive(t, i)
	return g[i+len("services:\n"):]
}

func TestItemDecoderAgreesWithYAML(t *testing.T) {
	gen := generatedItems(t, 9)
	full := `  - name: a.gslb.test   # a comment
    strategy: failover
    ttl: 30
    max_answers: 2
    when_all_down: nodata
    sticky: subnet
    min_healthy: 0
    endpoints:
    - address: 2001:db8::1
      cluster: east
      priority: 1
      state: down
      drain: true

    # a comment line
    - {address: "192.0.2.7", cluster: 'west', priority: 2}
    - cname: b.other.test.
      cluster: north
      weight: -0
    failover: {order: [east, west, north]}
    health_check:
      kind: https
      port: 8443
      path: /healthz
      host: app.example.test
      expect_status: [200, 301-302]
      interval: 2s
      timeout: "1s"
      insecure_skip_verify: false
    capacity:
      source: prometheus
      step: 0.25
      hysteresis: 1
      min_change_interval: 30s
      prometheus:
        url: http://prom:9090
        query: up
        interval: 15s
  -
    name: c.gslb.test
    strategy: latency
    latency: {tolerance: 20%}
    endpoints: []
  - name: d.gslb.test
    geo: {rules: [{regions: [us-east], clusters: [east]}, {countries: [DE, FR], clusters: [west]}], default: [east]}
    endpoints:
      - {address: 10.1.0.0/16, cluster: e}
`
	tests := []struct {
		name string
		data string
		want int
		fast bool // decodeItems takes it
	}{
		{name: "generated items are read like yaml/v3 reads them", data: gen, want: 9, fast: true},
		{name: "every field shape of the subset is read like yaml/v3 reads it", data: full, want: 3, fast: true},
		{name: "a wrong item count is refused", data: gen, want: 8},
		{name: "an anchor is refused", data: strings.Replace(gen, "name: s1.", "name: &a s1.", 1), want: 9},
		{name: "an alias is refused", data: strings.Replace(gen, "cluster: us-east", "cluster: *a", 1), want: 9},
		{name: "a tag is refused", data: strings.Replace(gen, "weight: 100", "weight: !!int 100", 1), want: 9},
		{name: "a null value is refused", data: strings.Replace(gen, "strategy: geo", "strategy:", 1), want: 9},
		{name: "a tilde is refused", data: strings.Replace(gen, "strategy: geo", "strategy: ~", 1), want: 9},
		{name: "an empty item is refused", data: "  -\n" + gen, want: 10},
		{name: "a YAML 1.1 bool is refused", data: strings.Replace(full, "drain: true", "drain: yes", 1), want: 3},
		{name: "a capitalised bool is refused", data: strings.Replace(full, "drain: true", "drain: True", 1), want: 3},
		{name: "an octal-looking number is refused", data: strings.Replace(gen, "weight: 100", "weight: 0100", 1), want: 9},
		{name: "a hexadecimal number is refused", data: strings.Replace(gen, "weight: 100", "weight: 0x64", 1), want: 9},
		{name: "a number with an exponent is refused", data: strings.Replace(full, "step: 0.25", "step: 25e-2", 1), want: 3},
		{name: "a date is refused", data: strings.Replace(full, "host: app.example.test", "host: 2001-02-03", 1), want: 3},
		{name: "a multi-line plain scalar is refused", data: strings.Replace(gen, "  - name: s1.scale.test\n", "  - name: s1.scale\n      .test\n", 1), want: 9},
		{name: "a flow list across lines is refused", data: strings.Replace(full, "order: [east, west, north]}", "order: [east,\n      west, north]}", 1), want: 3},
		{name: "a block scalar is refused", data: strings.Replace(full, "path: /healthz", "path: |\n        /healthz", 1), want: 3},
		{name: "an escape in a double-quoted string is refused", data: strings.Replace(full, `"192.0.2.7"`, `"192.0.2.\x37"`, 1), want: 3},
		{name: "an escaped quote in a single-quoted string is refused", data: strings.Replace(full, `'west'`, `'we''st'`, 1), want: 3},
		{name: "an unknown key is refused", data: strings.Replace(gen, "strategy: geo", "strategy: geo\n    wieght: 1", 1), want: 9},
		{name: "a repeated key is refused", data: strings.Replace(gen, "strategy: geo", "strategy: geo\n    strategy: geo", 1), want: 9},
		{name: "a repeated key in a flow mapping is refused", data: strings.Replace(gen, "cluster: us-east", "cluster: us-east, cluster: x", 1), want: 9},
		{name: "a tab is refused", data: strings.Replace(gen, "strategy: geo", "strategy:\tgeo", 1), want: 9},
		{name: "non-ASCII text is refused", data: strings.Replace(gen, "strategy: geo", "strategy: géo", 1), want: 9},
		{name: "a line indented deeper than its mapping is refused", data: strings.Replace(gen, "    strategy: geo", "      strategy: geo", 1), want: 9},
		{name: "a line between an item and its mapping is refused", data: strings.Replace(gen, "    strategy: geo", "   strategy: geo", 1), want: 9},
		{name: "a value after a colon without a space is read like yaml/v3 reads it", data: strings.Replace(full, "path: /healthz", "path: /a:b", 1), want: 3, fast: true},
		{name: "a second mapping indicator in a value is refused", data: strings.Replace(full, "path: /healthz", "path: a: b", 1), want: 3},
		{name: "a comment without a space before it is refused", data: strings.Replace(full, "{order: [east, west, north]}", "{order: [east, west, north]}#x", 1), want: 3},
		{name: "a string for an integer field is refused", data: strings.Replace(gen, "weight: 100", "weight: hundred", 1), want: 9},
		{name: "a quoted number for an integer field is refused", data: strings.Replace(gen, "weight: 100", `weight: "100"`, 1), want: 9},
		{name: "a fraction for an integer field is refused", data: strings.Replace(gen, "weight: 100", "weight: 1.5", 1), want: 9},
		{name: "a bad duration is refused", data: strings.Replace(full, "interval: 2s", "interval: 2 seconds", 1), want: 3},
		{name: "a number for a string field is read like yaml/v3 reads it", data: strings.Replace(gen, "cluster: us-east", "cluster: 42", 1), want: 9, fast: true},
		{name: "an integer with leading zeros for a string field is refused", data: strings.Replace(gen, "cluster: us-east", "cluster: 0042", 1), want: 9},
		{name: "minus zero for a string field is refused", data: strings.Replace(gen, "cluster: us-east", "cluster: -0", 1), want: 9},
		{name: "a fraction for a string field is refused", data: strings.Replace(gen, "cluster: us-east", "cluster: 1.50", 1), want: 9},
		{name: "a bool for a string field is read like yaml/v3 reads it", data: strings.Replace(gen, "cluster: us-east", "cluster: true", 1), want: 9, fast: true},
		{name: "a trailing comma in a flow list is refused", data: strings.Replace(full, "[east, west, north]", "[east, west, north,]", 1), want: 3},
		{name: "a document marker is refused", data: gen + "---\n", want: 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			took := sameAsNodes(t, []byte(tt.data), tt.want)
			assert.Equal(t, tt.fast, took, "taken by decodeItems")
		})
	}
}

// TestClassifyAgreesWithYAML: a plain scalar decodeItems takes has the
// type yaml/v3 resolves it to.
func TestClassifyAgreesWithYAML(t *testing.T) {
	tags := map[int]string{scalarString: "!!str", scalarInt: "!!int", scalarFloat: "!!float", scalarBool: "!!bool"}
	for _, s := range []string{"1m30s", "2s", "500ms", "0x", "9Z", "1e+5", "1.5s",
		"a", "abc", "us-east", "/healthz", "_x", "true", "false", "True", "yes", "no", "on", "off", "y", "n", "null", "Null", "NULL",
		"0", "7", "-7", "-0", "017", "100", "123456789012345678", "1234567890123456789", "0x1F", "0o17", "0b101", "1_000", "+5",
		"1.5", "0.25", ".5", "1.", "1e5", "1.5e3", "1.2.3", "1.2.3e5", "192.0.2.1", "10.0.0.0/8", "2001:db8::1", "2001:db8::/32",
		"12:30", "1:2", "2001-02-03", "2001-02-03T04:05:06Z", "1.2.3.4-5", "inf", "nan", "1b.2", "0e0.1", "20%", "2.5%", "020%", "301-302", "200-299", "2001-02", "1-2", "1-", "007-1",
	} {
		c := classify([]byte(s))
		if c == scalarRefused {
			continue
		}
		var n yaml3.Node
		require.NoError(t, yaml3.Unmarshal([]byte("v: "+s), &n), s)
		tag := n.Content[0].Content[1].Tag
		if c == scalarNumberOrString {
			assert.Contains(t, []string{"!!str", "!!int", "!!float"}, tag, "%q", s)
			continue
		}
		assert.Equal(t, tags[c], tag, "%q", s)
	}
}

func TestGeneratedBatchesTakeTheItemDecoder(t *testing.T) {
	data := []byte(generatedItems(t, 30))
	_, ok := decodeItems(data, 30)
	assert.True(t, ok, "decodeItems refused a generated batch")
}

// FuzzItemDecode: whatever decodeItems takes, yaml/v3 takes into the
// same value.
func FuzzItemDecode(f *testing.F) {
	var gen bytes.Buffer
	if err := scalegen.Write(&gen, scalegen.Options{Services: 4}); err != nil {
		f.Fatal(err)
	}
	g := gen.String()
	f.Add([]byte(g[strings.Index(g, "services:\n")+len("services:\n"):]), uint8(4))
	f.Add([]byte("- name: a\n  endpoints:\n  - {address: 2001:db8::1, cluster: e}\n  health_check: {kind: http, interval: 5s, expect_status: [200]}\n"), uint8(1))
	f.Add([]byte("  - {name: 'x', ttl: 30, geo: {rules: [{regions: [a, b], clusters: [c]}], default: []}}\n  -\n    name: y\n"), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, want uint8) {
		sameAsNodes(t, data, int(want))
	})
}
