package ofproto

import (
	"strings"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/maclearn"
	"github.com/govswitch/govswitch/ofproto/openflow"
)

// singleLACPBridge is a NORMAL bridge whose port p1 (dp11) runs LACP as a
// bundle of one, and p2 (dp12) and p3 (dp13) are plain.
func singleLACPBridge(t *testing.T) (*Bridge, *Xlator, *Bond) {
	t.Helper()
	ports := NewPorts()
	for _, p := range []Port{
		{OFPort: openflow.PortLocal, DPPort: 0, Name: "br0", Type: "internal"},
		{OFPort: 1, DPPort: 11, Name: "p1", HWAddr: [6]byte{2, 0, 0, 0, 0, 1}},
		{OFPort: 2, DPPort: 12, Name: "p2"},
		{OFPort: 3, DPPort: 13, Name: "p3"},
	} {
		if err := ports.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	x := &Xlator{Tables: NewTables(), Ports: ports, MAC: maclearn.New(0, 0)}
	x.ControllerPID.Store(99)
	mustAdd(t, x, 0, func(*flow.Key, *flow.Mask) {}, 0, apply(openflow.Output(openflow.PortNormal, 0)))
	b := &Bridge{Name: "br0", Ports: ports, MAC: x.MAC, Tables: x.Tables, X: x}
	b.SetDatapathID(0x0000020000000099)
	if errs := b.SetBonds([]BondConfig{{Name: "p1", Single: true, Members: []string{"p1"},
		LACP: &LACPConfig{Active: true}}}); errs != nil {
		t.Fatal(errs)
	}
	t.Cleanup(b.stopBondRunners)
	p := ports.Snapshot().ByOF(1)
	if p.Bond != nil || p.LACPBundle == nil || p.LACPBundle.LACP() == nil {
		t.Fatalf("p1: Bond %p LACPBundle %p, want a bundle of one with LACP and no bond", p.Bond, p.LACPBundle)
	}
	return b, x, p.LACPBundle
}

// TestLACPSingleInterface: LACP on a port of one interface runs as
// ovs-vswitchd runs it, a bundle with LACP and no bond: its PDUs go to
// the LACP machine, lacp/show lists it with system priority 65535,
// bond/show does not, lacp_current follows the partner, NORMAL treats it
// as a plain port whatever LACP says, and its liveness (fast failover,
// bundle) is LACP's may_enable.
func TestLACPSingleInterface(t *testing.T) {
	b, x, bd := singleLACPBridge(t)
	k := flow.Key{InPort: 11, EthSrc: [6]byte{0x0a, 0, 0, 0, 0, 2}, EthDst: lacpDst, EthType: EthTypeSlow}
	var out Out
	x.Translate(&k, t0, true, &out)
	if out.lacp != bd || out.lacpPort != "p1" {
		t.Fatalf("LACPDU on p1: lacp %p %q, want p1's bundle", out.lacp, out.lacpPort)
	}
	if !strings.HasPrefix(datapath.FormatActions(out.Actions), "userspace(") {
		t.Errorf("LACPDU actions %s, want the slow path", datapath.FormatActions(out.Actions))
	}
	k.InPort = 12
	x.Translate(&k, t0, true, &out)
	if out.lacp != nil {
		t.Error("a LACPDU on p2, of no bundle, went to LACP")
	}
	if bs := b.Bonds(); len(bs) != 0 {
		t.Errorf("bond/show lists %+v, want no bond", bs)
	}
	ls := b.LACPs()
	if len(ls) != 1 || ls[0].Name != "p1" || ls[0].SysPriority != 65535 || len(ls[0].Members) != 1 || ls[0].Members[0].PortID != 1 {
		t.Fatalf("lacp/show %+v, want p1 with priority 65535 and member p1 port id 1", ls)
	}
	bd.lacp.carrierFirst("p1", true)
	bd.lacp.Run(time.Now().Add(100*time.Second), nil) // no partner: defaulted
	b.Ports.republish()
	if cur, ok := b.LACPCurrent("p1"); !ok || cur {
		t.Errorf("defaulted p1: lacp_current %t (ok %t), want false", cur, ok)
	}
	c := &xctx{xstate: xstate{x: x, ports: x.Ports.Snapshot()}}
	if c.portLive(1) {
		t.Error("p1 is live with LACP defaulted and no fallback")
	}
	if !c.portLive(2) {
		t.Error("plain p2 is not live")
	}
	// NORMAL floods to p1 and takes from it as from any port.
	flood := flow.Key{InPort: 12, EthSrc: [6]byte{0x0a, 0, 0, 0, 0, 2}, EthDst: [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, EthType: flow.EthTypeIPv4}
	if got := xlate(x, flood); !strings.Contains(got, "11") || !strings.Contains(got, "13") {
		t.Errorf("flood from p2: %s, want outputs to 11 and 13", got)
	}
	flood.InPort = 11
	if got := xlate(x, flood); !strings.Contains(got, "12") || !strings.Contains(got, "13") {
		t.Errorf("flood from p1: %s, want outputs to 12 and 13", got)
	}
	bd.lacp.ProcessPDU("p1", partnerPDU(1)[14:], time.Now())
	bd.lacp.Run(time.Now(), nil)
	b.Ports.republish()
	if cur, ok := b.LACPCurrent("p1"); !ok || !cur {
		t.Errorf("p1 after the partner spoke: lacp_current %t (ok %t), want true", cur, ok)
	}
	if ls := b.LACPs(); !ls[0].Negotiated || !ls[0].Members[0].MayEnable {
		t.Errorf("after the partner spoke: %+v, want negotiated and may_enable", ls[0])
	}
	c = &xctx{xstate: xstate{x: x, ports: x.Ports.Snapshot()}}
	if !c.portLive(1) {
		t.Error("p1 not live with LACP negotiated")
	}
	// lacp off: the port leaves its bundle.
	if errs := b.SetBonds(nil); errs != nil {
		t.Fatal(errs)
	}
	if p := b.Ports.Snapshot().ByOF(1); p.LACPBundle != nil || len(b.LACPs()) != 0 {
		t.Errorf("after lacp off: LACPBundle %p, lacp/show %+v", p.LACPBundle, b.LACPs())
	}
}
