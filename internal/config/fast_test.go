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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
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
	f.Fuzz(func(t *testing.T, data []byte) { sameAsChecked(t, data) })
}
