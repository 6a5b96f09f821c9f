package vswitchd

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
)

// Conntrack end to end with real traffic: h1 (port 1, 10.0.0.1) is inside,
// h2 (port 2, 10.0.0.2) outside.

// ctFirewall is the classic stateful firewall: untracked IP goes through
// conntrack into table 1; there connections from inside are committed and
// forwarded, established traffic passes both ways, everything else drops.
var ctFirewall = []string{
	"table=0,priority=100,arp,actions=NORMAL",
	"table=0,priority=1,ip,ct_state=-trk,actions=ct(table=1)",
	"table=1,priority=10,ip,in_port=1,ct_state=+trk+new,actions=ct(commit),output:2",
	"table=1,priority=10,ip,in_port=1,ct_state=+trk+est,actions=output:2",
	"table=1,priority=10,ip,in_port=2,ct_state=+trk+est,actions=output:1",
}

// serveEcho listens on network/addr inside ns and echoes what it reads;
// for TCP it also records the peer address of each connection.
func serveEcho(t *testing.T, ns *testbed.Netns, network, addr string) (peers chan string) {
	t.Helper()
	peers = make(chan string, 16)
	if network == "udp" {
		var pc net.PacketConn
		if err := ns.Do(func() (err error) { pc, err = net.ListenPacket("udp", addr); return }); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pc.Close() })
		go func() {
			buf := make([]byte, 2048)
			for {
				n, from, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				select {
				case peers <- from.String():
				default:
				}
				pc.WriteTo(buf[:n], from)
			}
		}()
		return peers
	}
	var ln net.Listener
	if err := ns.Do(func() (err error) { ln, err = net.Listen("tcp", addr); return }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case peers <- c.RemoteAddr().String():
			default:
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return peers
}

// exchange dials addr from ns, sends a message and reads the echo back.
func exchange(ns *testbed.Netns, network, addr string) error {
	var c net.Conn
	err := ns.Do(func() (err error) { c, err = net.DialTimeout(network, addr, 3*time.Second); return })
	if err != nil {
		return err
	}
	defer c.Close()
	msg := []byte("govswitch conntrack " + network)
	// UDP may lose the first datagram while the flows go in: retry.
	tries := 1
	if network == "udp" {
		tries = 5
	}
	buf := make([]byte, len(msg))
	for i := 0; i < tries; i++ {
		if _, err = c.Write(msg); err != nil {
			return err
		}
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err = io.ReadFull(c, buf); err == nil {
			if string(buf) != string(msg) {
				return fmt.Errorf("echo %q, want %q", buf, msg)
			}
			return nil
		}
	}
	return err
}

// startCt starts the daemon in secure fail mode with a unixctl socket
// for the real ovs-appctl, and returns a caller of it.
func (b *bed) startCt(t *testing.T) (appctl func(args ...string) string) {
	t.Helper()
	ctl := b.rundir + "/govswitchd.ctl"
	b.start(t, "--fail-mode", "secure", "--unixctl", ctl)
	return func(args ...string) string {
		t.Helper()
		r := appctlAt(t, ctl, args...)
		if r.code != 0 {
			t.Fatalf("ovs-appctl %v: exit %d: %s", args, r.code, r.err)
		}
		return r.out
	}
}

func (b *bed) addFlows(t *testing.T, flows []string) {
	t.Helper()
	for _, f := range flows {
		b.ofctl(t, "add-flow", f)
	}
}

// fwRun is what one switch did with the firewall's traffic.
type fwRun struct {
	passed    map[string]bool // "tcp in", "udp out", ...: the exchange succeeded
	conntrack []string        // the kernel's entries, ports and ids masked
	dpflows   string          // ovs-dpctl dump-flows after the inside traffic
}

var ctPortRE = regexp.MustCompile(`(sport|dport|id)=\d+`)

