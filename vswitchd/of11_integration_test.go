package vswitchd

import (
	"regexp"
	"strings"
	"testing"
)

// TestIntegrationOfctl11And12: flows the real ovs-ofctl adds over OpenFlow
// 1.1 and 1.2 move real packets between two namespaces on the kernel
// datapath; dump-flows over the same version counts them; del-flows
// removes them and the hosts are cut off (a secure bridge has no flow of
// its own).
func TestIntegrationOfctl11And12(t *testing.T) {
	b := newBed(t)
	b.start(t, "--fail-mode", "secure")
	u := b.d.Bridge(b.name).Udpif
	for _, v := range []string{"OpenFlow11", "OpenFlow12"} {
		t.Run(v, func(t *testing.T) {
			opts := []string{"-O", v}
			run := func(args ...string) string {
				t.Helper()
				out, err := b.ofctlOpts(opts, args...)
				if err != nil {
					t.Fatalf("ovs-ofctl -O %s %s: %v\n%s", v, strings.Join(args, " "), err, out)
				}
				return out
			}
			if out := run("show"); !strings.Contains(out, "1("+b.v1+")") || !strings.Contains(out, "2("+b.v2+")") {
				t.Fatalf("show:\n%s", out)
			}
			run("add-flow", "in_port=1,actions=output:2")
			run("add-flow", "in_port=2,actions=output:1")
			u.Revalidate()
			if loss := b.ping(t, 3); loss != 0 {
				t.Errorf("lost %d of 3 pings through flows added over %s", loss, v)
			}
			dump := run("dump-flows")
			if !regexp.MustCompile(`n_packets=[1-9]\d*, n_bytes=\d+, in_port=1 actions=output:2`).MatchString(dump) {
				t.Errorf("dump-flows lacks the counted in_port=1 flow:\n%s", dump)
			}
			if out := run("dump-ports", "1"); !regexp.MustCompile(`port  1: rx pkts=[1-9]`).MatchString(out) {
				t.Errorf("dump-ports 1:\n%s", out)
			}
			run("del-flows")
			u.Revalidate()
			if loss := b.ping(t, 2); loss != 2 {
				t.Errorf("after del-flows %d of 2 pings lost, want 2", loss)
			}
		})
	}
}
