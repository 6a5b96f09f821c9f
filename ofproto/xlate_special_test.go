package ofproto

import (
	"net"
	"testing"
)

func TestIsReservedMulticast(t *testing.T) {
	for s, want := range map[string]bool{
		"01:80:c2:00:00:00": true, "01:80:c2:00:00:02": true, "01:80:c2:00:00:0e": true, "01:80:c2:00:00:0f": true,
		"01:80:c2:00:00:10": false, "01:80:c2:00:01:00": false,
		"01:00:0c:cc:cc:cc": true, "01:00:0c:cc:cc:cd": true, "01:00:0c:cd:cd:cd": true, "01:00:0c:00:00:00": true,
		"01:00:0c:cc:cc:c0": true, "01:00:0c:cc:cc:c7": true, "01:00:0c:cc:cc:c8": false,
		"00:e0:2b:00:00:00": true, "00:e0:2b:00:00:04": true, "00:e0:2b:00:00:06": true, "00:e0:2b:00:00:05": false,
		"ff:ff:ff:ff:ff:ff": false, "33:33:00:00:00:01": false, "01:00:5e:00:00:01": false, "00:11:22:33:44:55": false,
	} {
		m, _ := net.ParseMAC(s)
		if got := isReservedMulticast([6]byte(m)); got != want {
			t.Errorf("%s: %v, want %v", s, got, want)
		}
	}
}