// firewallTraffic runs the firewall's traffic (the flows are in): TCP, UDP
// and ICMP from inside, then from outside; appctl reads the kernel's
// conntrack table through the switch.
func (b *bed) firewallTraffic(t *testing.T, appctl func(args ...string) string, dp string) fwRun {
	t.Helper()
	r := fwRun{passed: map[string]bool{}}
	r.passed["tcp in"] = exchange(b.h1, "tcp", "10.0.0.2:7000") == nil
	r.passed["udp in"] = exchange(b.h1, "udp", "10.0.0.2:7001") == nil
	r.passed["icmp in"] = b.ping(t, 3) == 0
	// The inside flows, before they idle out.
	out, _ := exec.Command("ovs-dpctl", "dump-flows", dp).CombinedOutput()
	r.dpflows = string(out)
	r.passed["tcp out"] = exchange(b.h2, "tcp", "10.0.0.1:7002") == nil
	r.passed["udp out"] = exchange(b.h2, "udp", "10.0.0.1:7003") == nil
	out2, _ := b.h2.Exec("ping", "-c", "3", "-i", "0.2", "-W", "1", "10.0.0.1")
	r.passed["icmp out"] = parseLoss(t, out2) < 3
	for _, line := range strings.Split(appctl("dpctl/dump-conntrack"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			r.conntrack = append(r.conntrack, ctPortRE.ReplaceAllString(line, "$1=N"))
		}
	}
	sort.Strings(r.conntrack) // the kernel dumps its hash table in no set order
	return r
}

// TestIntegrationConntrackFirewall: with the stateful firewall, TCP, UDP and
// ICMP from inside get through with their replies; new connections from
// outside do not; the kernel's conntrack table (dpctl/dump-conntrack) holds
// the committed connections and the datapath flows recirculate.
// ovs-vswitchd cannot run it in UML: it always sends OVS_CT_ATTR_ZONE, which
// a kernel without conntrack zones refuses (EINVAL on every flow put).
func TestIntegrationConntrackFirewall(t *testing.T) { testFirewall(t, false) }

// TestIntegrationVMConntrackFirewall is the firewall in the vm bed, with
// ovs-vswitchd 3.1 running the same steps first on the same kernel: both
// switches must pass and block the same traffic and leave the same
// conntrack entries.
func TestIntegrationVMConntrackFirewall(t *testing.T) {
	testbed.RequireVM(t)
	testFirewall(t, true)
}

func testFirewall(t *testing.T, withOVS bool) {
	b := newBed(t)
	serveEcho(t, b.h2, "tcp", "10.0.0.2:7000")
	serveEcho(t, b.h2, "udp", "10.0.0.2:7001")
	serveEcho(t, b.h1, "tcp", "10.0.0.1:7002")
	serveEcho(t, b.h1, "udp", "10.0.0.1:7003")
	want := map[string]bool{"tcp in": true, "udp in": true, "icmp in": true}

	ovs := fwRun{passed: want}
	if withOVS {
		b.withOVS(t, ctFirewall, func(appctl func(args ...string) string) {
			ovs = b.firewallTraffic(t, appctl, "system@ovs-system")
		})
		t.Logf("ovs-vswitchd: %v\nconntrack %q\ndatapath flows:\n%s", ovs.passed, ovs.conntrack, ovs.dpflows)
	}

	appctl := b.startCt(t)
	b.addFlows(t, ctFirewall)
	appctl("dpctl/flush-conntrack")
	feat := appctl("dpif/show-dp-features", b.name)
	for _, want := range []string{"Recirc: Yes", "CT state: Yes", "CT state NAT: Yes", "Conntrack clear: Yes"} {
		if !strings.Contains(feat, want) {
			t.Errorf("dpif/show-dp-features lacks %q:\n%s", want, feat)
		}
	}
	gov := b.firewallTraffic(t, appctl, "system@ovs-system")
	t.Logf("govswitchd: %v\nconntrack %q\ndatapath flows:\n%s", gov.passed, gov.conntrack, gov.dpflows)

	for _, k := range []string{"tcp in", "udp in", "icmp in", "tcp out", "udp out", "icmp out"} {
		if gov.passed[k] != want[k] {
			t.Errorf("%s: passed %v, want %v", k, gov.passed[k], want[k])
		}
		if gov.passed[k] != ovs.passed[k] {
			t.Errorf("%s: govswitchd passed %v, ovs-vswitchd %v", k, gov.passed[k], ovs.passed[k])
		}
	}
	if withOVS && strings.Join(gov.conntrack, "\n") != strings.Join(ovs.conntrack, "\n") {
		t.Errorf("conntrack entries differ:\n govswitchd   %q\n ovs-vswitchd %q", gov.conntrack, ovs.conntrack)
	}
	for _, want := range []string{
		"tcp,orig=(src=10.0.0.1,dst=10.0.0.2,", "udp,orig=(src=10.0.0.1,dst=10.0.0.2,", "icmp,orig=(src=10.0.0.1,dst=10.0.0.2,",
	} {
		if !strings.Contains(strings.Join(gov.conntrack, "\n"), want) {
			t.Errorf("dump-conntrack lacks %q", want)
		}
	}
	for _, want := range []string{`recirc_id\(0\),in_port\(\d+\),ct_state\(-trk\),.*actions:ct,recirc\(0x[0-9a-f]+\)`,
		`recirc_id\(0x[0-9a-f]+\),in_port\(\d+\),ct_state\(\+new[-+a-z]*\+trk\),.*actions:ct\(commit\),\d+`} {
		if !regexp.MustCompile(want).MatchString(gov.dpflows) {
			t.Errorf("no datapath flow matches %s", want)
		}
	}
	dump := b.ofctl(t, "dump-flows")
	t.Logf("dump-flows:\n%s", dump)
	if strings.Contains(dump, "n_packets=0, n_bytes=0, priority=10,ct_state=+new+trk") {
		t.Errorf("the +new rule was credited no packets")
	}
}

