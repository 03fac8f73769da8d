package model

import (
	"fmt"
	"math"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// manyServices is a valid desired state of n services in two zones, with
// what Normalize fills in left out: strategies, TTLs, weights, canonical
// names and addresses, check defaults.
func manyServices(n int) *Desired {
	d := &Desired{
		Zones: []Zone{
			{Apex: "A.example.test", TTL: 60, Nameservers: []Nameserver{{Name: "ns.other.test"}}},
			{Apex: "b.example.test", Nameservers: []Nameserver{{Name: "ns.other.test"}}},
		},
		Clusters: []Cluster{{Name: "east", Region: "us-east"}, {Name: "west", Region: "us-west"}},
	}
	for i := range n {
		s := Service{Name: fmt.Sprintf("S%d.%s", i, []string{"a.example.test", "B.example.test"}[i%2])}
		switch i % 4 {
		case 0:
			s.Endpoints = []Endpoint{{Address: fmt.Sprintf("2001:DB8::%x", i), Cluster: "east"}, {Address: "192.0.2.1", Cluster: "west"}}
		case 1:
			s.Strategy = StrategyFailover
			s.Failover = &FailoverPolicy{Order: []string{"west", "east"}}
			s.Endpoints = []Endpoint{{Address: "192.0.2.2", Cluster: "east"}, {Address: "192.0.2.3", Cluster: "west"}}
		case 2:
			s.Endpoints = []Endpoint{{CNAME: fmt.Sprintf("Target%d.Example.NET", i), Cluster: "east"}}
		default:
			s.HealthCheck = &Check{Kind: CheckHTTP}
			s.Endpoints = []Endpoint{{Address: "192.0.2.4", Cluster: "east"}}
		}
		d.Services = append(d.Services, s)
	}
	return d
}

func TestNormalizeOnEveryCore(t *testing.T) {
	t.Run("a long list normalized on several goroutines is the list normalized in order", func(t *testing.T) {
		d := manyServices(3000)
		defer func(m int) { parallelMin = m }(parallelMin)
		parallelMin = math.MaxInt
		serial, err := Normalize(d)
		require.NoError(t, err)
		parallelMin = 1
		parallel, err := Normalize(d)
		require.NoError(t, err)
		require.Len(t, parallel.Services, len(serial.Services))
		for i := range serial.Services { // one service's diff, not 3 000's
			if !reflect.DeepEqual(serial.Services[i], parallel.Services[i]) {
				require.Equal(t, serial.Services[i], parallel.Services[i], "service %d", i)
			}
		}
		rest, prest := *serial, *parallel
		rest.Services, prest.Services = nil, nil
		assert.Equal(t, rest, prest)
		s := parallel.Services[2000]
		assert.Equal(t, "s2000.a.example.test.", s.Name, "the services are normalized")
		assert.Equal(t, "2001:db8::7d0", s.Endpoints[0].Address)
		assert.Equal(t, 60, s.TTL)
		require.NotNil(t, s.Endpoints[0].Weight)
	})
}

func TestEachChunkCalls(t *testing.T) {
	defer func(m int) { parallelMin = m }(parallelMin)
	parallelMin = 1
	t.Run("every index is called once", func(t *testing.T) {
		calls := make([]atomic.Int32, 5000)
		eachChunk(len(calls), func(i int) { calls[i].Add(1) })
		for i := range calls {
			require.Equal(t, int32(1), calls[i].Load(), "index %d", i)
		}
	})
	t.Run("a panic on a worker is raised on the caller's goroutine", func(t *testing.T) {
		assert.PanicsWithValue(t, "boom", func() {
			eachChunk(5000, func(i int) {
				if i == 4321 {
					panic("boom")
				}
			})
		})
	})
}
