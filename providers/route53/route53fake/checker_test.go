package route53fake

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// httpBackend is an HTTP server on a fixed loopback address that can be
// stopped and started again on the same port.
type httpBackend struct {
	t     *testing.T
	addr  string
	srv   *httptest.Server
	mu    sync.Mutex
	hosts map[string]string // path → Host of its last request
}

func newHTTPBackend(t *testing.T) *httpBackend {
	b := &httpBackend{t: t, addr: "127.0.0.1:0", hosts: map[string]string{}}
	b.start()
	return b
}

func (b *httpBackend) start() {
	l, err := net.Listen("tcp", b.addr)
	require.NoError(b.t, err)
	b.addr = l.Addr().String()
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.hosts[r.URL.Path] = r.Host
		b.mu.Unlock()
		_, _ = io.WriteString(w, "status: all good")
	}))
	b.srv.Listener.Close()
	b.srv.Listener = l
	b.srv.Start()
}

func (b *httpBackend) stop() { b.srv.Close() }

func (b *httpBackend) port() int32 {
	_, p, _ := net.SplitHostPort(b.addr)
	n, _ := strconv.Atoi(p)
	return int32(n)
}

func (b *httpBackend) lastHost(path string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hosts[path]
}

// tcpBackend accepts and closes connections until stopped.
type tcpBackend struct {
	t    *testing.T
	addr string
	l    net.Listener
	done chan struct{}
}

func newTCPBackend(t *testing.T) *tcpBackend {
	b := &tcpBackend{t: t, addr: "127.0.0.1:0"}
	b.start()
	return b
}

func (b *tcpBackend) start() {
	l, err := net.Listen("tcp", b.addr)
	require.NoError(b.t, err)
	b.l, b.addr, b.done = l, l.Addr().String(), make(chan struct{})
	go func() {
		defer close(b.done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
}

func (b *tcpBackend) stop() {
	_ = b.l.Close()
	<-b.done
}

func (b *tcpBackend) port() int32 {
	_, p, _ := net.SplitHostPort(b.addr)
	n, _ := strconv.Atoi(p)
	return int32(n)
}

func TestCheckHealthProbesRealBackends(t *testing.T) {
	s := New(Options{AllowPrivateIPs: true, ProbeTimeout: 2 * time.Second})
	defer s.Close()
	c := client(s)
	web, tcp := newHTTPBackend(t), newTCPBackend(t)
	defer web.stop()
	defer tcp.stop()
	create := func(ref string, cfg *types.HealthCheckConfig) string {
		out, err := c.CreateHealthCheck(ctx, &r53.CreateHealthCheckInput{CallerReference: aws.String(ref), HealthCheckConfig: cfg})
		require.NoError(t, err)
		return aws.ToString(out.HealthCheck.Id)
	}
	httpID := create("http", &types.HealthCheckConfig{Type: types.HealthCheckTypeHttp, IPAddress: aws.String("127.0.0.1"), Port: aws.Int32(web.port()),
		ResourcePath: aws.String("/healthz"), FullyQualifiedDomainName: aws.String("www.example.com"), FailureThreshold: aws.Int32(2)})
	tcpID := create("tcp", &types.HealthCheckConfig{Type: types.HealthCheckTypeTcp, IPAddress: aws.String("127.0.0.1"), Port: aws.Int32(tcp.port()), FailureThreshold: aws.Int32(2)})
	matchID := create("match", &types.HealthCheckConfig{Type: types.HealthCheckTypeHttpStrMatch, IPAddress: aws.String("127.0.0.1"), Port: aws.Int32(web.port()),
		SearchString: aws.String("all good"), FailureThreshold: aws.Int32(1)})
	missID := create("miss", &types.HealthCheckConfig{Type: types.HealthCheckTypeHttpStrMatch, IPAddress: aws.String("127.0.0.1"), Port: aws.Int32(web.port()),
		SearchString: aws.String("All Good"), FailureThreshold: aws.Int32(1)})
	status := func(id string) string {
		out, err := c.GetHealthCheckStatus(ctx, &r53.GetHealthCheckStatusInput{HealthCheckId: aws.String(id)})
		require.NoError(t, err)
		return aws.ToString(out.HealthCheckObservations[0].StatusReport.Status)
	}
	healthy := func() []bool {
		return []bool{s.Healthy(httpID), s.Healthy(tcpID), s.Healthy(matchID), s.Healthy(missID)}
	}

	s.CheckHealth(ctx)
	assert.Equal(t, []bool{true, true, true, false}, healthy(), "the search string is case-sensitive")
	assert.Equal(t, "www.example.com:"+strconv.Itoa(int(web.port())), web.lastHost("/healthz"), "Host is the domain name with the non-default port")
	assert.Equal(t, "127.0.0.1:"+strconv.Itoa(int(web.port())), web.lastHost("/"), "without a domain name, the address; the path defaults to /")
	assert.Equal(t, "Success: HTTP Status Code 200, OK", status(httpID))

	web.stop()
	tcp.stop()
	s.CheckHealth(ctx)
	assert.Equal(t, []bool{true, true, false, false}, healthy(), "one failure of a threshold of 2 changes nothing yet")
	assert.True(t, strings.HasPrefix(status(httpID), "Failure: "), status(httpID))
	s.CheckHealth(ctx)
	assert.Equal(t, []bool{false, false, false, false}, healthy(), "the second consecutive failure flips the status")

	web.start()
	tcp.start()
	s.CheckHealth(ctx)
	assert.Equal(t, []bool{false, false, true, false}, healthy(), "recovering takes the threshold too")
	s.CheckHealth(ctx)
	assert.Equal(t, []bool{true, true, true, false}, healthy())
}

func TestHealthStatusRules(t *testing.T) {
	cases := []struct {
		name               string
		inverted, disabled bool
		endpointUp         bool
		healthy            bool
	}{
		{name: "an endpoint that is up is healthy", endpointUp: true, healthy: true},
		{name: "an endpoint that is down is unhealthy", endpointUp: false, healthy: false},
		{name: "inverted, an endpoint that is down is healthy", inverted: true, endpointUp: false, healthy: true},
		{name: "inverted, an endpoint that is up is unhealthy", inverted: true, endpointUp: true, healthy: false},
		{name: "disabled, a check is healthy whatever the endpoint", disabled: true, endpointUp: false, healthy: true},
		{name: "disabled and inverted, a check is unhealthy", disabled: true, inverted: true, endpointUp: true, healthy: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{})
			defer s.Close()
			id := s.PutHealthCheck(HealthCheck{Config: HealthCheckConfig{Type: "TCP", IPAddress: "198.51.99.1", Port: 22, FailureThreshold: 3, Inverted: tc.inverted, Disabled: tc.disabled}})
			s.SetHealth(id, tc.endpointUp)
			assert.Equal(t, tc.healthy, s.Healthy(id))
			assert.Equal(t, tc.healthy, s.HealthChecks()[0].Healthy)
		})
	}
}

