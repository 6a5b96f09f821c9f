package vswitchd

import (
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/govswitch/govswitch/internal/testbed"
)

// ofproto/trace through the datapath's hash and a recirculation, against
// ovs-vswitchd 3.1 in the same boot: a balance-tcp bond's output and a
// select group with selection_method=dp_hash. OVS 3.1's trace does not
// follow the recirculation by itself (only conntrack's is queued and
// resumed): the first trace ends with the datapath actions so far,
// hash(l4(0)),recirc(ID). The second stage is traced by giving that
// recirc_id and a dp_hash, which thaws the frozen translation and picks
// the member or bucket of that hash. Both traces must read the same, line
// for line, for both switches.

var (
	// traceRecirc finds the recirculation id in a first-stage trace.
	traceRecirc = regexp.MustCompile(`Datapath actions: .*recirc\((0x[0-9a-f]+)\)\n`)
	// recircIDs are what differs by nature between the switches: each
	// allocates its own recirculation ids (both happen to start at 1
	// in a fresh boot, but nothing promises it). recirc_id=0, the
	// first stage's, is no id and stays.
	recircIDs = regexp.MustCompile(`recirc_id=0x[0-9a-f]+|recirc\(0x[0-9a-f]+\)`)
)

// traceDPHash is the dp_hash the second-stage traces give: any value the
// kernel could compute (not 0, which means "not hashed").
const traceDPHash = "0x5"

// normTrace replaces the recirculation ids in a trace with ID.
func normTrace(s string) string {
	return recircIDs.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, "recirc(") {
			return "recirc(ID)"
		}
		return "recirc_id=ID"
	})
}

// traceStages traces fl on bridge br, and then its second stage: fl with
// the first trace's recirc_id and traceDPHash. The output ports in the
// "Datapath actions:" lines are named: datapath port numbers differ by
// nature between the switches (each adds the bridge's ports to the
// datapath in an order of its own), so each of devs, the bridge's
// devices, is written as its name.
func traceStages(t *testing.T, who, ctl, br, fl, odp string, devs ...string) [4]string {
	t.Helper()
	names := map[string]string{}
	for _, d := range devs {
		names[dpPort(t, d)] = d
	}
	name := func(tr string) string {
		lines := strings.Split(tr, "\n")
		for i, l := range lines {
			if acts, ok := strings.CutPrefix(l, "Datapath actions: "); ok {
				parts := strings.Split(acts, ",")
				for j, p := range parts {
					if n, ok := names[p]; ok {
						parts[j] = n
					}
				}
				lines[i] = "Datapath actions: " + strings.Join(parts, ",")
			}
		}
		return strings.Join(lines, "\n")
	}
	var tr [4]string
	r := appctlAt(t, ctl, "ofproto/trace", br, fl)
	tr[0] = name(r.out + r.err)
	m := traceRecirc.FindStringSubmatch(r.out)
	if m == nil {
		t.Errorf("%s: the trace does not end in a recirculation:\n%s", who, tr[0])
		return tr
	}
	r = appctlAt(t, ctl, "ofproto/trace", br, "recirc_id="+m[1]+",dp_hash="+traceDPHash+","+fl)
	tr[1] = name(r.out + r.err)
	// The second stage as a user copies its key from dpctl/dump-flows:
	// the datapath's syntax, the input port by name, on the datapath.
	r = appctlAt(t, ctl, "ofproto/trace", "ovs-system", "recirc_id("+m[1]+"),dp_hash("+traceDPHash+"),"+odp)
	tr[2] = name(r.out + r.err)
	// A recirc_id nothing froze (a stale one, from an old dump): the
	// translation fails.
	r = appctlAt(t, ctl, "ofproto/trace", br, "recirc_id=0x7777,dp_hash="+traceDPHash+","+fl)
	tr[3] = name(r.out + r.err)
	t.Logf("%s, first stage:\n%s\n%s, second stage:\n%s\n%s, second stage in the datapath's syntax:\n%s\n%s, unknown recirc_id:\n%s",
		who, tr[0], who, tr[1], who, tr[2], who, tr[3])
	return tr
}