var ctNATFlows = []string{
	"table=0,priority=100,arp,actions=NORMAL",
	"table=0,priority=20,tcp,in_port=1,nw_dst=10.0.0.200,tp_dst=80,actions=ct(commit,nat(dst=10.0.0.2:7000)),output:2",
	"table=0,priority=10,ip,in_port=1,actions=ct(commit,nat(src=10.0.0.100:40000-40010)),output:2",
	"table=0,priority=10,ip,in_port=2,actions=ct(nat),output:1",
}

// natRun is what one switch did with the NAT traffic.
type natRun struct {
	snat, dnat string   // h2's view of the connection's source, port masked; "" when none came
	conntrack  []string // the kernel's entries, ports masked, sorted
}

// natBed is a bed whose h2 has a neighbour entry for the SNAT address and
// h1 one for the DNAT address, both pointing across the switch.
func natBed(t *testing.T) *bed {
	b := newBed(t)
	for _, c := range [][]string{
		{"h2", "ip", "neigh", "replace", "10.0.0.100", "lladdr", b.mac1.String(), "dev", "eth0"},
		{"h1", "ip", "neigh", "replace", "10.0.0.200", "lladdr", b.mac2.String(), "dev", "eth0"},
	} {
		ns := b.h1
		if c[0] == "h2" {
			ns = b.h2
		}
		if out, err := ns.Exec(c[1], c[2:]...); err != nil {
			t.Fatalf("%v: %v\n%s", c, err, out)
		}
	}
	return b
}

// natTraffic opens a connection through SNAT and one through DNAT (the
// flows are in) and reports what h2 saw.
func (b *bed) natTraffic(t *testing.T, appctl func(args ...string) string, peers chan string) natRun {
	t.Helper()
	var r natRun
	peer := func(what string) string {
		select {
		case p := <-peers:
			host, port, _ := net.SplitHostPort(p)
			if host == "10.0.0.100" && port >= "40000" && port <= "40010" {
				port = "40000-40010"
			} else {
				port = "N"
			}
			return host + ":" + port
		case <-time.After(5 * time.Second):
			t.Errorf("%s: h2 accepted no connection", what)
			return ""
		}
	}
	if err := exchange(b.h1, "tcp", "10.0.0.2:7000"); err != nil {
		t.Errorf("TCP through SNAT: %v", err)
	} else {
		r.snat = peer("SNAT")
	}
	if err := exchange(b.h1, "tcp", "10.0.0.200:80"); err != nil {
		t.Errorf("TCP through DNAT: %v", err)
	} else {
		r.dnat = peer("DNAT")
	}
	for _, line := range strings.Split(appctl("dpctl/dump-conntrack"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			r.conntrack = append(r.conntrack, ctPortRE.ReplaceAllString(line, "$1=N"))
		}
	}
	sort.Strings(r.conntrack)
	return r
}

