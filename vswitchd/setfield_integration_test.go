package vswitchd

import (
	"encoding/binary"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
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

// TestIntegrationSetFieldIPv6Label: set_field on ipv6_label rewrites the
// flow label of real packets: h1's echo requests (label 0 from ping)
// leave the switch with label 0x12345 as h2's raw socket sees them, h2
// answers, and the datapath flow is set(ipv6(label=0x12345)) as
// ovs-vswitchd emits it.
func TestIntegrationSetFieldIPv6Label(t *testing.T) {
	b := newBed(t)
	for _, step := range []struct {
		ns   string
		args []string
	}{
		{"h1", []string{"sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.eth0.disable_ipv6=0"}},
		{"h2", []string{"sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.eth0.disable_ipv6=0"}},
		{"h1", []string{"sysctl", "-qw", "net.ipv6.auto_flowlabels=0"}},
		{"h1", []string{"ip", "-6", "addr", "add", "fd00::1/64", "dev", "eth0", "nodad"}},
		{"h2", []string{"ip", "-6", "addr", "add", "fd00::2/64", "dev", "eth0", "nodad"}},
		{"h1", []string{"ip", "-6", "neigh", "replace", "fd00::2", "lladdr", b.mac2.String(), "dev", "eth0"}},
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
	b.ofctl(t, "add-flow", "priority=100,in_port=1,icmp6,icmp_type=128,actions=set_field:0x12345->ipv6_label,output:2")
	b.ofctl(t, "add-flow", "priority=100,in_port=2,icmp6,icmp_type=129,actions=output:1")
	rx := testbed.OpenRaw(t, b.h2, "eth0")
	labels := make(chan uint32, 8)
	go func() {
		defer close(labels)
		for {
			f, err := rx.Recv(4*time.Second, func(f []byte) bool {
				// IPv6 (0x86dd), ICMPv6 (58) echo request (128).
				return len(f) >= 55 && binary.BigEndian.Uint16(f[12:]) == 0x86dd && f[20] == 58 && f[54] == 128
			})
			if err != nil {
				return
			}
			labels <- binary.BigEndian.Uint32(f[14:]) & 0xfffff
		}
	}()
	out, err := b.h1.Exec("ping", "-6", "-c", "3", "-i", "0.2", "-W", "2", "fd00::2")
	t.Logf("ping fd00::2:\n%s", out)
	if err != nil {
		t.Errorf("ping through the label rewrite failed: %v", err)
	}
	n := 0
	for l := range labels {
		n++
		if l != 0x12345 {
			t.Errorf("echo request arrived with flow label %#x, want 0x12345", l)
		}
	}
	if n == 0 {
		t.Error("no echo request reached h2")
	}
	dpOut, _ := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	t.Logf("ovs-dpctl dump-flows:\n%s", dpOut)
	if !strings.Contains(string(dpOut), "set(ipv6(label=0x12345))") {
		t.Errorf("no datapath flow sets the label:\n%s", dpOut)
	}
}
