package vswitchd

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
	"github.com/govswitch/govswitch/ovsdb/ovsdbtest"
)

// bondBed is a bond port of two members on one bridge, and a host on a
// port of its own:
//
//	peer: bond0 (a Linux bond of eth0, eth1) 10.0.0.1   eth0 <-> <name>a, eth1 <-> <name>b: our bond0
//	h2:   eth0 10.0.0.2                                  eth0 <-> <name>c
//
// The peer is whatever setPeer makes of it: a Linux bond (active-backup)
// or a Linux bridge joining eth0 and eth1 (a loop through our bond, which
// only the bond's admissibility rules keep from melting).
type bondBed struct {
	name    string
	peer    *testbed.Netns
	h2      *testbed.Netns
	members [2]string // our side of the peer's eth0, eth1
	port    string    // our side of h2's eth0
	rundir  string
}

func newBondBed(t *testing.T) *bondBed {
	t.Helper()
	testbed.Require(t)
	if out, err := exec.Command("modprobe", "bonding", "max_bonds=0").CombinedOutput(); err != nil {
		t.Fatalf("modprobe bonding: %v\n%s", err, out)
	}
	n := bedSeq.Add(1)
	b := &bondBed{name: fmt.Sprintf("gv%d", n), rundir: t.TempDir(), peer: testbed.NewNetns(t), h2: testbed.NewNetns(t)}
	b.members = [2]string{fmt.Sprintf("gv%da", n), fmt.Sprintf("gv%db", n)}
	b.port = fmt.Sprintf("gv%dc", n)
	testbed.Veth(t, b.members[0], b.peer, "eth0", "")
	testbed.Veth(t, b.members[1], b.peer, "eth1", "")
	testbed.Veth(t, b.port, b.h2, "eth0", "10.0.0.2/24")
	b.peerRun(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
	b.peerRun(t, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
	return b
}

func (b *bondBed) peerRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := b.peer.Exec(args[0], args[1:]...)
	if err != nil {
		t.Fatalf("peer: %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// linuxBond makes the peer's eth0 and eth1 a Linux bond of mode (with
// MII monitoring every 50 ms), addressed 10.0.0.1.
func (b *bondBed) linuxBond(t *testing.T, mode string) {
	t.Helper()
	b.peerRun(t, "ip", "link", "add", "bond0", "type", "bond", "mode", mode, "miimon", "50")
	for _, e := range []string{"eth0", "eth1"} {
		b.peerRun(t, "ip", "link", "set", e, "down")
		b.peerRun(t, "ip", "link", "set", e, "master", "bond0")
	}
	b.peerRun(t, "ip", "addr", "add", "10.0.0.1/24", "dev", "bond0")
	b.peerRun(t, "ip", "link", "set", "bond0", "up")
}

// peerActive makes the peer bond's active slave the one facing our member.
func (b *bondBed) peerActive(t *testing.T, member string) {
	t.Helper()
	slave := "eth0"
	if member == b.members[1] {
		slave = "eth1"
	}
	b.peerRun(t, "ip", "link", "set", "bond0", "type", "bond", "active_slave", slave)
}

func (b *bondBed) configure(vsctl func(args ...string) string, bondArgs ...string) {
	vsctl("add-br", b.name)
	vsctl(append([]string{"add-bond", b.name, "bond0", b.members[0], b.members[1]}, bondArgs...)...)
	vsctl("add-port", b.name, b.port)
}

// pingLoss pings from the peer to h2.
func (b *bondBed) pingLoss(t *testing.T, n int) (int, string) {
	t.Helper()
	out, _ := b.peer.Exec("ping", "-c", fmt.Sprint(n), "-i", "0.2", "-W", "1", "10.0.0.2")
	return parseLoss(t, out), out
}

// echoServer listens on h2 10.0.0.2:port and echoes lines.
func (b *bondBed) echoServer(t *testing.T, port int) {
	t.Helper()
	var l net.Listener
	if err := b.h2.Do(func() (err error) {
		l, err = net.Listen("tcp", fmt.Sprintf("10.0.0.2:%d", port))
		return
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
}

// tcpConn opens a TCP connection from the peer to h2's echo server.
func (b *bondBed) tcpConn(t *testing.T, port int) net.Conn {
	t.Helper()
	var c net.Conn
	if err := b.peer.Do(func() (err error) {
		c, err = net.DialTimeout("tcp", fmt.Sprintf("10.0.0.2:%d", port), 5*time.Second)
		return
	}); err != nil {
		t.Fatalf("TCP peer -> h2: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// echo sends a line over c and reads it back, within 15 s (TCP's
// retransmissions carry it over a failover).
func echo(c net.Conn, line string) error {
	c.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := fmt.Fprintf(c, "%s\n", line); err != nil {
		return err
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if got != line+"\n" {
		return fmt.Errorf("echoed %q, want %q", got, line)
	}
	return nil
}

// bondShowNorm is bond/show with the lines govswitchd does not print
// (it does not rebalance SLB bonds) taken out.
var noRebalance = regexp.MustCompile(`(?m)^(next rebalance: -?\d+ ms|  hash \d+: \d+ kB load)\n`)

func bondShowNorm(s string) string { return noRebalance.ReplaceAllString(s, "") }

// waitBondShow polls bond/show until it contains want.
func waitBondShow(t *testing.T, ctl, want string) string {
	t.Helper()
	var out string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		out = appctlAt(t, ctl, "bond/show", "bond0").out
		if strings.Contains(out, want) {
			return out
		}
	}
	t.Fatalf("bond/show never showed %q:\n%s", want, out)
	return out
}

// abRun is what one switch did with the active-backup bed.
type abRun struct {
	show, failed, back, list string
	loss, lossFailed         int
	setActive                string
}

// abSteps: ping and TCP over the bond, the active member's link taken
// down (our side), traffic continues on the other; the member back and
// made active with bond/set-active-member.
func (b *bondBed) abSteps(t *testing.T, who, ctl string, port int) abRun {
	t.Helper()
	var r abRun
	b.peer.Exec("ip", "neigh", "flush", "all")
	b.h2.Exec("ip", "neigh", "flush", "all")
	// Which member a bond makes active first is up to the switch (OVS
	// takes the first of a hash map): make it the first member on both.
	active, backup := b.members[0], b.members[1]
	waitBondShow(t, ctl, "member "+backup+": enabled\n")
	waitBondShow(t, ctl, "member "+active+": enabled\n")
	appctlAt(t, ctl, "bond/set-active-member", "bond0", active)
	r.show = waitBondShow(t, ctl, "member "+active+": enabled\n  active member\n")
	b.peerActive(t, active)
	var out string
	if r.loss, out = b.pingLoss(t, 3); r.loss != 0 {
		t.Errorf("%s: peer->h2 over the bond lost %d of 3:\n%s\nbond/show:\n%s", who, r.loss, out, r.show)
	}
	b.echoServer(t, port)
	c := b.tcpConn(t, port)
	if err := echo(c, "before"); err != nil {
		t.Errorf("%s: TCP before failover: %v", who, err)
	}
	r.list = appctlAt(t, ctl, "bond/list").out
	// Failover: our active member goes down; the peer's bond sees its
	// slave lose carrier and fails over too.
	if out, err := exec.Command("ip", "link", "set", active, "down").CombinedOutput(); err != nil {
		t.Fatalf("ip link set %s down: %v\n%s", active, err, out)
	}
	r.failed = waitBondShow(t, ctl, "member "+backup+": enabled\n  active member\n")
	if err := echo(c, "after failover"); err != nil {
		t.Errorf("%s: TCP over the failover: %v", who, err)
	}
	if r.lossFailed, out = b.pingLoss(t, 3); r.lossFailed != 0 {
		t.Errorf("%s: peer->h2 after failover lost %d of 3:\n%s\nbond/show:\n%s", who, r.lossFailed, out, r.failed)
	}
	// The member back: it stays backup until made active.
	if out, err := exec.Command("ip", "link", "set", active, "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set %s up: %v\n%s", active, err, out)
	}
	waitBondShow(t, ctl, "member "+active+": enabled\n")
	r.setActive = strings.TrimSpace(appctlAt(t, ctl, "bond/set-active-member", "bond0", active).out)
	b.peerActive(t, active)
	r.back = appctlAt(t, ctl, "bond/show").out
	if err := echo(c, "back"); err != nil {
		t.Errorf("%s: TCP after set-active-member: %v", who, err)
	}
	if l, out := b.pingLoss(t, 3); l != 0 {
		t.Errorf("%s: peer->h2 after set-active-member lost %d of 3:\n%s\nbond/show:\n%s", who, l, out, r.back)
	}
	return r
}

// startGov runs govswitchd from its own ovsdb-server; it returns vsctl
// against that server (failing the test on an error), the control socket,
// and the server's raw Vsctl.
func startGov(t *testing.T, rundir string) (func(args ...string) string, string, func(time.Duration, ...string) (string, error)) {
	t.Helper()
	srv := ovsdbtest.Start(t)
	ctl := filepath.Join(rundir, "gov.ctl")
	d, err := NewForOVSDB(Config{Datapath: "system", Rundir: rundir, Pidfile: "-", Handlers: 1, Unixctl: ctl}, nil, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(runOVSDB(t, d, srv.Remote, 15*time.Second))
	return func(args ...string) string {
		t.Helper()
		out, err := srv.Vsctl(15*time.Second, args...)
		if err != nil {
			t.Fatalf("ovs-vsctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}, ctl, srv.Vsctl
}

// stopOVS ends ovs-vswitchd with exit --cleanup and waits for its bridge
// to go.
func stopOVS(t *testing.T, o *ovsSwitch, bridge string) {
	t.Helper()
	if r := appctlAt(t, o.ctl, "exit", "--cleanup"); r.code != 0 {
		t.Fatalf("ovs-vswitchd exit --cleanup: %d %s", r.code, r.err)
	}
	for deadline := time.Now().Add(5 * time.Second); linkExists(bridge); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ovs-vswitchd's exit --cleanup left %s for 5 s", bridge)
		}
	}
}

// TestIntegrationBondActiveBackup: an active-backup bond facing a Linux
// active-backup bond carries ping and TCP, fails over when its active
// member loses its link (the TCP connection survives), and takes
// bond/set-active-member; bond/show reads as ovs-vswitchd 3.1's at each
// step, ovs-vswitchd doing the same in the same boot first.
func TestIntegrationBondActiveBackup(t *testing.T) {
	b := newBondBed(t)
	b.linuxBond(t, "active-backup")

	o := startOVS(t)
	b.configure(func(args ...string) string { return o.must(t, "ovs-vsctl", args...) }, "bond_mode=active-backup")
	ovs := b.abSteps(t, "ovs-vswitchd", o.ctl, 7001)
	stopOVS(t, o, b.name)

	vsctl, ctl, _ := startGov(t, b.rundir)
	b.configure(vsctl, "bond_mode=active-backup")
	for _, p := range b.members {
		if e := vsctl("get", "Interface", p, "error"); e != "[]" {
			t.Errorf("member %s: Interface error %s", p, e)
		}
	}
	gov := b.abSteps(t, "govswitchd", ctl, 7002)

	for _, c := range []struct{ what, ovs, gov string }{
		{"bond/show", ovs.show, gov.show},
		{"bond/show after failover", ovs.failed, gov.failed},
		{"bond/show after set-active-member", ovs.back, gov.back},
		{"bond/set-active-member", ovs.setActive, gov.setActive},
	} {
		t.Logf("%s:\novs-vswitchd:\n%s\ngovswitchd:\n%s", c.what, c.ovs, c.gov)
		if bondShowNorm(c.ovs) != bondShowNorm(c.gov) {
			t.Errorf("%s differs:\novs-vswitchd:\n%s\ngovswitchd:\n%s", c.what, c.ovs, c.gov)
		}
	}
	// bond/list: OVS lists members in hash order; compare the sets.
	norm := func(s string) string {
		if i := strings.LastIndex(s, "\t"); i >= 0 {
			m := strings.Split(strings.TrimSpace(s[i+1:]), ", ")
			if len(m) == 2 && m[0] > m[1] {
				m[0], m[1] = m[1], m[0]
			}
			return s[:i+1] + strings.Join(m, ", ")
		}
		return s
	}
	if norm(ovs.list) != norm(gov.list) {
		t.Errorf("bond/list differs:\novs-vswitchd:\n%s\ngovswitchd:\n%s", ovs.list, gov.list)
	}
}

// linuxBridge makes the peer's eth0 and eth1 ports of a Linux bridge
// (no STP) addressed 10.0.0.1: with our bond's two members that is a loop,
// which only the bond's rules (one copy of a flood per bond, broadcasts
// accepted on the active member only, a source learned elsewhere dropped)
// keep from storming.
func (b *bondBed) linuxBridge(t *testing.T) {
	t.Helper()
	b.peerRun(t, "ip", "link", "add", "lbr", "type", "bridge", "stp_state", "0", "forward_delay", "0")
	for _, e := range []string{"eth0", "eth1"} {
		b.peerRun(t, "ip", "link", "set", e, "master", "lbr")
	}
	b.peerRun(t, "ip", "addr", "add", "10.0.0.1/24", "dev", "lbr")
	b.peerRun(t, "ip", "link", "set", "lbr", "up")
}

// rxPackets is h2's eth0 received-packet count (ip netns exec mounts
// the namespace's own sysfs).
func (b *bondBed) rxPackets(t *testing.T) int {
	t.Helper()
	out, err := b.h2.Exec("cat", "/sys/class/net/eth0/statistics/rx_packets")
	if err != nil {
		t.Fatalf("h2 rx_packets: %v", err)
	}
	var n int
	if _, err := fmt.Sscan(out, &n); err != nil {
		t.Fatalf("h2 rx_packets %q: %v", out, err)
	}
	return n
}

// slbRun is what one switch did with the balance-slb bed.
type slbRun struct {
	show, failed   string
	hashes         string // bond/hash of a few addresses
	loss, lossDown int
	rx             int // frames h2 received during the first pings
}

func (b *bondBed) slbSteps(t *testing.T, who, ctl string, port int) slbRun {
	t.Helper()
	var r slbRun
	b.peer.Exec("ip", "neigh", "flush", "all")
	b.h2.Exec("ip", "neigh", "flush", "all")
	waitBondShow(t, ctl, "member "+b.members[0]+": enabled\n")
	waitBondShow(t, ctl, "member "+b.members[1]+": enabled\n")
	appctlAt(t, ctl, "bond/set-active-member", "bond0", b.members[0])
	r.show = waitBondShow(t, ctl, "member "+b.members[0]+": enabled\n  active member\n")
	for _, a := range [][]string{{"00:00:00:00:00:01"}, {"02:42:ac:11:00:02", "10"}, {"fe:dc:ba:98:76:54", "4095", "12345"}} {
		res := appctlAt(t, ctl, append([]string{"bond/hash"}, a...)...)
		r.hashes += strings.Join(a, " ") + " -> " + strings.TrimSpace(res.out) + "; "
	}
	rx0 := b.rxPackets(t)
	var out string
	if r.loss, out = b.pingLoss(t, 5); r.loss != 0 {
		t.Errorf("%s: peer->h2 over the SLB bond lost %d of 5:\n%s", who, r.loss, out)
	}
	// 5 echo requests, an ARP request and maybe a reply or two: a loop
	// would bring hundreds.
	if r.rx = b.rxPackets(t) - rx0; r.rx > 12 {
		t.Errorf("%s: h2 received %d frames for 5 pings: the loop through the bond is not held", who, r.rx)
	}
	b.echoServer(t, port)
	c := b.tcpConn(t, port)
	if err := echo(c, "before"); err != nil {
		t.Errorf("%s: TCP over the SLB bond: %v", who, err)
	}
	if out, err := exec.Command("ip", "link", "set", b.members[0], "down").CombinedOutput(); err != nil {
		t.Fatalf("ip link set %s down: %v\n%s", b.members[0], err, out)
	}
	r.failed = waitBondShow(t, ctl, "member "+b.members[0]+": disabled\n")
	if err := echo(c, "after failover"); err != nil {
		t.Errorf("%s: TCP over the SLB failover: %v", who, err)
	}
	if r.lossDown, out = b.pingLoss(t, 3); r.lossDown != 0 {
		t.Errorf("%s: peer->h2 with %s down lost %d of 3:\n%s", who, b.members[0], r.lossDown, out)
	}
	if out, err := exec.Command("ip", "link", "set", b.members[0], "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set %s up: %v\n%s", b.members[0], err, out)
	}
	waitBondShow(t, ctl, "member "+b.members[0]+": enabled\n")
	return r
}

// TestIntegrationBondSLB: a balance-slb bond into a Linux bridge (a loop)
// carries ping and TCP without a storm and over a member's failure;
// bond/show reads as ovs-vswitchd 3.1's (less its rebalancing lines),
// ovs-vswitchd doing the same in the same boot first.
func TestIntegrationBondSLB(t *testing.T) {
	b := newBondBed(t)
	b.linuxBridge(t)

	o := startOVS(t)
	b.configure(func(args ...string) string { return o.must(t, "ovs-vsctl", args...) }, "bond_mode=balance-slb")
	ovs := b.slbSteps(t, "ovs-vswitchd", o.ctl, 7003)
	stopOVS(t, o, b.name)

	vsctl, ctl, _ := startGov(t, b.rundir)
	b.configure(vsctl, "bond_mode=balance-slb")
	gov := b.slbSteps(t, "govswitchd", ctl, 7004)
	t.Logf("frames at h2 for 5 pings: ovs-vswitchd %d, govswitchd %d", ovs.rx, gov.rx)
	for _, c := range []struct{ what, ovs, gov string }{
		{"bond/show", ovs.show, gov.show},
		{"bond/show with a member down", ovs.failed, gov.failed},
		{"bond/hash", ovs.hashes, gov.hashes},
	} {
		t.Logf("%s:\novs-vswitchd:\n%s\ngovswitchd:\n%s", c.what, c.ovs, c.gov)
		if bondShowNorm(c.ovs) != bondShowNorm(c.gov) {
			t.Errorf("%s differs:\novs-vswitchd:\n%s\ngovswitchd:\n%s", c.what, c.ovs, c.gov)
		}
	}
}

// TestIntegrationBondMiimon: an active-backup bond with
// bond-detect-mode=miimon follows its members' polled link status (veth
// has no MII: ethtool's link, as ovs-vswitchd falls back to): the peer
// taking down the slave facing our active member disables that member in
// bond/show and traffic fails over to the other; a detect mode neither
// carrier nor miimon is refused in the Interface error.
func TestIntegrationBondMiimon(t *testing.T) {
	b := newBondBed(t)
	b.linuxBond(t, "active-backup")
	vsctl, ctl, srvVsctl := startGov(t, b.rundir)
	b.configure(vsctl, "bond_mode=active-backup", "other_config:bond-detect-mode=miimon", "other_config:bond-miimon-interval=100")
	for _, p := range b.members {
		if e := vsctl("get", "Interface", p, "error"); e != "[]" {
			t.Errorf("member %s: Interface error %s", p, e)
		}
	}
	active, backup := b.members[0], b.members[1]
	waitBondShow(t, ctl, "member "+backup+": enabled\n")
	waitBondShow(t, ctl, "member "+active+": enabled\n")
	appctlAt(t, ctl, "bond/set-active-member", "bond0", active)
	show := waitBondShow(t, ctl, "member "+active+": enabled\n  active member\n")
	b.peerActive(t, active)
	if l, out := b.pingLoss(t, 3); l != 0 {
		t.Errorf("peer->h2 over the bond lost %d of 3:\n%s\nbond/show:\n%s", l, out, show)
	}
	// The peer's eth0 down: our active member's veth loses its link.
	b.peerRun(t, "ip", "link", "set", "eth0", "down")
	failed := waitBondShow(t, ctl, "member "+active+": disabled\n")
	if !strings.Contains(failed, "member "+backup+": enabled\n  active member\n") {
		t.Errorf("after %s lost its link, bond/show:\n%s", active, failed)
	}
	t.Logf("bond/show after the failover:\n%s", failed)
	if l, out := b.pingLoss(t, 3); l != 0 {
		t.Errorf("peer->h2 after the failover lost %d of 3:\n%s\nbond/show:\n%s", l, out, failed)
	}
	b.peerRun(t, "ip", "link", "set", "eth0", "up")
	waitBondShow(t, ctl, "member "+active+": enabled\n")

	// Refused loudly: a detect mode govswitchd does not know (ovs-vswitchd
	// falls back to carrier with a WARN). ovs-vsctl may exit non-zero;
	// the error column is what counts.
	out, _ := srvVsctl(15*time.Second, "set", "Port", "bond0", "other_config:bond-detect-mode=arpmon")
	t.Logf("bond-detect-mode=arpmon: %s", out)
	for _, p := range b.members {
		if e := vsctl("get", "Interface", p, "error"); !strings.Contains(e, `want carrier or miimon`) {
			t.Errorf("arpmon: member %s Interface error %s, want it refused", p, e)
		}
	}
}
