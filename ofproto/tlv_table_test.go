package ofproto

import (
	"strings"
	"testing"
)

// TestTLVTableOvsOfctl drives the TLV table with the real ovs-ofctl
// (add-tlv-map, dump-tlv-map, del-tlv-map) in OpenFlow 1.0 and 1.5, the
// messages ovn-controller sends on every connection, and checks the
// refusals ovs-vswitchd gives.
func TestTLVTableOvsOfctl(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	for _, opts := range [][]string{{"-O", "OpenFlow10"}, {"-O", "OpenFlow15"}} {
		t.Run(opts[1], func(t *testing.T) {
			s.ofctl(t, opts, "del-tlv-map")
			out := squeeze(s.ofctl(t, opts, "dump-tlv-map"))
			for _, want := range []string{"max option space=64 max fields=64", "allocated option space=0"} {
				if !strings.Contains(out, want) {
					t.Errorf("empty dump-tlv-map lacks %q:\n%s", want, out)
				}
			}
			s.ofctl(t, opts, "add-tlv-map", "{class=0x102,type=0x80,len=4}->tun_metadata0")
			s.ofctl(t, opts, "add-tlv-map", "{class=0xffff,type=3,len=8}->tun_metadata5,{class=0xffff,type=4,len=0}->tun_metadata6")
			out = squeeze(s.ofctl(t, opts, "dump-tlv-map"))
			for _, want := range []string{"allocated option space=12", "\n0x102 0x80 4 tun_metadata0\n", "\n0xffff 0x3 8 tun_metadata5\n", "\n0xffff 0x4 0 tun_metadata6\n"} {
				if !strings.Contains(out, want) {
					t.Errorf("dump-tlv-map lacks %q:\n%s", want, out)
				}
			}
			for _, c := range []struct{ name, m, want string }{
				{"index mapped", "{class=0x1,type=1,len=4}->tun_metadata0", "NXTTMFC_ALREADY_MAPPED"},
				{"option mapped", "{class=0x102,type=0x80,len=4}->tun_metadata1", "NXTTMFC_DUP_ENTRY"},
				{"too much", "{class=0x2,type=1,len=124}->tun_metadata10,{class=0x2,type=2,len=124}->tun_metadata11", "NXTTMFC_TABLE_FULL"},
			} {
				if out, err := s.ofctlErr(opts, "add-tlv-map", c.m); err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: add-tlv-map %s: want %s, got %v %s", c.name, c.m, c.want, err, out)
				}
			}
			s.ofctl(t, opts, "del-tlv-map", "{class=0xffff,type=3,len=8}->tun_metadata5")
			out = squeeze(s.ofctl(t, opts, "dump-tlv-map"))
			if !strings.Contains(out, "allocated option space=4") || strings.Contains(out, "tun_metadata5") {
				t.Errorf("after del-tlv-map tun_metadata5:\n%s", out)
			}
			// A refused message left the table as it was.
			if !strings.Contains(out, "\n0xffff 0x4 0 tun_metadata6\n") || strings.Contains(out, "tun_metadata10") {
				t.Errorf("a refused add changed the table:\n%s", out)
			}
		})
	}
}

// squeeze trims each line of ovs-ofctl's table and folds its runs of
// blanks into one space.
func squeeze(out string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}
