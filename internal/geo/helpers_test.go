package geo

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
	"github.com/stretchr/testify/require"
)

var (
	pfx  = netip.MustParsePrefix
	addr = netip.MustParseAddr
)

// buildDB runs BuildMMDB on csv and returns the path of the file it wrote.
func buildDB(t testing.TB, csv string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "meridian.mmdb")
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = BuildMMDB(strings.NewReader(csv), f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return path
}

// rawRecord is a record of a database that BuildMMDB cannot write.
type rawRecord struct {
	cidr  string
	value mmdbtype.DataType
}

// writeDB writes records with mmdbwriter directly, as MaxMind or DB-IP
// would, and returns the file's path.
func writeDB(t testing.TB, dbType string, records ...rawRecord) string {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: dbType, IncludeReservedNetworks: true})
	require.NoError(t, err)
	for _, r := range records {
		_, n, err := net.ParseCIDR(r.cidr)
		require.NoError(t, err)
		require.NoError(t, tree.Insert(n, r.value))
	}
	path := filepath.Join(t.TempDir(), dbType+".mmdb")
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = tree.WriteTo(f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return path
}

// newLocator calls New and closes the Locator when the test ends.
func newLocator(t testing.TB, networks []Network, mmdbPath string) *Locator {
	t.Helper()
	l, err := New(networks, mmdbPath)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	return l
}

// writeFile writes data to a file in a temporary directory and returns its path.
func writeFile(t testing.TB, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "db.mmdb")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}