// TestIntegrationConntrackNAT: ct(commit,nat(src=...)) makes h2 see h1's
// connections come from the NAT address and port range, and
// ct(commit,nat(dst=...)) sends h1's connections to a virtual address on
// to h2, the replies translated back by ct(nat).
func TestIntegrationConntrackNAT(t *testing.T) { testNAT(t, false) }

// TestIntegrationVMConntrackNAT is the NAT test in the vm bed, ovs-vswitchd
// 3.1 running the same steps first: the same translations, the same
// conntrack entries.
func TestIntegrationVMConntrackNAT(t *testing.T) {
	testbed.RequireVM(t)
	testNAT(t, true)
}

func testNAT(t *testing.T, withOVS bool) {
	b := natBed(t)
	peers := serveEcho(t, b.h2, "tcp", "10.0.0.2:7000")
	var ovs natRun
	if withOVS {
		b.withOVS(t, ctNATFlows, func(appctl func(args ...string) string) { ovs = b.natTraffic(t, appctl, peers) })
		t.Logf("ovs-vswitchd: %+v", ovs)
	}
	appctl := b.startCt(t)
	b.addFlows(t, ctNATFlows)
	appctl("dpctl/flush-conntrack")
	gov := b.natTraffic(t, appctl, peers)
	t.Logf("govswitchd: %+v", gov)
	if gov.snat != "10.0.0.100:40000-40010" {
		t.Errorf("h2 saw the SNAT connection from %q, want 10.0.0.100:40000-40010", gov.snat)
	}
	if gov.dnat != "10.0.0.1:N" {
		t.Errorf("h2 saw the DNAT connection from %q, want 10.0.0.1", gov.dnat)
	}
	ct := strings.Join(gov.conntrack, "\n")
	if !strings.Contains(ct, "reply=(src=10.0.0.2,dst=10.0.0.100,") {
		t.Errorf("no SNAT entry in dump-conntrack")
	}
	if !strings.Contains(ct, "orig=(src=10.0.0.1,dst=10.0.0.200,") {
		t.Errorf("no DNAT entry in dump-conntrack")
	}
	if withOVS && (gov.snat != ovs.snat || gov.dnat != ovs.dnat || ct != strings.Join(ovs.conntrack, "\n")) {
		t.Errorf("govswitchd %+v\novs-vswitchd %+v", gov, ovs)
	}
}

// TestIntegrationConntrackMark: ct_mark set when a connection is committed
// is matched by the next stage: replies pass only with the mark, so the
// echo proves it was set and read.
func TestIntegrationConntrackMark(t *testing.T) {
	b := newBed(t)
	appctl := b.startCt(t)
	b.addFlows(t, []string{
		"table=0,priority=100,arp,actions=NORMAL",
		"table=0,priority=1,ip,ct_state=-trk,actions=ct(table=1)",
		"table=1,priority=10,ip,in_port=1,ct_state=+trk+new,actions=ct(commit,exec(set_field:0x5->ct_mark,set_field:0x10->ct_label)),output:2",
		"table=1,priority=10,ip,in_port=1,ct_state=+trk+est,ct_mark=0x5,actions=output:2",
		"table=1,priority=10,ip,in_port=2,ct_state=+trk+est,ct_mark=0x5,ct_label=0x10,actions=output:1",
	})
	appctl("dpctl/flush-conntrack")
	serveEcho(t, b.h2, "tcp", "10.0.0.2:7000")
	if err := exchange(b.h1, "tcp", "10.0.0.2:7000"); err != nil {
		t.Fatalf("TCP with marked connection: %v", err)
	}
	ct := appctl("dpctl/dump-conntrack")
	t.Logf("dpctl/dump-conntrack:\n%s", ct)
	if !strings.Contains(ct, "mark=5,labels=0x10,") {
		t.Errorf("no mark=5,labels=0x10 in dump-conntrack")
	}
	dump := b.ofctl(t, "dump-flows")
	t.Logf("dump-flows:\n%s", dump)
	if strings.Contains(dump, "n_packets=0, n_bytes=0, priority=10,ct_state=+est+trk,ct_mark=0x5,ct_label=0x10,ip,in_port=2") {
		t.Errorf("the reply rule matching mark and label saw no packets")
	}
}

