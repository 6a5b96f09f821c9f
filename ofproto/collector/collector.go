// Package collector holds the UDP sockets through which the sampling and
// export protocols (sFlow, NetFlow, IPFIX) reach their collectors: one
// connected socket per configured target, every datagram to each.
package collector

import (
	"fmt"
	"net"
	"net/netip"
)

// Set is one exporter's collectors.
type Set []*net.UDPConn

// Dial parses each target with parse and connects a UDP socket to it.
// proto names the protocol in errors ("sFlow target ...: ..."); on an
// error no socket is left open.
func Dial(proto string, targets []string, parse func(string) (netip.AddrPort, error)) (Set, error) {
	var s Set
	for _, t := range targets {
		ap, err := parse(t)
		if err != nil {
			s.Close()
			return nil, err
		}
		c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(ap))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("%s target %s: %w", proto, t, err)
		}
		s = append(s, c)
	}
	return s, nil
}

// Send writes b to every collector and counts the datagrams sent and
// the writes that failed (an unreachable collector refuses some), with
// the last failure's error.
func (s Set) Send(b []byte) (sent, failed uint64, lastErr error) {
	for _, c := range s {
		if _, err := c.Write(b); err != nil {
			failed++
			lastErr = err
		} else {
			sent++
		}
	}
	return sent, failed, lastErr
}

// Close closes every socket.
func (s Set) Close() {
	for _, c := range s {
		c.Close()
	}
}
