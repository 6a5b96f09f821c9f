package ofproto

import (
	"net"
	"testing"
	"time"

	"github.com/govswitch/govswitch/datapath"
	"github.com/govswitch/govswitch/flow"
	"github.com/govswitch/govswitch/ofproto/netflow"
)

// TestNetFlowEndToEnd: frames of two TCP flows through a bridge on the
// in-memory datapath with NetFlow become one datapath flow each (the
// NetFlow mask) and, when NetFlow stops, one v5 record each whose counts
// are the frames sent: the miss's packet and the datapath flow's.
func TestNetFlowEndToEnd(t *testing.T) {
	b, prov := dummyBridge(t, UpcallConfig{RevalidateInterval: 50 * time.Millisecond})
	col, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer col.Close()
	b.Start()
	defer b.Stop()
	if err := b.SetNetFlow(&netflow.Config{Targets: []string{col.LocalAddr().String()}, EngineType: 3, EngineID: 7}); err != nil {
		t.Fatal(err)
	}
	p1, p2 := prov.Netdev("p1"), prov.Netdev("p2")
	const n = 6
	for _, sport := range []uint16{1000, 2000} {
		for i := 0; i < n; i++ {
			p1.Send(synFrame(sport))
			if _, err := p2.Recv(2 * time.Second); err != nil {
				t.Fatalf("frame not forwarded: %v", err)
			}
		}
	}
	var ipFlows int
	b.DP.DumpFlows(false, func(f *datapath.Flow) error {
		if f.Key.EthType == flow.EthTypeIPv4 {
			ipFlows++
			if f.Mask.TpSrc != 0xffff || f.Mask.IPv4Src != [4]byte{255, 255, 255, 255} {
				t.Errorf("megaflow without the NetFlow fields: %v", f.Mask)
			}
		}
		return nil
	})
	if ipFlows != 2 {
		t.Errorf("%d IPv4 datapath flows, want one per TCP flow", ipFlows)
	}
	b.Udpif.Revalidate() // credits the datapath flows' counts
	if err := b.SetNetFlow(nil); err != nil {
		t.Fatal(err)
	}
	// (Flooded to p2 and br0: no frame came from the destination. NetFlow
	// reports a flood as 65535, as ovs-vswitchd does, not as 65534.)
	buf := make([]byte, 2048)
	col.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := map[uint16]netflow.Record{}
	for len(got) < 2 {
		m, err := col.Read(buf)
		if err != nil {
			t.Fatalf("records %v: %v", got, err)
		}
		h, rs, err := netflow.Decode(buf[:m])
		if err != nil {
			t.Fatal(err)
		}
		if h.EngineType != 3 || h.EngineID != 7 {
			t.Errorf("header %+v", h)
		}
		for _, r := range rs {
			got[r.SrcPort] = r
		}
	}
	var in uint16
	for _, p := range b.Ports.Snapshot().List() {
		if p.Name == "p1" {
			in = uint16(p.OFPort)
		}
	}
	for _, sport := range []uint16{1000, 2000} {
		r := got[sport]
		if r.Packets != n || r.Bytes != n*54 || r.Proto != 6 || r.DstPort != 80 || r.Src != [4]byte{10, 0, 0, 1} ||
			r.Input != in || r.Output != netflow.OutFlood {
			t.Errorf("record of sport %d: %+v, want %d packets, %d bytes", sport, r, n, n*54)
		}
	}
}
