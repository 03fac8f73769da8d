package failover

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/vote"
)

// benchInput is 5 probers in 3 regions voting on 1000 endpoints (100
// services × 10 endpoints in 4 clusters, one with a heartbeat). down is the
// share of endpoints every prober says are down.
func benchInput(b *testing.B, down float64) Input {
	d := &model.Desired{
		Zones: []model.Zone{{Apex: "example.test", Nameservers: []model.Nameserver{{Name: "ns1.example.test", IPv4: []string{"192.0.2.53"}}}}},
		Clusters: []model.Cluster{
			{Name: "c0", Region: "r0"}, {Name: "c1", Region: "r1"}, {Name: "c2", Region: "r2"},
			{Name: "c3", Region: "r2", Heartbeat: &model.Heartbeat{Agent: true}},
		},
	}
	for s := range 100 {
		svc := model.Service{Name: fmt.Sprintf("s%d.example.test", s)}
		for e := range 10 {
			svc.Endpoints = append(svc.Endpoints, model.Endpoint{Address: fmt.Sprintf("10.%d.%d.1", s, e), Cluster: fmt.Sprintf("c%d", e%4)})
		}
		d.Services = append(d.Services, svc)
	}
	n, err := model.Normalize(d)
	require.NoError(b, err)
	probers := []Prober{{"p0", "r0"}, {"p1", "r0"}, {"p2", "r1"}, {"p3", "r2"}, {"p4", "r2"}}
	votes := func(now time.Time, down float64) []vote.Vote {
		var out []vote.Vote
		i := 0
		for _, s := range n.Services {
			for _, e := range s.Endpoints {
				st := vote.Up
				if float64(i%100) < down*100 {
					st = vote.Down
				}
				i++
				for _, p := range probers {
					out = append(out, vote.Vote{Subject: vote.EndpointSubject(s.Name, e.Address), Prober: p.Name, Region: p.Region, Status: st, ObservedAt: now, Seq: 1})
				}
			}
		}
		for _, p := range probers {
			out = append(out, vote.Vote{Subject: vote.ClusterSubject("c3"), Prober: p.Name, Region: p.Region, Status: vote.Up, ObservedAt: now, Seq: 1})
		}
		return out
	}
	prev := Decide(Input{Desired: n, Votes: votes(t0, 0), Probers: probers, Now: t0}, DefaultParams())
	now := t0.Add(5 * time.Second)
	return Input{Desired: n, Votes: votes(now, down), Probers: probers, Prev: prev, Now: now}
}

func BenchmarkDecide(b *testing.B) {
	for _, bc := range []struct {
		name string
		down float64
	}{
		{"steady", 0},
		{"ten-percent-down", 0.1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			in := benchInput(b, bc.down)
			p := DefaultParams()
			b.ReportAllocs()
			for b.Loop() {
				Decide(in, p)
			}
		})
	}
}
