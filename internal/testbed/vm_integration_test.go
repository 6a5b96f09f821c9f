package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestIntegrationVMTwoCPUs checks that the vm bed gives tests more than one
// CPU, which UML cannot: per-CPU upcall dispatch, handler threads racing on
// one flow and revalidators running next to handlers need it.
func TestIntegrationVMTwoCPUs(t *testing.T) {
	RequireVM(t)
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Fatal(err)
	}
	online, err := countCPUList(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("/sys/devices/system/cpu/online %q: %v", b, err)
	}
	t.Logf("online CPUs %s (%d), runtime.NumCPU %d", strings.TrimSpace(string(b)), online, runtime.NumCPU())
	if online < 2 {
		t.Errorf("%d CPUs online, want at least 2", online)
	}
	if n := runtime.NumCPU(); n < 2 {
		t.Errorf("runtime.NumCPU() = %d, want at least 2", n)
	}
}

// countCPUList counts the CPUs in a kernel CPU list such as "0-1,4".
func countCPUList(s string) (int, error) {
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, err
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return 0, err
			}
		}
		if b < a {
			return 0, fmt.Errorf("range %q runs backwards", part)
		}
		n += b - a + 1
	}
	return n, nil
}

// TestIntegrationVMConntrackZone installs, with the real ovs-dpctl, a
// datapath flow whose action commits to conntrack zone 1. UML's kernel has
// no CONFIG_NF_CONNTRACK_ZONES and answers EINVAL; Debian's has it. This is
// what a switch translating OpenFlow ct(zone=N) needs from the kernel.
func TestIntegrationVMConntrackZone(t *testing.T) {
	RequireVM(t)
	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("modprobe", "nf_conntrack")
	if _, err := os.Stat("/sys/module/nf_conntrack"); err != nil {
		t.Fatalf("nf_conntrack not loaded after modprobe: %v", err)
	}
	dp := fmt.Sprintf("vmct%d", os.Getpid()%100000)
	run("ovs-dpctl", "add-dp", dp)
	t.Cleanup(func() {
		if out, err := exec.Command("ovs-dpctl", "del-dp", dp).CombinedOutput(); err != nil {
			t.Errorf("ovs-dpctl del-dp %s: %v\n%s", dp, err, out)
		}
	})
	// Port 0 is the datapath's own internal port. Matching IPv4 without an
	// IP protocol keeps the key valid without transport attributes.
	const key = "in_port(0),eth(),eth_type(0x0800),ipv4()"
	run("ovs-dpctl", "add-flow", dp, key, "ct(commit,zone=1)")
	flows := run("ovs-dpctl", "dump-flows", dp)
	t.Logf("flows:\n%s", flows)
	if !strings.Contains(flows, "ct(commit,zone=1)") {
		t.Errorf("dump-flows does not show the ct(commit,zone=1) action:\n%s", flows)
	}
}
