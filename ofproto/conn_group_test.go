package ofproto

import (
	"slices"
	"strings"
	"testing"
)

// groupLines are the group lines of an ovs-ofctl dump, sorted: ovs-vswitchd
// lists groups in hash order, this switch by id.
func groupLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, " group_id=") {
			lines = append(lines, l)
		}
	}
	slices.Sort(lines)
	return lines
}

// TestOfctlGroups drives the real ovs-ofctl 3.1 through groups against
// the switch and compares what it prints with what it printed against
// ovs-vswitchd 3.1 for the same commands (recorded from a session with
// ovs-vswitchd; see testdata/ovs-vswitchd/groups-meters.hex).
func TestOfctlGroups(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 3, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	of13, of15 := []string{"-O", "OpenFlow13"}, []string{"-O", "OpenFlow15"}
	for _, g := range []struct {
		opts []string
		spec string
	}{
		{of13, "group_id=1,type=all,bucket=output:1,bucket=output:2"},
		{of13, "group_id=2,type=select,bucket=weight:10,output:1,bucket=weight:20,output:2"},
		{of13, "group_id=4,type=ff,bucket=watch_port:1,output:1,bucket=watch_port:2,watch_group:1,output:2"},
		{of13, "group_id=5,type=indirect,bucket=set_field:00:00:00:00:00:01->eth_dst,group:1"},
		{of15, "group_id=3,type=select,selection_method=hash,fields(ip_src,nw_proto),bucket=output:1,bucket=output:2"},
		{of15, "group_id=7,type=select,selection_method=dp_hash,bucket=bucket_id:5,weight:3,output:1,bucket=output:2"},
		{[]string{"-O", "OpenFlow14"}, "group_id=8,type=all,bucket=output:1"},
		{[]string{"-O", "OpenFlow10"}, "group_id=9,type=all,bucket=output:1,bucket=output:2"},
	} {
		s.ofctl(t, g.opts, "add-group", g.spec)
	}
	s.ofctl(t, of13, "mod-group", "group_id=8,type=all,bucket=output:2")
	s.ofctl(t, []string{"-O", "OpenFlow13", "--may-create"}, "mod-group", "group_id=10,type=all,bucket=output:2")
	s.ofctl(t, []string{"-O", "OpenFlow13", "--may-create"}, "mod-group", "group_id=10,type=all,bucket=output:1")
	if got := groupLines(s.ofctl(t, of13, "dump-groups")); !slices.Contains(got, " group_id=10,type=all,bucket=actions=output:1") {
		t.Errorf("mod-group --may-create: %q", got)
	}
	s.ofctl(t, of13, "del-groups", "group_id=10")
	s.ofctl(t, of15, "insert-buckets", "group_id=8,command_bucket_id=last,bucket=bucket_id:9,output:3")
	s.ofctl(t, of15, "remove-buckets", "group_id=8,command_bucket_id=0")

	// ovs-vswitchd's answers, recorded.
	want13 := []string{
		" group_id=1,type=all,bucket=actions=output:1,bucket=actions=output:2",
		" group_id=2,type=select,bucket=weight:10,actions=output:1,bucket=weight:20,actions=output:2",
		" group_id=3,type=select,bucket=actions=output:1,bucket=actions=output:2",
		" group_id=4,type=ff,bucket=watch_port:1,actions=output:1,bucket=watch_port:2,watch_group:1,actions=output:2",
		" group_id=5,type=indirect,bucket=actions=set_field:00:00:00:00:00:01->eth_dst,group:1",
		" group_id=7,type=select,bucket=weight:3,actions=output:1,bucket=actions=output:2",
		" group_id=8,type=all,bucket=actions=output:3",
		" group_id=9,type=all,bucket=actions=output:1,bucket=actions=output:2",
	}
	if got := groupLines(s.ofctl(t, of13, "dump-groups")); !slices.Equal(got, want13) {
		t.Errorf("1.3 dump-groups:\n%s\nwant (ovs-vswitchd's):\n%s", strings.Join(got, "\n"), strings.Join(want13, "\n"))
	}
	want15 := []string{
		" group_id=1,type=all,bucket=bucket_id:0,actions=output:1,bucket=bucket_id:1,actions=output:2",
		" group_id=2,type=select,bucket=bucket_id:0,weight:10,actions=output:1,bucket=bucket_id:1,weight:20,actions=output:2",
		" group_id=3,type=select,selection_method=hash,fields(ip_src,nw_proto),bucket=bucket_id:0,actions=output:1,bucket=bucket_id:1,actions=output:2",
		" group_id=4,type=ff,bucket=bucket_id:0,watch_port:1,actions=output:1,bucket=bucket_id:1,watch_port:2,watch_group:1,actions=output:2",
		" group_id=5,type=indirect,bucket=bucket_id:0,actions=set_field:00:00:00:00:00:01->eth_dst,group:1",
		" group_id=7,type=select,selection_method=dp_hash,bucket=bucket_id:5,weight:3,actions=output:1,bucket=bucket_id:0,actions=output:2",
		" group_id=8,type=all,bucket=bucket_id:9,actions=output:3",
		" group_id=9,type=all,bucket=bucket_id:0,actions=output:1,bucket=bucket_id:1,actions=output:2",
	}
	if got := groupLines(s.ofctl(t, of15, "dump-groups")); !slices.Equal(got, want15) {
		t.Errorf("1.5 dump-groups:\n%s\nwant (ovs-vswitchd's):\n%s", strings.Join(got, "\n"), strings.Join(want15, "\n"))
	}
	if got := groupLines(s.ofctl(t, of15, "dump-groups", "3")); !slices.Equal(got, want15[2:3]) {
		t.Errorf("1.5 dump-groups 3: %q", got)
	}
	if got := groupLines(s.ofctl(t, nil, "dump-groups")); len(got) != 8 || got[0] != want15[0] {
		t.Errorf("1.0 dump-groups: %q", got)
	}

	// A flow to a missing group is refused as ovs-vswitchd refuses it; a
	// flow to a group counts in its ref_count.
	if out, err := s.ofctlErr(of13, "add-flow", "actions=group:99"); err == nil || !strings.Contains(err.Error(), "OFPBAC_BAD_OUT_GROUP") {
		t.Errorf("add-flow to a missing group: %v %s", err, out)
	}
	if out, err := s.ofctlErr(of13, "add-group", "group_id=1,type=all,bucket=output:1"); err == nil || !strings.Contains(err.Error(), "OFPGMFC_GROUP_EXISTS") {
		t.Errorf("add of an existing group: %v %s", err, out)
	}
	s.ofctl(t, of13, "add-flow", "priority=5,actions=group:1")
	st := s.ofctl(t, of13, "dump-group-stats")
	if !strings.Contains(st, "group_id=1,duration=") || !strings.Contains(st, ",ref_count=1,packet_count=0,byte_count=0,bucket0:packet_count=0,byte_count=0,bucket1:packet_count=0,byte_count=0") {
		t.Errorf("dump-group-stats:\n%s", st)
	}
	if out := s.ofctl(t, of13, "dump-flows", "out_group=1"); !strings.Contains(out, "actions=group:1") {
		t.Errorf("dump-flows out_group=1:\n%s", out)
	}
	feat := s.ofctl(t, of13, "dump-group-features")
	for _, want := range []string{"Types:  0xf", "Capabilities:  0x7", "max_groups=0xffffff00",
		"actions: output group set_field strip_vlan push_vlan mod_nw_ttl dec_ttl set_queue"} {
		if !strings.Contains(feat, want) {
			t.Errorf("dump-group-features lacks %q:\n%s", want, feat)
		}
	}
	// Deleting the group deletes its flow (ovs-vswitchd does the same).
	s.ofctl(t, of13, "del-groups", "group_id=1")
	if out := s.ofctl(t, of13, "dump-flows"); strings.Contains(out, "group:1") {
		t.Errorf("flow outlived its group:\n%s", out)
	}
	s.ofctl(t, of13, "del-groups")
	if got := groupLines(s.ofctl(t, of13, "dump-groups")); len(got) != 0 {
		t.Errorf("groups after del-groups: %q", got)
	}
}

