package config

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// MaxTypeErrors caps the type errors one file reports.
const MaxTypeErrors = 50

// typeErrorsAndRest walks the YAML of data against File's fields and returns a
// problem for every value of the wrong kind (a word where a number is
// expected, a list where a mapping is), with its path, line and column,
// what was found and what is expected, in YAML's words (never Go's types),
// up to MaxTypeErrors. The decoder stops at the first; this lists them all.
// It also returns the file decoded with every value of the wrong kind read
// as null (rest is nil when that does not decode), so that the rest of the
// file can be validated too.
func typeErrorsAndRest(name string, data []byte) (out []Error, rest *File) {
	checked := false
	defer func() {
		if recover() != nil { // a parser panic (malformed input): the decoder's error stands
			if !checked {
				out = nil
			}
			rest = nil
		}
	}()
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, nil // a syntax error: the decoder says where
	}
	bad := map[ast.Node]bool{}
	add := func(n ast.Node, path, msg string) {
		bad[n] = true
		if len(out) >= MaxTypeErrors {
			return
		}
		e := Error{File: name, Path: path, Msg: msg}
		if tk := n.GetToken(); tk != nil && tk.Position != nil {
			e.Line, e.Col = tk.Position.Line, tk.Position.Column
		}
		out = append(out, e)
	}
	for _, doc := range file.Docs {
		if doc.Body != nil {
			checkType(doc.Body, reflect.TypeOf(File{}), "", add)
		}
	}
	checked = true
	if len(out) == 0 || len(file.Docs) != 1 || file.Docs[0].Body == nil || bad[unwrap(file.Docs[0].Body)] {
		return out, nil
	}
	nullBad(file.Docs[0].Body, bad)
	var f File
	if yaml.NodeToValue(file.Docs[0].Body, &f, yaml.DisallowUnknownField()) != nil {
		return out, nil
	}
	return out, &f
}

// nullBad replaces every value in bad by a null, in mappings and lists.
func nullBad(n ast.Node, bad map[ast.Node]bool) {
	null := func(v ast.Node) ast.Node {
		var pos *token.Position
		if tk := v.GetToken(); tk != nil {
			pos = tk.Position
		}
		return ast.Null(token.New("null", "null", pos))
	}
	switch v := n.(type) {
	case *ast.AnchorNode:
		nullBad(v.Value, bad)
	case *ast.TagNode:
		nullBad(v.Value, bad)
	case *ast.MappingNode:
		for _, mv := range v.Values {
			nullBad(mv, bad)
		}
	case *ast.MappingValueNode:
		if bad[unwrap(v.Value)] {
			v.Value = null(v.Value)
			return
		}
		nullBad(v.Value, bad)
	case *ast.SequenceNode:
		for i, x := range v.Values {
			if bad[unwrap(x)] {
				v.Values[i] = null(x)
				continue
			}
			nullBad(x, bad)
		}
	}
}

var (
	bytesUnmarshaler     = reflect.TypeOf((*yaml.BytesUnmarshaler)(nil)).Elem()
	interfaceUnmarshaler = reflect.TypeOf((*yaml.InterfaceUnmarshaler)(nil)).Elem()
)

// custom reports whether t reads its own YAML (durations, addresses...):
// its own errors say what it allows.
func custom(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	for _, i := range []reflect.Type{bytesUnmarshaler, interfaceUnmarshaler, textUnmarshaler} {
		if t.Implements(i) || p.Implements(i) {
			return true
		}
	}
	return false
}

// unwrap is the node a value stands for (an anchor's or a tag's value).
func unwrap(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		default:
			return n
		}
	}
}

// found names what a node holds, in YAML's words.
func found(n ast.Node) string {
	switch v := n.(type) {
	case *ast.StringNode, *ast.LiteralNode:
		return fmt.Sprintf("%q (a string)", strings.TrimSpace(fmt.Sprint(v.GetToken().Value)))
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return v.GetToken().Value + " (a number)"
	case *ast.BoolNode:
		return v.GetToken().Value + " (a boolean)"
	case *ast.SequenceNode:
		return "a list"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	}
	return "a value"
}

func checkType(n ast.Node, t reflect.Type, path string, add func(ast.Node, string, string)) {
	n = unwrap(n)
	if n == nil {
		return
	}
	if _, ok := n.(*ast.NullNode); ok {
		return
	}
	if _, ok := n.(*ast.AliasNode); ok {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if custom(t) {
		return
	}
	at := path
	if at == "" {
		at = "the file"
	}
	switch t.Kind() {
	case reflect.Bool:
		if _, ok := n.(*ast.BoolNode); !ok {
			add(n, path, fmt.Sprintf("%s is not a boolean (expected: true or false)", found(n)))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if _, ok := n.(*ast.IntegerNode); !ok {
			add(n, path, fmt.Sprintf("%s is not a whole number (expected: an integer such as 30, without quotes)", found(n)))
		}
	case reflect.Float32, reflect.Float64:
		switch n.(type) {
		case *ast.IntegerNode, *ast.FloatNode:
		default:
			add(n, path, fmt.Sprintf("%s is not a number (expected: a number such as 0.5, without quotes)", found(n)))
		}
	case reflect.String:
		switch n.(type) {
		case *ast.SequenceNode, *ast.MappingNode, *ast.MappingValueNode:
			add(n, path, fmt.Sprintf("%s is not a single value (expected: a string)", found(n)))
		}
	case reflect.Slice:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			add(n, path, fmt.Sprintf("%s is not a list (expected: a list, e.g. [a, b] or one \"- item\" per line)", found(n)))
			return
		}
		for i, v := range seq.Values {
			checkType(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i), add)
		}
	case reflect.Map:
		for _, mv := range mappingValues(n) {
			checkType(mv.Value, t.Elem(), join(path, keyOf(mv)), add)
		}
		if mappingValues(n) == nil {
			add(n, at, fmt.Sprintf("%s is not a mapping (expected: key: value pairs)", found(n)))
		}
	case reflect.Struct:
		mvs := mappingValues(n)
		if mvs == nil {
			add(n, at, fmt.Sprintf("%s is not a mapping (expected: its fields as key: value pairs)", found(n)))
			return
		}
		for _, mv := range mvs {
			key := keyOf(mv)
			if ft, ok := fieldType(t, key); ok {
				checkType(mv.Value, ft, join(path, key), add)
			} // an unknown field: the decoder names it and the allowed ones
		}
	}
}

// mappingValues are the key: value pairs of a mapping node (nil: n is not
// a mapping).
func mappingValues(n ast.Node) []*ast.MappingValueNode {
	switch v := n.(type) {
	case *ast.MappingNode:
		if v.Values == nil {
			return []*ast.MappingValueNode{}
		}
		return v.Values
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{v}
	}
	return nil
}

func keyOf(mv *ast.MappingValueNode) string {
	if tk := mv.Key.GetToken(); tk != nil {
		return tk.Value
	}
	return mv.Key.String()
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldType is the type of struct t's field with yaml name key (inline
// structs searched too).
func fieldType(t reflect.Type, key string) (reflect.Type, bool) {
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if tag == "-" {
			continue
		}
		if tag == "" && (strings.Contains(opts, "inline") || sf.Anonymous) {
			ft := sf.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if r, ok := fieldType(ft, key); ok {
					return r, true
				}
			}
			continue
		}
		name := tag
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		if name == key {
			return sf.Type, true
		}
	}
	return nil, false
}
