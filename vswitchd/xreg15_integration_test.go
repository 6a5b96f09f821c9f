package vswitchd

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/internal/testbed"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// xregBed is two hosts on a fail-mode=secure bridge whose flows match
// and write registers as ovn-controller's do: reg, xreg and xxreg, masked
// and not, added over OpenFlow 1.5 (where ovs-ofctl and ovs-vswitchd carry
// registers as 64-bit OXM_OF_PKT_REG pairs) and 1.3 (NXM_NX_REG).
type xregBed struct {
	name   string
	hosts  [2]*testbed.Netns
	ports  [2]string
	macs   [2]net.HardwareAddr
	rundir string
}

var xregFlows15 = []string{
	"priority=10,in_port=1,udp,actions=set_field:0x5->reg3,set_field:0x100000002->xreg2," +
		"set_field:0xa000000000000000000000000000001->xxreg3,resubmit(,1)",
	"table=1,priority=10,udp,tp_dst=9001,reg3=0x5,xreg2=0x100000002,xxreg3=0xa000000000000000000000000000001,actions=output:2",
	"table=1,priority=9,reg3=0x5/0xf,reg4=0x1,xreg7=0x100000000/0xffff00000000,actions=controller(max_len=128)",
	"table=1,priority=7,reg3=0x5/0xf,reg4=0x1,actions=set_field:0x300000000/0x300000000->xreg7,controller(max_len=128)",
	"table=1,priority=8,reg12=0x7,reg15=0x8000,actions=output:2",
}

var xregFlows13 = []string{
	"table=2,priority=5,xxreg0=0x1/0xff,reg10=0x3,actions=drop",
	"table=2,priority=6,reg0=0x1,reg1=0x2/0xff00ff,actions=load:0x1->NXM_NX_REG5[0..7],set_field:0x3/0xf->xxreg1,output:2",
	"table=2,priority=7,xreg5=0xffffffff00000000/0xffffffff00000000,xreg6=0x1,actions=move:NXM_NX_REG14[]->NXM_NX_REG15[],output:2",
}

func newXRegBed(t *testing.T) *xregBed {
	t.Helper()
	testbed.Require(t)
	n := bedSeq.Add(1)
	b := &xregBed{name: fmt.Sprintf("gx%d", n), rundir: t.TempDir()}
	for i := range b.hosts {
		b.hosts[i] = testbed.NewNetns(t)
		b.ports[i] = fmt.Sprintf("gx%d%c", n, 'a'+i)
		b.macs[i] = testbed.Veth(t, b.ports[i], b.hosts[i], "eth0", fmt.Sprintf("10.0.0.%d/24", i+1))
	}
	return b
}

func (b *xregBed) configure(vsctl func(args ...string) string) {
	vsctl("add-br", b.name, "--", "set", "Bridge", b.name, "fail-mode=secure")
	for i, p := range b.ports {
		vsctl("add-port", b.name, p, "--", "set", "Interface", p, "ofport_request="+strconv.Itoa(i+1))
	}
}

type xregRun struct {
	delivered map[uint16]int // UDP frames h2 received, per destination port
	flows13   []string       // dump-flows in OpenFlow 1.3 and 1.5, timings cut
	flows15   []string
	matches15 []string // the ofp_match bytes of each 1.5 flow stats entry, hex, sorted
	pinMatch  []string // the ofp_match of each 1.5 packet-in, hex, in arrival order
	// badPipeline is the error type and code (hex) answering a 1.5
	// packet-out whose match sets eth_type, no pipeline field.
	badPipeline string
}

// ofTimes cuts what differs between two runs of the same flows.
var ofTimes = regexp.MustCompile(`(duration|idle_age|hard_age)=[^,]*, `)

