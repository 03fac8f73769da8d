//go:build linux

package dnsserver

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMmsgConnReadsABatchAndRepliesToEachSender(t *testing.T) {
	for _, tc := range []struct {
		name, network, addr string
	}{
		{"IPv4 senders", "udp4", "127.0.0.1:0"},
		{"IPv6 senders", "udp6", "[::1]:0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := net.ListenUDP(tc.network, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(tc.addr)))
			if err != nil && tc.network == "udp6" {
				t.Skipf("no IPv6 loopback: %v", err)
			}
			require.NoError(t, err)
			defer srv.Close()
			c, err := newMmsgConn(srv)
			require.NoError(t, err)

			const clients = 3
			var conns [clients]*net.UDPConn
			for j := range conns {
				conns[j], err = net.DialUDP(tc.network, nil, srv.LocalAddr().(*net.UDPAddr))
				require.NoError(t, err)
				defer conns[j].Close()
				_, err = conns[j].Write([]byte(fmt.Sprintf("query %d", j)))
				require.NoError(t, err)
			}
			got := 0
			k := 0
			for got < clients {
				n, err := c.read()
				require.NoError(t, err)
				for i := range n {
					data, from, ok := c.datagram(i)
					require.True(t, ok)
					assert.Equal(t, srv.LocalAddr().(*net.UDPAddr).AddrPort().Addr(), from, "the sender's address")
					c.queue(k, i, append([]byte("reply to "), data...))
					k++
				}
				got += n
			}
			sent, err := c.write(k)
			require.NoError(t, err)
			assert.Equal(t, clients, sent)
			for j, conn := range conns {
				require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
				buf := make([]byte, 64)
				n, err := conn.Read(buf)
				require.NoError(t, err)
				assert.Equal(t, fmt.Sprintf("reply to query %d", j), string(buf[:n]), "each reply goes to the socket that sent the query")
			}
		})
	}
}

func TestMmsgConnAllocatesNothingPerBatch(t *testing.T) {
	srv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer srv.Close()
	cl, err := net.DialUDP("udp4", nil, srv.LocalAddr().(*net.UDPAddr))
	require.NoError(t, err)
	defer cl.Close()
	c, err := newMmsgConn(srv)
	require.NoError(t, err)
	query, reply := []byte("q"), make([]byte, 16)
	allocs := testing.AllocsPerRun(200, func() {
		for range 4 {
			_, _ = cl.Write(query)
		}
		for got := 0; got < 4; {
			n, err := c.read()
			if err != nil {
				panic(err)
			}
			for i := range n {
				data, _, _ := c.datagram(i)
				c.queue(i, i, data)
			}
			if _, err := c.write(n); err != nil {
				panic(err)
			}
			got += n
		}
		for range 4 {
			_, _ = cl.Read(reply)
		}
	})
	assert.Zero(t, allocs, "allocations per batch of 4 queries and replies (client side included)")
}

func TestSockaddrAddrReadsOnlyInetFamilies(t *testing.T) {
	v4 := make([]byte, 16)
	v4[0], v4[1] = 2, 0 // AF_INET, host order (little endian)
	copy(v4[4:8], []byte{192, 0, 2, 7})
	a, ok := sockaddrAddr(v4)
	require.True(t, ok)
	assert.Equal(t, netip.MustParseAddr("192.0.2.7"), a)

	_, ok = sockaddrAddr(v4[:8])
	assert.False(t, ok, "a short sockaddr_in is refused")
	_, ok = sockaddrAddr([]byte{1, 0, 0, 0}) // AF_UNIX
	assert.False(t, ok, "another family is refused")
	_, ok = sockaddrAddr(nil)
	assert.False(t, ok)
}
