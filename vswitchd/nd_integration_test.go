package vswitchd

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestIntegrationSetFieldND: set_field of nd_target and nd_sll rewrites
// real neighbour solicitations on the userspace slow path (the kernel
// cannot write ND fields): h1 solicits fd00::99, which nobody has; the
// switch turns the solicitation into one for h2's fd00::2 sent to h2,
// with 00:00:5e:00:00:09 as the source link-layer address. h2 accepts it
// (so its ICMPv6 checksum is right): it answers with an advertisement
// and records h1's address at the rewritten link-layer address. The
// flow dumps back as added (over OpenFlow 1.3), ofproto/trace shows the datapath's
// set(nd(...)), and the datapath flow sends the solicitations to
// userspace.
func TestIntegrationSetFieldND(t *testing.T) {
	b := newBed(t)
	for _, step := range []struct {
		ns   string
		args []string
	}{
		{"h1", []string{"sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.eth0.disable_ipv6=0"}},
		{"h2", []string{"sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.eth0.disable_ipv6=0"}},
		{"h1", []string{"ip", "-6", "addr", "add", "fd00::1/64", "dev", "eth0", "nodad"}},
		{"h2", []string{"ip", "-6", "addr", "add", "fd00::2/64", "dev", "eth0", "nodad"}},
	} {
		h := b.h1
		if step.ns == "h2" {
			h = b.h2
		}
		if out, err := h.Exec(step.args[0], step.args[1:]...); err != nil {
			t.Fatalf("%s %v: %v\n%s", step.ns, step.args, err, out)
		}
	}
	ctl := filepath.Join(b.rundir, "gov.ctl")
	b.start(t, "--fail-mode", "secure", "--unixctl="+ctl)
	ns := "priority=100,in_port=1,icmp6,icmp_type=135,nd_target=fd00::99,actions=" +
		"set_field:fd00::2->nd_target,set_field:00:00:5e:00:00:09->nd_sll,set_field:fd00::2->ipv6_dst," +
		"set_field:" + b.mac2.String() + "->eth_dst,output:2"
	// Over OpenFlow 1.3 the set_fields go as OXM set_field and come
	// back as added (over 1.0 ovs-ofctl sends NXAST_REG_LOADs).
	of13 := []string{"-O", "OpenFlow13"}
	if out, err := b.ofctlOpts(of13, "add-flow", ns); err != nil {
		t.Fatalf("ovs-ofctl add-flow %s: %v\n%s", ns, err, out)
	}
	b.ofctl(t, "add-flow", "priority=100,in_port=2,icmp6,icmp_type=136,nd_target=fd00::2,actions=output:1")
	out, _ := b.h1.Exec("ping", "-6", "-c", "2", "-i", "0.5", "-W", "1", "fd00::99")
	t.Logf("ping fd00::99 (its neighbour solicitations):\n%s", out)

	dump, err := b.ofctlOpts(of13, "dump-flows")
	if err != nil {
		t.Fatalf("ovs-ofctl -O OpenFlow13 dump-flows: %v\n%s", err, dump)
	}
	t.Logf("dump-flows:\n%s", dump)
	if act := ns[strings.Index(ns, "actions="):]; !strings.Contains(dump, act) {
		t.Errorf("dump-flows does not print %q back", act)
	}
	m := regexp.MustCompile(`n_packets=(\d+),.*icmp_type=136`).FindStringSubmatch(dump)
	if m == nil {
		t.Fatalf("no advertisement flow in:\n%s", dump)
	}
	if n, _ := strconv.Atoi(m[1]); n == 0 {
		t.Errorf("h2 sent no neighbour advertisement for fd00::2: the rewritten solicitations did not reach it whole")
	}
	neigh, _ := b.h2.Exec("ip", "-6", "neigh", "show", "fd00::1")
	t.Logf("h2: ip -6 neigh show fd00::1: %s", neigh)
	if !strings.Contains(neigh, "00:00:5e:00:00:09") {
		t.Errorf("h2 did not learn fd00::1 at the rewritten nd_sll 00:00:5e:00:00:09: %q", neigh)
	}
	dp, _ := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	t.Logf("ovs-dpctl dump-flows:\n%s", dp)
	if !regexp.MustCompile(`icmpv6\(type=135.*nd\(target=fd00::99.*userspace\(pid=\d+,slow_path\(action\)\)`).Match(dp) {
		t.Errorf("no slow-pathed datapath flow for the solicitations:\n%s", dp)
	}
	tr := appctlAt(t, ctl, "ofproto/trace", b.name,
		"in_port=1,icmp6,icmp_type=135,ipv6_src=fd00::1,ipv6_dst=ff02::1:ff00:99,nd_target=fd00::99,nd_sll="+b.mac1.String())
	t.Logf("ofproto/trace:\n%s%s", tr.out, tr.err)
	if !strings.Contains(tr.out, "set(nd(target=fd00::2,sll=00:00:5e:00:00:09))") {
		t.Errorf("ofproto/trace shows no set(nd(target=fd00::2,sll=00:00:5e:00:00:09))")
	}
}
