package vswitchd

import (
	"encoding/binary"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
	"golang.org/x/sys/unix"
)

// TestIntegrationVXLANGBP: a vxlan port with options:exts=gbp talks to a
// Linux vxlan device with gbp in another namespace, on ovs-vswitchd 3.1
// and then on govswitchd in the same boot. Both make vxlan_sys_4789 a
// collect-metadata vxlan device with GBP. Receive: the Linux device turns
// the sending socket's SO_MARK into the group policy ID; a rule matching
// tun_gbp_id=0x10 takes the datagrams sent with mark 0x10 to the host and
// not those sent with 0x11, a rule on tun_gbp_flags=0x40/0x40 takes ID
// 0x12 only with the don't-learn bit (mark bit 22), and ovs-dpctl shows
// the IDs and flags in the datapath flows' keys. Send:
// set_field:0x20->tun_gbp_id and 0x8->tun_gbp_flags on the way out put
// policy ID 0x20 with the G and A bits in the VXLAN header on the underlay
// (read from a packet socket there). The GBP parts of the two switches'
// datapath flows must be the same.
func TestIntegrationVXLANGBP(t *testing.T) {
	testbed.Require(t)
	var ovs, gov gbpResult
	t.Run("ovs-vswitchd", func(t *testing.T) {
		o := startOVS(t)
		vsctl := func(args ...string) string { t.Helper(); return o.must(t, "ovs-vsctl", args...) }
		br := fmt.Sprintf("gs%dg", bedSeq.Add(1))
		ovs = gbpSteps(t, br, vsctl, func() string { return filepath.Join(o.dir, br+".mgmt") }, o.ctl)
		o.exitCleanup(t, br)
	})
	t.Run("govswitchd", func(t *testing.T) {
		g := startTnlDaemon(t)
		br := fmt.Sprintf("gs%dg", bedSeq.Add(1))
		gov = gbpSteps(t, br, g.vsctl, func() string { return filepath.Join(g.rundir, br+".mgmt") }, g.ctl)
		// Taking exts=gbp off and putting it back remakes the shared
		// vport in the other mode each time.
		for _, step := range []struct {
			args []string
			gbp  bool
		}{
			{[]string{"remove", "Interface", gov.port, "options", "exts"}, false},
			{[]string{"set", "Interface", gov.port, "options:exts=gbp"}, true},
		} {
			g.vsctl(step.args...)
			var link []byte
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				link, _ = exec.Command("ip", "-d", "link", "show", "vxlan_sys_4789").CombinedOutput()
				if strings.Contains(string(link), " gbp") == step.gbp {
					break
				}
			}
			if strings.Contains(string(link), " gbp") != step.gbp {
				t.Errorf("after ovs-vsctl %v, vxlan_sys_4789 has gbp %v, want %v:\n%s", step.args, !step.gbp, step.gbp, link)
			}
			if e := strings.TrimSpace(g.vsctl("get", "Interface", gov.port, "error")); e != "[]" {
				t.Errorf("after ovs-vsctl %v, Interface error: %s", step.args, e)
			}
		}
	})
	for _, c := range []struct{ what, ovs, gov string }{
		{"ovs-dpctl dump-flows", ovs.dpctl, gov.dpctl},
		{"the switch's dpctl/dump-flows", ovs.appctl, gov.appctl},
	} {
		o, g := gbpParts(c.ovs), gbpParts(c.gov)
		t.Logf("GBP in %s, ovs-vswitchd: %v; govswitchd: %v", c.what, o, g)
		if len(g) == 0 || strings.Join(o, " ") != strings.Join(g, " ") {
			t.Errorf("the GBP parts of %s differ: ovs-vswitchd %v, govswitchd %v", c.what, o, g)
		}
	}
	t.Logf("ovs-ofctl dump-flows, ovs-vswitchd:\n%s\ngovswitchd:\n%s", ovs.ofctl, gov.ofctl)
	if ovs.ofctl != gov.ofctl || !strings.Contains(gov.ofctl, "tun_gbp_id=16") || !strings.Contains(gov.ofctl, "load:0x20->NXM_NX_TUN_GBP_ID[]") || !strings.Contains(gov.ofctl, "tun_gbp_id=18,tun_gbp_flags=0x40,") {
		t.Errorf("ovs-ofctl dump-flows differs")
	}
}

// gbpResult is what one switch's run of gbpSteps dumped at its end.
type gbpResult struct {
	dpctl  string // ovs-dpctl dump-flows
	appctl string // ovs-appctl dpctl/dump-flows, the switch's own text
	ofctl  string // ovs-ofctl dump-flows --no-stats, sorted
	port   string // the gbp port's name
}

