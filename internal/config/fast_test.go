package config

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config/scalegen"
)

// sameAsChecked requires that the fast path and the positioned path agree
// on data: both refuse it, or both accept it into the same File.
func sameAsChecked(t *testing.T, data []byte) {
	t.Helper()
	fast, ok := parseFast(data)
	checked, err := parseChecked("t.yaml", data)
	if !ok {
		return // the positioned path decides alone
	}
	require.NoError(t, err, "the fast path accepted a file the positioned decoder refuses:\n%s", data)
	assert.Equal(t, checked, fast)
}

func TestParseFastAgreesWithChecked(t *testing.T) {
	demo, err := os.ReadFile("../../deploy/examples/demo.yaml")
	require.NoError(t, err)
	var gen bytes.Buffer
	require.NoError(t, scalegen.Write(&gen, scalegen.Options{Services: 12, Server: "  dns: {listen: [\"127.0.0.1:5353\"], tcp_idle_timeout: 20s}"}))
	tests := []struct {
		name string
		data string
		fast bool // the fast path accepts it
	}{
		{name: "the demo config is accepted by both into the same value", data: string(demo), fast: true},
		{name: "the base test config is accepted by both into the same value", data: base, fast: true},
		{name: "a generated scale config is accepted by both into the same value", data: gen.String(), fast: true},
		{name: "an anchor is left to the positioned decoder", data: strings.Replace(base, "  - {name: west, region: us-west}", "  - &w {name: west, region: us-west}", 1)},
		{name: "a merge key is left to the positioned decoder", data: strings.Replace(base, "  - {name: west, region: us-west}", "  - &w {name: west, region: us-west}\n  - {<<: *w, name: north}", 1)},
		{name: "a date for a string field is left to the positioned decoder or decoded the same", data: strings.Replace(base, "region: us-west", "region: 2001-02-03", 1)},
		{name: "a quoted yes for a string field is decoded the same", data: strings.Replace(base, "region: us-west", `region: "yes"`, 1), fast: true},
		{name: "a number for a string field is decoded the same", data: strings.Replace(base, "region: us-west", "region: 42", 1), fast: true},
		{name: "a duration written as a bare integer is left to the positioned decoder or decoded the same", data: "server: {dns: {tcp_idle_timeout: 5}}\n" + base},
		{name: "a yes written for a bool is left to the positioned decoder or decoded the same", data: "server: {dns: {rrl: {enabled: yes}}}\n" + base},
		{name: "a duplicate key is left to the positioned decoder", data: base + "clusters: []\n"},
		{name: "a second document is left to the positioned decoder", data: base + "---\nservices: []\n"},
		{name: "an unknown field is left to the positioned decoder", data: strings.Replace(base, "weight: 700", "wieght: 700", 1)},
		{name: "an invalid value is left to the positioned decoder", data: strings.Replace(base, "weight: 700", "weight: 1200", 1)},
		{name: "a bad duration is left to the positioned decoder", data: "health: {interval: 5 seconds}\n" + base},
		{name: "an empty file is left to the positioned decoder", data: ""},
		{name: "a tagged scalar is left to the positioned decoder or decoded the same", data: strings.Replace(base, "weight: 700", "weight: !!int 700", 1)},
		{name: "a quoted number for an integer field is left to the positioned decoder or decoded the same", data: strings.Replace(base, "weight: 700", `weight: "700"`, 1)},
		{name: "a null list is decoded the same", data: "geo: {networks: ~}\n" + base, fast: true},
		{name: "an integer with leading zeros for a string field is left to the positioned decoder", data: strings.Replace(base, "region: us-west", "region: 0042", 1)},
		{name: "a fraction for a string field is left to the positioned decoder", data: strings.Replace(base, "region: us-west", "region: 1.50", 1)},
		{name: "a hexadecimal integer for a string field is left to the positioned decoder", data: strings.Replace(base, "region: us-west", "region: 0x10", 1)},
		{name: "a generated scale config with items of every shape the item decoder reads is accepted by both into the same value",
			data: strings.Replace(gen.String(), "  - name: s5.scale.test\n", richItem+"  - name: s5.scale.test\n", 1), fast: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ok := parseFast([]byte(tt.data))
			if tt.fast {
				require.True(t, ok, "the fast path refused it")
			}
			sameAsChecked(t, []byte(tt.data))
		})
		t.Run(tt.name+", with the services cut into batches", func(t *testing.T) {
			withSmallCut(t)
			_, ok := parseFast([]byte(tt.data))
			if tt.fast {
				require.True(t, ok, "the fast path refused it")
			}
			sameAsChecked(t, []byte(tt.data))
		})
	}
}