func (b *xregBed) steps(t *testing.T, mgmt string) xregRun {
	t.Helper()
	must := func(args ...string) string {
		t.Helper()
		out, err := ofctlAt(mgmt, args...)
		if err != nil {
			t.Fatalf("ovs-ofctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	for _, f := range xregFlows15 {
		must("-O", "OpenFlow15", "add-flow", f)
	}
	for _, f := range xregFlows13 {
		must("-O", "OpenFlow13", "add-flow", f)
	}
	c := dialOF15(t, mgmt)
	r := xregRun{delivered: map[uint16]int{}}
	rx := testbed.OpenRaw(t, b.hosts[1], "eth0")
	defer rx.Close()
	tx := testbed.OpenRaw(t, b.hosts[0], "eth0")
	defer tx.Close()
	count := func(dport uint16, want int) {
		for r.delivered[dport] < want {
			if _, err := rx.Recv(1500*time.Millisecond, func(f []byte) bool {
				return len(f) >= 42 && f[23] == 17 && binary.BigEndian.Uint16(f[36:]) == dport
			}); err != nil {
				return
			}
			r.delivered[dport]++
		}
	}
	// 9001: through the register writes and the register match to h2.
	for i := 0; i < 3; i++ {
		if err := tx.Send(udpFrame(b.macs[0], b.macs[1], 30000, 9001)); err != nil {
			t.Fatal(err)
		}
	}
	count(9001, 3)
	// 9002: the registers reach the controller in the packet-in's match.
	if err := tx.Send(udpFrame(b.macs[0], b.macs[1], 30000, 9002)); err != nil {
		t.Fatal(err)
	}
	r.pinMatch = append(r.pinMatch, c.packetInMatch(t))
	count(9002, 1)
	// A 1.5 packet-out whose match starts the pipeline with registers.
	frame := hex.EncodeToString(udpFrame(b.macs[0], b.macs[1], 30000, 9100))
	must("-O", "OpenFlow15", "packet-out", "in_port=1,reg15=0x8000,xreg6=0x700000000,packet="+frame+" actions=resubmit(,1)")
	count(9100, 1)
	cut := func(out string) []string {
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "table=") {
				lines = append(lines, ofTimes.ReplaceAllString(strings.TrimSpace(l), ""))
			}
		}
		sort.Strings(lines)
		return lines
	}
	r.flows13 = cut(must("-O", "OpenFlow13", "dump-flows"))
	r.flows15 = cut(must("-O", "OpenFlow15", "dump-flows"))
	r.matches15 = c.flowStatsMatches(t)
	sort.Strings(r.matches15)
	// packet-out, xid 0x77, no buffer, no actions, match eth_type=0x800.
	c.write(t, "060d002000000077ffffffff00000000"+"0001000a80000a020800000000000000")
	e := c.reply(t, 0x77)
	if e[1] == 1 && len(e) >= 12 {
		r.badPipeline = hex.EncodeToString(e[8:12])
	}
	return r
}

// reply returns the next message with xid, whatever its type.
func (c *of15Conn) reply(t *testing.T, xid uint32) []byte {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				t.Fatal("the switch closed the OpenFlow 1.5 connection")
			}
			if binary.BigEndian.Uint32(m[4:]) == xid {
				return m
			}
		case <-timeout:
			t.Fatalf("no answer to xid %d within 10 s", xid)
		}
	}
}

// of15Conn is a raw OpenFlow 1.5 connection to a bridge's management
// socket: the test reads the switch's own bytes, not ovs-ofctl's reading
// of them.
type of15Conn struct {
	nc   net.Conn
	msgs chan []byte
}

func dialOF15(t *testing.T, mgmt string) *of15Conn {
	t.Helper()
	nc, err := net.Dial("unix", mgmt)
	if err != nil {
		t.Fatal(err)
	}
	c := &of15Conn{nc: nc, msgs: make(chan []byte, 64)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fr := openflow.NewFramer(0)
		for {
			raw, err := fr.ReadMsg(nc)
			if err != nil {
				close(c.msgs)
				return
			}
			if raw[1] == 2 { // echo request
				reply := append([]byte(nil), raw...)
				reply[1] = 3
				nc.Write(reply)
				continue
			}
			c.msgs <- append([]byte(nil), raw...)
		}
	}()
	t.Cleanup(func() { nc.Close(); <-done })
	// hello (1.5 only), set_config, then a barrier to know the hello was taken.
	c.write(t, "0600000800000001")
	c.write(t, "0609000c000000030000ffff") // set_config, miss_send_len 0xffff
	c.write(t, "0614000800000002")
	c.wait(t, 0x15, 2)
	return c
}

