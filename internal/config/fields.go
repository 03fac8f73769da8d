package config

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// unknownFieldHint finds the unknown key at line:col and returns its field
// path and a message that lists the fields allowed at that place.
func unknownFieldHint(data []byte, line, col int, msg string) (string, string) {
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return "", msg
	}
	var found string
	for _, doc := range file.Docs {
		ast.Walk(visitorFunc(func(n ast.Node) bool {
			if tk := n.GetToken(); found == "" && tk != nil && tk.Position != nil &&
				tk.Position.Line == line && tk.Position.Column == col {
				found = strings.TrimPrefix(strings.TrimPrefix(n.GetPath(), "$"), ".")
			}
			return found == ""
		}), doc)
	}
	if found == "" {
		return "", msg
	}
	allowed := allowedAt(parentPath(found))
	if len(allowed) == 0 {
		return found, msg
	}
	return found, msg + " (allowed: " + strings.Join(allowed, ", ") + ")"
}

// findScalar returns the path and position of the first scalar whose value
// is v (used for values a type's UnmarshalText refused).
func findScalar(data []byte, v string) (path string, line, col int) {
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return "", 0, 0
	}
	for _, doc := range file.Docs {
		ast.Walk(visitorFunc(func(n ast.Node) bool {
			if path != "" {
				return false
			}
			if sn, ok := n.(ast.ScalarNode); ok && fmt.Sprint(sn.GetValue()) == v {
				if tk := n.GetToken(); tk != nil && tk.Position != nil {
					path = strings.TrimPrefix(strings.TrimPrefix(n.GetPath(), "$"), ".")
					line, col = tk.Position.Line, tk.Position.Column
				}
			}
			return true
		}), doc)
	}
	return path, line, col
}

type visitorFunc func(ast.Node) bool

func (f visitorFunc) Visit(n ast.Node) ast.Visitor {
	if f(n) {
		return f
	}
	return nil
}

var pathElem = regexp.MustCompile(`[^.\[\]]+|\[\d+\]`)

// allowedAt lists the YAML field names of the struct found at path in File.
func allowedAt(path string) []string {
	t := reflect.TypeFor[File]()
	if path != "" {
		for _, el := range pathElem.FindAllString(path, -1) {
			t = deref(t)
			if strings.HasPrefix(el, "[") {
				if t.Kind() != reflect.Slice {
					return nil
				}
				t = t.Elem()
				continue
			}
			ft, ok := fieldByTag(t, el)
			if !ok {
				return nil
			}
			t = ft
		}
	}
	t = deref(t)
	if t.Kind() != reflect.Struct {
		return nil
	}
	return tags(t)
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func fieldByTag(t reflect.Type, name string) (reflect.Type, bool) {
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	for f := range t.Fields() {
		tag := strings.Split(f.Tag.Get("yaml"), ",")
		if len(tag) > 1 && tag[1] == "inline" {
			if ft, ok := fieldByTag(deref(f.Type), name); ok {
				return ft, true
			}
			continue
		}
		if tag[0] == name {
			return f.Type, true
		}
	}
	return nil, false
}

func tags(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		tag := strings.Split(f.Tag.Get("yaml"), ",")
		if len(tag) > 1 && tag[1] == "inline" {
			out = append(out, tags(deref(f.Type))...)
		} else if tag[0] != "" && tag[0] != "-" {
			out = append(out, tag[0])
		}
	}
	return out
}