// FuzzFastParse: whatever the fast path accepts, the positioned decoder
// accepts too, into the same File.
func FuzzFastParse(f *testing.F) {
	demo, err := os.ReadFile("../../deploy/examples/demo.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(demo)
	f.Add([]byte(base))
	var gen bytes.Buffer
	if err := scalegen.Write(&gen, scalegen.Options{Services: 6}); err != nil {
		f.Fatal(err)
	}
	f.Add(gen.Bytes())
	g := gen.String()
	f.Add([]byte(strings.Replace(g, "  - name: s5.scale.test\n", richItem+"  - name: s5.scale.test\n", 1)))
	f.Fuzz(func(t *testing.T, data []byte) { sameAsChecked(t, data) })
}

// withSmallCut makes the fast path cut services lists of 2 items or more
// into batches of 3, so that small test files take the batched decode.
func withSmallCut(t *testing.T) {
	t.Helper()
	minBefore, batchBefore := splitMin, splitBatch
	splitMin, splitBatch = 2, 3
	t.Cleanup(func() { splitMin, splitBatch = minBefore, batchBefore })
}

func TestBatchedDecodeAgreesWithWholeAndChecked(t *testing.T) {
	withSmallCut(t)
	var gen bytes.Buffer
	require.NoError(t, scalegen.Write(&gen, scalegen.Options{Services: 17, Server: "  log: {level: warn}"}))
	g := gen.String()
	services := strings.Index(g, "services:\n")
	require.Positive(t, services)
	moved := g[services:] + g[:services] // services first, the other sections after it
	tests := []struct {
		name string
		data string
		cut  bool // the batched decode takes it
	}{
		{name: "a generated file is decoded in batches into the same value", data: g, cut: true},
		{name: "a services list followed by other sections is decoded in batches into the same value", data: moved, cut: true},
		{name: "comments and blank lines between items are decoded in batches into the same value",
			data: strings.Replace(g, "  - name: s5.", "\n# a comment\n    # another\n  - name: s5.", 1), cut: true},
		{name: "items written as flow mappings are decoded in batches into the same value",
			data: base[:strings.Index(base, "services:")] + "services:\n  - {name: a.gslb.test, endpoints: [{address: 192.0.2.1, cluster: east}]}\n  - {name: b.gslb.test, endpoints: [{address: 192.0.2.2, cluster: east}]}\n  - {name: c.gslb.test, endpoints: [{address: 192.0.2.3, cluster: east}]}\n", cut: true},
		{name: "a quoted string across an item line is left to the whole-file decode",
			data: strings.Replace(g, "  - name: s5.scale.test\n", "  - name: \"s5.scale.test\n  - x\"\n", 1)},
		{name: "a flow list across an item line is left to the whole-file decode",
			data: strings.Replace(g, "  - name: s5.scale.test\n", "  - name: s5.scale.test\n    x: [\n  - y]\n", 1)},
		{name: "a second services key is left to the whole-file decode", data: g + "services:\n  - name: z.scale.test\n"},
		{name: "a services line inside a quoted string is left to the whole-file decode",
			data: "zones: \"x\nservices:\n  - a\n  - b\"\n" + g[strings.Index(g, "clusters:"):]},
		{name: "an alias to an anchor outside the batch is left to the whole-file decode",
			data: strings.Replace(strings.Replace(g, "  - name: s1.scale.test\n", "  - name: &n s1.scale.test\n", 1), "  - name: s9.scale.test\n", "  - name: *n\n", 1)},
		{name: "an empty item is left to the whole-file decode", data: strings.Replace(g, "  - name: s5.scale.test\n", "  -\n  - name: s5.scale.test\n", 1)},
		{name: "an unknown field in an item is left to the positioned decoder", data: strings.Replace(g, "  - name: s5.scale.test\n", "  - name: s5.scale.test\n    wieght: 1\n", 1)},
		{name: "items in every shape the item decoder reads are decoded in batches into the same value", data: strings.Replace(g, "  - name: s5.scale.test\n", richItem+"  - name: s5.scale.test\n", 1), cut: true},
		{name: "an item the item decoder refuses is decoded in its batch by yaml/v3 into the same value",
			data: strings.Replace(g, "  - name: s5.scale.test\n", "  - name: x1.scale.test\n    endpoints: [{address: 192.0.2.9,\n      cluster: us-east}]\n  - name: s5.scale.test\n", 1), cut: true},
		{name: "a line left of the items is left to the whole-file decode", data: strings.Replace(g, "  - name: s5.scale.test\n", " # x\n  - name: s5.scale.test\n x: 1\n", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.data)
			c, ok := cutServices(data)
			var cutOK bool
			if ok {
				_, cutOK = decodeCut(c)
			}
			assert.Equal(t, tt.cut, cutOK, "taken by the batched decode")
			fast, fastOK := decodeFast(data)
			whole, wholeOK := decodeWhole(data)
			require.Equal(t, wholeOK, fastOK, "the fast path and the whole-file decode accept the same files")
			if fastOK {
				assert.Equal(t, whole, fast)
			}
			sameAsChecked(t, data)
		})
	}
}

