package ofproto

import (
	"fmt"
	"net"
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/maclearn"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// bundleBridge has ports 1 to 4 (datapath 11 to 14) and 9 (19), where
// the test's packets come in.
func bundleBridge(t *testing.T) *Xlator {
	t.Helper()
	ports := NewPorts()
	for _, p := range []Port{
		{OFPort: openflow.PortLocal, DPPort: 0, Name: "br0", Type: "internal"},
		{OFPort: 1, DPPort: 11, Name: "p1"}, {OFPort: 2, DPPort: 12, Name: "p2"},
		{OFPort: 3, DPPort: 13, Name: "p3"}, {OFPort: 4, DPPort: 14, Name: "p4"},
		{OFPort: 9, DPPort: 19, Name: "p9"},
	} {
		if err := ports.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return &Xlator{Tables: NewTables(), Ports: ports, MAC: maclearn.New(0, 0)}
}

// TestBundleMembersAsOVS: the members ovs-vswitchd 3.1 chooses for the
// same actions and packets, read from `ovs-appctl ofproto/trace` against
// ovs-vswitchd --enable-dummy with ports 1 to 4 and the flow
//
//	bundle_load(symmetric_l4,0,hrw,ofport,NXM_NX_REG0[],members:1,2,3,4),
//	bundle_load(nw_src,7,hrw,ofport,NXM_NX_REG1[],members:4,3,2,1,5,6,7,8),
//	bundle_load(symmetric_l3l4+udp,99,hrw,ofport,NXM_NX_REG2[],members:10,20,30,1,2,3,4),
//	bundle_load(eth_src,0,active_backup,ofport,NXM_NX_REG3[],members:7,3,1)
//
// then again after `netdev-dummy/set-admin-state p3 down`. Members 5 to
// 30 name no port and never live. Here each runs as bundle (output) and
// as bundle_load into reg0 that a second table matches.
func TestBundleMembersAsOVS(t *testing.T) {
	src, _ := net.ParseMAC("00:11:22:33:44:55")
	dst, _ := net.ParseMAC("66:77:88:99:aa:bb")
	base := flow.Key{InPort: 19, EthSrc: [6]byte(src), EthDst: [6]byte(dst)}
	tcp := base
	tcp.EthType, tcp.IPv4Src, tcp.IPv4Dst, tcp.NwProto, tcp.TpSrc, tcp.TpDst = flow.EthTypeIPv4,
		[4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 6, 1234, 80
	udp := base
	udp.EthType, udp.IPv4Src, udp.IPv4Dst, udp.NwProto, udp.TpSrc, udp.TpDst = flow.EthTypeIPv4,
		[4]byte{192, 168, 1, 10}, [4]byte{172, 16, 5, 4}, 17, 5353, 53
	tcp6 := base
	tcp6.EthType, tcp6.NwProto, tcp6.TpSrc, tcp6.TpDst = flow.EthTypeIPv6, 6, 40000, 443
	tcp6.IPv6Src, tcp6.IPv6Dst = [16]byte(net.ParseIP("2001:db8::1")), [16]byte(net.ParseIP("2001:db8::2"))
	lldp := base
	lldp.EthType = 0x88cc
	pkts := []flow.Key{tcp, udp, tcp6, lldp}
	for _, tc := range []struct {
		act        openflow.Action
		live, down [4]uint32 // member chosen per packet, all up and with p3 down
	}{
		{openflow.Bundle(openflow.HashSymmetricL4, 0, openflow.BundleHRW, []uint32{1, 2, 3, 4}, openflow.FieldNone, 0, 0),
			[4]uint32{2, 1, 2, 4}, [4]uint32{2, 1, 2, 4}},
		{openflow.Bundle(openflow.HashNwSrc, 7, openflow.BundleHRW, []uint32{4, 3, 2, 1, 5, 6, 7, 8}, openflow.FieldNone, 0, 0),
			[4]uint32{4, 3, 1, 3}, [4]uint32{4, 4, 1, 2}},
		{openflow.Bundle(openflow.HashSymmetricL3L4UDP, 99, openflow.BundleHRW, []uint32{10, 20, 30, 1, 2, 3, 4}, openflow.FieldNone, 0, 0),
			[4]uint32{2, 1, 2, 3}, [4]uint32{2, 1, 2, 1}},
		{openflow.Bundle(openflow.HashEthSrc, 0, openflow.BundleActiveBackup, []uint32{7, 3, 1}, openflow.FieldNone, 0, 0),
			[4]uint32{3, 3, 3, 3}, [4]uint32{1, 1, 1, 1}},
	} {
		for _, load := range []bool{false, true} {
			x := bundleBridge(t)
			act := tc.act
			if load {
				act.Field, act.NBits = openflow.FieldReg0, 16
				mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 5, apply(act, openflow.Resubmit(openflow.PortInPort, 1)))
				for p := uint32(1); p <= 4; p++ {
					mustAdd(t, x, 1, func(k *flow.Key, m *flow.Mask) { k.Regs[0], m.Regs[0] = p, ^uint32(0) }, 5,
						apply(openflow.Output(p, 0)))
				}
			} else {
				mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 5, apply(act))
			}
			for phase, want := range [][4]uint32{tc.live, tc.down} {
				if phase == 1 {
					p3 := *x.Ports.Snapshot().ByOF(3)
					p3.Down, p3.LinkDown = true, true
					if err := x.Ports.Add(p3); err != nil {
						t.Fatal(err)
					}
				}
				for i := range pkts {
					got := datapath.FormatActions(translate(x, pkts[i]).Actions)
					if w := fmt.Sprint(10 + want[i]); got != w {
						t.Errorf("%+v load %v, p3 down %v, packet %d: actions %q, want %q", act.Hash, load, phase == 1, i, got, w)
					}
				}
			}
		}
	}
}

// TestXlateBundleNoMember: with no live member, bundle drops and
// bundle_load writes OpenFlow 1.0's OFPP_NONE (0xffff); active_backup
// adds nothing to the megaflow, hrw its hashed fields once there is a
// choice.
func TestXlateBundleNoMember(t *testing.T) {
	x := bundleBridge(t)
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 5, apply(
		openflow.Bundle(openflow.HashEthSrc, 0, openflow.BundleActiveBackup, []uint32{5, 6}, openflow.FieldReg0, 0, 16),
		openflow.Resubmit(openflow.PortInPort, 1)))
	mustAdd(t, x, 1, func(k *flow.Key, m *flow.Mask) { k.Regs[0], m.Regs[0] = 0xffff, ^uint32(0) }, 5,
		apply(openflow.Output(2, 0)))
	k := pkt(19)
	out := translate(x, k)
	if got := datapath.FormatActions(out.Actions); got != "12" {
		t.Errorf("bundle_load with no live member: %q, want reg0=0xffff's output 12", got)
	}
	if out.WC.EthSrc != [6]byte{} {
		t.Errorf("active_backup un-wildcarded eth_src")
	}
	x = bundleBridge(t)
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 5, apply(
		openflow.Bundle(openflow.HashEthSrc, 0, openflow.BundleHRW, []uint32{5, 1, 2}, openflow.FieldNone, 0, 0)))
	out = translate(x, k)
	if out.WC.EthSrc != [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} {
		t.Errorf("hrw left eth_src out of the megaflow: %x", out.WC.EthSrc)
	}
	x = bundleBridge(t)
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 5, apply(
		openflow.Bundle(openflow.HashEthSrc, 0, openflow.BundleHRW, []uint32{5, 6}, openflow.FieldNone, 0, 0)))
	if got := datapath.FormatActions(translate(x, k).Actions); got != "drop" && got != "" {
		t.Errorf("bundle with no live member: %q, want a drop", got)
	}
}
