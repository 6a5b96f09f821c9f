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
)

// deleteFieldRun is what one switch did in TestIntegrationDeleteField.
type deleteFieldRun struct {
	loss      int
	unmapped  string   // the error of a delete_field of an unmapped field
	ofFlows   []string // ovs-ofctl dump-flows, statistics cut
	ofFlows15 []string // the same in OpenFlow 1.5
	insts15   []string // the switch's own 1.5 instruction bytes, hex, sorted
	matches15 []string // and match bytes
	dpFlows   []string // ovs-dpctl dump-flows of the ICMP megaflows, statistics cut
}

// TestIntegrationDeleteField: delete_field:tun_metadata0 (OVS 3.1's
// NXAST_DELETE_FIELD) between a bridge and a Linux geneve device in
// external mode whose route adds option {class=0x102,type=0x80} 0xa. The
// bridge maps that option to tun_metadata0 and {0x102,0x81} to
// tun_metadata1 (add-tlv-map). From the tunnel, ICMP with
// tun_metadata0=0xa deletes the field and resubmits to a table that drops
// what still has tun_metadata0=0xa: the pings get through only if the
// deletion took. Towards the tunnel, the bridge sets both options and
// deletes tun_metadata0: the megaflow's set(tunnel(...)) carries only
// {0x102,0x81}. The same steps run against ovs-vswitchd 3.1 and govswitchd
// in one boot; pings, the refusal of an unmapped field, dump-flows (1.0
// and 1.5), the 1.5 match and instruction bytes each switch sends (the
// set_field's tun_metadata value in its significant bytes) and the megaflows
// ovs-dpctl reads from the kernel must agree.
func TestIntegrationDeleteField(t *testing.T) {
	testbed.Require(t)
	b := newTunnelBed(t, tunnelCase{kind: "geneve", linkArg: []string{"type", "geneve", "id", "0"}})
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	hr := func(args ...string) string {
		return run(append([]string{"ip", "netns", "exec", b.hr.Name}, args...)...)
	}
	hr("ip", "link", "del", "tun0")
	hr("ip", "link", "add", "tun0", "type", "geneve", "external")
	hr("ip", "addr", "add", "10.1.1.100/24", "dev", "tun0")
	hr("ip", "link", "set", "tun0", "up")
	hr("ip", "route", "add", "10.1.1.1/32", "encap", "ip", "id", "0", "dst", b.local, "geneve_opts", "258:128:0000000a", "dev", "tun0")
	h1MAC := strings.TrimSpace(run("ip", "netns", "exec", b.h1.Name, "cat", "/sys/class/net/eth0/address"))
	tunMAC := strings.TrimSpace(hr("cat", "/sys/class/net/tun0/address"))
	hr("ip", "neigh", "replace", "10.1.1.1", "lladdr", h1MAC, "dev", "tun0")
	run("ip", "netns", "exec", b.h1.Name, "ip", "neigh", "replace", "10.1.1.100", "lladdr", tunMAC, "dev", "eth0")

	br, gnv := "br"+b.v1, "gnv"+b.v1
	flows := []string{
		"in_port=2,icmp,tun_metadata0=0xa,actions=delete_field:tun_metadata0,resubmit(,1)",
		"table=1,priority=10,icmp,tun_metadata0=0xa,actions=drop",
		"table=1,priority=1,icmp,actions=output:1",
		"in_port=1,icmp,actions=set_field:0xb->tun_metadata0,set_field:0xc->tun_metadata1,delete_field:tun_metadata0,output:2",
	}
	steps := func(who string, vsctl func(args ...string) string, ofctl func(args ...string) (string, error), mgmt string) deleteFieldRun {
		t.Helper()
		must := func(args ...string) string {
			t.Helper()
			out, err := ofctl(args...)
			if err != nil {
				t.Fatalf("%s: ovs-ofctl %s: %v\n%s", who, strings.Join(args, " "), err, out)
			}
			return out
		}
		vsctl("add-br", br, "--", "set", "Bridge", br, "fail_mode=secure",
			"--", "add-port", br, b.v1, "--", "set", "Interface", b.v1, "ofport_request=1",
			"--", "add-port", br, gnv, "--", "set", "Interface", gnv, "type=geneve", "ofport_request=2", "options:remote_ip="+b.rem)
		if e := strings.TrimSpace(vsctl("get", "Interface", gnv, "error")); e != "[]" {
			t.Fatalf("%s: Interface error %s", who, e)
		}
		must("add-tlv-map", br, "{class=0x0102,type=0x80,len=4}->tun_metadata0,{class=0x0102,type=0x81,len=4}->tun_metadata1")
		var r deleteFieldRun
		out, err := ofctl("add-flow", br, "actions=delete_field:tun_metadata5")
		if err == nil {
			t.Errorf("%s: delete_field of unmapped tun_metadata5 accepted", who)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "OFPT_ERROR") {
				r.unmapped = l[strings.LastIndex(l, ":")+1:]
			}
		}
		for _, f := range flows {
			must("add-flow", br, f)
		}
		for deadline := time.Now().Add(20 * time.Second); ; {
			out, _ := b.h1.Exec("ping", "-c", "1", "-W", "1", "10.1.1.100")
			if parseLoss(t, out) == 0 || time.Now().After(deadline) {
				break
			}
		}
		out, _ = b.h1.Exec("ping", "-c", "3", "-i", "0.2", "-W", "2", "10.1.1.100")
		r.loss = parseLoss(t, out)
		r.ofFlows = ofFlowLines(must("dump-flows", br))
		r.ofFlows15 = ofFlowLines(must("-O", "OpenFlow15", "dump-flows", br))
		for _, e := range dialOF15(t, mgmt).flowStats(t) {
			r.insts15 = append(r.insts15, e.instructions)
			r.matches15 = append(r.matches15, e.match)
		}
		sort.Strings(r.insts15)
		sort.Strings(r.matches15)
		dump, _ := exec.Command("ovs-dpctl", "dump-flows").CombinedOutput()
		t.Logf("%s: ovs-dpctl dump-flows:\n%s", who, dump)
		h1, tun := dpPort(t, b.v1), dpPort(t, "genev_sys_6081")
		for _, l := range flowLinesNoStats(string(dump)) {
			if strings.Contains(l, "eth_type(0x0800)") {
				l = strings.ReplaceAll(l, "in_port("+h1+")", "in_port(h1)")
				l = strings.ReplaceAll(l, "in_port("+tun+")", "in_port(gnv)")
				if strings.HasSuffix(l, "actions:"+h1) {
					l = strings.TrimSuffix(l, h1) + "h1"
				}
				if strings.HasSuffix(l, ")),"+tun) {
					l = strings.TrimSuffix(l, tun) + "gnv"
				}
				r.dpFlows = append(r.dpFlows, macRE.ReplaceAllString(l, "MAC"))
			}
		}
		vsctl("del-br", br)
		return r
	}
	// ofctlCmd runs ovs-ofctl with the bridge argument (after the command)
	// turned into the management socket in dir.
	ofctlCmd := func(dir string) func(args ...string) (string, error) {
		return func(args ...string) (string, error) {
			args = append([]string(nil), args...)
			i := 0
			for strings.HasPrefix(args[i], "-") {
				i += 2 // -O VERSION
			}
			args[i+1] = "unix:" + filepath.Join(dir, args[i+1]+".mgmt")
			out, err := exec.Command("ovs-ofctl", args...).CombinedOutput()
			return string(out), err
		}
	}

	o := startOVS(t)
	ovs := steps("ovs-vswitchd", func(args ...string) string { return o.must(t, "ovs-vsctl", args...) },
		ofctlCmd(o.dir), filepath.Join(o.dir, br+".mgmt"))
	if r := appctlAt(t, o.ctl, "exit", "--cleanup"); r.code != 0 {
		t.Fatalf("ovs-vswitchd exit --cleanup: %d %s", r.code, r.err)
	}
	for deadline := time.Now().Add(10 * time.Second); linkExists("genev_sys_6081"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("ovs-vswitchd's exit --cleanup left genev_sys_6081")
		}
	}

	t.Cleanup(func() { (kernelProviderForTest{}).deleteShared(t) })
	rundir := t.TempDir()
	g := startGovSwitch(t, rundir)
	gov := steps("govswitchd", func(args ...string) string { t.Helper(); return g.vsctl(t, args...) },
		ofctlCmd(rundir), filepath.Join(rundir, br+".mgmt"))

	for _, r := range []struct {
		who string
		r   deleteFieldRun
	}{{"ovs-vswitchd", ovs}, {"govswitchd", gov}} {
		t.Logf("%s: loss %d, unmapped %q\nflows %q\n1.5 flows %q\n1.5 instructions %q\nmegaflows %q", r.who, r.r.loss,
			r.r.unmapped, r.r.ofFlows, r.r.ofFlows15, r.r.insts15, r.r.dpFlows)
		if r.r.loss != 0 {
			t.Errorf("%s: h1 lost %d of 3 pings to the geneve host", r.who, r.r.loss)
		}
	}
	for _, c := range []struct {
		what     string
		ovs, gov any
	}{
		{"unmapped delete_field error", ovs.unmapped, gov.unmapped},
		{"dump-flows", ovs.ofFlows, gov.ofFlows},
		{"dump-flows -O OpenFlow15", ovs.ofFlows15, gov.ofFlows15},
		{"1.5 instruction bytes", ovs.insts15, gov.insts15},
		{"1.5 match bytes", ovs.matches15, gov.matches15},
		{"megaflows", ovs.dpFlows, gov.dpFlows},
	} {
		if fmt.Sprint(c.ovs) != fmt.Sprint(c.gov) {
			t.Errorf("%s differ:\novs-vswitchd %q\ngovswitchd   %q", c.what, c.ovs, c.gov)
		}
	}
	// What the comparison is about: the option deleted on the way out is
	// not in the tunnel's set(), the other one is.
	all := strings.Join(gov.dpFlows, "\n")
	if !strings.Contains(all, "geneve({class=0x102,type=0x81,len=4,0xc})") || strings.Contains(all, "0xb}") {
		t.Errorf("govswitchd: no megaflow setting only {0x102,0x81}=0xc:\n%s", all)
	}
}