// withOVS runs steps against ovs-vswitchd 3.1 with flows on a secure
// bridge of the bed's two ports (OpenFlow ports 1 and 2), then stops it,
// datapath and all, so govswitchd can take the ports.
func (b *bed) withOVS(t *testing.T, flows []string, steps func(appctl func(args ...string) string)) {
	t.Helper()
	b.withOVSSwitch(t, flows, func(o *ovsSwitch) {
		steps(func(args ...string) string { return appctlAt(t, o.ctl, args...).out })
	})
}

// withOVSSwitch is withOVS for steps that need the switch itself (its
// control socket for exit codes and errors, its environment for
// ovs-ofctl).
func (b *bed) withOVSSwitch(t *testing.T, flows []string, steps func(o *ovsSwitch)) {
	t.Helper()
	o := startOVS(t)
	o.must(t, "ovs-vsctl", "add-br", b.name, "--", "set-fail-mode", b.name, "secure",
		"--", "add-port", b.name, b.v1, "--", "set", "Interface", b.v1, "ofport_request=1",
		"--", "add-port", b.name, b.v2, "--", "set", "Interface", b.v2, "ofport_request=2")
	for _, f := range flows {
		o.must(t, "ovs-ofctl", "add-flow", b.name, f)
	}
	appctlAt(t, o.ctl, "dpctl/flush-conntrack")
	steps(o)
	if r := appctlAt(t, o.ctl, "exit", "--cleanup"); r.code != 0 {
		t.Fatalf("ovs-vswitchd exit --cleanup: %d %s", r.code, r.err)
	}
	for deadline := time.Now().Add(5 * time.Second); linkExists("ovs-system"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("ovs-vswitchd's exit --cleanup left ovs-system for 5 s")
		}
	}
}

// TestIntegrationVMConntrackZones: connections live in their zone. h1's
// connections are tracked and committed in zone 1; when h2's replies are
// tracked in zone 1 too (the zone taken from a register) they are
// established and pass, when in zone 2 they are new there and dropped.
func TestIntegrationVMConntrackZones(t *testing.T) {
	testbed.RequireVM(t)
	b := newBed(t)
	serveEcho(t, b.h2, "tcp", "10.0.0.2:7000")
	appctl := b.startCt(t)
	if feat := appctl("dpif/show-dp-features", b.name); !strings.Contains(feat, "CT zone: Yes") {
		t.Fatalf("the vm bed's kernel has no conntrack zones:\n%s", feat)
	}
	reply := func(zone int) string {
		return fmt.Sprintf("table=0,priority=10,ip,in_port=2,ct_state=-trk,actions=load:%d->NXM_NX_REG0[0..15],ct(zone=NXM_NX_REG0[0..15],table=1)", zone)
	}
	b.addFlows(t, []string{
		"table=0,priority=100,arp,actions=NORMAL",
		"table=0,priority=10,ip,in_port=1,ct_state=-trk,actions=ct(zone=1,table=1)",
		reply(1),
		"table=1,priority=10,ip,in_port=1,ct_state=+trk+new,ct_zone=1,actions=ct(commit,zone=1),output:2",
		"table=1,priority=10,ip,in_port=1,ct_state=+trk+est,ct_zone=1,actions=output:2",
		"table=1,priority=10,ip,in_port=2,ct_state=+trk+est,actions=output:1",
	})
	appctl("dpctl/flush-conntrack")
	if err := exchange(b.h1, "tcp", "10.0.0.2:7000"); err != nil {
		t.Fatalf("TCP with both directions in zone 1: %v", err)
	}
	ct := appctl("dpctl/dump-conntrack", "zone=1")
	t.Logf("dpctl/dump-conntrack zone=1:\n%s", ct)
	if !strings.Contains(ct, "tcp,orig=(src=10.0.0.1,dst=10.0.0.2,") || !strings.Contains(ct, ",zone=1") {
		t.Errorf("no zone 1 entry for the connection")
	}
	if other := appctl("dpctl/dump-conntrack", "zone=2"); strings.Contains(other, "10.0.0.1") {
		t.Errorf("zone 2 holds the connection:\n%s", other)
	}

	b.ofctl(t, "add-flow", reply(2))
	appctl("dpctl/flush-conntrack")
	if err := exchange(b.h1, "tcp", "10.0.0.2:7000"); err == nil {
		t.Errorf("TCP got through with the replies tracked in zone 2")
	}
	ct = appctl("dpctl/dump-conntrack")
	t.Logf("dpctl/dump-conntrack:\n%s", ct)
	if !strings.Contains(ct, ",zone=1") {
		t.Errorf("the SYN was not committed in zone 1")
	}
}

