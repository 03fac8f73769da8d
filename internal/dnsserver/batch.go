package dnsserver

import (
	"net"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// udpBatch is the number of datagrams read (recvmmsg) and written
// (sendmmsg) per system call. Under load this amortises the syscall and
// netpoller cost over many queries; when idle a read returns with one.
const udpBatch = 32

// maxUDPResponse bounds a UDP response: Respond truncates to the client's
// size, which is at most our payload size (at most 4096, see config).
const maxUDPResponse = 4096

type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

func newBatchConn(uc *net.UDPConn) batchConn {
	if a, ok := uc.LocalAddr().(*net.UDPAddr); ok && a.IP.To4() != nil {
		return ipv4.NewPacketConn(uc)
	}
	return ipv6.NewPacketConn(uc)
}

// serveUDPBatch is serveUDP with recvmmsg/sendmmsg: it reads up to udpBatch
// queries, answers each, and writes the answers in one call.
func (s *Server) serveUDPBatch(uc *net.UDPConn) {
	defer s.wg.Done()
	w := s.newWorker()
	bc := newBatchConn(uc)
	in := make([]ipv4.Message, udpBatch)
	out := make([]ipv4.Message, udpBatch)
	outBufs := make([][]byte, udpBatch)
	for i := range in {
		in[i].Buffers = [][]byte{make([]byte, maxUDPQuery)}
		outBufs[i] = make([]byte, maxUDPResponse)
		out[i].Buffers = [][]byte{nil}
	}
	for {
		n, err := bc.ReadBatch(in, 0)
		if err != nil {
			if s.stopped(err) {
				return
			}
			continue
		}
		start := time.Now()
		k := 0
		for i := range n {
			from, ok := in[i].Addr.(*net.UDPAddr)
			if !ok {
				continue
			}
			resp := w.serveUDP(in[i].Buffers[0][:in[i].N], from.AddrPort().Addr(), start)
			if resp == nil {
				continue
			}
			if len(resp) > maxUDPResponse {
				continue // cannot happen: Respond truncates to at most our payload size
			}
			out[k].Buffers[0] = outBufs[k][:copy(outBufs[k], resp)]
			out[k].Addr = from
			k++
		}
		for sent := 0; sent < k; {
			m, err := bc.WriteBatch(out[sent:k], 0)
			if err != nil {
				if !s.closed.Load() {
					s.log.Debug("dns udp write", "err", err)
				}
				break
			}
			sent += m
		}
		if k > 0 {
			d := time.Since(start).Seconds() / float64(k)
			for range k {
				w.udpDur.Observe(d)
			}
		}
	}
}