func (c *of15Conn) write(t *testing.T, h string) {
	t.Helper()
	b, _ := hex.DecodeString(h)
	if _, err := c.nc.Write(b); err != nil {
		t.Fatal(err)
	}
}

// wait returns the next message of type typ and xid (any xid if 0),
// dropping others.
func (c *of15Conn) wait(t *testing.T, typ uint8, xid uint32) []byte {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				t.Fatal("the switch closed the OpenFlow 1.5 connection")
			}
			if m[0] != openflow.Version15 {
				t.Fatalf("a version %d message on a 1.5 connection: % x", m[0], m)
			}
			if m[1] == 1 { // error
				t.Fatalf("the switch answered an error: % x", m)
			}
			if m[1] == typ && (xid == 0 || binary.BigEndian.Uint32(m[4:]) == xid) {
				return m
			}
		case <-timeout:
			t.Fatalf("no message of type %d (xid %d) within 10 s", typ, xid)
		}
	}
}

// packetInMatch waits for a packet-in and returns its ofp_match, hex.
func (c *of15Conn) packetInMatch(t *testing.T) string {
	t.Helper()
	m := c.wait(t, 10, 0)
	return hex.EncodeToString(ofpMatchAt(t, m, 24))
}

// flowStatsMatches asks for every flow (OFPMP_FLOW_DESC) and returns the
// match bytes of each entry, hex.
func (c *of15Conn) flowStatsMatches(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, e := range c.flowStats(t) {
		out = append(out, e.match)
	}
	return out
}

// flowEntry15 is one OFPMP_FLOW_DESC entry's match and instructions, hex
// (the statistics between them left out).
type flowEntry15 struct{ match, instructions string }

// flowStats asks for every flow (OFPMP_FLOW_DESC) and returns the
// entries.
func (c *of15Conn) flowStats(t *testing.T) []flowEntry15 {
	t.Helper()
	// multipart request: type FLOW_DESC, all tables, any port and group,
	// no cookie, the empty match.
	c.write(t, "0612003800000063"+"0001000000000000"+"ff000000ffffffffffffffff00000000"+
		"00000000000000000000000000000000"+"0001000400000000")
	var out []flowEntry15
	for {
		m := c.wait(t, 19, 0x63)
		for e := m[16:]; len(e) >= 24; {
			n := int(binary.BigEndian.Uint16(e))
			if n < 24 || n > len(e) {
				t.Fatalf("flow stats entry of %d bytes in %d: % x", n, len(e), m)
			}
			match := ofpMatchAt(t, e[:n], 24)
			st := 24 + len(match) // ofp_stats: reserved, length, OXS fields, padding
			if st+4 > n {
				t.Fatalf("flow stats entry without stats: % x", e[:n])
			}
			insts := st + (int(binary.BigEndian.Uint16(e[st+2:]))+7)&^7
			if insts > n {
				t.Fatalf("flow stats entry's stats overrun it: % x", e[:n])
			}
			out = append(out, flowEntry15{hex.EncodeToString(match), hex.EncodeToString(e[insts:n])})
			e = e[n:]
		}
		if binary.BigEndian.Uint16(m[10:])&1 == 0 {
			return out
		}
	}
}

// ofpMatchAt is the ofp_match at offset at of msg, padding included.
func ofpMatchAt(t *testing.T, msg []byte, at int) []byte {
	t.Helper()
	if len(msg) < at+4 {
		t.Fatalf("no match at %d of % x", at, msg)
	}
	n := (int(binary.BigEndian.Uint16(msg[at+2:])) + 7) &^ 7
	if len(msg) < at+n {
		t.Fatalf("match of %d bytes at %d of % x", n, at, msg)
	}
	return msg[at : at+n]
}

