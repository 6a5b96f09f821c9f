package datapath

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestOVSActionText holds the action text against OVS 3.1's own parser
// and formatter: each action list is installed with
// "ovs-appctl dpctl/add-flow" into the dummy datapath of an ovs-vswitchd
// the test starts, dumped back, and OVS's text must equal
// FormatActions(ParseActions(text)). It is skipped where the
// openvswitch-switch binaries are not installed.
func TestOVSActionText(t *testing.T) {
	ctl := startOVS(t)
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

// startOVS starts ovsdb-server and ovs-vswitchd with a dummy datapath in a
// temporary directory, stopped when the test ends, and returns
// ovs-vswitchd's control socket.
func startOVS(t *testing.T) string {
	for _, bin := range []string{"ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-appctl"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed (Debian openvswitch-switch)", bin)
		}
	}
	const schema = "/usr/share/openvswitch/vswitch.ovsschema"
	if _, err := os.Stat(schema); err != nil {
		t.Skipf("no OVS schema: %v", err)
	}
	dir := t.TempDir()
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	db := "unix:" + dir + "/db.sock"
	run("ovsdb-tool", "create", dir+"/conf.db", schema)
	run("ovsdb-server", dir+"/conf.db", "--remote=p"+db, "--unixctl="+dir+"/ovsdb.ctl",
		"--pidfile="+dir+"/ovsdb.pid", "--log-file="+dir+"/ovsdb.log", "--detach")
	t.Cleanup(func() { _ = exec.Command("ovs-appctl", "-t", dir+"/ovsdb.ctl", "exit").Run() })
	run("ovs-vsctl", "--db="+db, "--no-wait", "init")
	run("ovs-vswitchd", db, "--enable-dummy=override", "--disable-system", "--unixctl="+dir+"/vswitchd.ctl",
		"--pidfile="+dir+"/vswitchd.pid", "--log-file="+dir+"/vswitchd.log", "--detach")
	t.Cleanup(func() { _ = exec.Command("ovs-appctl", "-t", dir+"/vswitchd.ctl", "exit").Run() })
	run("ovs-vsctl", "--db="+db, "add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=dummy")
	return dir + "/vswitchd.ctl"
}
