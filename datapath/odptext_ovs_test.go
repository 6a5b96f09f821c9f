package datapath

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestIntegrationOVSActionText holds the action text against OVS 3.1's own
// parser and formatter: each action list is installed with
// "ovs-appctl dpctl/add-flow" into an ovs-vswitchd dummy datapath, dumped
// back, and OVS's text must equal FormatActions(ParseActions(text)).
//
// It needs a running ovs-vswitchd with a dummy datapath; set
// GOVSWITCH_OVS_CTL to its unixctl socket, e.g.
//
//	ovs-vswitchd unix:db.sock --enable-dummy=override --disable-system --unixctl=$PWD/vswitchd.ctl
//	ovs-vsctl --db=unix:db.sock add-br br0 -- set bridge br0 datapath_type=dummy
//	GOVSWITCH_OVS_CTL=$PWD/vswitchd.ctl go test ./datapath -run TestIntegrationOVSActionText
func TestIntegrationOVSActionText(t *testing.T) {
	ctl := os.Getenv("GOVSWITCH_OVS_CTL")
	if ctl == "" {
		t.Skip("GOVSWITCH_OVS_CTL not set: no ovs-vswitchd to compare with")
	}
	const dp = "dummy@ovs-dummy"
	const key = "in_port(0),eth(src=00:00:00:00:00:01,dst=00:00:00:00:00:02),eth_type(0x0800)," +
		"ipv4(src=10.0.0.1,dst=10.0.0.2,proto=6,tos=0,ttl=64,frag=no),tcp(src=1,dst=2)"
	appctl := func(args ...string) (string, error) {
		out, err := exec.Command("ovs-appctl", append([]string{"-t", ctl}, args...)...).CombinedOutput()
		return string(out), err
	}
	for _, tc := range actionTextCases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.ovsSkip != "" {
				t.Skip(tc.ovsSkip)
			}
			b, err := ParseActions(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			ours := FormatActions(b)
			// ovs-vswitchd's revalidators delete flows they did not make,
			// so a dump may miss the flow: add and dump again.
			var theirs string
			for try := 0; ; try++ {
				if _, err := appctl("dpctl/del-flows", dp); err != nil {
					t.Fatal(err)
				}
				if out, err := appctl("dpctl/add-flow", dp, key, tc.in); err != nil {
					t.Fatalf("OVS rejects %q: %v %s", tc.in, err, out)
				}
				dump, err := appctl("dpctl/dump-flows", dp)
				if err != nil {
					t.Fatal(err)
				}
				var ok bool
				if _, theirs, ok = strings.Cut(strings.TrimSpace(dump), "actions:"); ok {
					break
				}
				if try == 5 {
					t.Fatalf("no actions in dump %q", dump)
				}
			}
			if theirs != ours {
				t.Errorf("OVS prints %q, we print %q", theirs, ours)
			}
		})
	}
}
