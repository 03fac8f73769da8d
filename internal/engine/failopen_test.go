package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failOpenFixture is one service of three endpoints, one per cluster; %s
// are each endpoint's extra fields, then each cluster's, then the
// service's when_all_down.
const failOpenFixture = `
zones:
  - apex: fo.test
    nameservers: [{name: ns1.fo.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east%s}
  - {name: west, region: us-west%s}
  - {name: eu, region: eu-west%s}
services:
  - name: app.fo.test
    when_all_down: %s
    endpoints:
      - {address: 192.0.2.11, cluster: east%s}
      - {address: 192.0.2.12, cluster: west%s}
      - {address: 192.0.2.13, cluster: eu%s}
`

func TestFailOpenHonoursAnOperatorsDown(t *testing.T) {
	const (
		probe  = "probe"  // the probes say down
		drain  = "drain"  // drained (meridian drain)
		forced = "forced" // forced down (meridian force down: state: down)
		cforce = "cforce" // its cluster forced down
		lost   = "lost"   // its cluster's heartbeat lost
	)
	for _, tc := range []struct {
		name        string
		states      [3]string // of .11, .12, .13
		whenAllDown string
		want        []string // the addresses 1 000 answers carry (none: NODATA)
		failOpen    bool
		why         string // in explain's NODATA reason or the notes
	}{
		{"every endpoint down by its probes fails open with all three", [3]string{probe, probe, probe}, "fail-open",
			[]string{"192.0.2.11", "192.0.2.12", "192.0.2.13"}, true, "every endpoint is down: fail-open answers the endpoints as if healthy"},
		{"a forced-down endpoint is never answered by fail-open", [3]string{forced, probe, probe}, "fail-open",
			[]string{"192.0.2.12", "192.0.2.13"}, true, "fail-open answers the endpoints that are not drained or forced down"},
		{"a drained endpoint is never answered by fail-open", [3]string{drain, probe, probe}, "fail-open",
			[]string{"192.0.2.12", "192.0.2.13"}, true, "fail-open answers the endpoints that are not drained or forced down"},
		{"an endpoint of a cluster forced down is never answered by fail-open", [3]string{cforce, probe, probe}, "fail-open",
			[]string{"192.0.2.12", "192.0.2.13"}, true, "fail-open answers the endpoints that are not drained or forced down"},
		{"an endpoint of a cluster whose heartbeat is lost is answered by fail-open (detection may be wrong)", [3]string{lost, probe, probe}, "fail-open",
			[]string{"192.0.2.11", "192.0.2.12", "192.0.2.13"}, true, "every endpoint is down: fail-open answers"},
		{"one forced down and two drained: nothing may be answered, so NODATA", [3]string{forced, drain, drain}, "fail-open",
			nil, false, "every endpoint is down, drained or forced down, and fail-open never answers a drained or forced-down one"},
		{"every endpoint forced down: NODATA", [3]string{forced, forced, cforce}, "fail-open",
			nil, false, "fail-open never answers a drained or forced-down one"},
		{"one forced down and two down by their probes with when_all_down nodata: NODATA", [3]string{forced, probe, probe}, "nodata",
			nil, false, "every endpoint is down and when_all_down is nodata"},
		{"one drained and two up: the two up are answered, no fail-open", [3]string{drain, "", ""}, "fail-open",
			[]string{"192.0.2.12", "192.0.2.13"}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var eps, cls [3]string
			h := fakeHealth{endpoints: map[string]State{}, clusters: map[string]State{}}
			names := [3]string{"east", "west", "eu"}
			for i, st := range tc.states {
				addr := fmt.Sprintf("192.0.2.%d", 11+i)
				switch st {
				case probe:
					h.endpoints["app.fo.test.|"+addr] = Down
				case drain:
					eps[i] = ", drain: true"
				case forced:
					eps[i] = ", state: down"
				case cforce:
					cls[i] = ", state: down"
				case lost:
					h.clusters[names[i]] = Down
				}
			}
			d := desired(t, fmt.Sprintf(failOpenFixture, cls[0], cls[1], cls[2], tc.whenAllDown, eps[0], eps[1], eps[2]))
			s, err := Compile(d, Options{Health: h})
			require.NoError(t, err)

			seen := map[string]int{}
			for i := range 1000 {
				r := lookup(s, "app.fo.test.", dns.TypeA, Client{Addr: resolver.Next(), Bits: 32 - i%2})
				require.Equal(t, dns.RcodeSuccess, r.Rcode)
				assert.Equal(t, tc.failOpen, r.FailOpen)
				for _, rr := range r.Answer {
					seen[rr.(*dns.A).A.String()]++
				}
			}
			got := make([]string, 0, len(seen))
			for a := range seen {
				got = append(got, a)
			}
			slices.Sort(got)
			if len(got) == 0 {
				got = nil
			}
			assert.Equal(t, tc.want, got, "the addresses 1 000 answers carry")

			e := s.Explain("app.fo.test.", dns.TypeA, Client{}, false)
			var kept []string
			for _, c := range e.Candidates {
				if c.Kept {
					kept = append(kept, c.Target)
				}
			}
			slices.Sort(kept)
			assert.Equal(t, tc.want, kept, "explain keeps what the answers carry")
			assert.Equal(t, tc.failOpen, e.FailOpen)
			assert.Contains(t, strings.Join(e.Notes, "\n"), tc.why)
		})
	}
}
