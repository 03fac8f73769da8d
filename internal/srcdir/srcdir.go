// Package srcdir finds the root of Meridian's source tree for tests and
// render helpers that read files from it (README.md, deploy/...). Binaries
// and test binaries built with -trimpath have no absolute source paths, so
// the root is found from the working directory (go test runs a package's
// tests in its directory) by walking up to Meridian's go.mod.
package srcdir

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
)

// module is the first line Meridian's go.mod starts with.
const module = "module github.com/meridian-gslb/meridian\n"

// Root returns the absolute path of the source tree's root (the directory
// of Meridian's go.mod), or "" when it cannot be found.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return find(file)
}

// find is Root given this file's name as the compiler recorded it (a
// module-relative name under -trimpath).
func find(file string) string {
	if filepath.IsAbs(file) {
		root := filepath.Join(filepath.Dir(file), "..", "..")
		if isRoot(root) {
			return filepath.Clean(root)
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if isRoot(dir) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func isRoot(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && bytes.HasPrefix(b, []byte(module))
}
