package ring

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// countingTransport wraps memberlist's network transport and counts the
// bytes it sends and receives (packets and streams), for the gossip-bytes
// metric and the ring benchmark.
type countingTransport struct {
	inner   *memberlist.NetTransport
	packets chan *memberlist.Packet
	streams chan net.Conn
	sent    *atomic.Uint64
	recv    *atomic.Uint64
	stop    chan struct{}
	wg      sync.WaitGroup
}

var _ memberlist.Transport = (*countingTransport)(nil)

func newCountingTransport(inner *memberlist.NetTransport, sent, recv *atomic.Uint64) *countingTransport {
	t := &countingTransport{
		inner:   inner,
		packets: make(chan *memberlist.Packet, 1024),
		streams: make(chan net.Conn, 64),
		sent:    sent,
		recv:    recv,
		stop:    make(chan struct{}),
	}
	t.wg.Add(2)
	go func() {
		defer t.wg.Done()
		for {
			select {
			case p := <-inner.PacketCh():
				t.recv.Add(uint64(len(p.Buf)))
				select {
				case t.packets <- p:
				case <-t.stop:
					return
				}
			case <-t.stop:
				return
			}
		}
	}()
	go func() {
		defer t.wg.Done()
		for {
			select {
			case c := <-inner.StreamCh():
				select {
				case t.streams <- &countingConn{Conn: c, t: t}:
				case <-t.stop:
					c.Close()
					return
				}
			case <-t.stop:
				return
			}
		}
	}()
	return t
}

func (t *countingTransport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	return t.inner.FinalAdvertiseAddr(ip, port)
}

func (t *countingTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	t.sent.Add(uint64(len(b)))
	return t.inner.WriteTo(b, addr)
}

func (t *countingTransport) PacketCh() <-chan *memberlist.Packet { return t.packets }

func (t *countingTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	c, err := t.inner.DialTimeout(addr, timeout)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, t: t}, nil
}

func (t *countingTransport) StreamCh() <-chan net.Conn { return t.streams }

func (t *countingTransport) Shutdown() error {
	err := t.inner.Shutdown()
	close(t.stop)
	t.wg.Wait()
	return err
}

type countingConn struct {
	net.Conn
	t *countingTransport
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.t.recv.Add(uint64(n))
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.t.sent.Add(uint64(n))
	return n, err
}
