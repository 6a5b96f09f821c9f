package vswitchd

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// TestIntegrationNSHEncapDecap: OVS's nsh tests' flows on one bridge. h1's
// IPv4 packets get an NSH header (MD type 1, spi 0x1234, c1 set) and a
// new Ethernet header and go out of a veth pair that loops back into the
// bridge; there a match on the NSH fields decaps both headers, which
// recirculates the inner frame to h2. A set_field of an NSH packet's
// fields is refused: the kernel takes no set(nsh). The kernel must take push_nsh with
// push_eth, and pop_eth, pop_nsh with the next protocol matched; h2 must
// answer, and the datapath's flows must be the ones ovs-vswitchd makes.
func TestIntegrationNSHEncapDecap(t *testing.T) {
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
	for _, f := range []string{
		"priority=100,in_port=1,ip,actions=encap(nsh(md_type=1)),set_field:0x1234->nsh_spi,set_field:0x11223344->nsh_c1," +
			"encap(ethernet),set_field:f2:ff:00:00:00:02->dl_dst,set_field:f2:ff:00:00:00:01->dl_src,output:3",
		"priority=100,in_port=4,dl_type=0x894f,nsh_mdtype=1,nsh_spi=0x1234,nsh_si=255,nsh_c1=0x11223344,actions=decap(),decap(),output:2",
		"priority=10,in_port=1,actions=output:2",
		"priority=10,in_port=2,actions=output:1",
	} {
		b.ofctl(t, "add-flow", "-O", "OpenFlow13", f)
	}
	if got := b.ofctl(t, "dump-flows", "-O", "OpenFlow13"); !strings.Contains(got, "nsh_mdtype=1,nsh_spi=0x1234,nsh_si=255,nsh_c1=0x11223344") ||
		!strings.Contains(got, "encap(nsh(md_type=1)),set_field:0x1234->nsh_spi") {
		t.Errorf("dump-flows does not show the NSH flows as added:\n%s", got)
	}
	// set_field of a read-only field is refused.
	full := []string{"-O", "OpenFlow13", "add-flow", "unix:" + b.rundir + "/" + b.name + ".mgmt",
		"priority=100,in_port=4,dl_type=0x894f,actions=set_field:2->nsh_mdtype,output:2"}
	setSI := append(full[:len(full)-1:len(full)-1], "priority=100,in_port=4,dl_type=0x894f,actions=set_field:2->nsh_si,output:2")
	if out, err := exec.Command("ovs-ofctl", setSI...).CombinedOutput(); err == nil {
		t.Errorf("set_field nsh_si of an NSH packet accepted:\n%s", out)
	}
	if out, err := exec.Command("ovs-ofctl", full...).CombinedOutput(); err == nil {
		t.Errorf("set_field nsh_mdtype accepted:\n%s", out)
	}

	loss := b.ping(t, 3)
	out, _ := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	dp := string(out)
	t.Logf("ovs-dpctl dump-flows:\n%s", dp)
	if loss != 0 {
		t.Errorf("%d of 3 pings lost", loss)
	}
	for _, want := range []string{
		"actions:push_nsh(flags=0,ttl=63,mdtype=1,np=3,spi=0x1234,si=255,c1=0x11223344,c2=0x0,c3=0x0,c4=0x0)," +
			"push_eth(src=f2:ff:00:00:00:01,dst=f2:ff:00:00:00:02),",
		"eth_type(0x894f),nsh(mdtype=1,np=3,spi=0x1234,si=255,c1=0x11223344)",
		"actions:pop_eth,pop_nsh(),recirc(",
	} {
		if !strings.Contains(dp, want) {
			t.Errorf("no datapath flow has %s", want)
		}
	}

	// MD type 2, its tlv the metadata of push_nsh; the kernel keys no MD
	// type 2 context, so the decap side matches the base header only.
	b.ofctl(t, "add-flow", "-O", "OpenFlow13",
		"priority=100,in_port=4,dl_type=0x894f,nsh_mdtype=2,nsh_spi=0x5678,actions=decap(),decap(),output:2")
	b.ofctl(t, "mod-flows", "-O", "OpenFlow13",
		"in_port=1,ip,actions=encap(nsh(md_type=2,tlv(0x1000,10,0x12345678))),set_field:0x5678->nsh_spi,"+
			"encap(ethernet),set_field:f2:ff:00:00:00:02->dl_dst,set_field:f2:ff:00:00:00:01->dl_src,output:3")
	loss = b.ping(t, 3)
	out, _ = exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	dp = string(out)
	t.Logf("ovs-dpctl dump-flows after the MD type 2 encap:\n%s", dp)
	if loss != 0 {
		t.Errorf("MD type 2: %d of 3 pings lost", loss)
	}
	for _, want := range []string{
		"actions:push_nsh(flags=0,ttl=63,mdtype=2,np=3,spi=0x5678,si=255,md2=0x10000a0412345678),push_eth(",
		"eth_type(0x894f),nsh(mdtype=2,np=3,spi=0x5678,",
	} {
		if !strings.Contains(dp, want) {
			t.Errorf("no datapath flow has %s", want)
		}
	}
}