// TestOfctlMetersWithoutDatapathMeters: a datapath without meters (the
// dummy) refuses meters as ovs-vswitchd refuses them where the kernel
// has none, and reports no meter features.
func TestOfctlMetersWithoutDatapathMeters(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	of13 := []string{"-O", "OpenFlow13"}
	if out, err := s.ofctlErr(of13, "add-meter", "meter=1,pktps,bands=type=drop,rate=10"); err == nil || !strings.Contains(err.Error(), "OFPMMFC_INVALID_METER") {
		t.Errorf("add-meter: %v %s", err, out)
	}
	feat := s.ofctl(t, of13, "meter-features")
	if !strings.Contains(feat, "max_meter:0 max_bands:0 max_color:0") {
		t.Errorf("meter-features:\n%s", feat)
	}
	if out := s.ofctl(t, of13, "dump-meters"); strings.Contains(out, "meter=") {
		t.Errorf("dump-meters:\n%s", out)
	}
}

// TestOfctlGroupErrors10: over OpenFlow 1.0 the group errors, which 1.0
// has no codes for, reach ovs-ofctl as ovs-vswitchd sends them (an
// NXET_VENDOR error), and ovs-ofctl names them as it does for
// ovs-vswitchd.
func TestOfctlGroupErrors10(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	s.ofctl(t, nil, "add-group", "group_id=9,type=all,bucket=output:1")
	for _, tc := range []struct{ cmd, arg, want string }{
		{"add-group", "group_id=9,type=all,bucket=output:1", "OFPT_ERROR (xid=0x6): OFPGMFC_GROUP_EXISTS"},
		{"add-flow", "priority=3,actions=group:77", "OFPT_ERROR (xid=0x6): OFPBAC_BAD_OUT_GROUP"},
	} {
		out, err := s.ofctlErr(nil, tc.cmd, tc.arg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: %v %s, want %s", tc.cmd, tc.arg, err, out, tc.want)
		}
	}
}