// compareTraces holds govswitchd's traces to ovs-vswitchd's, line for
// line once the recirculation ids are normalised, and checks that they
// trace what the test means: a hash and a recirculation, then a thaw
// that outputs (want: the second stage's last lines).
func compareTraces(t *testing.T, what string, ovs, gov [4]string, want string) {
	t.Helper()
	for i, stage := range []string{"first stage", "second stage", "second stage in the datapath's syntax", "unknown recirc_id"} {
		o, g := strings.Split(normTrace(ovs[i]), "\n"), strings.Split(normTrace(gov[i]), "\n")
		for j := 0; j < len(o) || j < len(g); j++ {
			var ol, gl string
			if j < len(o) {
				ol = o[j]
			}
			if j < len(g) {
				gl = g[j]
			}
			if ol != gl {
				t.Errorf("%s, %s: line %d differs:\n ovs-vswitchd %q\n govswitchd   %q\nwhole traces:\novs-vswitchd:\n%s\ngovswitchd:\n%s",
					what, stage, j+1, ol, gl, ovs[i], gov[i])
				break
			}
		}
	}
	if !strings.Contains(gov[0], "Datapath actions: hash(l4(0)),recirc(") {
		t.Errorf("%s: govswitchd's first stage does not hash and recirculate:\n%s", what, gov[0])
	}
	if !strings.Contains(gov[1], "\n    thaw\n") || !strings.Contains(normTrace(gov[1]), want) {
		t.Errorf("%s: govswitchd's second stage does not thaw and show\n%s\n:\n%s", what, want, gov[1])
	}
}

// bondMemberOut is the second stage's output to a bond member: the hidden
// rule's action (OpenFlow port) and the datapath's (the device's name).
var bondMemberOut = regexp.MustCompile(`\n    output:(\d+)\n(?s:.*)\nDatapath actions: (\S+)\n`)

// normBondMember checks that a bond's second-stage trace outputs to the
// same member in its rule and its datapath actions, and writes that
// member as MEMBER. Which member a hash's bucket goes to differs by
// nature: ovs-vswitchd gives each bucket a random member
// (bond_update_post_recirc_rules), run by run.
func (b *bondBed) normBondMember(t *testing.T, who, tr string) string {
	t.Helper()
	m := bondMemberOut.FindStringSubmatch(tr)
	if m == nil {
		t.Errorf("%s: the second stage outputs to no bond member:\n%s", who, tr)
		return tr
	}
	// The members' OpenFlow ports are 1 and 2 (lacpArgs).
	if want := map[string]string{"1": b.members[0], "2": b.members[1]}[m[1]]; want != m[2] {
		t.Errorf("%s: the bucket's rule outputs to port %s but the datapath to %s:\n%s", who, m[1], m[2], tr)
	}
	tr = strings.Replace(tr, "\n    output:"+m[1]+"\n", "\n    output:MEMBER\n", 1)
	return strings.Replace(tr, "\nDatapath actions: "+m[2]+"\n", "\nDatapath actions: MEMBER\n", 1)
}

// nsMAC is the hardware address of dev in ns.
func nsMAC(t *testing.T, ns *testbed.Netns, dev string) net.HardwareAddr {
	t.Helper()
	var ifc *net.Interface
	if err := ns.Do(func() (e error) { ifc, e = net.InterfaceByName(dev); return }); err != nil {
		t.Fatal(err)
	}
	return ifc.HardwareAddr
}

// bondTraces learns both ends over the negotiated bond (a ping from the
// peer to h2) and traces a TCP packet from h2 to the peer, which NORMAL
// sends to the bond.
func (b *bondBed) bondTraces(t *testing.T, who, ctl string, peerMAC, h2MAC net.HardwareAddr) [4]string {
	t.Helper()
	waitAppctl(t, ctl, bothEnabled, "bond/show", "bond0")
	if l, out := b.pingLoss(t, 2); l != 0 {
		t.Errorf("%s: peer->h2 over the bond lost %d of 2:\n%s", who, l, out)
	}
	return traceStages(t, who, ctl, b.name, "in_port="+b.port+",tcp,dl_src="+h2MAC.String()+",dl_dst="+peerMAC.String()+
		",nw_src=10.0.0.2,nw_dst=10.0.0.1,nw_ttl=64,tp_src=40000,tp_dst=80",
		"in_port("+b.port+"),eth(src="+h2MAC.String()+",dst="+peerMAC.String()+"),eth_type(0x0800),"+
			"ipv4(src=10.0.0.2,dst=10.0.0.1,proto=6,tos=0,ttl=64,frag=no),tcp(src=40000,dst=80)",
		b.members[0], b.members[1], b.port)
}