func TestABatchDecodePanicFallsBackToTheWholeFile(t *testing.T) {
	withSmallCut(t)
	var gen bytes.Buffer
	require.NoError(t, scalegen.Write(&gen, scalegen.Options{Services: 10}))
	want, ok := decodeWhole(gen.Bytes())
	require.True(t, ok)
	batchPanic = func() { panic("test: a batch decode panics") }
	t.Cleanup(func() { batchPanic = nil })
	got, ok := decodeFast(gen.Bytes())
	require.True(t, ok, "the whole-file decode takes over")
	assert.Equal(t, want, got)
	f, err := Parse("t.yaml", gen.Bytes())
	require.NoError(t, err)
	assert.Len(t, f.Services, 10)
}

// richItem is a services item in the shapes decodeItems reads: comments,
// a compact list, flow mappings, quoted strings, an IPv6 address,
// durations, a status range, bools.
const richItem = `  - name: x1.scale.test   # a comment
    strategy: failover
    ttl: 30
    max_answers: 2
    endpoints:
    - address: 2001:db8::1
      cluster: us-east
      priority: 1
      drain: false

    # a comment line
    - {address: "192.0.2.7", cluster: 'us-west', priority: 2}
    health_check:
      kind: https
      port: 8443
      path: /healthz
      expect_status: [200, 301-302]
      interval: 2s
      timeout: "1s"
      insecure_skip_verify: true
`

// FuzzBatchedDecode: with services lists cut into batches of 3, whatever
// the fast path accepts, the whole-file decode and the positioned decoder
// accept too, into the same File.
func FuzzBatchedDecode(f *testing.F) {
	var gen bytes.Buffer
	if err := scalegen.Write(&gen, scalegen.Options{Services: 8}); err != nil {
		f.Fatal(err)
	}
	f.Add(gen.Bytes())
	f.Add([]byte(base))
	g := gen.String()
	f.Add([]byte(strings.Replace(g, "  - name: s5.scale.test\n", richItem+"  - name: s5.scale.test\n", 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		minBefore, batchBefore := splitMin, splitBatch
		splitMin, splitBatch = 2, 3
		defer func() { splitMin, splitBatch = minBefore, batchBefore }()
		fast, ok := decodeFast(data)
		if !ok {
			return
		}
		whole, wholeOK := decodeWhole(data)
		require.True(t, wholeOK, "the batched decode accepted a file the whole-file decode refuses:\n%s", data)
		require.Equal(t, whole, fast)
		sameAsChecked(t, data)
	})
}
