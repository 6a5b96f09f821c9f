package vswitchd

import (
	"bytes"
	"encoding/hex"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
)

// learningSteps: h2's address is learned (pings from the peer), the raw
// socket listens on the peer's eth1 (facing our second member), our first
// member's link goes down, and the frames of ethertype 0x8035 (RARP)
// from h2's address that reach eth1 within 5 s are returned, hex.
func (b *bondBed) learningSteps(t *testing.T, who, ctl string, h2MAC net.HardwareAddr) []string {
	t.Helper()
	b.peer.Exec("ip", "neigh", "flush", "all")
	b.h2.Exec("ip", "neigh", "flush", "all")
	waitBondShow(t, ctl, "member "+b.members[0]+": enabled\n")
	waitBondShow(t, ctl, "member "+b.members[1]+": enabled\n")
	appctlAt(t, ctl, "bond/set-active-member", "bond0", b.members[0])
	waitBondShow(t, ctl, "member "+b.members[0]+": enabled\n  active member\n")
	if l, out := b.pingLoss(t, 3); l != 0 {
		t.Errorf("%s: peer->h2 over the bond lost %d of 3:\n%s", who, l, out)
	}
	if fdb := appctlAt(t, ctl, "fdb/show", b.name).out; !strings.Contains(fdb, h2MAC.String()) {
		t.Fatalf("%s: h2's %s not learned:\n%s", who, h2MAC, fdb)
	}
	raw := testbed.OpenRaw(t, b.peer, "eth1")
	if out, err := exec.Command("ip", "link", "set", b.members[0], "down").CombinedOutput(); err != nil {
		t.Fatalf("ip link set %s down: %v\n%s", b.members[0], err, out)
	}
	var got []string
	deadline := time.Now().Add(5 * time.Second)
	for {
		f, err := raw.Recv(time.Until(deadline), func(f []byte) bool {
			return len(f) >= 14 && f[12] == 0x80 && f[13] == 0x35 && bytes.Equal(f[6:12], h2MAC)
		})
		if err != nil {
			break
		}
		got = append(got, hex.EncodeToString(f))
	}
	if out, err := exec.Command("ip", "link", "set", b.members[0], "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set %s up: %v\n%s", b.members[0], err, out)
	}
	waitBondShow(t, ctl, "member "+b.members[0]+": enabled\n")
	return got
}

// TestIntegrationBondLearningPackets: when a balance-slb bond loses a
// member, the addresses learned off the bond are announced on the member
// that now carries them, with one RARP each, so the switch upstream (here
// a Linux bridge) learns them there; ovs-vswitchd in the same boot sends
// the same frames.
func TestIntegrationBondLearningPackets(t *testing.T) {
	b := newBondBed(t)
	b.linuxBridge(t)
	ifc, err := func() (ifc *net.Interface, err error) {
		err = b.h2.Do(func() (e error) { ifc, e = net.InterfaceByName("eth0"); return })
		return
	}()
	if err != nil {
		t.Fatal(err)
	}
	h2MAC := ifc.HardwareAddr
	// A RARP request from h2's address, for it, to the broadcast address.
	m := hex.EncodeToString(h2MAC)
	want := "ffffffffffff" + m + "8035" + "0001" + "0800" + "0604" + "0003" + m + "00000000" + m + "00000000"

	o := startOVS(t)
	b.configure(func(args ...string) string { return o.must(t, "ovs-vsctl", args...) }, "bond_mode=balance-slb")
	ovs := b.learningSteps(t, "ovs-vswitchd", o.ctl, h2MAC)
	stopOVS(t, o, b.name)

	vsctl, ctl, _ := startGov(t, b.rundir)
	b.configure(vsctl, "bond_mode=balance-slb")
	gov := b.learningSteps(t, "govswitchd", ctl, h2MAC)

	t.Logf("learning packets on the peer's eth1:\novs-vswitchd: %v\ngovswitchd:   %v\nwant:         %s", ovs, gov, want)
	if len(ovs) == 0 || ovs[0] != want {
		t.Errorf("ovs-vswitchd sent %v, want one %s (is the reference wrong?)", ovs, want)
	}
	if len(gov) != len(ovs) || len(gov) == 0 || gov[0] != want {
		t.Errorf("govswitchd sent %v learning packets from h2's address on %s, want %d: %s", gov, b.members[1], len(ovs), want)
	}
}
