package ovsdb

import (
	"net"
	"strings"
	"testing"
)

func mustMAC(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// TestPickBridgeAddress: the rules of ovs-vswitchd's
// bridge_pick_local_hw_addr and bridge_pick_datapath_id.
func TestPickBridgeAddress(t *testing.T) {
	const uuid = "f0e1d2c3-b4a5-4697-8899-aabbccddeeff"
	ports := []PortState{
		{Name: "br0", OFPort: 65534, Known: true, MAC: mustMAC("00:00:00:00:00:01")}, // the bridge's own: never
		{Name: "veth0", OFPort: 1, Known: true, MAC: mustMAC("02:aa:bb:cc:dd:ee")},   // locally administered
		{Name: "eth1", OFPort: 2, Known: true, MAC: mustMAC("00:1b:21:00:00:09")},
		{Name: "eth2", OFPort: 3, Known: true, MAC: mustMAC("00:1b:21:00:00:05")},
		{Name: "nic", OFPort: 4, Known: true, MAC: mustMAC("00:23:20:80:00:01")}, // Nicira random
		{Name: "bond-b", OFPort: 5, Known: true, MAC: mustMAC("00:1b:21:00:00:07")},
		{Name: "bond-a", OFPort: 6, Known: true, MAC: mustMAC("00:1b:21:00:00:08")},
		{Name: "mir", OFPort: 7, Known: true, MAC: mustMAC("00:00:5e:00:00:01")},
	}
	all := []PortConfig{{Name: "br0"}, {Name: "veth0"}, {Name: "eth1"}, {Name: "eth2"}, {Name: "nic"},
		{Name: "bond-a"}, {Name: "bond-b"}, {Name: "mir"}}
	for _, c := range []struct {
		name string
		bc   BridgeConfig
		want string
		dpid uint64
	}{
		{"lowest usable port address, mirror output left out",
			BridgeConfig{UUID: uuid, Ports: all, Mirrors: []MirrorConfig{{OutputPort: "mir"}},
				Bonds: []BondConfig{{Name: "bond", Members: []string{"bond-a", "bond-b"}}}},
			"00:1b:21:00:00:05", 0x001b21000005},
		{"a bond counts by its first member by name",
			BridgeConfig{UUID: uuid, Ports: []PortConfig{{Name: "bond-a"}, {Name: "bond-b"}, {Name: "eth1"}},
				Bonds: []BondConfig{{Name: "bond", Members: []string{"bond-a", "bond-b"}}}},
			"00:1b:21:00:00:08", 0x001b21000008},
		{"the mirror output port would be lowest",
			BridgeConfig{UUID: uuid, Ports: all, Bonds: []BondConfig{{Name: "bond", Members: []string{"bond-a", "bond-b"}}}},
			"00:00:5e:00:00:01", 0x00005e000001},
		{"no usable port: from the UUID, unicast and local",
			BridgeConfig{UUID: uuid, Ports: []PortConfig{{Name: "br0"}, {Name: "veth0"}, {Name: "nic"}}},
			"c2:d2:e1:f0:97:46", 0xc2d2e1f09746},
		{"hwaddr wins, datapath-id wins",
			BridgeConfig{UUID: uuid, Ports: all, HWAddr: mustMAC("00:11:22:33:44:55"), DatapathID: 0xabc},
			"00:11:22:33:44:55", 0xabc},
	} {
		mac, dpid := pickBridgeAddress(&c.bc, ports)
		if mac.String() != c.want || dpid != c.dpid {
			t.Errorf("%s: %s %016x, want %s %016x", c.name, mac, dpid, c.want, c.dpid)
		}
	}
}

func TestParseBridgeAddress(t *testing.T) {
	for _, c := range []struct {
		oc      map[string]string
		mac     string
		dpid    uint64
		problem string
	}{
		{map[string]string{"hwaddr": "00:11:22:33:44:55", "datapath-id": "0000000000000abc"}, "00:11:22:33:44:55", 0xabc, ""},
		{map[string]string{"datapath-id": "0x12"}, "", 0x12, ""},
		{map[string]string{"datapath-id": "0X0000000000000012"}, "", 0x12, ""},
		{map[string]string{"datapath-id": "12"}, "", 0, "datapath-id"},
		{map[string]string{"datapath-id": "0000000000000000"}, "", 0, "datapath-id"},
		{map[string]string{"datapath-id": "000000000000zzzz"}, "", 0, "datapath-id"},
		{map[string]string{"hwaddr": "01:00:00:00:00:01"}, "", 0, "multicast"},
		{map[string]string{"hwaddr": "00:00:00:00:00:00"}, "", 0, "zero"},
		{map[string]string{"hwaddr": "bogus"}, "", 0, "not an Ethernet address"},
	} {
		bc := BridgeConfig{Name: "br0"}
		var problems []string
		parseBridgeAddress(c.oc, &bc, &problems)
		got := ""
		if bc.HWAddr != nil {
			got = bc.HWAddr.String()
		}
		if got != c.mac || bc.DatapathID != c.dpid {
			t.Errorf("%v: %q %x, want %q %x", c.oc, got, bc.DatapathID, c.mac, c.dpid)
		}
		if (c.problem == "") != (len(problems) == 0) || c.problem != "" && !strings.Contains(strings.Join(problems, ";"), c.problem) {
			t.Errorf("%v: problems %q, want one with %q", c.oc, problems, c.problem)
		}
	}
}

// TestWarnUnsupportedConfig: OVS settings govswitchd lacks draw a problem
// unless they hold OVS's default; settings it has draw none.
func TestWarnUnsupportedConfig(t *testing.T) {
	r := &Rows{
		Root: &OpenvSwitch{OtherConfig: map[string]string{"flow-restore-wait": "true", "tc-policy": "skip_sw", "hw-offload": "false", "flow-limit": "1000"}},
		Bridges: map[string]*Bridge{"b": {Name: "br0", OtherConfig: map[string]string{
			"in-band-queue": "3", "controller-queue-size": "100", "hwaddr": "00:11:22:33:44:55"}}},
		Ports: map[string]*Port{"p": {Name: "p1", OtherConfig: map[string]string{"priority-tags": "true"}}},
	}
	var problems []string
	warnUnsupportedConfig(r, &problems)
	got := strings.Join(problems, "\n")
	for _, want := range []string{`Open_vSwitch other_config:tc-policy="skip_sw"`, `bridge br0 other_config:in-band-queue="3"`} {
		if !strings.Contains(got, want) {
			t.Errorf("no problem for %s in:\n%s", want, got)
		}
	}
	// priority-tags is implemented (ofproto.PortVLAN.PriorityTags).
	if strings.Contains(got, "priority-tags") || len(problems) != 2 {
		t.Errorf("%d problems, want the 2 above:\n%s", len(problems), got)
	}
}