// gbpParts is the sorted, deduplicated vxlan(gbp(...)) texts of dump's
// flows of the test's traffic (IPv4 and ARP: what the peer's kernel
// sends over IPv6 on its own, with whatever mark, comes and goes).
func gbpParts(dump string) []string {
	seen := map[string]bool{}
	for _, l := range strings.Split(dump, "\n") {
		if !strings.Contains(l, "eth_type(0x0800)") && !strings.Contains(l, "eth_type(0x0806)") {
			continue
		}
		for _, m := range regexp.MustCompile(`vxlan\(gbp\([^)]*\)\)`).FindAllString(l, -1) {
			seen[m] = true
		}
	}
	var out []string
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// gbpSteps runs the scenario on the switch vsctl configures (unixctl
// socket ctl) and returns what it dumped at its end.
func gbpSteps(t *testing.T, br string, vsctl func(args ...string) string, mgmt func() string, ctl string) gbpResult {
	tc := tunnelCase{kind: "vxlan", linkArg: []string{"type", "vxlan", "id", "100", "dstport", "4789", "gbp"}}
	b := newTunnelBed(t, tc)
	port := "vx" + b.v1
	vsctl("add-br", br, "--", "set", "Bridge", br, "fail-mode=secure",
		"--", "add-port", br, b.v1, "--", "set", "Interface", b.v1, "ofport_request=1",
		"--", "add-port", br, port, "--", "set", "Interface", port, "type=vxlan", "ofport_request=2",
		"options:remote_ip="+b.rem, "options:key=100", "options:exts=gbp")
	if e := strings.TrimSpace(vsctl("get", "Interface", port, "error")); e != "[]" {
		t.Fatalf("Interface error: %s", e)
	}
	link, err := exec.Command("ip", "-d", "link", "show", "vxlan_sys_4789").CombinedOutput()
	t.Logf("ip -d link show vxlan_sys_4789:\n%s", link)
	if err != nil || !strings.Contains(string(link), " gbp") || !strings.Contains(string(link), "external") {
		t.Errorf("vxlan_sys_4789 is no external vxlan device with gbp (%v)", err)
	}
	show, _ := exec.Command("ovs-dpctl", "show").CombinedOutput()
	t.Logf("ovs-dpctl show:\n%s", show)
	if !strings.Contains(string(show), "vxlan_sys_4789") {
		t.Errorf("ovs-dpctl show lacks vxlan_sys_4789")
	}
	for _, f := range []string{
		"in_port=1,actions=set_field:0x20->tun_gbp_id,set_field:0x8->tun_gbp_flags,output:2",
		"priority=10,in_port=2,arp,actions=output:1",
		"priority=20,in_port=2,tun_gbp_id=0x10,actions=output:1",
		"priority=15,in_port=2,tun_gbp_id=0x12,tun_gbp_flags=0x40/0x40,actions=output:1",
	} {
		if out, err := ofctlAt(mgmt(), "add-flow", f); err != nil {
			t.Fatalf("add-flow %s: %v\n%s", f, err, out)
		}
	}

	// The underlay as the switch sends it, from here on.
	capt := openCapture(t, b.under)

	// Receive: datagrams from hr with mark 0x10 reach h1, with 0x11 not.
	var got chan string
	var ln net.PacketConn
	if err := b.h1.Do(func() (err error) { ln, err = net.ListenPacket("udp4", "10.1.1.1:7200"); return }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got = make(chan string, 64)
	go func() {
		buf := make([]byte, 64)
		for {
			n, _, err := ln.ReadFrom(buf)
			if err != nil {
				close(got)
				return
			}
			got <- string(buf[:n])
		}
	}()
	sendMarked := func(mark int, msg string) {
		t.Helper()
		err := b.hr.Do(func() error {
			lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
				var serr error
				if err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MARK, mark) }); err != nil {
					return err
				}
				return serr
			}}
			c, err := lc.ListenPacket(nil, "udp4", ":0")
			if err != nil {
				return err
			}
			defer c.Close()
			_, err = c.WriteTo([]byte(msg), &net.UDPAddr{IP: net.IPv4(10, 1, 1, 1), Port: 7200})
			return err
		})
		if err != nil {
			t.Fatalf("send with mark %#x: %v", mark, err)
		}
	}
	received := func(msg string, wait time.Duration) bool {
		for deadline := time.After(wait); ; {
			select {
			case m := <-got:
				if m == msg {
					return true
				}
			case <-deadline:
				return false
			}
		}
	}
	ok16 := false
	for i := 0; i < 20 && !ok16; i++ { // the first ones wait for ARP
		sendMarked(0x10, "gbp16")
		ok16 = received("gbp16", 500*time.Millisecond)
	}
	if !ok16 {
		t.Errorf("datagrams with policy ID 0x10 did not reach h1 through tun_gbp_id=0x10")
	}
	for i := 0; i < 3; i++ {
		sendMarked(0x11, "gbp17")
	}
	if received("gbp17", time.Second) {
		t.Errorf("a datagram with policy ID 0x11 reached h1: no rule takes it")
	}
	// The mark's bit 22 is the GBP header's don't-learn bit
	// (tun_gbp_flags 0x40), which the 0x12 rule wants.
	sendMarked(0x12, "gbp18")
	if received("gbp18", time.Second) {
		t.Errorf("a datagram with policy ID 0x12 and no flags reached h1: the rule wants flag 0x40")
	}
	sendMarked(0x400012, "gbp18D")
	if !received("gbp18D", 2*time.Second) {
		t.Errorf("a datagram with policy ID 0x12 and the D flag did not reach h1 through tun_gbp_flags=0x40/0x40")
	}

	// Send: from h1 to hr, with policy ID 0x20 on the underlay.
	if err := b.h1.Do(func() error {
		c, err := net.Dial("udp4", "10.1.1.100:7201")
		if err != nil {
			return err
		}
		defer c.Close()
		for i := 0; i < 5; i++ {
			c.Write([]byte("out"))
			time.Sleep(100 * time.Millisecond)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	hdr, ok := capt.vxlanTo(t, 7201, 3*time.Second)
	if !ok {
		t.Errorf("no VXLAN packet to UDP port 7201 seen on the underlay")
	} else {
		t.Logf("VXLAN header on the underlay: % x", hdr)
		if hdr[0]&0x80 == 0 || hdr[0]&0x08 == 0 || hdr[1] != 0x08 || binary.BigEndian.Uint16(hdr[2:4]) != 0x20 {
			t.Errorf("VXLAN header % x: want the G and I bits, the A (policy applied) bit and group policy ID 0x0020", hdr)
		}
		if vni := binary.BigEndian.Uint32(hdr[4:8]) >> 8; vni != 100 {
			t.Errorf("VNI %d, want 100", vni)
		}
	}

	dump, _ := exec.Command("ovs-dpctl", "dump-flows").CombinedOutput()
	t.Logf("ovs-dpctl dump-flows:\n%s", dump)
	for _, want := range []string{"vxlan(gbp(id=16", "vxlan(gbp(id=17", "vxlan(gbp(id=18,flags=0x40/0x40)", "vxlan(gbp(id=32,flags=0x8)"} {
		if !strings.Contains(string(dump), want) {
			t.Errorf("ovs-dpctl dump-flows lacks %s", want)
		}
	}
	for _, l := range strings.Split(string(dump), "\n") {
		if strings.Contains(l, "gbp(id=17") && !strings.HasSuffix(strings.TrimSpace(l), "actions:drop") {
			t.Errorf("the flow of policy ID 0x11 does not drop: %s", l)
		}
	}
	r := gbpResult{dpctl: string(dump), port: port}
	ar := appctlAt(t, ctl, "dpctl/dump-flows")
	t.Logf("ovs-appctl dpctl/dump-flows:\n%s", ar.out)
	r.appctl = ar.out
	of, err := ofctlAt(mgmt(), "--no-stats", "dump-flows")
	if err != nil {
		t.Fatalf("ovs-ofctl dump-flows: %v\n%s", err, of)
	}
	var lines []string
	for _, l := range sortedLines(of, 0) {
		if l = strings.TrimSpace(l); l != "" && !strings.Contains(l, "_FLOW reply") {
			lines = append(lines, l)
		}
	}
	r.ofctl = strings.Join(lines, "\n")
	return r
}

// capture is a packet socket on one interface.
type capture struct{ fd int }

func openCapture(t *testing.T, ifname string) *capture {
	t.Helper()
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		t.Fatal(err)
	}
	proto := int(htons16(unix.ETH_P_ALL))
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, proto)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: uint16(proto), Ifindex: ifi.Index}); err != nil {
		t.Fatal(err)
	}
	tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	return &capture{fd: fd}
}

