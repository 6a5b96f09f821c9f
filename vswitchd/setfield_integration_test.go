package vswitchd

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestIntegrationSetFieldIPv6: a flow that rewrites ipv6_dst moves real
// packets: h1 pings an address nobody has (fd00::99, its neighbour entry
// pointing at h2), the switch rewrites the destination to h2's fd00::2,
// and h2 answers (its echo replies are counted by a flow of their own).
func TestIntegrationSetFieldIPv6(t *testing.T) {
	b := newBed(t)
	for _, step := range []struct {
		ns   string
		args []string
	}{
		// New namespaces come with IPv6 off in the bed.
		{"h1", []string{"sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.eth0.disable_ipv6=0"}},
		{"h2", []string{"sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.eth0.disable_ipv6=0"}},
		{"h1", []string{"ip", "-6", "addr", "add", "fd00::1/64", "dev", "eth0", "nodad"}},
		{"h2", []string{"ip", "-6", "addr", "add", "fd00::2/64", "dev", "eth0", "nodad"}},
		{"h1", []string{"ip", "-6", "neigh", "replace", "fd00::99", "lladdr", b.mac2.String(), "dev", "eth0"}},
		{"h2", []string{"ip", "-6", "neigh", "replace", "fd00::1", "lladdr", b.mac1.String(), "dev", "eth0"}},
	} {
		h := b.h1
		if step.ns == "h2" {
			h = b.h2
		}
		if out, err := h.Exec(step.args[0], step.args[1:]...); err != nil {
			t.Fatalf("%s %v: %v\n%s", step.ns, step.args, err, out)
		}
	}
	b.start(t, "--fail-mode", "secure")
	b.ofctl(t, "add-flow", "priority=100,in_port=1,icmp6,ipv6_dst=fd00::99,actions=set_field:fd00::2->ipv6_dst,output:2")
	b.ofctl(t, "add-flow", "priority=100,in_port=2,icmp6,icmp_type=129,actions=output:1")
	out, _ := b.h1.Exec("ping", "-6", "-c", "3", "-i", "0.2", "-W", "2", "fd00::99")
	t.Logf("ping fd00::99:\n%s", out)
	dump := b.ofctl(t, "dump-flows")
	t.Logf("dump-flows:\n%s", dump)
	dpOut, _ := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	dp := string(dpOut)
	t.Logf("ovs-dpctl dump-flows:\n%s", dp)
	m := regexp.MustCompile(`n_packets=(\d+),.*icmp_type=129`).FindStringSubmatch(dump)
	if m == nil {
		t.Fatalf("no echo-reply flow in:\n%s", dump)
	}
	if n, _ := strconv.Atoi(m[1]); n == 0 {
		t.Errorf("h2 sent no echo reply: the rewritten requests did not reach it")
	}
	if !strings.Contains(dp, "set(ipv6(dst=fd00::2))") {
		t.Errorf("no datapath flow rewrites ipv6_dst:\n%s", dp)
	}
}
