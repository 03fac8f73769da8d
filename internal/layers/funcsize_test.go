package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Function sizes of the module's non-test code (issue 32): none as long as
// maxLines, and fewer than maxLong of longLines or more. A function is
// counted from its declaration to its closing brace.
const (
	maxLines  = 120
	longLines = 60
	maxLong   = 40
)

type funcSize struct {
	name  string
	lines int
}

// funcSizes parses every non-test Go file below root (the module's tree,
// without testdata, hidden directories and the separate tools module).
func funcSizes(t *testing.T, root string) []funcSize {
	t.Helper()
	fset := token.NewFileSet()
	var out []funcSize
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || path == filepath.Join(root, "tools")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Body != nil {
				n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
				rel, _ := filepath.Rel(root, path)
				out = append(out, funcSize{name: rel + ": " + fd.Name.Name, lines: n})
			}
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

func TestNoFunctionIsTooLongAndFewAreLong(t *testing.T) {
	sizes := funcSizes(t, "../..")
	require.Greater(t, len(sizes), 1000, "the walk finds the module's functions")
	var long []string
	for _, f := range sizes {
		assert.Less(t, f.lines, maxLines, "%s is %d lines: split it into named steps", f.name, f.lines)
		if f.lines >= longLines {
			long = append(long, f.name)
		}
	}
	assert.Less(t, len(long), maxLong, "functions of %d lines or more: %v", longLines, long)
}
