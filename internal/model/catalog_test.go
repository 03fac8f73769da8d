package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateCatalog(t *testing.T) {
	good := &Transfer{Allow: []string{"127.0.0.1"}, TSIGKeyFile: "xfr.key", Notify: []string{"127.0.0.1:5300"}}
	for _, tc := range []struct {
		name    string
		catalog *Catalog
		want    []string // substrings of the error; none: valid
	}{
		{name: "no catalog section is valid", catalog: nil},
		{name: "a catalog outside the served zones with a transfer section is valid",
			catalog: &Catalog{Zone: "catalog.meridian.invalid", Transfer: good}},
		{name: "a catalog without a zone names the field",
			catalog: &Catalog{Transfer: good},
			want:    []string{"catalog.zone: is required"}},
		{name: "a catalog zone that is not a domain name is refused",
			catalog: &Catalog{Zone: "bad name..", Transfer: good},
			want:    []string{`catalog.zone: "bad name.." is not a valid domain name`}},
		{name: "a catalog that is a served zone is refused",
			catalog: &Catalog{Zone: "EXAMPLE.test.", Transfer: good},
			want:    []string{`catalog.zone: "EXAMPLE.test." is served zone "example.test."`}},
		{name: "a catalog inside a served zone is refused",
			catalog: &Catalog{Zone: "catalog.example.test", Transfer: good},
			want:    []string{`catalog.zone: "catalog.example.test" is inside served zone "example.test."`}},
		{name: "a catalog above a served zone is refused",
			catalog: &Catalog{Zone: "test", Transfer: good},
			want:    []string{`catalog.zone: "test" contains served zone "example.test."`}},
		{name: "a catalog without a transfer section names the field",
			catalog: &Catalog{Zone: "catalog.invalid"},
			want:    []string{"catalog.transfer: is required"}},
		{name: "the transfer section is checked as a zone's",
			catalog: &Catalog{Zone: "catalog.invalid", Transfer: &Transfer{Allow: []string{"bogus"}, Notify: []string{"x"}}},
			want: []string{`catalog.transfer.allow[0]: "bogus" is not an IP address or prefix`,
				"catalog.transfer.tsig_key_file: is required", `catalog.transfer.notify[0]: "x" is not IP or IP:port`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := minimal()
			d.Catalog = tc.catalog
			err := Validate(d)
			if len(tc.want) == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}
