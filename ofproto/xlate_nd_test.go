package ofproto

import (
	"net"
	"testing"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// TestXlateSetND: set_field of nd_target, nd_sll and nd_tll commits a
// set(nd(...)) of the fields that changed (a plain set when all three
// did), slow-paths the flow as ovs-vswitchd's commit_set_nd_action does
// (the kernel cannot write ND fields), and makes the written fields exact
// in the megaflow.
func TestXlateSetND(t *testing.T) {
	ns := flow.Key{InPort: 11, EthSrc: macA, EthDst: macB, EthType: flow.EthTypeIPv6, NwProto: flow.IPProtoICMPv6,
		NwTTL: 255, TpSrc: 135, IPv6Src: [16]byte(net.ParseIP("fd00::1")), IPv6Dst: [16]byte(net.ParseIP("ff02::1:ff00:2")),
		NDTarget: [16]byte(net.ParseIP("fd00::2")), NDSLL: macA}
	target := [16]byte(net.ParseIP("fd00::99"))
	mac := [6]byte{0, 0, 0x5e, 0, 0, 9}
	set := func(f openflow.Field, v []byte) openflow.Action {
		a := openflow.Action{Type: openflow.ActSetField, Field: f}
		copy(a.Value[:], v)
		return a
	}
	for _, tc := range []struct {
		name string
		typ  uint16 // 135 solicitation, 136 advertisement
		acts []openflow.Action
		want string
	}{
		{"target", 135, []openflow.Action{set(openflow.FieldNDTarget, target[:])}, "set(nd(target=fd00::99)),12"},
		{"sll", 135, []openflow.Action{set(openflow.FieldNDSLL, mac[:])}, "set(nd(sll=00:00:5e:00:00:09)),12"},
		{"target and tll", 136, []openflow.Action{set(openflow.FieldNDTarget, target[:]), set(openflow.FieldNDTLL, mac[:])},
			"set(nd(target=fd00::99,tll=00:00:5e:00:00:09)),12"},
	} {
		x := testBridge(t)
		mustAdd(t, x, 0, func(k *flow.Key, m *flow.Mask) {
			k.EthType, m.EthType = flow.EthTypeIPv6, 0xffff
			k.NwProto, m.NwProto = flow.IPProtoICMPv6, 0xff
			k.TpSrc, m.TpSrc = tc.typ, 0xffff
		}, 5, apply(append(tc.acts, openflow.Output(2, 0))...))
		k := ns
		k.TpSrc = tc.typ
		if tc.typ == 136 {
			k.NDSLL = [6]byte{}
		}
		out := translate(x, k)
		if got := datapath.FormatActions(out.Actions); got != tc.want {
			t.Errorf("%s: actions %q, want %q (dropped %q)", tc.name, got, tc.want, out.Dropped)
		}
		if out.Slow&datapath.SlowAction == 0 {
			t.Errorf("%s: not slow-pathed (slow %#x)", tc.name, out.Slow)
		}
		for _, a := range tc.acts {
			switch a.Field {
			case openflow.FieldNDTarget:
				if out.WC.NDTarget != ones16 {
					t.Errorf("%s: nd_target not exact in the megaflow", tc.name)
				}
			case openflow.FieldNDSLL:
				if out.WC.NDSLL != ones6 {
					t.Errorf("%s: nd_sll not exact in the megaflow", tc.name)
				}
			case openflow.FieldNDTLL:
				if out.WC.NDTLL != ones6 {
					t.Errorf("%s: nd_tll not exact in the megaflow", tc.name)
				}
			}
		}
	}
}
