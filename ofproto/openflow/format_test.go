package openflow

import (
	"testing"

	"github.com/govswitch/govswitch/flow"
)

func TestMatchString(t *testing.T) {
	var v6 Match
	v6.Key.EthType, v6.Mask.EthType = flow.EthTypeIPv6, 0xffff
	v6.Key.IPv6Src, v6.Mask.IPv6Src = [16]byte{0x20, 0x01, 0x0d, 0xb8}, [16]byte{0xff, 0xff, 0xff, 0xff}
	v6.Key.Regs[0], v6.Mask.Regs[0] = 5, 0xffffffff
	var odd Match
	odd.Mask.TpDst = 0xffff
	for _, tc := range []struct {
		name string
		m    Match
		want string
	}{
		{"empty", Match{}, "any"},
		{"tcp", tcpMatch(), "in_port=1,eth_type=0x800,ip_dst=192.168.0.0/255.255.0.0,nw_proto=6,tcp_dst=443"},
		{"ipv6 and register", v6, "eth_type=0x86dd,ipv6_src=2001:db8::/ffff:ffff::,reg0=0x5"},
		{"reserved in_port", inPortMatch(PortLocal), "in_port=LOCAL"},
		{"metadata masked", oxmTCP(), "in_port=1,eth_type=0x800,ip_src=10.0.0.0/255.0.0.0,nw_proto=6,tcp_dst=22,metadata=0x10/0xf0"},
		{"unrepresentable", odd, "unrepresentable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.m.String(); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestOutputsTo(t *testing.T) {
	in := Instructions{Apply: []Action{Resubmit(2, 1), Output(3, 0)}, Write: []Action{{Type: ActEnqueue, Port: 4, Queue: 1}}}
	for _, tc := range []struct {
		port uint32
		want bool
	}{{3, true}, {4, true}, {2, false}, {PortAny, true}, {PortController, false}} {
		if got := in.OutputsTo(tc.port); got != tc.want {
			t.Errorf("OutputsTo(%d) = %v", tc.port, got)
		}
	}
	if (&Instructions{}).OutputsTo(1) {
		t.Error("empty instructions output to port 1")
	}
}
