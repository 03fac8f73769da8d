package failover

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/vote"
)

const app = "app.example.test."

// t0 is the time of the first decision of every test.
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// Endpoint addresses of the fixture's app service, one per cluster.
const (
	ipEast = "192.0.2.1"
	ipWest = "192.0.2.2"
	ipEU   = "192.0.2.3"
)

// ring4 is four probers in three regions: two in us-east.
var ring4 = []Prober{
	{Name: "east-1", Region: "us-east"},
	{Name: "east-2", Region: "us-east"},
	{Name: "west-1", Region: "us-west"},
	{Name: "eu-1", Region: "eu-west"},
}

// fixture is a normalized Desired: three clusters (eu has an agent
// heartbeat), the app service with one endpoint of weight 100 per cluster,
// and the services given.
func fixture(t testing.TB, extra ...model.Service) *model.Desired {
	t.Helper()
	d := &model.Desired{
		Zones: []model.Zone{{Apex: "example.test", Nameservers: []model.Nameserver{{Name: "ns1.example.test", IPv4: []string{"192.0.2.53"}}}}},
		Clusters: []model.Cluster{
			{Name: "east", Region: "us-east"},
			{Name: "west", Region: "us-west"},
			{Name: "eu", Region: "eu-west", Heartbeat: &model.Heartbeat{Agent: true}},
		},
		Services: append([]model.Service{{
			Name: app,
			Endpoints: []model.Endpoint{
				{Address: ipEast, Cluster: "east"},
				{Address: ipWest, Cluster: "west"},
				{Address: ipEU, Cluster: "eu"},
			},
		}}, extra...),
	}
	out, err := model.Normalize(d)
	require.NoError(t, err)
	return out
}

func weight(w int) *int { return &w }

// world runs Decide calls in sequence, feeding each result back as Prev.
type world struct {
	t       testing.TB
	desired *model.Desired
	probers []Prober
	params  Params
	prev    *Decision
	doubt   func(vote.Subject) bool // Input.Doubt
}

func newWorld(t testing.TB, d *model.Desired) *world {
	return &world{t: t, desired: d, probers: ring4, params: DefaultParams()}
}

// at decides at t0+offset. Votes without ObservedAt are observed at that time,
// votes without Region get their prober's region from the ring.
func (w *world) at(offset time.Duration, votes ...vote.Vote) *Decision {
	now := t0.Add(offset)
	vs := make([]vote.Vote, len(votes))
	for i, v := range votes {
		if v.ObservedAt.IsZero() {
			v.ObservedAt = now
		}
		if v.Region == "" {
			for _, p := range w.probers {
				if p.Name == v.Prober {
					v.Region = p.Region
				}
			}
		}
		vs[i] = v
	}
	w.prev = Decide(Input{Desired: w.desired, Votes: vs, Probers: w.probers, Prev: w.prev, Now: now, Doubt: w.doubt}, w.params)
	return w.prev
}

// says is prober's vote about the app endpoints given.
func says(prober string, st vote.Status, targets ...string) []vote.Vote {
	out := make([]vote.Vote, len(targets))
	for i, t := range targets {
		out[i] = vote.Vote{Subject: vote.EndpointSubject(app, t), Prober: prober, Status: st, Seq: 1}
	}
	return out
}

// sees is prober's heartbeat vote about cluster (Up: seen, Down: missing).
func sees(prober, cluster string, st vote.Status) vote.Vote {
	return vote.Vote{Subject: vote.ClusterSubject(cluster), Prober: prober, Status: st, Seq: 1}
}

// all joins vote lists.
func all(lists ...[]vote.Vote) []vote.Vote {
	var out []vote.Vote
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// everyoneUp is every prober of ring4 saying Up about every app endpoint.
func everyoneUp() []vote.Vote {
	var out []vote.Vote
	for _, p := range ring4 {
		out = append(out, says(p.Name, vote.Up, ipEast, ipWest, ipEU)...)
	}
	return out
}

func endpoint(t testing.TB, d *Decision, target string) EndpointState {
	t.Helper()
	e, ok := d.LookupEndpoint(app, target)
	require.True(t, ok, "endpoint %s", target)
	return e
}

func cluster(t testing.TB, d *Decision, name string) ClusterState {
	t.Helper()
	c, ok := d.LookupCluster(name)
	require.True(t, ok, "cluster %s", name)
	return c
}

// reasons lists the changes of d as "subject from->to reason".
func reasons(d *Decision) []string {
	var out []string
	for _, c := range d.Changes {
		out = append(out, c.Subject.Target+" "+c.From.String()+"->"+c.To.String()+" "+c.Reason)
	}
	return out
}