// echoOnce writes msg on c and reads the echo back within d.
func echoOnce(c net.Conn, msg string, d time.Duration) error {
	if _, err := c.Write([]byte(msg)); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != msg {
		return fmt.Errorf("echo %q, want %q", buf, msg)
	}
	return nil
}

// TestIntegrationConntrackRevalidate: the recirculated stage's megaflows
// follow rule changes. An established connection stops when the rule
// passing its replies goes (the second stage's installed flows are
// revalidated away, though the first stage's do not change) and resumes
// when it comes back; the replies are credited to the table 1 rule.
func TestIntegrationConntrackRevalidate(t *testing.T) {
	b := newBed(t)
	appctl := b.startCt(t)
	b.addFlows(t, ctFirewall)
	appctl("dpctl/flush-conntrack")
	serveEcho(t, b.h2, "tcp", "10.0.0.2:7000")
	var c net.Conn
	if err := b.h1.Do(func() (err error) { c, err = net.DialTimeout("tcp", "10.0.0.2:7000", 3*time.Second); return }); err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close()
	if err := echoOnce(c, "one", 3*time.Second); err != nil {
		t.Fatalf("first echo: %v", err)
	}
	const replies = "table=1,priority=10,ip,in_port=2,ct_state=+trk+est"
	b.ofctl(t, "del-flows", "--strict", replies)
	if err := echoOnce(c, "two", 2*time.Second); err == nil {
		t.Fatalf("echo came back without the rule for replies")
	}
	b.ofctl(t, "add-flow", replies+",actions=output:1")
	// h2 retransmits the echo of "two" that was dropped; it and the echo
	// of "three" come back, in that order.
	if _, err := c.Write([]byte("three")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(15 * time.Second))
	buf := make([]byte, len("twothree"))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "twothree" {
		t.Errorf("after the rule came back: read %q, %v; want \"twothree\"", buf, err)
	}
	// Rules are credited when the revalidator next reads the datapath's
	// counters (every 500 ms, later on a loaded bed), as ovs-vswitchd's:
	// poll rather than read once.
	var dump string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		dump = b.ofctl(t, "dump-flows", "table=1,in_port=2")
		if !strings.Contains(dump, "n_packets=0,") || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("dump-flows:\n%s", dump)
	if !strings.Contains(dump, "ct_state=+est+trk") || strings.Contains(dump, "n_packets=0,") {
		t.Errorf("the re-added reply rule was credited no packets")
	}
	dp, _ := exec.Command("ovs-dpctl", "dump-flows", "system@ovs-system").CombinedOutput()
	t.Logf("ovs-dpctl dump-flows:\n%s", dp)
}