func TestFailureThresholdCounting(t *testing.T) {
	cases := []struct {
		name    string
		results []bool
		up      bool
	}{
		{name: "a new check is healthy", up: true},
		{name: "two failures of a threshold of 3 keep it healthy", results: []bool{false, false}, up: true},
		{name: "three consecutive failures make it unhealthy", results: []bool{false, false, false}, up: false},
		{name: "a success in between starts the count again", results: []bool{false, false, true, false, false}, up: true},
		{name: "after the flip, three successes bring it back", results: []bool{false, false, false, true, true, true}, up: true},
		{name: "after the flip, two successes do not", results: []bool{false, false, false, true, true}, up: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := &healthCheck{cfg: HealthCheckConfig{FailureThreshold: 3}, up: true}
			for _, ok := range tc.results {
				h.record(ok)
			}
			assert.Equal(t, tc.up, h.up)
		})
	}
}

func TestHealthCheckerRounds(t *testing.T) {
	t.Run("a disabled check is not probed and stays healthy", func(t *testing.T) {
		s := New(Options{AllowPrivateIPs: true})
		defer s.Close()
		tcp := newTCPBackend(t)
		tcp.stop()
		id := s.PutHealthCheck(HealthCheck{Config: HealthCheckConfig{Type: "TCP", IPAddress: "127.0.0.1", Port: tcp.port(), FailureThreshold: 1, Disabled: true}})
		s.CheckHealth(ctx)
		assert.True(t, s.Healthy(id))
		out, err := client(s).GetHealthCheckStatus(ctx, &r53.GetHealthCheckStatusInput{HealthCheckId: aws.String(id)})
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(aws.ToString(out.HealthCheckObservations[0].StatusReport.Status), "Unknown"))
	})
	t.Run("a round cut short by its context counts nothing", func(t *testing.T) {
		s := New(Options{AllowPrivateIPs: true})
		defer s.Close()
		tcp := newTCPBackend(t)
		tcp.stop()
		id := s.PutHealthCheck(HealthCheck{Config: HealthCheckConfig{Type: "TCP", IPAddress: "127.0.0.1", Port: tcp.port(), FailureThreshold: 1}})
		done, cancel := context.WithCancel(ctx)
		cancel()
		s.CheckHealth(done)
		assert.True(t, s.Healthy(id))
		s.CheckHealth(ctx)
		assert.False(t, s.Healthy(id))
	})
	t.Run("StartHealthChecks runs rounds until the server closes", func(t *testing.T) {
		s := New(Options{AllowPrivateIPs: true})
		defer s.Close()
		web := newHTTPBackend(t)
		id := s.PutHealthCheck(HealthCheck{Config: HealthCheckConfig{Type: "HTTP", IPAddress: "127.0.0.1", Port: web.port(), FailureThreshold: 2}})
		s.StartHealthChecks(ctx, 20*time.Millisecond)
		web.stop()
		require.Eventually(t, func() bool { return !s.Healthy(id) }, 10*time.Second, 10*time.Millisecond)
		web.start()
		defer web.stop()
		require.Eventually(t, func() bool { return s.Healthy(id) }, 10*time.Second, 10*time.Millisecond)
	})
	t.Run("StartHealthChecks stops with its context", func(t *testing.T) {
		s := New(Options{})
		defer s.Close()
		loop, cancel := context.WithCancel(ctx)
		s.StartHealthChecks(loop, time.Hour)
		cancel()
		s.checkers.Wait()
		assert.True(t, errors.Is(loop.Err(), context.Canceled))
	})
}
