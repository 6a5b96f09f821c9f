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

// TestIntegrationTunnelEgressMark: a gre port with
// options:egress_pkt_mark=42 sends h1's pings to a Linux gretap in another
// namespace with skb mark 42: ovs-dpctl dump-flows shows set(skb_mark)
// before the tunnel output, and an iptables mark match on the underlay
// veth counts the GRE packets leaving with the mark. A mark that does not
// parse is the Interface's error.
func TestIntegrationTunnelEgressMark(t *testing.T) {
	testbed.Require(t)
	for _, m := range []string{"ip_tables", "iptable_mangle", "xt_mark"} {
		if out, err := exec.Command("modprobe", m).CombinedOutput(); err != nil {
			t.Fatalf("modprobe %s: %v\n%s", m, err, out)
		}
	}
	g := startTnlDaemon(t)
	tc := tunnelCases[2] // gre
	if tc.kind != "gre" {
		t.Fatalf("tunnelCases[2] is %s, not gre", tc.kind)
	}
	b := newTunnelBed(t, tc)
	ipt := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("iptables-legacy", append([]string{"-w", "-t", "mangle"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("iptables-legacy %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	rule := []string{"POSTROUTING", "-o", b.under, "-p", "gre", "-m", "mark", "--mark", "42"}
	all := []string{"POSTROUTING", "-o", b.under, "-p", "gre"}
	ipt(append([]string{"-A"}, rule...)...)
	ipt(append([]string{"-A"}, all...)...)
	t.Cleanup(func() {
		exec.Command("iptables-legacy", append([]string{"-w", "-t", "mangle", "-D"}, rule...)...).Run()
		exec.Command("iptables-legacy", append([]string{"-w", "-t", "mangle", "-D"}, all...)...).Run()
	})
	// counts is the packets of the mark rule and of the one for all GRE.
	counts := func() (marked, total int) {
		t.Helper()
		for _, l := range strings.Split(ipt("-L", "POSTROUTING", "-v", "-x", "-n"), "\n") {
			f := strings.Fields(l)
			if len(f) < 2 || !strings.Contains(l, b.under) || !strings.Contains(l, "gre") && !strings.Contains(l, "47") {
				continue
			}
			var n int
			fmt.Sscan(f[0], &n)
			if strings.Contains(l, "mark match 0x2a") {
				marked = n
			} else {
				total = n
			}
		}
		return marked, total
	}
	br, port := "br"+b.v1, "tun"+b.v1
	g.vsctl("add-br", br, "--", "add-port", br, b.v1, "--", "add-port", br, port,
		"--", "set", "Interface", port, "type=gre", "options:remote_ip="+b.rem, "options:egress_pkt_mark=42")
	if e := strings.TrimSpace(g.vsctl("get", "Interface", port, "error")); e != "[]" {
		t.Fatalf("Interface error: %s", e)
	}
	if loss, tcp := reach(t, b.h1, b.hr, "10.1.1.100"); loss != 0 || !tcp {
		t.Errorf("h1 -> remote: lost %d of 3 pings, TCP %v", loss, tcp)
	}
	marked, total := counts()
	t.Logf("GRE packets out of %s: %d marked 42 of %d", b.under, marked, total)
	if marked == 0 || marked != total {
		t.Errorf("GRE packets out of %s: %d with mark 42 of %d", b.under, marked, total)
	}
	dump, _ := exec.Command("ovs-dpctl", "dump-flows").CombinedOutput()
	t.Logf("ovs-dpctl dump-flows:\n%s", dump)
	want := "set(skb_mark(0x2a)),set(tunnel(dst=" + b.rem
	if !strings.Contains(string(dump), want) {
		t.Errorf("ovs-dpctl dump-flows lacks %s", want)
	}
	// Without the option the packets go unmarked.
	g.vsctl("remove", "Interface", port, "options", "egress_pkt_mark")
	ipt("-Z", "POSTROUTING")
	if loss, _ := reach(t, b.h1, b.hr, "10.1.1.100"); loss != 0 {
		t.Errorf("without egress_pkt_mark, lost %d of 3 pings", loss)
	}
	if marked, total = counts(); marked != 0 || total == 0 {
		t.Errorf("without egress_pkt_mark: %d GRE packets marked of %d", marked, total)
	}
	g.vsctl("set", "Interface", port, "options:egress_pkt_mark=0x2a")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		e := g.vsctl("get", "Interface", port, "error")
		if strings.Contains(e, "egress_pkt_mark") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("egress_pkt_mark=0x2a: Interface error %s", e)
		}
	}
}

// erspanFlows are flows with the ERSPAN fields as ovs-ofctl sends them,
// over NXM (OpenFlow 1.0) and OXM (1.3), with the options before the
// flow.
var erspanFlows = [][]string{
	{"in_port=2,tun_erspan_ver=1,tun_erspan_idx=0x7,actions=output:1"},
	{"priority=10,in_port=1,actions=set_field:2->tun_erspan_ver,set_field:1->tun_erspan_dir,set_field:0x7->tun_erspan_hwid,output:2"},
	{"-O", "OpenFlow13", "priority=20,in_port=1,tun_erspan_ver=2,tun_erspan_hwid=0x4/0x3c,actions=set_field:0x12->tun_erspan_idx,output:2"},
	{"-O", "OpenFlow15", "priority=30,tun_erspan_idx=0x100/0xff00,tun_erspan_dir=1,actions=set_field:0x5->tun_erspan_hwid,output:2"},
	// The fields in move, push/pop, load and output_reg: 8-byte
	// experimenter headers in the actions.
	{"priority=40,in_port=1,actions=move:reg0[0..5]->tun_erspan_hwid[],move:tun_erspan_idx[]->reg1[0..19],push:tun_erspan_idx[],pop:tun_erspan_hwid[0..5],load:1->tun_erspan_ver[],output:2"},
	{"-O", "OpenFlow13", "priority=50,in_port=1,actions=load:0x7->reg0[],move:reg0[0..19]->tun_erspan_idx[],load:5->tun_erspan_hwid[],output:tun_erspan_idx[0..15]"},
	{"-O", "OpenFlow15", "priority=60,in_port=1,actions=move:tun_erspan_ver[]->reg2[4..7],push:reg3[0..5],pop:tun_erspan_hwid[],output:2"},
}

// erspanFlowSteps adds erspanFlows to bridge br and returns dump-flows
// over OpenFlow 1.0, 1.3 and 1.5, timings cut.
func erspanFlowSteps(t *testing.T, ofctl func(args ...string) (string, error)) [][]string {
	t.Helper()
	for _, f := range erspanFlows {
		args := append(append([]string{}, f[:len(f)-1]...), "add-flow", f[len(f)-1])
		if out, err := ofctl(args...); err != nil {
			t.Fatalf("ovs-ofctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	var dumps [][]string
	for _, v := range []string{"OpenFlow10", "OpenFlow13", "OpenFlow15"} {
		out, err := ofctl("-O", v, "dump-flows")
		if err != nil {
			t.Fatalf("ovs-ofctl -O %s dump-flows: %v\n%s", v, err, out)
		}
		dumps = append(dumps, cutFlowLines(out))
	}
	return dumps
}

// TestIntegrationErspanFlowFields: ovs-ofctl add-flow with the
// tun_erspan_* fields in matches and set_field, over OpenFlow 1.0, 1.3
// and 1.5, is accepted by govswitchd and dumps back over each version as
// ovs-vswitchd 3.1 dumps the same flows in the same boot.
func TestIntegrationErspanFlowFields(t *testing.T) {
	testbed.Require(t)
	n := bedSeq.Add(1)
	br := fmt.Sprintf("gs%de", n)
	configure := func(vsctl func(args ...string) string) {
		vsctl("add-br", br, "--", "set", "Bridge", br, "fail-mode=secure", "protocols=OpenFlow10,OpenFlow13,OpenFlow15")
	}
	o := startOVS(t)
	configure(func(args ...string) string { return o.must(t, "ovs-vsctl", args...) })
	ovsMgmt := filepath.Join(o.dir, br+".mgmt")
	ovs := erspanFlowSteps(t, func(args ...string) (string, error) { return ofctlAt(ovsMgmt, args...) })
	o.exitCleanup(t, br)

	g := startGovSwitch(t, t.TempDir())
	configure(func(args ...string) string { t.Helper(); return g.vsctl(t, args...) })
	govMgmt := g.mgmt(t, br)
	gov := erspanFlowSteps(t, func(args ...string) (string, error) { return ofctlAt(govMgmt, args...) })
	for i, v := range []string{"OpenFlow10", "OpenFlow13", "OpenFlow15"} {
		t.Logf("%s dump-flows, ovs-vswitchd:\n%s\ngovswitchd:\n%s", v, strings.Join(ovs[i], "\n"), strings.Join(gov[i], "\n"))
		if len(gov[i]) != len(erspanFlows) || strings.Join(ovs[i], "\n") != strings.Join(gov[i], "\n") {
			t.Errorf("-O %s dump-flows differs", v)
		}
		if !strings.Contains(strings.Join(gov[i], "\n"), "tun_erspan_idx=0x7") {
			t.Errorf("-O %s dump-flows lacks tun_erspan_idx=0x7", v)
		}
	}
}

// TestIntegrationErspanFlowTraffic: an erspan port with erspan_ver=flow
// reaches a Linux ERSPAN type II device (version 1, index 7) only through
// rules that set tun_erspan_ver and tun_erspan_idx on the way out and
// match them on the way in; ovs-dpctl shows them in the datapath flow's
// key and in its set(tunnel(erspan(...))) action.
func TestIntegrationErspanFlowTraffic(t *testing.T) {
	erspanFlowTraffic(t, "in_port=1,actions=set_field:1->tun_erspan_ver,set_field:0x7->tun_erspan_idx,output:2")
}

// TestIntegrationErspanFlowMoveTraffic: as TestIntegrationErspanFlowTraffic,
// with the version set by load (a masked NXAST_REG_LOAD2, as ovs-ofctl
// writes it) and the index moved in from a register (NXAST_REG_MOVE with
// an 8-byte experimenter header), in OpenFlow 1.0.
func TestIntegrationErspanFlowMoveTraffic(t *testing.T) {
	erspanFlowTraffic(t, "in_port=1,actions=load:1->tun_erspan_ver[],load:0x7->reg5[],move:reg5[0..19]->tun_erspan_idx[],output:2")
}

func erspanFlowTraffic(t *testing.T, outFlow string) {
	testbed.Require(t)
	g := startTnlDaemon(t)
	tc := tunnelCases[4]
	if tc.kind != "erspan" {
		t.Fatalf("tunnelCases[4] is %s, not erspan", tc.kind)
	}
	b := newTunnelBed(t, tc)
	br, port := "br"+b.v1, "tun"+b.v1
	g.vsctl("add-br", br, "--", "set", "Bridge", br, "fail-mode=secure",
		"--", "add-port", br, b.v1, "--", "set", "Interface", b.v1, "ofport_request=1",
		"--", "add-port", br, port, "--", "set", "Interface", port, "type=erspan", "ofport_request=2",
		"options:remote_ip="+b.rem, "options:key=1", "options:erspan_ver=flow")
	if e := strings.TrimSpace(g.vsctl("get", "Interface", port, "error")); e != "[]" {
		t.Fatalf("Interface error: %s", e)
	}
	mgmt := filepath.Join(g.rundir, br+".mgmt")
	for _, f := range []string{
		outFlow,
		"in_port=2,tun_erspan_ver=1,tun_erspan_idx=0x7,actions=output:1",
	} {
		if out, err := ofctlAt(mgmt, "add-flow", f); err != nil {
			t.Fatalf("add-flow %s: %v\n%s", f, err, out)
		}
	}
	if loss, tcp := reach(t, b.h1, b.hr, "10.1.1.100"); loss != 0 || !tcp {
		t.Errorf("h1 -> remote: lost %d of 3 pings, TCP %v", loss, tcp)
	}
	dump, _ := exec.Command("ovs-dpctl", "dump-flows").CombinedOutput()
	t.Logf("ovs-dpctl dump-flows:\n%s", dump)
	for _, want := range []string{"set(tunnel(tun_id=0x1,dst=" + b.rem, "erspan(ver=1,idx=0x7)"} {
		if !strings.Contains(string(dump), want) {
			t.Errorf("ovs-dpctl dump-flows lacks %s", want)
		}
	}
	// The replies came in by the receive rule: with its actions changed
	// to drop, they stop.
	if out, err := ofctlAt(mgmt, "add-flow", "in_port=2,tun_erspan_ver=1,tun_erspan_idx=0x7,actions=drop"); err != nil {
		t.Fatalf("add-flow: %v\n%s", err, out)
	}
	if out, _ := b.h1.Exec("ping", "-c", "2", "-i", "0.3", "-W", "1", "10.1.1.100"); parseLoss(t, out) != 2 {
		t.Errorf("with the erspan rule dropping index 7, the pings still came back:\n%s", out)
	}
}
