package config

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"

	yaml3 "go.yaml.in/yaml/v3"

	"github.com/meridian-gslb/meridian/internal/model"
)

// parseFast is the load path of a good file: one decode into File without
// the positioned decoder's AST (go.yaml.in/yaml/v3 builds a small node
// tree, checked by plain and dropped), then the same validation and
// defaults as parseChecked. It reports false for anything it does not
// take: a decode error, a field File does not have, a second document, a
// tag, an anchor or alias, a YAML 1.1 bool spelling, a validation error,
// a decoder panic. The caller then decodes again with positions to name
// file:line: a bad file costs two decodes, a good one a fraction of the
// positioned decoder's time and allocations (BenchmarkLoad).
// TestParseFastAgreesWithChecked and FuzzFastParse check that both paths
// accept the same files into the same value.
func parseFast(data []byte) (*File, bool) {
	f, ok := decodeFast(data)
	if !ok {
		return nil, false
	}
	normalized, err := model.Normalize(&f.Desired)
	if err != nil || len(f.Server.validate()) > 0 || len(f.Notifications.Validate()) > 0 {
		return nil, false
	}
	f.Desired = *normalized
	f.Server.applyDefaults()
	f.Notifications.ApplyDefaults()
	return f, true
}

// decodeFast is the decode of parseFast (false: the positioned decoder
// decides). A file with a long services list is decoded in batches
// (decodeCut); when the cut is refused, the file is decoded whole.
func decodeFast(data []byte) (f *File, ok bool) {
	defer func() {
		if recover() != nil {
			f, ok = nil, false
		}
	}()
	if c, cut := cutServices(data); cut && c.items >= splitMin {
		if f, ok := decodeCut(c); ok {
			return f, true
		}
	}
	return decodeWhole(data)
}

// decodeWhole decodes the whole file from one node tree.
func decodeWhole(data []byte) (*File, bool) {
	doc, ok := decodeDoc(data)
	if !ok || !plain(doc, reflect.TypeFor[File]()) {
		return nil, false
	}
	f := new(File)
	if err := doc.Decode(f); err != nil {
		return nil, false
	}
	return f, true
}

// decodeDoc parses data into a node tree (false: a parse error, or a
// second document, which the positioned decoder decides on).
func decodeDoc(data []byte) (*yaml3.Node, bool) {
	dec := yaml3.NewDecoder(bytes.NewReader(data))
	var doc yaml3.Node
	if err := dec.Decode(&doc); err != nil {
		return nil, false
	}
	var extra yaml3.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return &doc, true
}

// plain reports whether n holds only what both decoders read alike into
// a value of type t: mappings whose keys are fields of t (Node.Decode
// does not refuse unknown fields), sequences, and untagged scalars that
// resolve to a string, number, true/false or null.
func plain(n *yaml3.Node, t reflect.Type) bool {
	t = deref(t)
	switch n.Kind {
	case yaml3.DocumentNode:
		return len(n.Content) == 1 && plain(n.Content[0], t)
	case yaml3.MappingNode:
		return plainMapping(n, t)
	case yaml3.SequenceNode:
		return plainSequence(n, t)
	case yaml3.ScalarNode:
		return plainScalar(n, t)
	}
	return false // aliases
}

// plainMapping is plain for a mapping node n read into t (a struct whose
// fields its keys name, or a map).
func plainMapping(n *yaml3.Node, t reflect.Type) bool {
	if n.Anchor != "" || n.Style&yaml3.TaggedStyle != 0 {
		return false
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml3.ScalarNode || k.Tag != "!!str" || k.Style&yaml3.TaggedStyle != 0 {
				return false // also the merge key <<
			}
			ft, found := yamlFields(t)[k.Value]
			if !found || !plain(n.Content[i+1], ft) {
				return false
			}
		}
		return true
	case reflect.Map:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if !plain(n.Content[i], t.Key()) || !plain(n.Content[i+1], t.Elem()) {
				return false
			}
		}
		return true
	}
	return false
}

// plainSequence is plain for a sequence node n read into the slice type t.
func plainSequence(n *yaml3.Node, t reflect.Type) bool {
	if n.Anchor != "" || n.Style&yaml3.TaggedStyle != 0 || t.Kind() != reflect.Slice {
		return false
	}
	for _, c := range n.Content {
		if c.Kind == yaml3.ScalarNode && c.Tag == "!!null" {
			return false // an empty item: yaml/v3 drops it, the positioned decoder keeps a zero value
		}
		if !plain(c, t.Elem()) {
			return false
		}
	}
	return true
}

// plainScalar is plain for a scalar node n read into t.
func plainScalar(n *yaml3.Node, t reflect.Type) bool {
	if n.Anchor != "" || n.Style&yaml3.TaggedStyle != 0 {
		return false
	}
	switch n.Tag {
	case "!!str":
		if n.Style == 0 && yaml11Bool(n.Value) {
			return false
		}
		return true
	case "!!int":
		// Into a string field the positioned decoder writes the
		// number (0017 → "17"), yaml/v3 the text: only a number
		// written as the positioned decoder writes it is taken.
		return !stringField(t) || canonicalInt(n.Value)
	case "!!float":
		return !stringField(t)
	case "!!null":
		return true
	case "!!bool":
		return n.Value == "true" || n.Value == "false"
	}
	return false // timestamps, binary
}

// stringField reports whether t is a string that yaml/v3 sets from a
// scalar's text (not an encoding.TextUnmarshaler).
func stringField(t reflect.Type) bool {
	return t.Kind() == reflect.String && !reflect.PointerTo(t).Implements(textUnmarshaler)
}

// canonicalInt reports whether s is an integer written as strconv.Itoa
// writes it.
func canonicalInt(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && strconv.Itoa(n) == s
}

// yaml11Bool: spellings YAML 1.1 read as bools that yaml/v3 still turns
// into a bool field while the positioned decoder refuses them.
func yaml11Bool(s string) bool {
	switch strings.ToLower(s) {
	case "y", "yes", "n", "no", "on", "off", "true", "false":
		return true
	}
	return false
}

var fieldTypes sync.Map // reflect.Type → map[string]reflect.Type

// yamlFields maps the YAML field names of struct type t (inline fields
// included) to their types, once per type.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldTypes.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := map[string]reflect.Type{}
	for _, name := range tags(t) {
		if ft, ok := fieldByTag(t, name); ok {
			m[name] = ft
		}
	}
	fieldTypes.Store(t, m)
	return m
}