// TestIntegrationConntrackFirewallIPv6: the firewall for IPv6: TCP, UDP
// and ICMPv6 echo from inside pass with their replies, from outside not.
func TestIntegrationConntrackFirewallIPv6(t *testing.T) {
	b := newBed(t)
	for _, step := range []struct {
		ns   *testbed.Netns
		args []string
	}{
		{b.h1, []string{"sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.eth0.disable_ipv6=0"}},
		{b.h2, []string{"sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=0", "net.ipv6.conf.eth0.disable_ipv6=0"}},
		{b.h1, []string{"ip", "-6", "addr", "add", "fd00::1/64", "dev", "eth0", "nodad"}},
		{b.h2, []string{"ip", "-6", "addr", "add", "fd00::2/64", "dev", "eth0", "nodad"}},
		{b.h1, []string{"ip", "-6", "neigh", "replace", "fd00::2", "lladdr", b.mac2.String(), "dev", "eth0"}},
		{b.h2, []string{"ip", "-6", "neigh", "replace", "fd00::1", "lladdr", b.mac1.String(), "dev", "eth0"}},
	} {
		if out, err := step.ns.Exec(step.args[0], step.args[1:]...); err != nil {
			t.Fatalf("%v: %v\n%s", step.args, err, out)
		}
	}
	appctl := b.startCt(t)
	b.addFlows(t, []string{
		"table=0,priority=100,icmp6,icmp_type=135,actions=NORMAL",
		"table=0,priority=100,icmp6,icmp_type=136,actions=NORMAL",
		"table=0,priority=1,ipv6,ct_state=-trk,actions=ct(table=1)",
		"table=1,priority=10,ipv6,in_port=1,ct_state=+trk+new,actions=ct(commit),output:2",
		"table=1,priority=10,ipv6,in_port=1,ct_state=+trk+est,actions=output:2",
		"table=1,priority=10,ipv6,in_port=2,ct_state=+trk+est,actions=output:1",
	})
	appctl("dpctl/flush-conntrack")
	serveEcho(t, b.h2, "tcp", "[fd00::2]:7000")
	serveEcho(t, b.h2, "udp", "[fd00::2]:7001")
	serveEcho(t, b.h1, "tcp", "[fd00::1]:7002")
	if err := exchange(b.h1, "tcp", "[fd00::2]:7000"); err != nil {
		t.Errorf("TCP from inside: %v", err)
	}
	if err := exchange(b.h1, "udp", "[fd00::2]:7001"); err != nil {
		t.Errorf("UDP from inside: %v", err)
	}
	out, _ := b.h1.Exec("ping", "-6", "-c", "3", "-i", "0.2", "-W", "2", "fd00::2")
	if loss := parseLoss(t, out); loss != 0 {
		t.Errorf("ping6 from inside: %d of 3 lost", loss)
	}
	if err := exchange(b.h2, "tcp", "[fd00::1]:7002"); err == nil {
		t.Errorf("TCP from outside got through")
	}
	out, _ = b.h2.Exec("ping", "-6", "-c", "2", "-i", "0.2", "-W", "1", "fd00::1")
	if loss := parseLoss(t, out); loss != 2 {
		t.Errorf("ping6 from outside: %d of 2 lost, want all", loss)
	}
	ct := appctl("dpctl/dump-conntrack")
	t.Logf("dpctl/dump-conntrack:\n%s", ct)
	for _, want := range []string{"tcp,orig=(src=fd00::1,dst=fd00::2,", "udp,orig=(src=fd00::1,dst=fd00::2,", "icmpv6,orig=(src=fd00::1,dst=fd00::2,"} {
		if !strings.Contains(ct, want) {
			t.Errorf("dump-conntrack lacks %q", want)
		}
	}
}

