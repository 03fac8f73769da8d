package providers

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meridian-gslb/meridian/providers/plan"
)

func rec(name, typ string, values ...string) plan.Record {
	r := plan.Record{Name: name, Type: typ, TTL: 600, Values: values}
	r.Normalize()
	return r
}

func TestKeepUnseen(t *testing.T) {
	const apex = "gslb.example.com."
	current := []plan.Record{
		rec(apex, "NS", "ns-east.gslb.example.com.", "ns-gone.gslb.example.com."),
		rec("ns-east.gslb.example.com.", "A", "192.0.2.1"),
		rec("ns-gone.gslb.example.com.", "A", "192.0.2.9"),
		rec("www.example.com.", "A", "192.0.2.80"),
	}
	mine := []plan.Record{rec(apex, "NS", "ns-eu-west.gslb.example.com."), rec("ns-eu-west.gslb.example.com.", "A", "192.0.2.2")}
	unseen := func(names ...string) func(string) bool {
		return func(n string) bool {
			for _, x := range names {
				if x == n {
					return true
				}
			}
			return false
		}
	}
	for _, tc := range []struct {
		name string
		keep func(string) bool
		want []plan.Record
	}{
		{"a site running alone keeps the nameserver of a site it has not seen, with its glue", unseen("ns-east.gslb.example.com."),
			[]plan.Record{rec(apex, "NS", "ns-east.gslb.example.com.", "ns-eu-west.gslb.example.com."),
				rec("ns-east.gslb.example.com.", "A", "192.0.2.1"), rec("ns-eu-west.gslb.example.com.", "A", "192.0.2.2")}},
		{"a site it saw leave is removed as the state says", unseen(), mine},
		{"without a keep rule the delegation is the state's", nil, mine},
		{"nothing outside the delegation's own NS is taken", func(string) bool { return true },
			[]plan.Record{rec(apex, "NS", "ns-east.gslb.example.com.", "ns-eu-west.gslb.example.com.", "ns-gone.gslb.example.com."),
				rec("ns-east.gslb.example.com.", "A", "192.0.2.1"), rec("ns-eu-west.gslb.example.com.", "A", "192.0.2.2"),
				rec("ns-gone.gslb.example.com.", "A", "192.0.2.9")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, KeepUnseen(mine, current, tc.keep))
		})
	}
}