func htons16(v uint16) uint16 { return v<<8 | v>>8 }

// vxlanTo returns the 8-byte VXLAN header of the first IPv4 VXLAN packet
// (UDP port 4789) seen whose inner frame is IPv4 UDP to port dport.
func (c *capture) vxlanTo(t *testing.T, dport uint16, wait time.Duration) ([]byte, bool) {
	buf := make([]byte, 2048)
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); {
		n, _, err := unix.Recvfrom(c.fd, buf, 0)
		if err != nil {
			continue
		}
		p := buf[:n]
		// Ethernet, IPv4 (no options expected from a tunnel), UDP.
		if len(p) < 14+20+8+8+14+20+8 || binary.BigEndian.Uint16(p[12:14]) != 0x0800 || p[14+9] != 17 {
			continue
		}
		ihl := int(p[14]&0xf) * 4
		udp := p[14+ihl:]
		if binary.BigEndian.Uint16(udp[2:4]) != 4789 {
			continue
		}
		vx := udp[8:]
		inner := vx[8:]
		if len(inner) < 14+20+8 || binary.BigEndian.Uint16(inner[12:14]) != 0x0800 || inner[14+9] != 17 {
			continue
		}
		iihl := int(inner[14]&0xf) * 4
		if len(inner) < 14+iihl+4 || binary.BigEndian.Uint16(inner[14+iihl+2:14+iihl+4]) != dport {
			continue
		}
		return append([]byte(nil), vx[:8]...), true
	}
	return nil, false
}