// TestIntegrationConntrackFTP: with alg=ftp the kernel's FTP helper reads
// the PORT command on the control connection and expects the data
// connection the server opens back to the client: it arrives related
// (+rel) and passes, where without the helper it is a new connection from
// outside and is dropped.
func TestIntegrationConntrackFTP(t *testing.T) {
	b := newBed(t)
	appctl := b.startCt(t)
	flows := func(alg string) []string {
		return []string{
			"table=0,priority=100,arp,actions=NORMAL",
			"table=0,priority=1,ip,ct_state=-trk,actions=ct(table=1)",
			"table=1,priority=20,tcp,in_port=1,tp_dst=21,ct_state=+trk+new,actions=ct(commit" + alg + "),output:2",
			"table=1,priority=10,ip,in_port=1,ct_state=+trk+est,actions=output:2",
			"table=1,priority=10,ip,in_port=2,ct_state=+trk+est,actions=output:1",
			"table=1,priority=10,ip,in_port=2,ct_state=+trk+rel,actions=ct(commit),output:1",
		}
	}
	// h2's "FTP server": reads a PORT command and connects back.
	var ln net.Listener
	if err := b.h2.Do(func() (err error) { ln, err = net.Listen("tcp", "10.0.0.2:21"); return }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Write([]byte("220 govswitch test\r\n"))
				r := bufio.NewReader(c)
				if _, err := r.ReadString('\n'); err != nil { // USER
					return
				}
				c.Write([]byte("331 any password will do\r\n"))
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				var a, bb, cc, d, p1, p2 int
				if _, err := fmt.Sscanf(line, "PORT %d,%d,%d,%d,%d,%d", &a, &bb, &cc, &d, &p1, &p2); err != nil {
					return
				}
				c.Write([]byte("200 PORT command successful\r\n"))
				var dc net.Conn
				err = b.h2.Do(func() (err error) {
					dc, err = net.DialTimeout("tcp", fmt.Sprintf("%d.%d.%d.%d:%d", a, bb, cc, d, p1<<8|p2), 3*time.Second)
					return
				})
				if err == nil {
					dc.Write([]byte("data"))
					dc.Close()
				}
			}()
		}
	}()
	transfer := func(port int) error {
		var dl net.Listener
		if err := b.h1.Do(func() (err error) { dl, err = net.Listen("tcp", fmt.Sprintf("10.0.0.1:%d", port)); return }); err != nil {
			return err
		}
		defer dl.Close()
		var c net.Conn
		if err := b.h1.Do(func() (err error) { c, err = net.DialTimeout("tcp", "10.0.0.2:21", 3*time.Second); return }); err != nil {
			return fmt.Errorf("control connection: %w", err)
		}
		defer c.Close()
		// The helper reads commands that start a line after one it has
		// seen end, as in a real session: USER first, then PORT.
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		r := bufio.NewReader(c)
		if _, err := r.ReadString('\n'); err != nil {
			return fmt.Errorf("banner: %w", err)
		}
		fmt.Fprintf(c, "USER anonymous\r\n")
		if _, err := r.ReadString('\n'); err != nil {
			return fmt.Errorf("USER reply: %w", err)
		}
		fmt.Fprintf(c, "PORT 10,0,0,1,%d,%d\r\n", port>>8, port&0xff)
		dl.(*net.TCPListener).SetDeadline(time.Now().Add(6 * time.Second))
		dc, err := dl.Accept()
		if err != nil {
			return fmt.Errorf("data connection: %w", err)
		}
		defer dc.Close()
		dc.SetReadDeadline(time.Now().Add(3 * time.Second))
		got, _ := io.ReadAll(dc)
		if string(got) != "data" {
			return fmt.Errorf("data %q", got)
		}
		return nil
	}

	b.addFlows(t, flows(""))
	appctl("dpctl/flush-conntrack")
	if err := transfer(10000); err == nil {
		t.Errorf("the data connection got through without the FTP helper")
	}
	b.ofctl(t, "del-flows")
	b.addFlows(t, flows(",alg=ftp"))
	appctl("dpctl/flush-conntrack")
	if err := transfer(10001); err != nil {
		t.Errorf("FTP active transfer through alg=ftp: %v", err)
	}
	ct := appctl("dpctl/dump-conntrack")
	t.Logf("dpctl/dump-conntrack:\n%s", ct)
	if !strings.Contains(ct, "helper=ftp") {
		t.Errorf("no connection with helper=ftp in dump-conntrack")
	}
}

// TestIntegrationConntrackZonesRefused: UML's kernel has no conntrack
// zones, so rules that need them are refused as ovs-vswitchd refuses them,
// with NXBAC_CT_DATAPATH_SUPPORT (a zone in ct) and
// NXBMC_CT_DATAPATH_SUPPORT (a ct_zone match), in OpenFlow 1.0 and 1.3.
func TestIntegrationConntrackZonesRefused(t *testing.T) {
	b := newBed(t)
	appctl := b.startCt(t)
	if feat := appctl("dpif/show-dp-features", b.name); !strings.Contains(feat, "CT zone: No") {
		t.Skipf("this kernel has conntrack zones:\n%s", feat)
	}
	for _, opts := range [][]string{nil, {"-O", "OpenFlow13"}} {
		for _, tc := range []struct{ flow, want string }{
			{"ip,actions=ct(zone=1,table=1)", "NXBAC_CT_DATAPATH_SUPPORT"},
			{"ip,actions=ct(commit,zone=NXM_NX_REG0[0..15]),output:2", "NXBAC_CT_DATAPATH_SUPPORT"},
			{"ip,ct_zone=1,actions=output:2", "NXBMC_CT_DATAPATH_SUPPORT"},
		} {
			out, err := b.ofctlOpts(opts, "add-flow", tc.flow)
			if err == nil || !strings.Contains(out, tc.want) {
				t.Errorf("%v add-flow %s: %v, want %s:\n%s", opts, tc.flow, err, tc.want, out)
			}
		}
	}
	if dump := b.ofctl(t, "dump-flows"); strings.Contains(dump, "ct") {
		t.Errorf("refused flows in the table:\n%s", dump)
	}
	// Without zones the same firewall is taken.
	b.addFlows(t, ctFirewall)
}
