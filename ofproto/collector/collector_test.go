package collector

import (
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestDialSend: every collector gets each datagram; a target that does
// not parse fails Dial with the parser's error.
func TestDialSend(t *testing.T) {
	var addrs []string
	var ls []*net.UDPConn
	for range 2 {
		l, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ls = append(ls, l)
		addrs = append(addrs, l.LocalAddr().String())
	}
	s, err := Dial("test", addrs, netip.ParseAddrPort)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if sent, failed, err := s.Send([]byte("hi")); sent != 2 || failed != 0 || err != nil {
		t.Fatalf("Send = %d, %d, %v", sent, failed, err)
	}
	for _, l := range ls {
		l.SetReadDeadline(time.Now().Add(5 * time.Second))
		b := make([]byte, 8)
		if n, err := l.Read(b); err != nil || string(b[:n]) != "hi" {
			t.Errorf("collector got %q, %v", b[:n], err)
		}
	}
	bad := errors.New("bad target")
	if _, err := Dial("test", []string{addrs[0], "x"}, func(s string) (netip.AddrPort, error) {
		if s == "x" {
			return netip.AddrPort{}, bad
		}
		return netip.ParseAddrPort(s)
	}); !errors.Is(err, bad) {
		t.Errorf("Dial with a bad target: %v", err)
	}
}
