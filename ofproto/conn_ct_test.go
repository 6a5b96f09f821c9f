package ofproto

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/govswitch/govswitch/datapath"
)

// TestOfctlCtFlows: the conntrack flows ovs-ofctl writes are taken, and
// dump-flows prints them back as ovs-ofctl printed them itself
// (parse-flows), which is what ovs-vswitchd answers: it returns the bytes
// ovs-ofctl sent, as we do.
func TestOfctlCtFlows(t *testing.T) {
	needTool(t, "ovs-ofctl")
	const file = "openflow/testdata/ovs-ofctl/ct-flows.txt"
	parsed := regexp.MustCompile(`FLOW_MOD (?:\(OF1\.3\) )?\(xid=0x[0-9a-f]+\): ADD (?:table:\d+ )?(.*)$`)
	for _, opts := range [][]string{nil, {"-O", "OpenFlow13"}} {
		t.Run(strings.Join(append([]string{"OpenFlow10"}, opts...), " "), func(t *testing.T) {
			s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
			s.ofctl(t, opts, "add-flows", file)
			ref, err := exec.Command("ovs-ofctl", append(append([]string{}, opts...), "parse-flows", file)...).Output()
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{}
			for _, line := range strings.Split(string(ref), "\n") {
				if m := parsed.FindStringSubmatch(line); m != nil {
					want[m[1]] = true
				}
			}
			flows := parseFlows(t, s.ofctl(t, opts, "dump-flows"))
			if len(flows) != len(want) || len(want) != 10 {
				t.Fatalf("dumped %d flows, parse-flows %d, want 10", len(flows), len(want))
			}
			for _, f := range flows {
				text := f.match + " actions=" + f.actions
				if f.priority != 32768 {
					text = "priority=" + strconv.Itoa(f.priority) + "," + text
				}
				if f.match == "" {
					text = "actions=" + f.actions
				}
				if !want[text] {
					t.Errorf("dumped %q, which ovs-ofctl's own parse-flows does not print", text)
				}
			}
		})
	}
}

// TestOfctlCtDatapathSupport: on a datapath without conntrack zones the
// real ovs-ofctl hears NXBAC/NXBMC_CT_DATAPATH_SUPPORT, in OpenFlow 1.0
// (a Nicira vendor error) and 1.3 (an experimenter error).
func TestOfctlCtDatapathSupport(t *testing.T) {
	needTool(t, "ovs-ofctl")
	old := ctFeatures.Load()
	defer ctFeatures.Store(old)
	noteDatapathFeatures(datapath.Features{CtProbed: true, Recirc: true, CtState: true, Conntrack: true,
		CtMark: true, CtLabel: true, CtNAT: true, CtClear: true})
	s := newTestSwitch(t, 2, BridgeConfig{FailMode: FailSecure}, ConnConfig{})
	for _, opts := range [][]string{nil, {"-O", "OpenFlow13"}} {
		for _, tc := range []struct{ flow, want string }{
			{"ip,actions=ct(zone=1,table=1)", "NXBAC_CT_DATAPATH_SUPPORT"},
			{"ip,ct_zone=1,actions=output:2", "NXBMC_CT_DATAPATH_SUPPORT"},
		} {
			out, err := s.ofctlErr(opts, "add-flow", tc.flow)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v add-flow %s: %v %s, want %s", opts, tc.flow, err, out, tc.want)
			}
		}
		s.ofctl(t, opts, "add-flow", "ip,actions=ct(table=1)")
	}
}
