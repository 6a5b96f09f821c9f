package vswitchd

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
	"github.com/govswitch/govswitch/ovsdb/ovsdbtest"
)

// tnlDaemon is a govswitchd on the kernel datapath configured from an
// ovsdb-server, for the tnl/* tests: its control socket and ovs-vsctl.
type tnlDaemon struct {
	d      *Daemon
	ctl    string
	rundir string
	vsctl  func(args ...string) string
}

func startTnlDaemon(t *testing.T) *tnlDaemon {
	t.Helper()
	t.Cleanup(func() { (kernelProviderForTest{}).deleteShared(t) })
	srv := ovsdbtest.Start(t)
	rundir := t.TempDir()
	ctl := filepath.Join(rundir, "gov.ctl")
	d, err := NewForOVSDB(Config{Datapath: "system", Rundir: rundir, Pidfile: "-", Handlers: 1, Unixctl: ctl}, nil, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(runOVSDB(t, d, srv.Remote, 15*time.Second))
	return &tnlDaemon{d: d, ctl: ctl, rundir: rundir, vsctl: func(args ...string) string {
		t.Helper()
		out, err := srv.Vsctl(15*time.Second, args...)
		if err != nil {
			t.Fatalf("ovs-vsctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}}
}

// sortedLines is s's lines after the first skip, sorted.
func sortedLines(s string, skip int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) < skip {
		return nil
	}
	lines = lines[skip:]
	sort.Strings(lines)
	return lines
}

// TestIntegrationTnlPortsShow: with two vxlan ports (one bridge each), a
// geneve port on UDP 6082 and a gre port, the real ovs-appctl's
// tnl/ports/show lists the three shared vports by the names and numbers
// ovs-dpctl show gives them, each with the count of tunnel ports on it,
// and -v lists what each receives, vxlan's and geneve's UDP port
// included; when the ports go, so do the lines.
func TestIntegrationTnlPortsShow(t *testing.T) {
	testbed.Require(t)
	t.Cleanup(func() { exec.Command("ip", "link", "del", "genev_sys_6082").Run() })
	g := startTnlDaemon(t)
	n := bedSeq.Add(1)
	br0, br1 := fmt.Sprintf("gs%dx", n), fmt.Sprintf("gs%dy", n)
	tun := func(i int) string { return fmt.Sprintf("gs%dt%d", n, i) }
	g.vsctl("add-br", br0, "--", "add-br", br1,
		"--", "add-port", br0, tun(0), "--", "set", "Interface", tun(0), "type=vxlan", "options:remote_ip=172.31.9.2",
		"--", "add-port", br1, tun(1), "--", "set", "Interface", tun(1), "type=vxlan", "options:remote_ip=172.31.9.3",
		"--", "add-port", br0, tun(2), "--", "set", "Interface", tun(2), "type=geneve", "options:remote_ip=172.31.9.2", "options:dst_port=6082",
		"--", "add-port", br1, tun(3), "--", "set", "Interface", tun(3), "type=gre", "options:remote_ip=172.31.9.4")
	for i := 0; i < 4; i++ {
		if e := strings.TrimSpace(g.vsctl("get", "Interface", tun(i), "error")); e != "[]" {
			t.Fatalf("Interface %s error: %s", tun(i), e)
		}
	}
	vx, ge, gre := dpPort(t, "vxlan_sys_4789"), dpPort(t, "genev_sys_6082"), dpPort(t, "gre_sys")
	r := appctlAt(t, g.ctl, "tnl/ports/show")
	if r.code != 0 || !strings.HasPrefix(r.out, "Listening ports:\n") {
		t.Fatalf("tnl/ports/show: exit %d, %q %q", r.code, r.out, r.err)
	}
	want := []string{
		"genev_sys_6082 (" + ge + ") ref_cnt=1",
		"gre_sys (" + gre + ") ref_cnt=1",
		"vxlan_sys_4789 (" + vx + ") ref_cnt=2",
	}
	if got := sortedLines(r.out, 1); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("tnl/ports/show:\n%s\nwant (sorted) %q", r.out, want)
	}
	r = appctlAt(t, g.ctl, "tnl/ports/show", "-v")
	want = []string{
		"genev_sys_6082 (" + ge + ") : eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=6082)",
		"genev_sys_6082 (" + ge + ") : eth_type(0x86dd),ipv6(proto=17,frag=no),udp(dst=6082)",
		"gre_sys (" + gre + ") : eth_type(0x0800),ipv4(proto=47,frag=no)",
		"vxlan_sys_4789 (" + vx + ") : eth_type(0x0800),ipv4(proto=17,frag=no),udp(dst=4789)",
		"vxlan_sys_4789 (" + vx + ") : eth_type(0x86dd),ipv6(proto=17,frag=no),udp(dst=4789)",
	}
	if got := sortedLines(r.out, 1); r.code != 0 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("tnl/ports/show -v: exit %d\n%s\nwant (sorted) %q", r.code, r.out, want)
	}
	if r = appctlAt(t, g.ctl, "tnl/ports/show", "-x"); r.code == 0 {
		t.Errorf("tnl/ports/show -x succeeded: %q", r.out)
	}
	g.vsctl("del-port", tun(1), "--", "del-port", tun(3))
	r = appctlAt(t, g.ctl, "tnl/ports/show")
	want = []string{"genev_sys_6082 (" + ge + ") ref_cnt=1", "vxlan_sys_4789 (" + vx + ") ref_cnt=1"}
	if got := sortedLines(r.out, 1); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after deleting %s and %s, tnl/ports/show:\n%s\nwant %q", tun(1), tun(3), r.out, want)
	}
	g.vsctl("del-br", br0, "--", "del-br", br1)
	if r = appctlAt(t, g.ctl, "tnl/ports/show"); r.out != "Listening ports:\n" {
		t.Errorf("with no tunnel port, tnl/ports/show: %q", r.out)
	}
}