// TestIntegrationXRegs15: flows over OpenFlow 1.5 and 1.3 that write and
// match reg, xreg and xxreg move the same traffic through govswitchd as
// through ovs-vswitchd 3.1 in the same boot; ovs-ofctl dump-flows prints
// the same in both versions; and govswitchd's own 1.5 bytes (flow stats
// and packet-in matches) are ovs-vswitchd's: registers as 64-bit
// OXM_OF_PKT_REG pairs, no NXM_NX_REG; and a packet-out matching a field
// that is no pipeline field gets the same error from both.
func TestIntegrationXRegs15(t *testing.T) {
	b := newXRegBed(t)

	o := startOVS(t)
	b.configure(func(args ...string) string { return o.must(t, "ovs-vsctl", args...) })
	ovs := b.steps(t, filepath.Join(o.dir, b.name+".mgmt"))
	o.exitCleanup(t, b.name)

	g := startGovSwitch(t, b.rundir)
	b.configure(func(args ...string) string { t.Helper(); return g.vsctl(t, args...) })
	gov := b.steps(t, g.mgmt(t, b.name))

	for _, r := range []struct {
		name string
		run  xregRun
	}{{"ovs-vswitchd", ovs}, {"govswitchd", gov}} {
		t.Logf("%s: delivered %v\n1.3 flows:\n%s\n1.5 flows:\n%s\n1.5 matches:\n%s\npacket-in matches:\n%s", r.name,
			r.run.delivered, strings.Join(r.run.flows13, "\n"), strings.Join(r.run.flows15, "\n"),
			strings.Join(r.run.matches15, "\n"), strings.Join(r.run.pinMatch, "\n"))
	}
	for port, want := range map[uint16]int{9001: 3, 9002: 0, 9100: 1} {
		if ovs.delivered[port] != want || gov.delivered[port] != want {
			t.Errorf("UDP to %d: ovs-vswitchd delivered %d, govswitchd %d, want %d", port, ovs.delivered[port], gov.delivered[port], want)
		}
	}
	for _, c := range []struct {
		what     string
		ovs, gov []string
	}{
		{"dump-flows -O OpenFlow13", ovs.flows13, gov.flows13},
		{"dump-flows -O OpenFlow15", ovs.flows15, gov.flows15},
		{"1.5 flow stats matches", ovs.matches15, gov.matches15},
		{"1.5 packet-in matches", ovs.pinMatch, gov.pinMatch},
		{"error for a packet-out matching eth_type", []string{ovs.badPipeline}, []string{gov.badPipeline}},
	} {
		if strings.Join(c.ovs, "\n") != strings.Join(c.gov, "\n") {
			t.Errorf("%s differ:\novs-vswitchd:\n%s\ngovswitchd:\n%s", c.what, strings.Join(c.ovs, "\n"), strings.Join(c.gov, "\n"))
		}
	}
	if ovs.badPipeline == "" {
		t.Error("ovs-vswitchd took a 1.5 packet-out matching eth_type")
	}
	if len(ovs.flows15) != len(xregFlows15)+len(xregFlows13) {
		t.Errorf("ovs-vswitchd dumped %d flows, want %d", len(ovs.flows15), len(xregFlows15)+len(xregFlows13))
	}
	// ovs-vswitchd's 1.5 matches carry xregs and no NXM_NX_REG: the
	// comparison above is about that encoding, not a coincidence.
	var sawXReg bool
	for _, m := range append(append([]string{}, ovs.matches15...), ovs.pinMatch...) {
		raw, _ := hex.DecodeString(m)
		n := int(binary.BigEndian.Uint16(raw[2:]))
		for p := raw[4:n]; len(p) >= 4 && len(p) >= 4+int(p[3]); p = p[4+int(p[3]):] {
			class, field := binary.BigEndian.Uint16(p), p[2]>>1
			if class == openflow.ClassNXM1 && field < 16 {
				t.Errorf("ovs-vswitchd's 1.5 match carries NXM_NX_REG%d: %s", field, m)
			}
			sawXReg = sawXReg || class == openflow.ClassPacketRegs
		}
	}
	if !sawXReg || !bytes.Contains([]byte(strings.Join(ovs.pinMatch, "")), []byte("8001")) {
		t.Errorf("ovs-vswitchd's 1.5 matches carry no OXM_OF_PKT_REG: %v %v", ovs.matches15, ovs.pinMatch)
	}
}
