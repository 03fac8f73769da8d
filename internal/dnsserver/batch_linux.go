//go:build linux

package dnsserver

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// udpBatch is the number of datagrams read (recvmmsg) and written
// (sendmmsg) per system call. Under load this amortises the syscall and
// netpoller cost over many queries; when idle a read returns with one.
const udpBatch = 32

// maxUDPResponse bounds a UDP response: Respond truncates to the client's
// size, which is at most our payload size (at most 4096, see config).
const maxUDPResponse = 4096

// mmsghdr is Linux's struct mmsghdr: a msghdr and the length the kernel
// filled in, padded to the pointer size.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [unsafe.Sizeof(uintptr(0)) - 4]byte
}

// sockaddrLen is the space kept for a peer's address: a sockaddr_in6, which
// also holds a sockaddr_in.
const sockaddrLen = unix.SizeofSockaddrInet6

// mmsgConn reads and writes batches of datagrams on one UDP socket with
// recvmmsg and sendmmsg, through the runtime's poller (syscall.RawConn), so
// a reader parks like any network read when the socket is empty. Every
// buffer, header and peer address is allocated once: nothing is allocated
// per datagram (golang.org/x/net's ReadBatch allocates a net.UDPAddr for
// each).
type mmsgConn struct {
	rc syscall.RawConn

	in    [udpBatch]mmsghdr
	inIov [udpBatch]unix.Iovec
	inBuf [udpBatch][]byte
	names [udpBatch][sockaddrLen]byte

	out    [udpBatch]mmsghdr
	outIov [udpBatch]unix.Iovec
	outBuf [udpBatch][]byte

	// The system calls and their results: made once, so that a call
	// through the RawConn allocates no closure.
	recv, send func(fd uintptr) bool
	n          int // datagrams read or written by the last call
	errno      syscall.Errno
	from, to   int // send: the queued replies from..to-1
}

func newMmsgConn(uc *net.UDPConn) (*mmsgConn, error) {
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	c := &mmsgConn{rc: rc}
	c.recv = func(fd uintptr) bool {
		r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&c.in[0])), udpBatch, 0, 0, 0)
		if e == unix.EAGAIN {
			return false // park in the poller until the socket is readable
		}
		c.n, c.errno = int(r), e
		return true
	}
	c.send = func(fd uintptr) bool {
		r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&c.out[c.from])), uintptr(c.to-c.from), 0, 0, 0)
		if e == unix.EAGAIN {
			return false // wait until the socket is writable
		}
		c.n, c.errno = int(r), e
		return true
	}
	for i := range udpBatch {
		c.inBuf[i] = make([]byte, maxUDPQuery)
		c.inIov[i].Base = &c.inBuf[i][0]
		c.inIov[i].SetLen(maxUDPQuery)
		c.in[i].hdr.Iov = &c.inIov[i]
		c.in[i].hdr.SetIovlen(1)
		c.in[i].hdr.Name = &c.names[i][0]

		c.outBuf[i] = make([]byte, maxUDPResponse)
		c.out[i].hdr.Iov = &c.outIov[i]
		c.out[i].hdr.SetIovlen(1)
	}
	return c, nil
}

// read waits for at least one datagram and reads up to udpBatch of them.
func (c *mmsgConn) read() (int, error) {
	for i := range c.in {
		c.in[i].hdr.Namelen = sockaddrLen
		c.in[i].hdr.Flags = 0
		c.in[i].len = 0
	}
	if err := c.rc.Read(c.recv); err != nil {
		return 0, err
	}
	if c.errno != 0 {
		return 0, c.errno
	}
	return c.n, nil
}

// datagram returns the i-th datagram of the last read and its sender; ok is
// false for a sender that is neither IPv4 nor IPv6.
func (c *mmsgConn) datagram(i int) (data []byte, from netip.Addr, ok bool) {
	from, ok = sockaddrAddr(c.names[i][:min(c.in[i].hdr.Namelen, sockaddrLen)])
	return c.inBuf[i][:c.in[i].len], from, ok
}

// sockaddrAddr reads the address of a sockaddr_in or sockaddr_in6 as the
// kernel wrote it (family in host order, address in network order).
func sockaddrAddr(sa []byte) (netip.Addr, bool) {
	if len(sa) < 2 {
		return netip.Addr{}, false
	}
	switch *(*uint16)(unsafe.Pointer(&sa[0])) {
	case unix.AF_INET:
		if len(sa) < unix.SizeofSockaddrInet4 {
			return netip.Addr{}, false
		}
		return netip.AddrFrom4([4]byte(sa[4:8])), true
	case unix.AF_INET6:
		if len(sa) < unix.SizeofSockaddrInet6 {
			return netip.Addr{}, false
		}
		return netip.AddrFrom16([16]byte(sa[8:24])), true
	}
	return netip.Addr{}, false
}

// queue puts resp as the k-th reply, to the sender of the i-th datagram.
func (c *mmsgConn) queue(k, i int, resp []byte) {
	n := copy(c.outBuf[k], resp)
	c.outIov[k].Base = &c.outBuf[k][0]
	c.outIov[k].SetLen(n)
	c.out[k].hdr.Name = &c.names[i][0]
	c.out[k].hdr.Namelen = c.in[i].hdr.Namelen
}

var errSendNothing = errors.New("sendmmsg sent nothing")

// write sends the first k queued replies, as many per call as the kernel
// takes. A reply the kernel refuses (sendmmsg fails on its first message,
// e.g. an ICMP error queued for that peer) is skipped, so one peer cannot
// cost the others their replies; the last such error is returned.
func (c *mmsgConn) write(k int) (int, error) {
	sent := 0
	var last error
	for sent < k {
		c.from, c.to = sent, k
		if err := c.rc.Write(c.send); err != nil {
			return sent, err // the socket is closed
		}
		n := c.n
		switch {
		case c.errno != 0:
			last, n = c.errno, 1
		case n <= 0:
			last, n = errSendNothing, 1
		}
		sent += n
	}
	return sent, last
}

// serveUDPBatch is serveUDP with recvmmsg/sendmmsg: it reads up to udpBatch
// queries, answers each, and writes the answers in one call.
func (s *Server) serveUDPBatch(uc *net.UDPConn) {
	defer s.wg.Done()
	w := s.newWorker()
	c, err := newMmsgConn(uc)
	if err != nil {
		s.log.Error("dns udp: batch reads unavailable, reading one datagram at a time", "err", err)
		s.wg.Add(1)
		s.serveUDP(uc)
		return
	}
	for {
		n, err := c.read()
		if err != nil {
			if s.stopped(err) {
				return
			}
			continue
		}
		start := time.Now()
		k := 0
		for i := range n {
			in, from, ok := c.datagram(i)
			if !ok {
				continue
			}
			resp := w.serveUDP(in, from, start)
			if resp == nil {
				continue
			}
			if len(resp) > maxUDPResponse {
				continue // cannot happen: Respond truncates to at most our payload size
			}
			c.queue(k, i, resp)
			k++
		}
		if k > 0 {
			if _, err := c.write(k); err != nil && !s.closed.Load() {
				s.log.Debug("dns udp write", "err", err)
			}
			d := time.Since(start).Seconds() / float64(k)
			for range k {
				w.udpDur.Observe(d)
			}
		}
	}
}