// groupTraces adds a two-bucket dp_hash select group and a flow to it,
// and traces a UDP packet from h1 through it.
func (b *groupBed) groupTraces(t *testing.T, who, ctl, mgmt string) [4]string {
	t.Helper()
	for _, c := range [][]string{
		{"-O", "OpenFlow15", "add-group", "group_id=1,type=select,selection_method=dp_hash,bucket=output:2,bucket=output:3"},
		// An action after the group: frozen with it, so the first
		// stage does not list it, and run after the bucket by the
		// second.
		{"add-flow", "table=0,priority=100,in_port=1,udp,actions=group:1,LOCAL"},
	} {
		if out, err := ofctlAt(mgmt, c...); err != nil {
			t.Fatalf("%s: ovs-ofctl %v: %v\n%s", who, c, err, out)
		}
	}
	return traceStages(t, who, ctl, b.name, "in_port=1,udp,dl_src="+b.macs[0].String()+",dl_dst="+b.macs[1].String()+
		",nw_src=10.0.0.1,nw_dst=10.0.0.2,nw_ttl=64,udp_src=5000,udp_dst=9",
		"in_port("+b.ports[0]+"),eth(src="+b.macs[0].String()+",dst="+b.macs[1].String()+"),eth_type(0x0800),"+
			"ipv4(src=10.0.0.1,dst=10.0.0.2,proto=17,tos=0,ttl=64,frag=no),udp(src=5000,dst=9)",
		append([]string{b.name}, b.ports[:]...)...)
}

// TestIntegrationTraceRecirc: ofproto/trace of a packet that NORMAL sends
// to a negotiated balance-tcp bond of two members, and of one a
// selection_method=dp_hash select group takes, reads as ovs-vswitchd
// 3.1's, each traced on ovs-vswitchd first and then on govswitchd in the
// same boot: the first stage (NORMAL's "forwarding to learned port", the
// group's "no live bucket" before the hash, the datapath actions
// hash(l4(0)),recirc(ID)) and the second, given the recirc_id and a
// dp_hash (the thaw, the bond's hidden table-254 rule of the hash's
// bucket or the group's restored actions and the bucket the hash picks,
// the final flow, the megaflow with the dp_hash bits, the output).
func TestIntegrationTraceRecirc(t *testing.T) {
	t.Run("bond", func(t *testing.T) {
		b := newBondBed(t)
		b.lacpBond(t)
		peerMAC, h2MAC := nsMAC(t, b.peer, "bond0"), nsMAC(t, b.h2, "eth0")

		o := startOVS(t)
		b.configure(func(args ...string) string { return o.must(t, "ovs-vsctl", args...) }, b.lacpArgs()...)
		ovs := b.bondTraces(t, "ovs-vswitchd", o.ctl, peerMAC, h2MAC)
		stopOVS(t, o, b.name)

		vsctl, ctl, _ := startGov(t, b.rundir)
		b.configure(vsctl, b.lacpArgs()...)
		gov := b.bondTraces(t, "govswitchd", ctl, peerMAC, h2MAC)
		for i := 1; i < 3; i++ {
			ovs[i] = b.normBondMember(t, "ovs-vswitchd", ovs[i])
			gov[i] = b.normBondMember(t, "govswitchd", gov[i])
		}
		compareTraces(t, "balance-tcp bond", ovs, gov, ", priority 20\n    output:MEMBER\n")
	})
	t.Run("group", func(t *testing.T) {
		b := newGroupBed(t)
		o := startOVS(t)
		b.configure(func(args ...string) string { return o.must(t, "ovs-vsctl", args...) })
		ovs := b.groupTraces(t, "ovs-vswitchd", o.ctl, filepath.Join(o.dir, b.name+".mgmt"))
		o.exitCleanup(t, b.name)

		g := startGovSwitch(t, b.rundir)
		b.configure(func(args ...string) string { t.Helper(); return g.vsctl(t, args...) })
		gov := b.groupTraces(t, "govswitchd", g.ctl, g.mgmt(t, b.name))
		compareTraces(t, "dp_hash select group", ovs, gov, "    bucket 1\n            output:3\n    LOCAL\n\nFinal flow: unchanged\n"+
			"Megaflow: recirc_id=ID,dp_hash=0x5/0xf,eth,ip,in_port=1,nw_frag=no\nDatapath actions: "+b.ports[2]+","+b.name+"\n")
	})
}
