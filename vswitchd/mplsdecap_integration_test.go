package vswitchd

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// TestIntegrationMPLSDecapToIP: OVS test 38's flows on one bridge. h1's
// IPv4 packets get a label and go out of a veth pair that loops back
// into the bridge; there decap() pops the Ethernet header, a decap to
// IPv4 the label, encap(ethernet) and the address sets give the packet a
// new Ethernet header, and the resubmit to a table that matches nw_dst
// recirculates it. The kernel must accept pop_mpls of a packet without
// Ethernet to IPv4 followed by push_eth, and h2 must answer.
func TestIntegrationMPLSDecapToIP(t *testing.T) {
	b := newBed(t)
	n := bedSeq.Add(1)
	loopA, loopB := fmt.Sprintf("gs%dla", n), fmt.Sprintf("gs%dlb", n)
	if out, err := exec.Command("ip", "link", "add", loopA, "type", "veth", "peer", "name", loopB).CombinedOutput(); err != nil {
		t.Fatalf("ip link add: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "link", "del", loopA).Run() })
	for _, dev := range []string{loopA, loopB} {
		if out, err := exec.Command("ip", "link", "set", dev, "up").CombinedOutput(); err != nil {
			t.Fatalf("ip link set %s up: %v\n%s", dev, err, out)
		}
	}
	// Ports 1 and 2 are h1's and h2's, 3 and 4 the loop's ends.
	b.start(t, "--fail-mode", "secure", "--port", loopA, "--port", loopB)
	t.Logf("show:\n%s", b.ofctl(t, "show"))
	for _, f := range []string{
		"priority=100,in_port=1,ip,actions=push_mpls:0x8847,set_field:2->mpls_label,output:3",
		"priority=100,in_port=4,mpls,mpls_label=2,actions=decap,decap(packet_type(ns=1,type=0x0800)),encap(ethernet)," +
			"mod_dl_dst:" + b.mac2.String() + ",mod_dl_src:" + b.mac1.String() + ",resubmit(,3)",
		"priority=10,in_port=1,actions=output:2",
		"priority=10,in_port=2,actions=output:1",
		"table=3,priority=10,ip,nw_dst=10.0.0.2,actions=output:2",
	} {
		b.ofctl(t, "add-flow", "-O", "OpenFlow13", f)
	}
	// A pop to IP and then a lookup, with no Ethernet header between:
	// refused, as translation cannot recirculate such a packet.
	full := []string{"-O", "OpenFlow13", "add-flow", "unix:" + b.rundir + "/" + b.name + ".mgmt",
		"priority=100,in_port=4,mpls,mpls_label=3,actions=decap,decap(packet_type(ns=1,type=0x0800)),resubmit(,3)"}
	if out, err := exec.Command("ovs-ofctl", full...).CombinedOutput(); err == nil || !strings.Contains(string(out), "OFPBAC_BAD_VENDOR_TYPE") {
		t.Errorf("decap to IP then resubmit: %v, want OFPBAC_BAD_VENDOR_TYPE:\n%s", err, out)
	}

	loss := b.ping(t, 3)
	out, _ := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	dp := string(out)
	t.Logf("ovs-dpctl dump-flows:\n%s", dp)
	if loss != 0 {
		t.Errorf("%d of 3 pings lost", loss)
	}
	if !strings.Contains(dp, "pop_eth,pop_mpls(eth_type=0x800),push_eth(src="+b.mac1.String()+",dst="+b.mac2.String()+"),recirc(") {
		t.Errorf("no datapath flow pops to IPv4 and pushes the new Ethernet header:\n%s", dp)
	}
}
