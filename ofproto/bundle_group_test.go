package ofproto

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBundleGroupsOvsOfctl commits group and flow mods together with
// `ovs-ofctl bundle` (OpenFlow 1.4 and 1.5, as ovn-controller sends them),
// and checks that a bundle whose last mod fails leaves groups and flows as
// they were.
func TestBundleGroupsOvsOfctl(t *testing.T) {
	needTool(t, "ovs-ofctl")
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, ver := range []string{"OpenFlow14", "OpenFlow15"} {
		t.Run(ver, func(t *testing.T) {
			opts := []string{"-O", ver}
			s.ofctl(t, opts, "del-flows")
			s.ofctl(t, opts, "del-groups")
			// ovn-controller's first bundle: clear everything, then groups
			// and the flows that use them.
			s.ofctl(t, opts, "bundle", write("first", `group delete group_id=all
flow delete
group add group_id=1,type=select,bucket=output:1,bucket=output:2
flow add priority=10,ip,actions=group:1
group add group_id=2,type=all,bucket=output:2
flow add priority=20,arp,actions=group:2
`))
			groups := s.ofctl(t, opts, "dump-groups")
			flows := s.ofctl(t, opts, "dump-flows")
			for _, want := range []string{"group_id=1,type=select", "group_id=2,type=all"} {
				if !strings.Contains(groups, want) {
					t.Errorf("dump-groups lacks %q:\n%s", want, groups)
				}
			}
			for _, want := range []string{"actions=group:1", "actions=group:2"} {
				if !strings.Contains(flows, want) {
					t.Errorf("dump-flows lacks %q:\n%s", want, flows)
				}
			}
			// A failing group mod at the end undoes the whole bundle.
			out, err := s.ofctlErr(opts, "bundle", write("bad", `group add group_id=3,type=all,bucket=output:1
flow add priority=30,udp,actions=group:3
group delete group_id=2
group add group_id=1,type=all,bucket=output:1
`))
			if err == nil || !strings.Contains(err.Error(), "OFPGMFC_GROUP_EXISTS") {
				t.Errorf("bundle adding group 1 twice: want OFPGMFC_GROUP_EXISTS, got %v %s", err, out)
			}
			if g := s.ofctl(t, opts, "dump-groups"); normalize(g) != normalize(groups) {
				t.Errorf("a failed bundle changed the groups:\n%s\nvs\n%s", g, groups)
			}
			if f := s.ofctl(t, opts, "dump-flows"); normalize(f) != normalize(flows) {
				t.Errorf("a failed bundle changed the flows:\n%s\nvs\n%s", f, flows)
			}
			// So does a failing flow mod: the group added before it goes.
			out, err = s.ofctlErr(opts, "bundle", write("badflow", `group add group_id=4,type=all,bucket=output:1
flow add priority=40,udp,actions=group:99
`))
			if err == nil || !strings.Contains(err.Error(), "OFPBAC_BAD_OUT_GROUP") {
				t.Errorf("bundle with a flow to a missing group: want OFPBAC_BAD_OUT_GROUP, got %v %s", err, out)
			}
			if g := s.ofctl(t, opts, "dump-groups"); normalize(g) != normalize(groups) {
				t.Errorf("a bundle whose flow failed changed the groups:\n%s\nvs\n%s", g, groups)
			}
			// A bundle that deletes a group deletes its flows with it.
			s.ofctl(t, opts, "bundle", write("del", "group delete group_id=2\n"))
			if f := s.ofctl(t, opts, "dump-flows"); strings.Contains(f, "group:2") || !strings.Contains(f, "group:1") {
				t.Errorf("after deleting group 2 in a bundle:\n%s", f)
			}
		})
	}
}
