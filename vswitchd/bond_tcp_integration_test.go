package vswitchd

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

var (
	// hashRecirc is a first-stage flow's output to the bond; bondBucket
	// a second stage's match.
	hashRecirc = regexp.MustCompile(`actions:.*hash\(l4\(0\)\),recirc\((0x[0-9a-f]+)\)`)
	bondBucket = regexp.MustCompile(`(?m)^recirc_id\((0x[0-9a-f]+)\),dp_hash\(0x[0-9a-f]+/0xff\),.*actions:(\d+)$`)
)

// txPackets is device dev's transmitted-packet count (our netns).
func txPackets(t *testing.T, dev string) int {
	t.Helper()
	b, err := os.ReadFile("/sys/class/net/" + dev + "/statistics/tx_packets")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	fmt.Sscan(string(b), &n)
	return n
}

// TestIntegrationBondBalanceTCPRecirc: a negotiated balance-tcp bond
// hashes in the kernel: ovs-dpctl shows the flows from h2 outputting
// hash(l4(0)),recirc(id) and, for that id, one flow per dp_hash bucket
// used, each out of a member; 64 UDP flows from h2 leave by both members;
// bond/show says the bond recirculates.
func TestIntegrationBondBalanceTCPRecirc(t *testing.T) {
	b := newBondBed(t)
	b.lacpBond(t)
	vsctl, ctl, _ := startGov(t, b.rundir)
	b.configure(vsctl, b.lacpArgs()...)
	waitAppctl(t, ctl, bothEnabled, "bond/show", "bond0")
	// The probe: Linux 6.1 has the hash action, algorithm l4 only.
	if f := appctlAt(t, ctl, "dpif/show-dp-features", b.name).out; !strings.Contains(f, "Max dp_hash algorithm: 0\n") {
		t.Errorf("dpif/show-dp-features:\n%s", f)
	}
	show := waitAppctl(t, ctl, regexp.MustCompile(`bond may use recirculation: yes, Recirc-ID : \d+\n`), "bond/show", "bond0")
	if out, err := b.h2.Exec("ping", "-c", "2", "-i", "0.2", "-W", "1", "10.0.0.1"); err != nil {
		t.Fatalf("h2->peer over the bond: %v\n%s\nbond/show:\n%s", err, out, show)
	}
	tx0 := [2]int{txPackets(t, b.members[0]), txPackets(t, b.members[1])}
	const flows, per = 64, 5
	if err := b.h2.Do(func() error {
		for i := 0; i < flows; i++ {
			c, err := net.DialUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 20000 + i}, &net.UDPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 9})
			if err != nil {
				return err
			}
			for j := 0; j < per; j++ {
				c.Write([]byte("balance-tcp"))
			}
			c.Close()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	tx := [2]int{txPackets(t, b.members[0]) - tx0[0], txPackets(t, b.members[1]) - tx0[1]}
	dpOut, err := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	if err != nil {
		t.Fatalf("ovs-dpctl dump-flows: %v\n%s", err, dpOut)
	}
	dp := string(dpOut)
	t.Logf("packets out of %s: %d, %s: %d (of %d sent)\novs-dpctl dump-flows:\n%s", b.members[0], tx[0], b.members[1], tx[1], flows*per, dp)
	m := hashRecirc.FindStringSubmatch(dp)
	if m == nil {
		t.Fatalf("no flow outputs hash(l4(0)),recirc(...) to the bond:\n%s", dp)
	}
	ports := map[string]bool{}
	buckets := 0
	for _, bm := range bondBucket.FindAllStringSubmatch(dp, -1) {
		if bm[1] == m[1] {
			buckets++
			ports[bm[2]] = true
		}
	}
	if buckets < 2 || len(ports) != 2 {
		t.Errorf("recirc_id(%s) has %d dp_hash bucket flows out of ports %v, want several out of both members", m[1], buckets, ports)
	}
	// Each member carries a share: at least a sixth of the flows' packets
	// (a fair split is half; 64 flows over two members rarely go 5:1).
	for i, n := range tx {
		if n < flows*per/6 {
			t.Errorf("%s sent %d of %d packets: the flows are not spread over the members", b.members[i], n, flows*per)
		}
	}
	// The kernel hashes: no first-stage megaflow holds L3/L4 fields.
	for _, l := range strings.Split(dp, "\n") {
		if strings.Contains(l, "hash(l4(0))") && (strings.Contains(l, "udp(") || strings.Contains(l, "src=10.0.0.2")) {
			t.Errorf("a first-stage megaflow holds the hashed fields: %s", l)
		}
	}
	if l := appctlAt(t, ctl, "bond/list").out; !strings.Contains(l, "bond0\tbalance-tcp\t"+fmt.Sprint(mustAtoi(t, m[1]))+"\t") {
		t.Errorf("bond/list does not name recirc id %s:\n%s", m[1], l)
	}
}

func mustAtoi(t *testing.T, hex string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscanf(hex, "0x%x", &n); err != nil {
		t.Fatal(err)
	}
	return n
}
