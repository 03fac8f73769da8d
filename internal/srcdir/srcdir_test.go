package srcdir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRootIsTheDirectoryOfMeridiansGoMod(t *testing.T) {
	root := Root()
	require.NotEmpty(t, root)
	assert.True(t, filepath.IsAbs(root))
	_, err := os.Stat(filepath.Join(root, "README.md"))
	assert.NoError(t, err)
}

func TestRootIsFoundFromTheWorkingDirectoryToo(t *testing.T) {
	want := Root()
	t.Chdir(filepath.Join(want, "deploy", "kustomize"))
	assert.Equal(t, want, find("github.com/meridian-gslb/meridian/internal/srcdir/srcdir.go"), "a -trimpath build walks up from the working directory")
	t.Chdir(t.TempDir())
	assert.Empty(t, find("github.com/meridian-gslb/meridian/internal/srcdir/srcdir.go"), "outside the tree there is no root")
}
