package vswitchd

import (
	"strings"
	"testing"

	"github.com/govswitch/govswitch/ovsdb"
)

// TestProbedTunnelOptions: the options a bareudp or gtpu vport is asked
// for with, read as ovs-vswitchd's set_tunnel_config reads them.
func TestProbedTunnelOptions(t *testing.T) {
	for _, c := range []struct {
		name, typ string
		opts      map[string]string
		port, eth uint16
		multi     bool
		err       string
	}{
		{"bareudp mpls", "bareudp", map[string]string{"dst_port": "6635", "payload_type": "mpls"}, 6635, 0x8847, true, ""},
		{"bareudp ip", "bareudp", map[string]string{"dst_port": "6636", "payload_type": "ip"}, 6636, 0x0800, true, ""},
		{"bareudp ethertype", "bareudp", map[string]string{"dst_port": "6637", "payload_type": "0x86dd"}, 6637, 0x86dd, false, ""},
		{"bareudp ipv6 is no keyword", "bareudp", map[string]string{"payload_type": "ipv6"}, 0, 0, false, `payload_type="ipv6"`},
		{"bareudp bad port", "bareudp", map[string]string{"dst_port": "70000", "payload_type": "mpls"}, 0, 0, false, `dst_port="70000"`},
		{"gtpu default port", "gtpu", map[string]string{"remote_ip": "10.1.1.2"}, 0, 0, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			port, eth, multi, err := probedTunnelOptions(&ovsdb.PortConfig{Name: "t0", Type: c.typ, Options: c.opts})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || port != c.port || eth != c.eth || multi != c.multi {
				t.Errorf("got %d %#x %t %v, want %d %#x %t", port, eth, multi, err, c.port, c.eth, c.multi)
			}
		})
	}
}

// TestOVSDBBareUDPRefusedOnDummy: on a datapath that cannot try the
// kernel's vport (the in-memory one), a bareudp or gtpu Interface is
// refused loudly, ofport -1, as not supported by govswitchd.
func TestOVSDBBareUDPRefusedOnDummy(t *testing.T) {
	s := startOVSDBSwitch(t)
	s.must(t, "add-br", "br0")
	for _, c := range [][]string{
		{"bu0", "type=bareudp", "options:remote_ip=10.1.1.2", "options:dst_port=6635", "options:payload_type=mpls"},
		{"gt0", "type=gtpu", "options:remote_ip=10.1.1.2"},
	} {
		out, _ := s.vsctl(t, append([]string{"add-port", "br0", c[0], "--", "set", "Interface", c[0]}, c[1:]...)...)
		typ := strings.TrimPrefix(c[1], "type=")
		if !strings.Contains(out, "Error detected while setting up '"+c[0]+"'") || !strings.Contains(out, `interface type \"`+typ+`\" is not supported by govswitchd`) &&
			!strings.Contains(out, `interface type "`+typ+`" is not supported by govswitchd`) {
			t.Errorf("add-port %s: ovs-vsctl said %q", c[0], out)
		}
		if got := s.must(t, "get", "Interface", c[0], "ofport"); got != "-1" {
			t.Errorf("%s ofport = %s, want -1", c[0], got)
		}
	}
}
