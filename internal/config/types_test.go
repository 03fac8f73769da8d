package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wrongTypeCase is one config field given a value of the wrong kind.
type wrongTypeCase struct {
	path string // e.g. zones[0].ttl
	doc  any    // the YAML document, nested maps and lists
	want string // the expected kind named in the message
}

// wrongTypeCases walks t's fields and makes, for every boolean, number and
// list field reachable (through structs, and one element of each list of
// structs), a document giving it a value of another kind.
func wrongTypeCases(t reflect.Type, path []string, wrap func(any) any, seen map[reflect.Type]bool, out *[]wrongTypeCase) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || custom(t) {
		return
	}
	seen[t] = true
	defer delete(seen, t)
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if !sf.IsExported() || tag == "-" {
			continue
		}
		ft := sf.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if tag == "" && (strings.Contains(opts, "inline") || sf.Anonymous) {
			wrongTypeCases(ft, path, wrap, seen, out)
			continue
		}
		p := append(clonePath(path), tag)
		leaf := func(v any) any { return wrap(map[string]any{tag: v}) }
		switch {
		case custom(ft):
		case ft.Kind() == reflect.Bool:
			*out = append(*out, wrongTypeCase{strings.Join(p, "."), leaf("maybe"), "expected: true or false"})
		case ft.Kind() >= reflect.Int && ft.Kind() <= reflect.Uint64:
			*out = append(*out, wrongTypeCase{strings.Join(p, "."), leaf("lots"), "expected: an integer"})
		case ft.Kind() == reflect.Float64:
			*out = append(*out, wrongTypeCase{strings.Join(p, "."), leaf("half"), "expected: a number"})
		case ft.Kind() == reflect.Slice:
			*out = append(*out, wrongTypeCase{strings.Join(p, "."), leaf(map[string]any{"not": "a list"}), "expected: a list"})
			et := ft.Elem()
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct && !custom(et) {
				ip := append(clonePath(path), tag+"[0]")
				wrongTypeCases(et, ip, func(v any) any { return leaf([]any{v}) }, seen, out)
			}
		case ft.Kind() == reflect.Struct:
			wrongTypeCases(ft, p, leaf, seen, out)
		}
	}
}

func clonePath(s []string) []string { return append([]string(nil), s...) }

func TestEveryFieldGivenAValueOfTheWrongKindIsNamedWithItsPathLineAndExpectedKind(t *testing.T) {
	var cases []wrongTypeCase
	wrongTypeCases(reflect.TypeOf(File{}), nil, func(v any) any { return v }, map[reflect.Type]bool{}, &cases)
	require.GreaterOrEqual(t, len(cases), 20, "the walk finds the config's fields")
	goTypes := regexp.MustCompile(`\b(int|int64|uint32|float64|bool|struct|Go|\[\]string)\b`)
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			data, err := yaml.Marshal(tc.doc)
			require.NoError(t, err)
			_, err = Parse("c.yaml", data)
			require.Error(t, err, "%s", data)
			var le *LoadError
			require.True(t, errors.As(err, &le), "%v", err)
			require.NotEmpty(t, le.Errors)
			e := le.Errors[0]
			assert.Equal(t, tc.path, e.Path, "%s\n%v", data, err)
			assert.Positive(t, e.Line, "a line")
			assert.Positive(t, e.Col, "a column")
			assert.Contains(t, e.Msg, tc.want)
			assert.NotRegexp(t, goTypes, e.Msg, "no Go type names")
		})
	}
	t.Logf("%d fields checked", len(cases))
}

func TestAFileWithFiveWrongKindsListsFive(t *testing.T) {
	data := []byte(`zones:
  - apex: gslb.example.com
    ttl: thirty
    nameservers: [{name: ns1.gslb.example.com, ipv4: [127.0.0.1]}]
ring: {enabled: "yes please", seeds: 127.0.0.1:7946}
clusters:
  - {name: east, region: r1}
services:
  - name: app.gslb.example.com
    max_answers: many
    endpoints:
      - {address: 127.0.0.121, cluster: east, weight: heavy}
`)
	_, err := Parse("c.yaml", data)
	var le *LoadError
	require.True(t, errors.As(err, &le), "%v", err)
	var paths []string
	for _, e := range le.Errors {
		paths = append(paths, e.Path)
	}
	assert.Equal(t, []string{"zones[0].ttl", "ring.enabled", "ring.seeds", "services[0].max_answers", "services[0].endpoints[0].weight"}, paths, "%v", err)
}

func TestAFileWithWrongKindsAndInvalidValuesListsBoth(t *testing.T) {
	data := []byte(`zones:
  - apex: gslb.example.com
    ttl: thirty
    nameservers: [{name: ns1.gslb.example.com, ipv4: [127.0.0.1]}]
clusters:
  - {name: east, region: r1}
services:
  - name: app.gslb.example.com
    strategy: fastest
    endpoints:
      - {address: 127.0.0.121, cluster: east, weight: heavy}
      - {address: 127.0.0.122, cluster: nowhere}
`)
	_, err := Parse("c.yaml", data)
	var le *LoadError
	require.True(t, errors.As(err, &le), "%v", err)
	var got []string
	for _, e := range le.Errors {
		got = append(got, fmt.Sprintf("%s:%d", e.Path, e.Line))
	}
	assert.Equal(t, []string{"zones[0].ttl:3", "services[0].endpoints[0].weight:11", "services[0].strategy:9", "services[0].endpoints[1].cluster:12"}, got,
		"the wrong kinds first, then what the rest of the file breaks; nothing about the values left out: %v", err)
}
