package vswitchd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ofctlOpts runs ovs-ofctl with options before the command, and returns
// its combined output and error.
func (b *bed) ofctlOpts(opts []string, args ...string) (string, error) {
	full := append(append(append([]string{}, opts...), args[0], "unix:"+b.rundir+"/"+b.name+".mgmt"), args[1:]...)
	out, err := exec.Command("ovs-ofctl", full...).CombinedOutput()
	return string(out), err
}

// TestIntegrationOfctlBundle: flows that ovs-ofctl --bundle installs (as
// OVS's own kernel tests do, with OpenFlow 1.4 bundles) move real packets
// between two namespaces; a bundle with one bad flow changes nothing, and
// traffic keeps following the flows already there; --bundle replace-flows
// swaps the whole table at once. Over the default negotiation (1.4 for
// bundles), 1.5 and 1.3's ONF extension.
func TestIntegrationOfctlBundle(t *testing.T) {
	b := newBed(t)
	b.start(t, "--fail-mode", "secure")
	u := b.d.Bridge(b.name).Udpif
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if loss := b.ping(t, 2); loss != 2 {
		t.Fatalf("a secure bridge without flows forwarded %d of 2 pings", 2-loss)
	}
	forward := write("forward.txt", "in_port=1,actions=output:2\nin_port=2,actions=output:1\n")
	// Would drop ICMP, but its last flow names a group the switch lacks.
	bad := write("bad.txt", "priority=40000,icmp,actions=drop\ntable=1,priority=1,actions=group:7\n")
	// ICMP dropped, everything else forwarded, in one table swap.
	noICMP := write("noicmp.txt", "priority=40000,icmp,actions=drop\nin_port=1,actions=output:2\nin_port=2,actions=output:1\n")
	for _, opts := range [][]string{{"--bundle"}, {"-O", "OpenFlow15", "--bundle"}, {"-O", "OpenFlow13", "--bundle"}} {
		t.Run(strings.Join(opts, " "), func(t *testing.T) {
			if out, err := b.ofctlOpts(nil, "del-flows"); err != nil {
				t.Fatalf("del-flows: %v\n%s", err, out)
			}
			u.Revalidate()
			if out, err := b.ofctlOpts(opts, "add-flows", forward); err != nil {
				t.Fatalf("--bundle add-flows: %v\n%s", err, out)
			}
			u.Revalidate()
			if loss := b.ping(t, 3); loss != 0 {
				t.Errorf("after --bundle add-flows, %d of 3 pings lost", loss)
			}
			before := b.ofctl(t, "dump-flows", "--no-stats")
			out, err := b.ofctlOpts(opts, "add-flows", bad)
			if err == nil || !strings.Contains(out, "OFPBAC_BAD_OUT_GROUP") || !strings.Contains(out, "OFPBFC_MSG_FAILED") {
				t.Errorf("a bundle with a bad flow: err %v, output:\n%s", err, out)
			}
			if after := b.ofctl(t, "dump-flows", "--no-stats"); after != before {
				t.Errorf("a failed bundle changed the flows:\n%s\nwas\n%s", after, before)
			}
			u.Revalidate()
			if loss := b.ping(t, 2); loss != 0 {
				t.Errorf("after a failed bundle, %d of 2 pings lost (its icmp drop must not apply)", loss)
			}
			if out, err := b.ofctlOpts(opts, "replace-flows", noICMP); err != nil {
				t.Fatalf("--bundle replace-flows: %v\n%s", err, out)
			}
			u.Revalidate()
			if loss := b.ping(t, 2); loss != 2 {
				t.Errorf("after replace-flows with an icmp drop, %d of 2 pings got through", 2-loss)
			}
			if dump := b.ofctl(t, "dump-flows", "--no-stats"); strings.Count(dump, "actions=") != 3 {
				t.Errorf("after replace-flows:\n%s", dump)
			}
		})
	}
}
