//go:build !linux

package dnsserver

import "net"

// serveUDPBatch reads one datagram at a time where recvmmsg is not
// available.
func (s *Server) serveUDPBatch(uc *net.UDPConn) { s.serveUDP(uc) }
