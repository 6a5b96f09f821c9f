package vswitchd

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
	"github.com/govswitch/govswitch/ovsdb/ovsdbtest"
)

// probedTunnel is one bareudp or gtpu Interface of the test.
type probedTunnel struct {
	name string
	args []string
}

func probedTunnels(prefix string) []probedTunnel {
	return []probedTunnel{
		{prefix + "m", []string{"type=bareudp", "options:remote_ip=10.1.1.2", "options:dst_port=6635", "options:payload_type=mpls"}},
		{prefix + "i", []string{"type=bareudp", "options:remote_ip=10.1.1.2", "options:dst_port=6636", "options:payload_type=ip"}},
		{prefix + "g", []string{"type=gtpu", "options:remote_ip=10.1.1.2", "options:key=flow"}},
	}
}

// probeSteps adds the tunnels to a new bridge and returns, by interface,
// "ofport error" once the error is set.
func probeSteps(t *testing.T, br string, tuns []probedTunnel, vsctl func(args ...string) string) map[string]string {
	t.Helper()
	vsctl("add-br", br)
	for _, tu := range tuns {
		vsctl(append([]string{"add-port", br, tu.name, "--", "set", "Interface", tu.name}, tu.args...)...)
	}
	out := map[string]string{}
	for _, tu := range tuns {
		var got string
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			got = strings.TrimSpace(vsctl("get", "Interface", tu.name, "ofport")) + " " + strings.TrimSpace(vsctl("get", "Interface", tu.name, "error"))
			if !strings.HasSuffix(got, " []") {
				break
			}
		}
		out[tu.name] = got
	}
	return out
}

// warnLines are the log's dpif and bridge WARN lines naming iface, less
// timestamps and sequence numbers.
func warnLines(log, iface string) []string {
	re := regexp.MustCompile(`(?m)\|(dpif|bridge)\|WARN\|(.*\b` + iface + `\b.*)$`)
	var out []string
	seen := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(log, -1) {
		l := m[1] + "|WARN|" + m[2]
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}

// TestIntegrationTunnelBareUDPGTPURefused: bareudp and gtpu Interfaces
// (issue 17) on kernels without them — UML's 6.1 and the vm bed's Debian
// 6.1 have no CONFIG_BAREUDP, and no kernel has OVS's gtpu vport — fail
// in govswitchd as in ovs-vswitchd 3.1, same boot: ofport -1, the
// Interface error "could not add network device NAME to ofproto (Address
// family not supported by protocol)", dpif's and bridge's WARN lines; and
// neither leaves a device or datapath port behind.
func TestIntegrationTunnelBareUDPGTPURefused(t *testing.T) {
	testbed.Require(t)
	n := bedSeq.Add(1)
	br := fmt.Sprintf("gv%d", n)
	tuns := probedTunnels(fmt.Sprintf("gv%dt", n))

	o := startOVS(t)
	ovs := probeSteps(t, br, tuns, func(args ...string) string { return o.must(t, "ovs-vsctl", args...) })
	ovsLog, _ := os.ReadFile(filepath.Join(o.dir, "ovs-vswitchd.log"))
	stopOVS(t, o, br)

	var log syncBuffer
	srv := ovsdbtest.Start(t)
	rundir := t.TempDir()
	d, err := NewForOVSDB(Config{Datapath: "system", Rundir: rundir, Pidfile: "-", Handlers: 1, Unixctl: filepath.Join(rundir, "gov.ctl")},
		nil, io.MultiWriter(testLog{t}, &log))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(runOVSDB(t, d, srv.Remote, 15*time.Second))
	vsctl := func(args ...string) string {
		t.Helper()
		out, err := srv.Vsctl(15*time.Second, args...)
		if err != nil {
			t.Fatalf("ovs-vsctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	gov := probeSteps(t, br, tuns, vsctl)

	for _, tu := range tuns {
		t.Logf("%s: ovs-vswitchd %s; govswitchd %s", tu.name, ovs[tu.name], gov[tu.name])
		if ovs[tu.name] != gov[tu.name] {
			t.Errorf("%s: ofport and error differ:\novs-vswitchd %s\ngovswitchd   %s", tu.name, ovs[tu.name], gov[tu.name])
		}
		want := fmt.Sprintf(`-1 "could not add network device %s to ofproto (Address family not supported by protocol)"`, tu.name)
		if gov[tu.name] != want {
			t.Errorf("%s: govswitchd %s, want %s", tu.name, gov[tu.name], want)
		}
		// ovs-vswitchd rate-limits these lines: the first port's are
		// there, the others' may not be.
		o, g := warnLines(string(ovsLog), tu.name), warnLines(log.String(), tu.name)
		t.Logf("%s WARN lines:\novs-vswitchd %q\ngovswitchd   %q", tu.name, o, g)
		if len(g) != 2 {
			t.Errorf("%s: govswitchd's dpif and bridge WARN lines %q, want one of each", tu.name, g)
		}
		if tu.name == tuns[0].name && strings.Join(o, "\n") != strings.Join(g, "\n") {
			t.Errorf("%s: WARN lines differ:\novs-vswitchd %q\ngovswitchd   %q", tu.name, o, g)
		}
	}
	for _, dev := range []string{"udp_sys_6635", "udp_sys_6636", "gtpu_sys_2152"} {
		if linkExists(dev) {
			t.Errorf("device %s left behind", dev)
		}
	}
	if out, _ := exec.Command("ovs-dpctl", "show").CombinedOutput(); strings.Contains(string(out), "_sys_") {
		t.Errorf("a tunnel vport left in the datapath:\n%s", out)
	}
}
