package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// section returns the text of a markdown page under "## heading", up to the
// next "## ".
func section(t *testing.T, page, heading string) string {
	t.Helper()
	raw, err := os.ReadFile(page)
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(raw), "\n## "+heading+"\n")
	require.True(t, ok, "%s has a section %q", page, heading)
	body, _, _ := strings.Cut(rest, "\n## ")
	return body
}

// runnable lists the full paths ("meridian ring keys install") of every
// command a user can run: cobra's own help and completion left out.
func runnable(c *cobra.Command) []string {
	var out []string
	for _, s := range c.Commands() {
		if s.Hidden || s.Name() == "help" || s.Name() == "completion" {
			continue
		}
		if s.Runnable() {
			out = append(out, s.CommandPath())
		}
		out = append(out, runnable(s)...)
	}
	return out
}

// TestCLIReferenceListsEveryCommand: every command of the binary has a row
// in the CLI reference of docs/operations.md, starting "`meridian PATH"
// followed by its arguments or the closing backquote.
func TestCLIReferenceListsEveryCommand(t *testing.T) {
	cmds := runnable(newRoot())
	require.Contains(t, cmds, "meridian ring keys install", "the walk reaches nested commands")
	ref := section(t, filepath.Join("..", "..", "docs", "operations.md"), "CLI reference")
	for _, c := range cmds {
		assert.True(t, strings.Contains(ref, "`"+c+" ") || strings.Contains(ref, "`"+c+"`"),
			"command %q is in the CLI reference of docs/operations.md", c)
	}
}
