package rfc2136fake

import (
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	key    = "upd."
	secret = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ="
)

func rr(t *testing.T, s string) dns.RR {
	t.Helper()
	r, err := dns.NewRR(s)
	require.NoError(t, err)
	return r
}

// send sends an UPDATE of example.com with the prerequisites and updates
// made by build, signed with secret, and returns the rcode.
func send(t *testing.T, s *Server, secret string, build func(m *dns.Msg)) int {
	t.Helper()
	m := new(dns.Msg)
	m.SetUpdate("example.com.")
	build(m)
	m.SetTsig(key, dns.HmacSHA256, 300, time.Now().Unix())
	c := &dns.Client{Net: "tcp", TsigSecret: map[string]string{key: secret}, Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, s.Addr)
	if err != nil {
		return -1
	}
	return r.Rcode
}

func TestUpdateRules(t *testing.T) {
	for _, tc := range []struct {
		name   string
		grant  string
		secret string
		build  func(t *testing.T, m *dns.Msg)
		rcode  int
		www    []string // the values of www.example.com A after
	}{
		{name: "an add without prerequisites is applied",
			build: func(t *testing.T, m *dns.Msg) { m.Insert([]dns.RR{rr(t, "www.example.com. 60 IN A 192.0.2.2")}) },
			www:   []string{"192.0.2.1", "192.0.2.2"}},
		{name: "RRset does not exist fails on an existing set",
			build: func(t *testing.T, m *dns.Msg) {
				m.RRsetNotUsed([]dns.RR{rr(t, "www.example.com. 60 IN A 192.0.2.9")})
				m.Insert([]dns.RR{rr(t, "www.example.com. 60 IN A 192.0.2.9")})
			},
			rcode: dns.RcodeYXRrset, www: []string{"192.0.2.1"}},
		{name: "RRset exists with these values passes on exactly them",
			build: func(t *testing.T, m *dns.Msg) {
				m.Used([]dns.RR{rr(t, "www.example.com. 60 IN A 192.0.2.1")})
				m.RemoveRRset([]dns.RR{rr(t, "www.example.com. 60 IN A 192.0.2.1")})
				m.Insert([]dns.RR{rr(t, "www.example.com. 60 IN A 192.0.2.7")})
			},
			www: []string{"192.0.2.7"}},
		{name: "RRset exists with other values fails and changes nothing",
			build: func(t *testing.T, m *dns.Msg) {
				m.Used([]dns.RR{rr(t, "www.example.com. 60 IN A 192.0.2.8")})
				m.RemoveRRset([]dns.RR{rr(t, "www.example.com. 60 IN A 192.0.2.1")})
			},
			rcode: dns.RcodeNXRrset, www: []string{"192.0.2.1"}},
		{name: "a name outside the grant is refused, the whole message with it",
			grant: "gslb.example.com",
			build: func(t *testing.T, m *dns.Msg) {
				m.Insert([]dns.RR{rr(t, "ns1.gslb.example.com. 60 IN A 192.0.2.53"), rr(t, "www.example.com. 60 IN A 192.0.2.3")})
			},
			rcode: dns.RcodeRefused, www: []string{"192.0.2.1"}},
		{name: "a name outside the zone is NOTZONE",
			build: func(t *testing.T, m *dns.Msg) { m.Insert([]dns.RR{rr(t, "www.example.net. 60 IN A 192.0.2.3")}) },
			rcode: dns.RcodeNotZone, www: []string{"192.0.2.1"}},
		{name: "a wrong key is refused (NOTAUTH, an error to the client) and changes nothing",
			secret: "b3RoZXItc2VjcmV0LW90aGVyLXNlY3JldC0xMjM0NTY=",
			build:  func(t *testing.T, m *dns.Msg) { m.Insert([]dns.RR{rr(t, "www.example.com. 60 IN A 192.0.2.3")}) },
			rcode:  -1, www: []string{"192.0.2.1"}},
		{name: "the apex NS cannot be deleted by RRset",
			build: func(t *testing.T, m *dns.Msg) {
				m.RemoveRRset([]dns.RR{rr(t, "example.com. 60 IN NS ns1.example.com.")})
			},
			www: []string{"192.0.2.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Options{Zone: "example.com", KeyName: key, Secret: secret, Grant: tc.grant})
			require.NoError(t, err)
			defer s.Close()
			require.NoError(t, s.Put("www.example.com. 60 IN A 192.0.2.1"))
			sec := secret
			if tc.secret != "" {
				sec = tc.secret
			}
			assert.Equal(t, tc.rcode, send(t, s, sec, func(m *dns.Msg) { tc.build(t, m) }))
			assert.Equal(t, tc.www, s.Lookup("www.example.com.", "A"))
			assert.Equal(t, []string{"ns1.example.com."}, s.Lookup("example.com.", "NS"))
			want := uint32(1)
			if tc.rcode == dns.RcodeSuccess {
				want = 2
			}
			assert.Equal(t, want, s.Serial(), "the serial moves with an applied update only")
		})
	}
}
